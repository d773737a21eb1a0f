package enforcer_test

// Decisions that need two or more iterations of a bpf_loop() callback
// (bpf/loop.h): verifiers before Linux 6.8 check a callback for one
// iteration from the state before the loop, and removed such branches as
// dead code where that state was known. These run on every kernel of the
// suite; on 6.1 they failed before the loops' state was made unknown to
// the verifier.

import (
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
)

// TestWriteRootsMoreThanFourAncestors: a task below more than
// MAX_ROOT_CEILINGS (4) registrations with writable roots may write
// nowhere (bpf/roots.h roots_verdict). Tri-state: beneath the root R that
// every level names, a create works with no registration and with four
// nested ones, and is refused, the file absent, with five.
func TestWriteRootsMoreThanFourAncestors(t *testing.T) {
	kt.Enforcer(t)
	for _, c := range []struct {
		name   string
		levels int
		denied bool
	}{{"none-registered", 0, false}, {"four-nested", 4, false}, {"five-nested", 5, true}} {
		t.Run(c.name, func(t *testing.T) {
			fx := newOutsideFx(t)
			cur := kt.Sandbox(t, "roots-nested")
			for i := 0; i < 5; i++ {
				if i > 0 {
					cur = cur.Sub(t)
				}
				if i < c.levels {
					cur.Register(t, fx.entry(t, "R"))
				}
			}
			r := cur.Probe(t, "create", fx.path("R/new"))
			_, err := os.Lstat(fx.path("R/new"))
			created := err == nil
			if r.Setup != "" {
				t.Fatalf("could not attempt: %v", r)
			}
			if !c.denied {
				if r.Errno != 0 || !created {
					t.Fatalf("create beneath R under %d registrations with root R: %v (created %v), want success", c.levels, r, created)
				}
				return
			}
			if !r.Denied() || created {
				t.Errorf("BYPASS create beneath R under %d registrations with roots: %v (created %v), want EPERM and no file", c.levels, r, created)
			}
			kt.Expect(t, cur.Cg.ID, kerneltest.Hooks(denial.HookInodeCreate, denial.HookFileOpen))
		})
	}
}

// Bits of struct effective.seen (bpf/walk.h enum seen_bit).
const (
	seenNetOne   = 1 << 4
	seenShellOne = 1 << 5
)

// cachedSeen is resolve_cache's answer for cgroup id (bpf/walk.h): its
// effective.seen bits. The entry exists once a task of the cgroup ran a
// hook after the last registration change.
func cachedSeen(t *testing.T, id uint64) uint32 {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(kt.PinDir(), bpf.SharedMapResolveCache), nil)
	must(t, err)
	defer m.Close()
	var v bpf.SharedResolveCacheEntry
	must(t, m.Lookup(id, &v))
	if v.Found != 1 {
		t.Fatalf("resolve_cache[%d]: found %d, want 1", id, v.Found)
	}
	return v.E.Seen
}

// TestResolveSeenOneBits: the walk's "exactly one ancestor" answers
// (SEEN_NET_ONE for the endpoint lists, SEEN_SHELL_ONE for the
// registration time of restrict_since) are set when one ancestor denies
// network or restricts exec, and not when two do. Both shortcuts need the
// walk's count after more than one level: on 6.1 SEEN_SHELL_ONE was
// never set (dead code to its verifier), and every exec and executable
// mapping walked again. The verdicts are the same either way (the tests
// of the rules check those); this checks the fast path is live.
func TestResolveSeenOneBits(t *testing.T) {
	kt.Enforcer(t)
	both := policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellReadOnly}
	netOnly := policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}
	shellOnly := policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellReadOnly}
	for _, c := range []struct {
		name         string
		outer, inner *policy.KernelCeiling
		want         uint32
	}{
		{"one-registration", &both, nil, seenNetOne | seenShellOne},
		{"network-outer-shell-inner", &netOnly, &shellOnly, seenNetOne | seenShellOne},
		{"both-at-both-levels", &both, &both, 0},
		{"shell-at-both-levels", &both, &shellOnly, seenNetOne},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb := kt.Sandbox(t, "seen")
			sb.Register(t, entry.Entry{Ceiling: *c.outer})
			at := sb
			if c.inner != nil {
				at = sb.Sub(t)
				at.Register(t, entry.Entry{Ceiling: *c.inner})
			}
			if r := at.Probe(t, "exec", "/bin/busybox", "true"); r.Setup != "" || r.Errno != 0 {
				t.Fatalf("exec in the sandbox: %v, want success", r)
			}
			got := cachedSeen(t, at.Cg.ID) & (seenNetOne | seenShellOne)
			if got != c.want {
				t.Errorf("seen bits %#x, want %#x (net one %#x, shell one %#x)", got, c.want, seenNetOne, seenShellOne)
			}
		})
	}
}
