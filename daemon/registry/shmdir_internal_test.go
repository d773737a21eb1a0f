package registry

import (
	"os"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/progcheck"
)

// shmDirOf names the registered process's /dev/shm as entry.ShmDirOf does
// for it, and none where /proc/PID/root is not the container's "/".
func TestShmDirOf(t *testing.T) {
	var want *state.FileID
	if id, err := entry.ShmDirOf("/", "/proc/self/mountinfo"); err == nil {
		want = &state.FileID{Dev: id.Dev, Ino: id.Ino}
	}
	same := func(a, b *state.FileID) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	pid := os.Getpid()
	for _, tc := range []struct {
		name string
		req  Request
		want *state.FileID
	}{
		{"no pid", Request{}, nil},
		{"pid, in force now", Request{PID: pid}, want},
		{"init pid, root given as /", Request{Activate: ActivateExec, InitPID: pid, Entrypoint: &progcheck.Program{Path: "/bin/true", Root: "/"}}, want},
		{"init pid, root given", Request{Activate: ActivateExec, InitPID: pid, Entrypoint: &progcheck.Program{Path: "/bin/true", Root: "/proc/self/root"}}, want},
		{"init pid before the pivot, no root", Request{Activate: ActivateExec, InitPID: pid}, nil},
	} {
		if got := shmDirOf(tc.req); !same(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
