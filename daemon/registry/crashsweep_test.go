//go:build failpoint

package registry_test

// The crash-point sweep: a daemon process is killed (SIGKILL, by a
// failpoint: internal/failpoint) at every step of register, narrow,
// unregister and reconcile: each map write, the state file's create,
// write, fsync and rename, and the registration intent's write and rename. A new registry then starts on the same pinned
// maps and state file, as a restarted daemon does, and the test checks
// what must be true after a crash (meet.go):
//
//   - every kernel entry is the last acknowledged ceiling or the ceiling
//     of the request in flight (none for an unregistration in flight), and
//     the restart widened none of them;
//   - every enforced cgroup is manageable: the registry owns its entry,
//     a harmless narrowing (tools=false) leaves the kernel as it was,
//     DELETE removes it, and POST works for a registration lost;
//   - what the registry reports (ctl get) is exactly the map entry;
//   - nothing leaked: no temporary state file, no pin.
//
// It runs natively with real pinned BPF maps (cgroup-BPF and map creation
// need root, not BPF LSM): go test -tags failpoint -run CrashSweep
// ./daemon/registry/ (make unit). The ceilings it uses (network) are the
// ones a host without BPF LSM enforces in part, so the registry accepts
// partial coverage.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/failpoint"
	"github.com/enforcerd/enforcerd/test/testroot"
)

// The child's environment.
const (
	envChild  = "ENFORCERD_CRASHSWEEP_CHILD" // the operation: register, narrow, unregister, reconcile
	envFP     = "ENFORCERD_CRASHSWEEP_FAILPOINT"
	envPin    = "ENFORCERD_CRASHSWEEP_PIN"
	envMount  = "ENFORCERD_CRASHSWEEP_MOUNT"
	envAttach = "ENFORCERD_CRASHSWEEP_ATTACH"
	envState  = "ENFORCERD_CRASHSWEEP_STATE"
	envGroup  = "ENFORCERD_CRASHSWEEP_GROUP"
)

// A re-executed test binary with envChild set is the daemon to kill: it
// runs before any test.
func init() {
	if op := os.Getenv(envChild); op != "" {
		if err := crashChild(op); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(3)
		}
		os.Exit(0) // the failpoint was never hit: the parent fails
	}
}

func sweepRegistry(enf registry.Enforcer, mount, statePath string) *registry.Registry {
	return registry.New(registry.Options{Enforcer: enf, Cgroups: registry.SystemCgroups{Mount: mount},
		StatePath: statePath, AllowPartial: true})
}

// crashChild starts as the daemon does (Open, Reconcile), arms the
// failpoint and runs op, in which the failpoint kills it.
func crashChild(op string) error {
	mount, group := os.Getenv(envMount), os.Getenv(envGroup)
	enf, err := enforcer.Open(enforcer.Options{PinDir: os.Getenv(envPin), CgroupMount: mount, CgroupAttach: os.Getenv(envAttach)})
	if err != nil {
		return err
	}
	reg := sweepRegistry(enf, mount, os.Getenv(envState))
	if op != "reconcile" {
		if _, err := reg.Reconcile(); err != nil {
			return err
		}
	}
	if err := failpoint.Arm(os.Getenv(envFP)); err != nil {
		return err
	}
	switch op {
	case "register":
		_, err = reg.Register(registry.Request{ID: "c", Cgroup: group + "/c", Ceiling: "network=false"})
	case "register-above":
		_, err = reg.Register(registry.Request{ID: "p", Cgroup: group, Ceiling: "network=false"})
	case "narrow":
		_, err = reg.Narrow("a", "network=false")
	case "unregister":
		err = reg.Unregister("b")
	case "reconcile":
		_, err = reg.Reconcile()
	default:
		err = fmt.Errorf("unknown operation %q", op)
	}
	return err
}

// net is a cgroup's kernel entry as the sweep compares it: "absent",
// "open" (network allowed) or "denied".
type net string

const (
	absent net = "absent"
	open   net = "open"
	denied net = "denied"
)

// wider orders net values: absent (no ceiling) is the widest.
func (n net) wider(o net) bool {
	rank := map[net]int{denied: 0, open: 1, absent: 2}
	return rank[n] > rank[o]
}

type sweepEnv struct {
	t      *testing.T
	enf    *enforcer.Enforcer
	pin    string
	mount  string
	attach string // the test's cgroup, as a group path
}

func TestCrashSweep(t *testing.T) {
	testroot.Require(t, "bpffs, cgroup-BPF and map creation")
	e := newSweepEnv(t)
	pinsBefore := e.pins()
	steps := func(prefix string, fps ...string) []string {
		out := make([]string, 0, len(fps))
		for _, fp := range fps {
			out = append(out, prefix+fp)
		}
		return out
	}
	save := func(n int) []string {
		return steps("", fmt.Sprintf("state.create@%d", n), fmt.Sprintf("state.write@%d", n),
			fmt.Sprintf("state.fsync@%d", n), fmt.Sprintf("state.rename@%d", n))
	}
	type sweepCase struct {
		op string
		// acked and inflight: each container's kernel entry as last
		// acknowledged, and as the request in flight asks.
		acked, inflight map[string]net
		// setup runs after a, b are registered (a: network allowed; b
		// nested in it by cgroup), before the child starts.
		setup func(n int, ids map[string]uint64, reg *registry.Registry)
		fps   []string
	}
	base := map[string]net{"p": absent, "a": open, "b": open, "c": absent}
	with := func(m map[string]net, kv ...any) map[string]net {
		out := map[string]net{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1].(net)
		}
		return out
	}
	cases := []sweepCase{
		{op: "register", acked: base, inflight: with(base, "c", denied),
			fps: append([]string{"intent.write@1", "intent.rename@1", "register.map@1"}, save(1)...)},
		// A registration above a and b: its intent, its install and the
		// clamps it carries down to them.
		{op: "register-above", acked: base, inflight: with(base, "p", denied, "a", denied, "b", denied),
			fps: append([]string{"intent.write@1", "intent.rename@1", "register.map@1", "apply.map@1", "apply.map@2"}, save(1)...)},
		{op: "narrow", acked: base, inflight: with(base, "a", denied, "b", denied),
			fps: append([]string{"apply.map@1", "apply.map@2"}, save(1)...)},
		{op: "unregister", acked: base, inflight: with(base, "b", absent),
			fps: append([]string{"unregister.map@1"}, save(1)...)},
		// A restart in the middle of the reconciliation of earlier
		// crashes: a's narrowing reached the map only, b's the state
		// only (its map entry put back open).
		{op: "reconcile", acked: with(base, "a", denied, "b", denied), inflight: with(base, "a", denied, "b", denied),
			setup: func(n int, ids map[string]uint64, reg *registry.Registry) {
				if _, err := reg.Narrow("b", "network=false"); err != nil {
					e.t.Fatal(err)
				}
				for id, network := range map[string]bool{"a": false, "b": true} {
					en, err := e.enf.Lookup(ids[id])
					if err != nil {
						e.t.Fatal(err)
					}
					en.Ceiling.Network, en.AllowPartial = network, true
					if err := e.enf.Register(e.cg(n, id), en); err != nil {
						e.t.Fatal(err)
					}
				}
			},
			fps: append([]string{"reconcile.map@1"}, save(1)...)},
	}
	n := 0
	for _, tc := range cases {
		for _, fp := range tc.fps {
			n++
			t.Run(tc.op+"/"+fp, func(t *testing.T) {
				e.t = t
				e.runCase(n, tc.op, fp, tc.acked, tc.inflight, tc.setup)
			})
		}
	}
	e.t = t
	if got := e.pins(); strings.Join(got, " ") != strings.Join(pinsBefore, " ") {
		t.Fatalf("pins leaked: before %v, after %v", pinsBefore, got)
	}
}

func newSweepEnv(t *testing.T) *sweepEnv {
	t.Helper()
	bpffs := t.TempDir()
	if err := unix.Mount("bpf", bpffs, "bpf", 0, "mode=0700"); err != nil {
		t.Fatalf("mount bpffs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(bpffs, unix.MNT_DETACH) })
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	e := &sweepEnv{t: t, pin: filepath.Join(bpffs, "enforcerd"), mount: mount,
		attach: fmt.Sprintf("/enforcerd-crashsweep-%d", os.Getpid())}
	if err := os.Mkdir(filepath.Join(mount, e.attach), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(filepath.Join(mount, e.attach)) })
	e.enf, err = enforcer.Open(enforcer.Options{PinDir: e.pin, CgroupMount: mount, CgroupAttach: filepath.Join(mount, e.attach)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.enf.Uninstall(); err != nil {
			t.Errorf("uninstall: %v", err)
		}
		e.enf.Close()
	})
	return e
}

// group is the case's cgroup of container id ("p" the case's own, "a"
// inside it, "b" inside a, "c").
func (e *sweepEnv) group(n int, id string) string {
	g := fmt.Sprintf("%s/%d", e.attach, n)
	switch id {
	case "", "p":
		return g
	case "b":
		return g + "/a/b"
	}
	return g + "/" + id
}

func (e *sweepEnv) cg(n int, id string) cgroup.Cgroup {
	cg, err := cgroup.Open(e.mount, e.group(n, id))
	if err != nil {
		e.t.Fatal(err)
	}
	return cg
}

// pins lists every pin under the pin directory.
func (e *sweepEnv) pins() []string {
	var out []string
	_ = filepath.Walk(e.pin, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			out = append(out, strings.TrimPrefix(p, e.pin))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// kernel is the case's containers' kernel entries.
func (e *sweepEnv) kernel(ids map[string]uint64) map[string]net {
	out := map[string]net{}
	for id, cgid := range ids {
		en, err := e.enf.Lookup(cgid)
		switch {
		case errors.Is(err, enforcer.ErrNotRegistered):
			out[id] = absent
		case err != nil:
			e.t.Fatal(err)
		case en.Ceiling.Network:
			out[id] = open
		default:
			out[id] = denied
		}
	}
	return out
}

func (e *sweepEnv) runCase(n int, op, fp string, acked, inflight map[string]net, setup func(int, map[string]uint64, *registry.Registry)) {
	t := e.t
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.json")
	ids := map[string]uint64{}
	for _, id := range []string{"p", "a", "b", "c"} {
		p := filepath.Join(e.mount, e.group(n, id))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		ids[id] = e.cg(n, id).ID
	}
	t.Cleanup(func() {
		for _, id := range []string{"b", "a", "c", ""} {
			_ = os.Remove(filepath.Join(e.mount, e.group(n, id)))
		}
	})
	reg := sweepRegistry(e.enf, e.mount, statePath)
	if _, err := reg.Reconcile(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := reg.Register(registry.Request{ID: id, Cgroup: e.group(n, id)}); err != nil {
			t.Fatal(err)
		}
	}
	if setup != nil {
		setup(n, ids, reg)
	}

	// The daemon, killed at fp.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+op, envFP+"="+fp, envPin+"="+e.pin, envMount+"="+e.mount,
		envAttach+"="+filepath.Join(e.mount, e.attach), envState+"="+statePath, envGroup+"="+e.group(n, ""))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the daemon was not killed at %s (%v): %s", fp, err, out)
	}
	atDeath := e.kernel(ids)

	// The restart.
	reg = sweepRegistry(e.enf, e.mount, statePath)
	if _, err := reg.Reconcile(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	got := e.kernel(ids)
	for id, k := range got {
		if k != acked[id] && k != inflight[id] {
			t.Errorf("container %s: kernel %s, want the acknowledged %s or the in-flight %s", id, k, acked[id], inflight[id])
		}
		if k.wider(atDeath[id]) && atDeath[id] != absent {
			t.Errorf("container %s: the restart widened the kernel from %s to %s", id, atDeath[id], k)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".state.json*.tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary files left after the restart: %v", tmp)
	}
	if _, err := os.Stat(state.IntentPath(statePath)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("intent left after the restart: %v", err)
	}
	// Every enforced cgroup is the registry's, and it reports the map
	// exactly (ctl get).
	owned := map[string]bool{}
	for _, c := range reg.List() {
		owned[c.ID] = true
		en, err := e.enf.Lookup(c.CgroupID)
		if err != nil {
			t.Errorf("container %s listed, not in the map: %v", c.ID, err)
			continue
		}
		if en.Ceiling != c.Kernel || en.AuditOnly != c.AuditOnly {
			t.Errorf("container %s: reported %s audit_only=%v, map %s audit_only=%v", c.ID, c.Kernel, c.AuditOnly, en.Ceiling, en.AuditOnly)
		}
	}
	for id, k := range got {
		if k != absent && !owned[id] {
			t.Errorf("cgroup of %s enforced (%s) but not registered: nobody can manage it", id, k)
		}
	}
	// Manageable: a harmless narrowing changes no kernel entry; POST for
	// what is not registered; DELETE of everything leaves no entry.
	for _, id := range []string{"p", "a", "b", "c"} {
		if !owned[id] {
			continue
		}
		if _, err := reg.Narrow(id, "tools=false"); err != nil {
			t.Errorf("narrow %s: %v", id, err)
		}
		if after := e.kernel(ids); fmt.Sprint(after) != fmt.Sprint(got) {
			t.Errorf("narrow %s tools=false changed the kernel: %v → %v", id, got, after)
		}
	}
	for _, id := range []string{"c", "b"} {
		if !owned[id] {
			if _, err := reg.Register(registry.Request{ID: id, Cgroup: e.group(n, id), Ceiling: "network=false"}); err != nil {
				t.Errorf("POST %s after the restart: %v", id, err)
			}
		}
	}
	for _, id := range []string{"b", "c", "a"} {
		if err := reg.Unregister(id); err != nil {
			t.Errorf("DELETE %s: %v", id, err)
		}
	}
	if owned["p"] {
		if err := reg.Unregister("p"); err != nil {
			t.Errorf("DELETE p: %v", err)
		}
	}
	for id, k := range e.kernel(ids) {
		if k != absent {
			t.Errorf("container %s: entry left after DELETE: %s", id, k)
		}
	}
	if cs, err := state.Load(statePath); err != nil || len(cs) != 0 {
		t.Errorf("state after DELETE of everything = %v, %v", cs, err)
	}
}
