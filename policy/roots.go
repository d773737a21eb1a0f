package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// MaxWriteRoots is the number of writable roots one ceiling may keep (the
// kernel's MAX_WRITE_ROOTS, bpf/maps.h; entry.MaxWriteRoots).
const MaxWriteRoots = 16

// maxRootPathBytes bounds one root's path (the kernel's PATH_MAX).
const maxRootPathBytes = 4096

// ErrBadWriteRoots is wrapped by every refusal of CheckWriteRootPaths and
// ParseWriteRoots.
var ErrBadWriteRoots = errors.New("bad writable roots")

// CheckWriteRootPaths validates the paths of writable roots (write=false
// with writes allowed beneath them; docs/design.md "Writable roots") and
// returns them cleaned (path.Clean): each absolute, non-empty, at most 4096
// bytes, without NUL or comma, no two the same; at most MaxWriteRoots.
// Whether each exists and is a directory is checked where it is resolved
// (entry.WriteRootOf). Errors wrap ErrBadWriteRoots and name the path.
func CheckWriteRootPaths(paths []string) ([]string, error) {
	if len(paths) > MaxWriteRoots {
		return nil, fmt.Errorf("%w: %d roots, at most %d", ErrBadWriteRoots, len(paths), MaxWriteRoots)
	}
	out := make([]string, 0, len(paths))
	seen := map[string]bool{}
	for _, p := range paths {
		switch {
		case p == "":
			return nil, fmt.Errorf("%w: an empty path", ErrBadWriteRoots)
		case len(p) > maxRootPathBytes:
			return nil, fmt.Errorf("%w: a path of %d bytes, at most %d", ErrBadWriteRoots, len(p), maxRootPathBytes)
		case strings.ContainsAny(p, "\x00,"):
			return nil, fmt.Errorf("%w: %q contains a NUL or a comma", ErrBadWriteRoots, p)
		case !path.IsAbs(p):
			return nil, fmt.Errorf("%w: %q is not an absolute path", ErrBadWriteRoots, p)
		}
		c := path.Clean(p)
		if seen[c] {
			return nil, fmt.Errorf("%w: %q is listed twice", ErrBadWriteRoots, c)
		}
		seen[c] = true
		out = append(out, c)
	}
	return out, nil
}

// ParseWriteRoots parses a comma-separated list of writable roots (the
// enforcerd.io/write-roots annotation; spaces around a path are trimmed)
// and checks it (CheckWriteRootPaths). An empty value is an error: an
// annotation that lists nothing is a mistake, not "no roots".
func ParseWriteRoots(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty list", ErrBadWriteRoots)
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxWriteRoots {
		return nil, fmt.Errorf("%w: %d roots, at most %d", ErrBadWriteRoots, len(parts), MaxWriteRoots)
	}
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return CheckWriteRootPaths(parts)
}
