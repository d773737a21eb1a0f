package escapetest

// The shell=none meet in the kernel (bpf/exec.h exec_allowed): nested
// shell=none entries registered directly in the kernel map, not through
// the daemon's meet, each with its own allow list. A program runs only
// when every level lists it, whichever level is narrower.

import (
	"testing"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
)

func TestShellNoneNestedMeet(t *testing.T) {
	kt.Enforcer(t)
	prog := kt.TmpPath("busybox-nested")
	if err := copyPath("/bin/busybox", prog); err != nil {
		t.Fatal(err)
	}
	base := allowList()
	withProg := allowList(func() string { return prog })
	for _, c := range []struct {
		name         string
		outer, inner func(t *testing.T) []entry.FileID
		allowed      bool
	}{
		{"both levels list it", withProg, withProg, true},
		{"only the outer level lists it", withProg, base, false},
		{"only the inner level lists it", base, withProg, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			outer := kt.Sandbox(t, "case")
			outer.Register(t, entry.Entry{Ceiling: shellNone, ExecAllow: c.outer(t)})
			inner := outer.Sub(t)
			inner.Register(t, entry.Entry{Ceiling: shellNone, ExecAllow: c.inner(t)})
			r, eff := execTouch(prog, "touch", "%F")(t, inner)
			happened, what := eff()
			if c.allowed {
				if r.Errno != 0 || r.Exit > 0 || !happened {
					t.Errorf("exec of a program both levels list: %v (%s: %v), want it to run", r, what, happened)
				}
				return
			}
			if !r.Denied() || happened {
				t.Errorf("BYPASS exec of a program one level does not list: %v (%s: %v), want EPERM", r, what, happened)
			}
			kt.Expect(t, inner.Cg.ID, kerneltest.Hooks(denial.HookBprmCheckSecurity))
		})
	}
}
