package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/sandbox"
)

// fakeCoreLimits replaces the hook's limitCore with a table of RLIMIT_CORE
// per pid (fail: the error every set returns) and returns the table. The
// limit logic itself is tested in internal/sandbox.
func fakeCoreLimits(t *testing.T, fail error) map[int]unix.Rlimit {
	t.Helper()
	lims := map[int]unix.Rlimit{}
	limitCore = func(pid int) (func() error, error) {
		if fail != nil {
			return nil, fmt.Errorf("set RLIMIT_CORE of pid %d to %d: %w", pid, sandbox.CoreLimit, fail)
		}
		old, had := lims[pid]
		lims[pid] = unix.Rlimit{Cur: sandbox.CoreLimit, Max: sandbox.CoreLimit}
		return func() error {
			if had {
				lims[pid] = old
			} else {
				delete(lims, pid)
			}
			return nil
		}, nil
	}
	t.Cleanup(func() { limitCore = sandbox.LimitCore })
	return lims
}

func TestHookLimitsCoreBeforeRegistering(t *testing.T) {
	sock, enf := hookDaemon(t)
	lims := fakeCoreLimits(t, nil)
	code, msg := runHookWith(sock, "createRuntime", stateJSON("c1", os.Getpid(), `"enforcerd.io/ceiling":"network=false"`))
	if code != exitOK {
		t.Fatalf("createRuntime exit %d: %s", code, msg)
	}
	if got := lims[os.Getpid()]; got != (unix.Rlimit{Cur: 1, Max: 1}) || len(lims) != 1 {
		t.Errorf("RLIMIT_CORE set: %v, want only the init (pid %d) at 1/1", lims, os.Getpid())
	}
	if enf.Len() != 1 {
		t.Errorf("not registered")
	}
}

func TestHookRefusesWhenCoreLimitFails(t *testing.T) {
	sock, enf := hookDaemon(t)
	fakeCoreLimits(t, unix.EPERM)
	code, msg := runHookWith(sock, "createRuntime", stateJSON("c1", os.Getpid(), `"enforcerd.io/role":"test"`))
	if code != exitCannotEnforce {
		t.Errorf("exit %d, want %d: %s", code, exitCannotEnforce, msg)
	}
	if !strings.Contains(msg, "RLIMIT_CORE") {
		t.Errorf("the refusal does not name RLIMIT_CORE: %s", msg)
	}
	if enf.Len() != 0 {
		t.Errorf("registered although RLIMIT_CORE could not be set")
	}
}

// TestHookRefusedRegistrationRestoresCoreLimit: nothing half-applied: when
// the daemon refuses the container, the init's RLIMIT_CORE is put back.
func TestHookRefusedRegistrationRestoresCoreLimit(t *testing.T) {
	sock, enf := hookDaemon(t)
	lims := fakeCoreLimits(t, nil)
	before := unix.Rlimit{Cur: 0, Max: unix.RLIM_INFINITY}
	lims[os.Getpid()] = before
	// write=false cannot be enforced by the fake enforcer: a refusal.
	code, msg := runHookWith(sock, "createRuntime", stateJSON("c1", os.Getpid(), `"enforcerd.io/ceiling":"write=false"`))
	if code == exitOK {
		t.Fatalf("createRuntime accepted a ceiling the daemon refuses: %s", msg)
	}
	if got := lims[os.Getpid()]; got != before {
		t.Errorf("RLIMIT_CORE after a refused registration: %v, want the previous %v", got, before)
	}
	if enf.Len() != 0 {
		t.Errorf("registered although refused")
	}
}
