package registry_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
)

// setupProc is a fake process for the setup-process tests: its parent and
// the file it runs (device 1, inode as given).
type setupProc struct {
	ppid  int
	ino   uint64
	group string
}

// TestPendingSetupProcessAdoption: a registration naming a setup program
// (systemd-nspawn) keeps pending while the cgroup holds only processes
// that still run that file and descend from a process running it beside
// the cgroup (nspawn's inner child, the supervisor's grandchild); any
// other process activates it at once.
func TestPendingSetupProcessAdoption(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "systemd-nspawn")
	if err := os.WriteFile(prog, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(prog, &st); err != nil {
		t.Fatal(err)
	}
	nsp := st.Ino
	const other = 999999
	const machine, payload = "/m.scope", "/m.scope/payload"
	cases := []struct {
		name    string
		procs   map[int]setupProc // pids 20.. are in the payload unless group says
		setup   bool              // the registration names the setup program
		pending bool              // still pending after the check
	}{
		{"inner child, supervisor's grandchild", map[int]setupProc{
			10: {1, nsp, machine + "/supervisor"}, 11: {10, nsp, machine}, 20: {11, nsp, payload}}, true, true},
		{"inner child reparented to the supervisor", map[int]setupProc{
			10: {1, nsp, machine + "/supervisor"}, 20: {10, nsp, payload}}, true, true},
		{"supervisor still in the machine's cgroup", map[int]setupProc{
			10: {1, nsp, machine}, 20: {10, nsp, payload}}, true, true},
		{"its child before exec, in a sub-cgroup", map[int]setupProc{
			10: {1, nsp, machine}, 20: {10, nsp, payload}, 21: {20, nsp, payload + "/init.scope"}}, true, true},
		{"without a setup program", map[int]setupProc{
			10: {1, nsp, machine}, 20: {10, nsp, payload}}, false, false},
		{"exec'd another program", map[int]setupProc{
			10: {1, nsp, machine}, 20: {10, other, payload}}, true, false},
		{"no supervisor among its ancestors", map[int]setupProc{
			10: {1, other, machine}, 20: {10, nsp, payload}}, true, false},
		{"only ancestors inside the payload", map[int]setupProc{
			10: {1, other, machine}, 19: {10, nsp, payload}, 20: {19, nsp, payload}}, true, false},
		{"supervisor outside the machine's cgroup", map[int]setupProc{
			10: {1, nsp, "/elsewhere"}, 20: {10, nsp, payload}}, true, false},
		{"an unknown ancestor", map[int]setupProc{
			20: {30, nsp, payload}}, true, false},
		{"adopted child beside an intruder", map[int]setupProc{
			10: {1, nsp, machine}, 20: {10, nsp, payload}, 21: {1, other, payload}}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newPendingFixture(t)
			f.cgs.Add(machine)
			f.cgs.Add(machine + "/supervisor")
			f.cgs.Add(payload)
			f.cgs.Add(payload + "/init.scope")
			f.cgs.Add("/elsewhere")
			reg := registry.New(registry.Options{
				Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path, Now: f.clk.now, PendingDeadline: 30 * time.Second,
				ProcExe: func(pid int) (uint32, uint64, error) {
					p, ok := tc.procs[pid]
					if !ok {
						return 0, 0, errors.New("no such process")
					}
					return uint32(st.Dev), p.ino, nil
				},
				StartTime: func(pid int) (uint64, error) {
					if _, ok := tc.procs[pid]; !ok {
						return 0, errors.New("no such process")
					}
					return uint64(1000 + pid), nil
				},
				ParentPID: func(pid int) (int, error) {
					p, ok := tc.procs[pid]
					if !ok {
						return 0, errors.New("no such process")
					}
					return p.ppid, nil
				},
			})
			req := registry.Request{ID: "m", Cgroup: payload, Ceiling: "network=false", Activate: registry.ActivateExec}
			if tc.setup {
				req.SetupProgram = prog
			}
			c, err := reg.Register(req)
			if err != nil {
				t.Fatal(err)
			}
			if c.State != state.StatePending {
				t.Fatalf("registered %q, want pending (the payload is empty)", c.State)
			}
			for pid, p := range tc.procs {
				f.cgs.SetPid(pid, p.group)
			}
			if _, err := reg.CheckPending(); err != nil {
				t.Fatal(err)
			}
			got, _ := reg.Get("m")
			if tc.pending != (got.State == state.StatePending) || tc.pending != f.entry(t, c.CgroupID).Pending {
				t.Fatalf("after the check: state %q (map pending %v), want pending=%v; reason %q",
					got.State, f.entry(t, c.CgroupID).Pending, tc.pending, got.ActivationReason)
			}
			if !tc.pending && !strings.Contains(got.ActivationReason, "entered after registration without exec") {
				t.Fatalf("activation reason %q", got.ActivationReason)
			}
		})
	}
}

// TestPendingSetupProcessExecInFlight: a setup process adopted on one
// check that runs another program on the next has exec'd (the kernel
// activates the entry at sched_process_exec, a moment after the
// executable changed): no intruder. A process never adopted that runs
// another program is one, and so is a new process reusing the adopted
// one's pid.
func TestPendingSetupProcessExecInFlight(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "systemd-nspawn")
	if err := os.WriteFile(prog, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(prog, &st); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		start   uint64 // pid 20's start time at the second check
		newPid  bool   // a second process that never ran nspawn enters
		pending bool
	}{
		{"exec in flight", 5, false, true},
		{"pid reused", 6, false, false},
		{"a stranger beside it", 5, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPendingFixture(t)
			f.cgs.Add("/m")
			f.cgs.Add("/m/payload")
			exe := map[int]uint64{10: st.Ino, 20: st.Ino}
			starts := map[int]uint64{10: 1, 20: 5}
			reg := registry.New(registry.Options{
				Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path, Now: f.clk.now, PendingDeadline: 30 * time.Second,
				ProcExe: func(pid int) (uint32, uint64, error) { return uint32(st.Dev), exe[pid], nil },
				ParentPID: func(pid int) (int, error) {
					if pid == 10 {
						return 1, nil
					}
					return 10, nil
				},
				StartTime: func(pid int) (uint64, error) { return starts[pid], nil },
			})
			c, err := reg.Register(registry.Request{ID: "m", Cgroup: "/m/payload", Ceiling: "network=false", Activate: registry.ActivateExec, SetupProgram: prog})
			if err != nil {
				t.Fatal(err)
			}
			f.cgs.SetPid(10, "/m")
			f.cgs.SetPid(20, "/m/payload")
			if _, err := reg.CheckPending(); err != nil {
				t.Fatal(err)
			}
			if got, _ := reg.Get("m"); got.State != state.StatePending {
				t.Fatalf("first check: %q %q, want the inner child adopted", got.State, got.ActivationReason)
			}
			exe[20], starts[20] = 424242, tc.start
			if tc.newPid {
				exe[21], starts[21] = 424242, 9
				f.cgs.SetPid(21, "/m/payload")
			}
			if _, err := reg.CheckPending(); err != nil {
				t.Fatal(err)
			}
			got, _ := reg.Get("m")
			if (got.State == state.StatePending) != tc.pending || f.entry(t, c.CgroupID).Pending != tc.pending {
				t.Fatalf("second check: %q %q, want pending=%v", got.State, got.ActivationReason, tc.pending)
			}
		})
	}
}

// TestSetupProgramValidation: a setup program is refused unless it is an
// existing regular file given by absolute path, with activate=exec, for a
// cgroup below a machine's own.
func TestSetupProgramValidation(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "systemd-nspawn")
	if err := os.WriteFile(prog, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, cgroup, prog string
		activate           registry.Activation
		want               string
	}{
		{"relative", "/m/payload", "systemd-nspawn", registry.ActivateExec, "not an absolute path"},
		{"missing", "/m/payload", filepath.Join(dir, "nope"), registry.ActivateExec, "no such file"},
		{"directory", "/m/payload", dir, registry.ActivateExec, "not a regular file"},
		{"activate now", "/m/payload", prog, registry.ActivateNow, "only with activate=exec"},
		{"below the root", "/payload", prog, registry.ActivateExec, "below the machine's own cgroup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newPendingFixture(t)
			f.cgs.Add(tc.cgroup)
			_, err := f.reg.Register(registry.Request{ID: "m", Cgroup: tc.cgroup, Ceiling: "network=false", Activate: tc.activate, SetupProgram: tc.prog})
			if !errors.Is(err, registry.ErrBadRequest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrBadRequest naming %q", err, tc.want)
			}
			if len(f.enf.M) != 0 {
				t.Fatalf("map %v after a refused registration", f.enf.M)
			}
		})
	}
}
