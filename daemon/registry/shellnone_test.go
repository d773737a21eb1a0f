package registry_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// programsFixture is a registry whose program checks are fakes: an
// entrypoint path or a pid in unsafe is a shell; a path in missing does
// not resolve.
type programsFixture struct {
	reg             *registry.Registry
	enf             *registrytest.Enforcer
	cgs             *registrytest.Cgroups
	path            string
	unsafe, missing map[string]bool
	unsafePids      map[int]bool
	entrypoints     []string                       // every CheckEntrypoint call's path
	processes       [][]int                        // every CheckProcesses call
	interps         map[string][]progcheck.FileRef // CheckEntrypoint's by path
	files           map[string][]progcheck.FileRef // the same
	running         []progcheck.FileRef            // VetProcesses's
}

func newProgramsFixture(t *testing.T) *programsFixture {
	t.Helper()
	f := &programsFixture{enf: registrytest.NewEnforcer(true), cgs: registrytest.NewCgroups(),
		path:   filepath.Join(t.TempDir(), "state.json"),
		unsafe: map[string]bool{"/bin/sh": true}, missing: map[string]bool{"/nope": true}, unsafePids: map[int]bool{},
		interps: map[string][]progcheck.FileRef{}, files: map[string][]progcheck.FileRef{}}
	f.enf.CanShell = true
	f.reg = registry.New(registry.Options{
		Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path,
		StartTime: func(pid int) (uint64, error) { return 1, nil },
		CheckEntrypoint: func(p progcheck.Program) (progcheck.Vetted, error) {
			f.entrypoints = append(f.entrypoints, p.Path)
			switch {
			case f.missing[p.Path]:
				return progcheck.Vetted{}, fmt.Errorf("%w: %s", progcheck.ErrNotFound, p.Path)
			case f.unsafe[p.Path]:
				return progcheck.Vetted{Resolved: p.Path}, &progcheck.UnsafeError{Findings: []progcheck.Finding{{Name: p.Path, Kind: progcheck.Shell, Reason: "fake"}}}
			}
			return progcheck.Vetted{Resolved: p.Path, Files: f.files[p.Path], Interps: f.interps[p.Path]}, nil
		},
		VetProcesses: func(pids []int) ([]progcheck.FileRef, error) { return f.running, nil },
		CheckProcesses: func(pids []int) error {
			f.processes = append(f.processes, pids)
			for _, pid := range pids {
				if f.unsafePids[pid] {
					return &progcheck.UnsafeError{Findings: []progcheck.Finding{{Name: fmt.Sprintf("pid %d", pid), Kind: progcheck.MultiCall, Reason: "fake"}}}
				}
			}
			return nil
		},
	})
	return f
}

func entrypoint(p string) *progcheck.Program {
	return &progcheck.Program{Path: p, Root: "/proc/1/root/rootfs"}
}

// nothingLeft asserts that a refused registration left no map entry and
// no container.
func (f *programsFixture) nothingLeft(t *testing.T, what string) {
	t.Helper()
	if f.enf.Len() != 0 || f.reg.Len() != 0 {
		t.Fatalf("%s: refused, but the map has %d entries and the registry %d containers", what, f.enf.Len(), f.reg.Len())
	}
	if cs, err := state.Load(f.path); err != nil || len(cs) != 0 {
		t.Fatalf("%s: refused, but the state file has %d containers (%v)", what, len(cs), err)
	}
}

// A registration pending until the first exec under shell=none allows
// that exec whatever it is: without an entrypoint the daemon cannot vet
// it, and is refused before anything is installed.
func TestShellNonePendingWithoutEntrypointRefused(t *testing.T) {
	f := newProgramsFixture(t)
	f.cgs.Add("/c/a")
	_, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Ceiling: "shell=none", Activate: registry.ActivateExec})
	if !errors.Is(err, registry.ErrEntrypointRequired) || !strings.Contains(err.Error(), "entrypoint") {
		t.Fatalf("err = %v, want ErrEntrypointRequired", err)
	}
	f.nothingLeft(t, "no entrypoint")
	_, err = f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Ceiling: "shell=none", Activate: registry.ActivateExec, Entrypoint: entrypoint("/nope")})
	if !errors.Is(err, registry.ErrEntrypointRequired) || !strings.Contains(err.Error(), "/nope") {
		t.Fatalf("unresolvable entrypoint: err = %v, want ErrEntrypointRequired naming it", err)
	}
	f.nothingLeft(t, "unresolvable entrypoint")
}

func TestShellNonePendingUnsafeEntrypointRefused(t *testing.T) {
	f := newProgramsFixture(t)
	f.cgs.Add("/c/a")
	_, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Ceiling: "shell=none", Activate: registry.ActivateExec, Entrypoint: entrypoint("/bin/sh")})
	if !errors.Is(err, registry.ErrUnsafeProgram) || !strings.Contains(err.Error(), "/bin/sh") || !strings.Contains(err.Error(), "shell") {
		t.Fatalf("err = %v, want ErrUnsafeProgram naming /bin/sh and its kind", err)
	}
	f.nothingLeft(t, "unsafe entrypoint")
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Ceiling: "shell=none", Activate: registry.ActivateExec, Entrypoint: entrypoint("/bin/agent")})
	if err != nil {
		t.Fatal(err)
	}
	if c.State != state.StatePending || c.Entrypoint == nil || c.Entrypoint.Path != "/bin/agent" {
		t.Fatalf("registered %+v, want pending with its entrypoint", c)
	}
	if cs, _ := state.Load(f.path); len(cs) != 1 || cs[0].Entrypoint == nil {
		t.Fatalf("state file %+v does not keep the entrypoint", cs)
	}
}

// The check is on the effective ceiling: shell=none reached through a
// role or a parent is vetted; other ceilings never are.
func TestShellNoneEffectiveCeilingVetted(t *testing.T) {
	f := newProgramsFixture(t)
	for _, g := range []string{"/c/p", "/c/role", "/c/child", "/c/ro"} {
		f.cgs.Add(g)
	}
	if _, err := f.reg.Register(registry.Request{ID: "ro", Cgroup: "/c/ro", Ceiling: "shell=read_only", Activate: registry.ActivateExec}); err != nil {
		t.Fatalf("shell=read_only without entrypoint: %v", err)
	}
	if len(f.entrypoints) != 0 {
		t.Fatalf("a shell=read_only registration was vetted: %v", f.entrypoints)
	}
	_, err := f.reg.Register(registry.Request{ID: "role", Cgroup: "/c/role", Role: "advisor", Activate: registry.ActivateExec, Entrypoint: entrypoint("/bin/sh")})
	if !errors.Is(err, registry.ErrUnsafeProgram) {
		t.Fatalf("role advisor (shell=none) with /bin/sh: %v, want ErrUnsafeProgram", err)
	}
	if _, err := f.reg.Register(registry.Request{ID: "p", Cgroup: "/c/p", Ceiling: "shell=none", Activate: registry.ActivateExec, Entrypoint: entrypoint("/bin/agent")}); err != nil {
		t.Fatal(err)
	}
	_, err = f.reg.Register(registry.Request{ID: "child", Cgroup: "/c/child", Parent: "p", Role: "general", Activate: registry.ActivateExec})
	if !errors.Is(err, registry.ErrEntrypointRequired) {
		t.Fatalf("child of a shell=none parent without entrypoint: %v, want ErrEntrypointRequired", err)
	}
	if _, err := f.reg.Register(registry.Request{ID: "child", Cgroup: "/c/child", Parent: "p", Role: "general", Activate: registry.ActivateExec, Entrypoint: entrypoint("/bin/agent")}); err != nil {
		t.Fatalf("child of a shell=none parent with a safe entrypoint: %v", err)
	}
}

// A shell=none ceiling in force at once (activate=now, or pending turned
// immediate by another process in the cgroup) lets run what the cgroup's
// processes already run: vetted after the install, rolled back if unsafe.
func TestShellNoneImmediateVetsRunningPrograms(t *testing.T) {
	f := newProgramsFixture(t)
	f.cgs.Add("/c/now")
	f.cgs.SetPid(10, "/c/now")
	f.cgs.SetPid(11, "/c/now")
	f.unsafePids[11] = true
	_, err := f.reg.Register(registry.Request{ID: "now", Cgroup: "/c/now", Ceiling: "shell=none"})
	if !errors.Is(err, registry.ErrUnsafeProgram) || !strings.Contains(err.Error(), "pid 11") {
		t.Fatalf("activate=now over a shell: %v, want ErrUnsafeProgram naming pid 11", err)
	}
	f.nothingLeft(t, "activate=now over a shell")
	// Pending, but another process is there: in force at once, vetted.
	_, err = f.reg.Register(registry.Request{ID: "now", Cgroup: "/c/now", Ceiling: "shell=none", Activate: registry.ActivateExec, InitPID: 10, Entrypoint: entrypoint("/bin/agent")})
	if !errors.Is(err, registry.ErrUnsafeProgram) {
		t.Fatalf("pending turned immediate over a shell: %v, want ErrUnsafeProgram", err)
	}
	f.nothingLeft(t, "pending turned immediate over a shell")
	f.unsafePids[11] = false
	c, err := f.reg.Register(registry.Request{ID: "now", Cgroup: "/c/now", Ceiling: "shell=none"})
	if err != nil || c.Kernel.Shell != policy.ShellNone {
		t.Fatalf("activate=now over safe programs: %+v, %v", c, err)
	}
	if n := len(f.processes); n != 3 || len(f.processes[n-1]) != 2 {
		t.Fatalf("CheckProcesses calls %v, want 3 with both pids", f.processes)
	}
	f.cgs.Add("/c/full")
	f.cgs.SetPid(12, "/c/full")
	f.unsafePids[12] = true
	if _, err := f.reg.Register(registry.Request{ID: "full", Cgroup: "/c/full", Ceiling: "shell=read_only"}); err != nil {
		t.Fatalf("shell=read_only over a shell: %v", err)
	}
}

// Narrowing to shell=none is vetted like a registration; a refused
// narrowing leaves the ceiling as it was.
func TestShellNoneNarrowVetted(t *testing.T) {
	f := newProgramsFixture(t)
	for _, g := range []string{"/c/pend", "/c/pend-none", "/c/pend-ok", "/c/live"} {
		f.cgs.Add(g)
	}
	reg := func(id string, ep *progcheck.Program, act registry.Activation) {
		t.Helper()
		if _, err := f.reg.Register(registry.Request{ID: id, Cgroup: "/c/" + id, Ceiling: "shell=read_only", Activate: act, Entrypoint: ep}); err != nil {
			t.Fatal(err)
		}
	}
	reg("pend", entrypoint("/bin/sh"), registry.ActivateExec)
	reg("pend-none", nil, registry.ActivateExec)
	reg("pend-ok", entrypoint("/bin/agent"), registry.ActivateExec)
	f.cgs.SetPid(20, "/c/live")
	f.unsafePids[20] = true
	reg("live", nil, registry.ActivateNow)
	for id, want := range map[string]error{"pend": registry.ErrUnsafeProgram, "pend-none": registry.ErrEntrypointRequired, "live": registry.ErrUnsafeProgram} {
		before, _ := f.reg.Get(id)
		cgid := before.CgroupID
		en, _ := f.enf.Lookup(cgid)
		if _, err := f.reg.Narrow(id, "shell=none"); !errors.Is(err, want) {
			t.Errorf("narrow %s to shell=none: %v, want %v", id, err, want)
		}
		after, _ := f.reg.Get(id)
		en2, _ := f.enf.Lookup(cgid)
		if after.Kernel != before.Kernel || en2.Ceiling != en.Ceiling || en2.Pending != en.Pending {
			t.Errorf("%s: a refused narrowing changed the ceiling: %v → %v, map %+v → %+v", id, before.Kernel, after.Kernel, en, en2)
		}
	}
	if c, err := f.reg.Narrow("pend-ok", "shell=none"); err != nil || c.Kernel.Shell != policy.ShellNone {
		t.Fatalf("narrow pend-ok: %+v, %v", c, err)
	}
	f.unsafePids[20] = false
	if c, err := f.reg.Narrow("live", "shell=none"); err != nil || c.Kernel.Shell != policy.ShellNone {
		t.Fatalf("narrow live over safe programs: %+v, %v", c, err)
	}
}

// The program interpreters vetted for a pending shell=none entrypoint go
// into the kernel entry (as interpreters, not programs) and the state
// file; a daemon started on a state file from a build that did not record
// them vets the running programs' interpreters and lists them.
func TestShellNoneEntrypointInterpreters(t *testing.T) {
	f := newProgramsFixture(t)
	f.cgs.Add("/c/a")
	ld := progcheck.FileRef{Path: "/lib64/ld-linux-x86-64.so.2", Dev: unix.Mkdev(8, 1), Ino: 77}
	f.interps["/bin/agent"] = []progcheck.FileRef{ld}
	agent := progcheck.FileRef{Path: "/bin/agent", Dev: unix.Mkdev(8, 1), Ino: 78}
	f.files["/bin/agent"] = []progcheck.FileRef{agent}
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Ceiling: "shell=none", Activate: registry.ActivateExec, Entrypoint: entrypoint("/bin/agent")})
	if err != nil {
		t.Fatal(err)
	}
	want := entry.FileID{Dev: 8<<20 | 1, Ino: 77}
	en, _ := f.enf.Lookup(c.CgroupID)
	if len(en.ExecInterp) != 1 || en.ExecInterp[0] != want || len(en.ExecAllow) != 0 {
		t.Fatalf("entry interpreters %v, programs %v; want [%v] and no program", en.ExecInterp, en.ExecAllow, want)
	}
	if wantEntry := (entry.FileID{Dev: 8<<20 | 1, Ino: 78}); len(en.Entrypoints) != 1 || en.Entrypoints[0] != wantEntry {
		t.Fatalf("entry entrypoints %v, want [%v] (the vetted file: the only one the first exec may name)", en.Entrypoints, wantEntry)
	}
	cs, err := state.Load(f.path)
	if err != nil || len(cs) != 1 || len(cs[0].ExecInterp) != 1 || cs[0].ExecInterp[0] != (state.ExecFile{Path: ld.Path, Dev: want.Dev, Ino: want.Ino}) {
		t.Fatalf("state file %+v (%v): want the interpreter recorded", cs, err)
	}

	// An older build's state: no interpreters. A restart lists those of
	// the running programs.
	cs[0].ExecInterp = nil
	if err := state.Save(f.path, cs); err != nil {
		t.Fatal(err)
	}
	f.enf.M[c.CgroupID] = entry.Entry{Ceiling: en.Ceiling, Pending: en.Pending}
	f.running = []progcheck.FileRef{ld}
	delete(f.interps, "/bin/agent")
	r2 := registry.New(registry.Options{Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path,
		StartTime:       func(int) (uint64, error) { return 1, nil },
		CheckEntrypoint: func(p progcheck.Program) (progcheck.Vetted, error) { return progcheck.Vetted{Resolved: p.Path}, nil },
		VetProcesses:    func([]int) ([]progcheck.FileRef, error) { return f.running, nil }})
	if _, err := r2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if en := f.enf.M[c.CgroupID]; len(en.ExecInterp) != 1 || en.ExecInterp[0] != want {
		t.Fatalf("after restart: entry interpreters %v, want [%v]", en.ExecInterp, want)
	}
	if got, _ := r2.Get("a"); len(got.ExecInterp) != 1 {
		t.Fatalf("after restart: container interpreters %v", got.ExecInterp)
	}
}
