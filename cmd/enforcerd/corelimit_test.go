package main

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/vmtest"
)

// fakeCoreLimits replaces prlimit for RLIMIT_CORE with a table (fail: the
// error every set returns) and returns the table.
func fakeCoreLimits(t *testing.T, fail error) map[int]unix.Rlimit {
	t.Helper()
	lims := map[int]unix.Rlimit{}
	prlimit = func(pid, resource int, newLim, old *unix.Rlimit) error {
		if resource != unix.RLIMIT_CORE {
			t.Errorf("prlimit of resource %d, want RLIMIT_CORE", resource)
		}
		if newLim != nil {
			if fail != nil {
				return fail
			}
			lims[pid] = *newLim
		}
		if old != nil {
			*old = lims[pid]
		}
		return nil
	}
	t.Cleanup(func() { prlimit = unix.Prlimit })
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

func TestLimitCoreChecksResult(t *testing.T) {
	lims := fakeCoreLimits(t, nil)
	prlimitSet := prlimit
	// A kernel that keeps the old hard limit.
	prlimit = func(pid, resource int, newLim, old *unix.Rlimit) error {
		if newLim != nil {
			n := *newLim
			n.Max = unix.RLIM_INFINITY
			newLim = &n
		}
		return prlimitSet(pid, resource, newLim, old)
	}
	if err := limitCore(42); err == nil {
		t.Errorf("limitCore accepted RLIMIT_CORE %v", lims[42])
	}
}

// TestRunLimitsCore: the command enforcerd run starts has RLIMIT_CORE 1/1.
func TestRunLimitsCore(t *testing.T) {
	vmtest.RequireRoot(t)
	r := enforcerd(t, nil, "run", "--pin-dir", testPinDir, "--", "cat", "/proc/self/limits")
	if r.code == exitCannotEnforce {
		vmtest.Skip(t, "enforcerd run cannot enforce here: "+r.stderr)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "Max core file size") {
			if f := strings.Fields(l); len(f) < 6 || f[4] != "1" || f[5] != "1" {
				t.Errorf("enforcerd run: %q, want RLIMIT_CORE 1 1", l)
			}
			return
		}
	}
	t.Errorf("no core limit line (exit %d): %s %s", r.code, r.stdout, r.stderr)
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
