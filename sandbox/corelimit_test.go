package sandbox

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// fakePrlimit replaces prlimit for RLIMIT_CORE with a table per pid; set
// (when not nil) turns the limit a set asks for into the one the "kernel"
// keeps, or fails it.
func fakePrlimit(t *testing.T, set func(want unix.Rlimit) (unix.Rlimit, error)) map[int]unix.Rlimit {
	t.Helper()
	lims := map[int]unix.Rlimit{}
	prlimit = func(pid, resource int, newLim, old *unix.Rlimit) error {
		if resource != unix.RLIMIT_CORE {
			t.Errorf("prlimit of resource %d, want RLIMIT_CORE", resource)
		}
		if old != nil {
			*old = lims[pid]
		}
		if newLim != nil {
			n := *newLim
			if set != nil {
				var err error
				if n, err = set(n); err != nil {
					return err
				}
			}
			lims[pid] = n
		}
		return nil
	}
	t.Cleanup(func() { prlimit = unix.Prlimit })
	return lims
}

func TestLimitCoreSetsOneAndRestores(t *testing.T) {
	lims := fakePrlimit(t, nil)
	before := unix.Rlimit{Cur: 0, Max: unix.RLIM_INFINITY}
	lims[42] = before
	restore, err := LimitCore(42)
	if err != nil {
		t.Fatal(err)
	}
	if lims[42] != (unix.Rlimit{Cur: 1, Max: 1}) {
		t.Errorf("RLIMIT_CORE %v, want 1/1", lims[42])
	}
	if err := restore(); err != nil || lims[42] != before {
		t.Errorf("restored to %v (%v), want %v", lims[42], err, before)
	}
}

// TestLimitCoreChecksResult: a kernel that keeps another limit than the one
// asked for is an error (fail closed), and the previous limit is put back.
func TestLimitCoreChecksResult(t *testing.T) {
	before := unix.Rlimit{Cur: 0, Max: unix.RLIM_INFINITY}
	lims := fakePrlimit(t, func(want unix.Rlimit) (unix.Rlimit, error) {
		if want.Cur == 1 {
			want.Max = unix.RLIM_INFINITY // keeps the old hard limit
		}
		return want, nil
	})
	lims[42] = before
	if _, err := LimitCore(42); err == nil {
		t.Errorf("LimitCore accepted RLIMIT_CORE %v", lims[42])
	}
	if lims[42] != before {
		t.Errorf("RLIMIT_CORE after the refusal: %v, want the previous %v", lims[42], before)
	}
}

func TestLimitCoreFailsClosed(t *testing.T) {
	fakePrlimit(t, func(unix.Rlimit) (unix.Rlimit, error) { return unix.Rlimit{}, unix.EPERM })
	if _, err := LimitCore(42); !errors.Is(err, unix.EPERM) {
		t.Errorf("LimitCore: %v, want EPERM", err)
	}
}
