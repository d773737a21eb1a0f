package enforcer_test

import (
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/kerneltest"
)

// TestResolveQuietWordNeverOutlivesARegistration: resolve()'s hot word
// (bpf/walk.h resolve_quiet: "nothing registered or pending above this
// cgroup, under generation G") must never let a process escape a ceiling
// registered after the word was written, nor a pending one activated at
// exec. Where the kernel has cgroup local storage (6.2+) the word is really
// written for an unenforced cgroup's process; on 6.1 the map is a stand-in
// nothing reaches.
func TestResolveQuietWordNeverOutlivesARegistration(t *testing.T) {
	enf := kt.Enforcer(t)
	inet := []string{strconv.Itoa(unix.AF_INET), strconv.Itoa(unix.SOCK_STREAM), "0"}
	for _, pending := range []bool{false, true} {
		name := "active"
		if pending {
			name = "pending, activated at the probe's exec"
		}
		t.Run(name, func(t *testing.T) {
			sb := kt.Sandbox(t, "quiet")
			// Unenforced: allowed, and (6.2+) the word is written.
			if r := sb.Probe(t, "socket", inet...); r.Setup != "" || r.Errno != 0 {
				t.Fatalf("unenforced socket(): %+v, want allowed", r)
			}
			m, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(kt.PinDir(), bpf.SharedMapResolveQuiet), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if enforcer.HaveCgroupStorage() {
				if m.Type() != ebpf.CgroupStorage {
					t.Fatalf("resolve_quiet is a %s map, want cgroup storage on this kernel", m.Type())
				}
				var gen uint64
				if err := m.Lookup(int32(sb.Dir.Fd()), &gen); err != nil || gen == 0 {
					t.Fatalf("no hot word for the unenforced cgroup after a hooked operation (%v, %d)", err, gen)
				}
			} else if m.Type() == ebpf.CgroupStorage {
				t.Fatalf("resolve_quiet is cgroup storage, but the probe said the kernel has none")
			}
			// Registered after the word was written: denied, recorded.
			sb.Register(t, enforcer.Entry{Ceiling: networkDeny, Pending: pending})
			if r := sb.Probe(t, "socket", inet...); r.Setup != "" || r.Errno != unix.EPERM {
				t.Fatalf("socket() after the registration: %+v, want EPERM", r)
			}
			kt.Expect(t, sb.Cg.ID, kerneltest.Hooks(enforcer.HookSocketCreate))
			// Unregistered: allowed again (the word is rewritten under the
			// new generation).
			if err := enf.Unregister(sb.Cg.ID); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if r := sb.Probe(t, "socket", inet...); r.Setup != "" || r.Errno != 0 {
					t.Fatalf("socket() after unregistering (%d): %+v, want allowed", i, r)
				}
			}
		})
	}
}
