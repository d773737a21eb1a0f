package kerneltest

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/enforcer"
)

// TestMatchNeedsTheRecordItNames: a case passes its record check only with
// a record of one of its hooks, of the right decision and capability, and
// every such denial carries EPERM.
func TestMatchNeedsTheRecordItNames(t *testing.T) {
	denied := func(h enforcer.Hook) enforcer.Denial { return enforcer.Denial{Hook: h, Errno: unix.EPERM} }
	capRec := func(n uint64) enforcer.Denial {
		d := denied(enforcer.HookCapable)
		d.Object = enforcer.Object{Kind: enforcer.ObjectCap, ID: n}
		return d
	}
	audited := enforcer.Denial{Hook: enforcer.HookInodeMkdir, Audited: true}
	wrongErrno := enforcer.Denial{Hook: enforcer.HookFileOpen, Errno: unix.EACCES}
	for _, c := range []struct {
		name string
		ds   []enforcer.Denial
		w    Want
		ok   bool
	}{
		{"the hook", []enforcer.Denial{denied(enforcer.HookFileOpen)}, Hooks(enforcer.HookFileOpen), true},
		{"one of the hooks", []enforcer.Denial{denied(enforcer.HookCapable)}, Hooks(enforcer.HookInodeSetxattr, enforcer.HookCapable), true},
		{"no record", nil, Hooks(enforcer.HookFileOpen), false},
		{"another hook", []enforcer.Denial{denied(enforcer.HookInodeCreate)}, Hooks(enforcer.HookFileOpen), false},
		{"audited is not denied", []enforcer.Denial{audited}, Hooks(enforcer.HookInodeMkdir), false},
		{"audited wanted", []enforcer.Denial{audited}, Want{Hooks: []enforcer.Hook{enforcer.HookInodeMkdir}, Audited: true}, true},
		{"denied is not audited", []enforcer.Denial{denied(enforcer.HookInodeMkdir)}, Want{Hooks: []enforcer.Hook{enforcer.HookInodeMkdir}, Audited: true}, false},
		{"the capability", []enforcer.Denial{capRec(21), capRec(20)}, Want{Hooks: []enforcer.Hook{enforcer.HookCapable}, Cap: Cap(20)}, true},
		{"another capability", []enforcer.Denial{capRec(21)}, Want{Hooks: []enforcer.Hook{enforcer.HookCapable}, Cap: Cap(20)}, false},
		{"a denial without EPERM", []enforcer.Denial{denied(enforcer.HookFileOpen), wrongErrno}, Hooks(enforcer.HookFileOpen), false},
	} {
		if err := Match(c.ds, c.w); (err == nil) != c.ok {
			t.Errorf("%s: Match = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
