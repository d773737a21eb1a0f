package progcheck

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenPath opens name inside the root with O_PATH (symlinks followed, and
// kept, inside it; magic links refused), for a caller that needs the
// identity of what is there (a writable root, entry.WriteRootOfFile).
// Errors: name cannot be resolved inside the root.
func (r *Root) OpenPath(name string) (*os.File, error) {
	fd, err := r.openat2(name, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// OpenRegular opens name inside the root for reading (symlinks followed
// inside it); it must be a regular file (a FIFO or a device node there is
// never opened for real). The file's identity is that of the file an
// exec of name inside the root would run, for a caller that classifies
// it (VetFiles) and records that identity from the same descriptor.
// Errors: name cannot be resolved inside the root, or is not a regular
// file.
func (r *Root) OpenRegular(name string) (*os.File, error) {
	f, _, err := r.openRegular(name)
	return f, err
}
