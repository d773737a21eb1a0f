package endpoint

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/inroot"
)

// ErrNotSocket is wrapped when a unix endpoint's path names no socket.
var ErrNotSocket = errors.New("not a unix socket")

// Resolve returns es with every unix endpoint's socket file identity
// filled in: the file at its path (symlinks followed) inside root, a host
// directory seen as "/" (every path and symlink stays inside it: openat2
// RESOLVE_IN_ROOT; "" or "/" is the host's root). A container's root at
// createRuntime is /proc/INIT/root/ROOTFS (oci.Entrypoint). Errors: a path
// that does not exist or cannot be reached, or a file that is not a socket
// (ErrNotSocket); each names the endpoint.
func Resolve(es []Endpoint, root string) ([]Endpoint, error) {
	out := make([]Endpoint, len(es))
	copy(out, es)
	for i, e := range out {
		if e.Kind != Unix {
			continue
		}
		st, err := inroot.Stat(root, e.Path)
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", e, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return nil, fmt.Errorf("endpoint %s: %w (mode %#o)", e, ErrNotSocket, st.Mode&unix.S_IFMT)
		}
		out[i].Dev = unix.Major(st.Dev)<<20 | unix.Minor(st.Dev)
		out[i].Ino = st.Ino
		out[i].Ctime = st.Ctim.Nano()
	}
	return out, nil
}
