package progcheck

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenPath opens name inside the root with O_PATH (symlinks followed, and
// kept, inside it; magic links refused), for a caller that needs the
// identity of what is there (a writable root, enforcer.WriteRootOfFile).
// Errors: name cannot be resolved inside the root.
func (r *Root) OpenPath(name string) (*os.File, error) {
	fd, err := r.openat2(name, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}
