package hook

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"

	"github.com/enforcerd/enforcerd/sandbox"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// fakeCoreLimits replaces the hook's limitCore with a table of RLIMIT_CORE
// per pid (fail: the error every set returns) and returns the table. The
// limit logic itself is tested in sandbox. Every call, failed or
// not, is counted in coreLimitCalls.
func fakeCoreLimits(t *testing.T, fail error) map[int]unix.Rlimit {
	t.Helper()
	lims := map[int]unix.Rlimit{}
	coreLimitCalls = 0
	limitCore = func(pid int) (func() error, error) {
		coreLimitCalls++
		if fail != nil {
			return nil, fmt.Errorf("set RLIMIT_CORE of pid %d to %d: %w", pid, sandbox.CoreLimit, fail)
		}
		old, had := lims[pid]
		lims[pid] = unix.Rlimit{Cur: sandbox.CoreLimit, Max: sandbox.CoreLimit}
		return func() error {
			if restoreFails != nil {
				return restoreFails
			}
			if had {
				lims[pid] = old
			} else {
				delete(lims, pid)
			}
			return nil
		}, nil
	}
	t.Cleanup(func() { limitCore = sandbox.LimitCore; restoreFails = nil })
	return lims
}

// coreLimitCalls counts fakeCoreLimits' limitCore calls; restoreFails is
// the error its restore returns (nil: it succeeds).
var (
	coreLimitCalls int
	restoreFails   error
)

func TestHookLimitsCoreBeforeRegistering(t *testing.T) {
	sock, enf := hookDaemon(t)
	lims := fakeCoreLimits(t, nil)
	code, msg := runHookWith(sock, "createRuntime", stateJSON("c1", os.Getpid(), `"enforcerd.io/ceiling":"network=false"`))
	if code != cli.ExitOK {
		t.Fatalf("createRuntime exit %d: %s", code, msg)
	}
	if got := lims[os.Getpid()]; got != (unix.Rlimit{Cur: 1, Max: 1}) || len(lims) != 1 {
		t.Errorf("RLIMIT_CORE set: %v, want only the init (pid %d) at 1/1", lims, os.Getpid())
	}
	if enf.Len() != 1 {
		t.Errorf("not registered")
	}
}

// TestHookRefusesWhenCoreLimitFails: the daemon accepted the container
// but its init's RLIMIT_CORE cannot be set: the hook unregisters it and
// refuses it, naming RLIMIT_CORE.
func TestHookRefusesWhenCoreLimitFails(t *testing.T) {
	sock, enf := hookDaemon(t)
	fakeCoreLimits(t, unix.EPERM)
	code, msg := runHookWith(sock, "createRuntime", stateJSON("c1", os.Getpid(), `"enforcerd.io/ceiling":"network=false"`))
	if code != cli.ExitCannotEnforce {
		t.Errorf("exit %d, want %d: %s", code, cli.ExitCannotEnforce, msg)
	}
	if !strings.Contains(msg, "RLIMIT_CORE") {
		t.Errorf("the refusal does not name RLIMIT_CORE: %s", msg)
	}
	if enf.Len() != 0 {
		t.Errorf("left registered although RLIMIT_CORE could not be set")
	}
}

// TestHookRefusedRegistrationLeavesCoreLimit: nothing half-applied: when
// the daemon refuses the container, the init's RLIMIT_CORE was never
// changed (so nothing needs putting back), and the first line the hook
// prints is the daemon's reason.
func TestHookRefusedRegistrationLeavesCoreLimit(t *testing.T) {
	sock, enf := hookDaemon(t)
	lims := fakeCoreLimits(t, nil)
	restoreFails = unix.EPERM // as for a process root lacks CAP_SYS_RESOURCE over
	before := unix.Rlimit{Cur: 0, Max: unix.RLIM_INFINITY}
	lims[os.Getpid()] = before
	// write=false cannot be enforced by the fake enforcer: a refusal.
	code, msg := runHookWith(sock, "createRuntime", stateJSON("c1", os.Getpid(), `"enforcerd.io/ceiling":"write=false"`))
	if code == cli.ExitOK {
		t.Fatalf("createRuntime accepted a ceiling the daemon refuses: %s", msg)
	}
	if got := lims[os.Getpid()]; got != before || coreLimitCalls != 0 {
		t.Errorf("RLIMIT_CORE after a refused registration: %v (%d changes), want the previous %v untouched", got, coreLimitCalls, before)
	}
	if first, _, _ := strings.Cut(msg, "\n"); !strings.Contains(first, "refusing the container") || strings.Contains(first, "RLIMIT_CORE") {
		t.Errorf("first line %q: want the daemon's reason", first)
	}
	if enf.Len() != 0 {
		t.Errorf("registered although refused")
	}
}

// TestHookValidatesBeforeTouchingTarget: a state naming pid 1, a process
// in the root cgroup or in the hook's own cgroup (or one above it) is
// refused before the daemon is asked or any RLIMIT_CORE is touched.
func TestHookValidatesBeforeTouchingTarget(t *testing.T) {
	sock, enf := hookDaemon(t)
	lims := fakeCoreLimits(t, nil)
	pidGroup := hookPidGroup
	t.Cleanup(func() { hookSelfGroup = func() (string, error) { return cgroup.PidGroup(os.Getpid()) } })
	hookSelfGroup = func() (string, error) { return "/runtime/ctr/hook", nil }
	for _, tc := range []struct {
		name  string
		pid   int
		group string
		want  string
	}{
		{"pid 1", 1, "", "pid 1 is not a container's init"},
		{"root cgroup", os.Getpid(), "/", "is in the root cgroup"},
		{"the hook's own cgroup", os.Getpid(), "/runtime/ctr/hook", "holds the hook itself"},
		{"a cgroup above the hook's", os.Getpid(), "/runtime/ctr", "holds the hook itself"},
	} {
		hookPidGroup = func(pid int) (string, error) {
			if tc.group != "" {
				return tc.group, nil
			}
			return pidGroup(pid)
		}
		code, msg := runHookWith(sock, "createRuntime", stateJSON("c1", tc.pid, `"enforcerd.io/ceiling":"network=false"`))
		if code != cli.ExitUsage || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: exit %d: %s; want %d naming %q", tc.name, code, msg, cli.ExitUsage, tc.want)
		}
		if coreLimitCalls != 0 || len(lims) != 0 || enf.Len() != 0 {
			t.Errorf("%s: RLIMIT_CORE set %d times (%v), %d map entries: want nothing touched", tc.name, coreLimitCalls, lims, enf.Len())
		}
	}
}
