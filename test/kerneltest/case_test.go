package kerneltest

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
)

// TestMatchNeedsTheRecordItNames: a case passes its record check only with
// a record of one of its hooks, of the right decision and capability, and
// every such denial carries EPERM.
func TestMatchNeedsTheRecordItNames(t *testing.T) {
	denied := func(h denial.Hook) denial.Denial { return denial.Denial{Hook: h, Errno: unix.EPERM} }
	capRec := func(n uint64) denial.Denial {
		d := denied(denial.HookCapable)
		d.Object = denial.Object{Kind: denial.ObjectCap, ID: n}
		return d
	}
	audited := denial.Denial{Hook: denial.HookInodeMkdir, Audited: true}
	wrongErrno := denial.Denial{Hook: denial.HookFileOpen, Errno: unix.EACCES}
	for _, c := range []struct {
		name string
		ds   []denial.Denial
		w    Want
		ok   bool
	}{
		{"the hook", []denial.Denial{denied(denial.HookFileOpen)}, Hooks(denial.HookFileOpen), true},
		{"one of the hooks", []denial.Denial{denied(denial.HookCapable)}, Hooks(denial.HookInodeSetxattr, denial.HookCapable), true},
		{"no record", nil, Hooks(denial.HookFileOpen), false},
		{"another hook", []denial.Denial{denied(denial.HookInodeCreate)}, Hooks(denial.HookFileOpen), false},
		{"audited is not denied", []denial.Denial{audited}, Hooks(denial.HookInodeMkdir), false},
		{"audited wanted", []denial.Denial{audited}, Want{Hooks: []denial.Hook{denial.HookInodeMkdir}, Audited: true}, true},
		{"denied is not audited", []denial.Denial{denied(denial.HookInodeMkdir)}, Want{Hooks: []denial.Hook{denial.HookInodeMkdir}, Audited: true}, false},
		{"the capability", []denial.Denial{capRec(21), capRec(20)}, Want{Hooks: []denial.Hook{denial.HookCapable}, Cap: Cap(20)}, true},
		{"another capability", []denial.Denial{capRec(21)}, Want{Hooks: []denial.Hook{denial.HookCapable}, Cap: Cap(20)}, false},
		{"a denial without EPERM", []denial.Denial{denied(denial.HookFileOpen), wrongErrno}, Hooks(denial.HookFileOpen), false},
	} {
		if err := Match(c.ds, c.w); (err == nil) != c.ok {
			t.Errorf("%s: Match = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
