package registry_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/quick"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/progcheck"
)

// devFixture is a registry whose init processes have known terminals.
type devFixture struct {
	reg   *registry.Registry
	enf   *registrytest.Enforcer
	cgs   *registrytest.Cgroups
	path  string
	terms map[int][]entry.Terminal
	start map[int]uint64
	deny  bool
}

func newDevFixture(t *testing.T, denyConsole bool) *devFixture {
	t.Helper()
	f := &devFixture{enf: registrytest.NewEnforcer(true), cgs: registrytest.NewCgroups(),
		path: filepath.Join(t.TempDir(), "state.json"), terms: map[int][]entry.Terminal{}, start: map[int]uint64{}, deny: denyConsole}
	f.reg = f.open()
	return f
}

func (f *devFixture) open() *registry.Registry {
	return registry.New(registry.Options{
		Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path, DenyConsoleEgress: f.deny,
		StartTime: func(pid int) (uint64, error) {
			if s, ok := f.start[pid]; ok {
				return s, nil
			}
			return 0, fmt.Errorf("pid %d: no such process", pid)
		},
		OwnTerminals: func(pid int) ([]entry.Terminal, error) {
			if ts, ok := f.terms[pid]; ok {
				return ts, nil
			}
			return nil, fmt.Errorf("pid %d: no such process", pid)
		},
	})
}

// kernelDevices is the device list of a container's map entry.
func (f *devFixture) kernelDevices(t *testing.T, c state.Container) []entry.Device {
	t.Helper()
	en, err := f.enf.Lookup(c.CgroupID)
	if err != nil {
		t.Fatal(err)
	}
	return en.AllowDevices
}

func TestAllowDevicesRegistered(t *testing.T) {
	f := newDevFixture(t, false)
	f.cgs.Add("/c/a")
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Ceiling: "network=false", AllowDevices: []string{"c 226:128", "/dev/null", "b 7:0"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []devallow.Device{{Major: 226, Minor: 128}, {Major: 1, Minor: 3, Path: "/dev/null"}, {Block: true, Major: 7}}
	if fmt.Sprint(c.AllowDevices) != fmt.Sprint(want) {
		t.Errorf("AllowDevices = %v, want %v", c.AllowDevices, want)
	}
	kwant := []entry.Device{{Dev: 226<<20 | 128}, {Dev: 1<<20 | 3}, {Block: true, Dev: 7 << 20}}
	if got := f.kernelDevices(t, c); fmt.Sprint(got) != fmt.Sprint(kwant) {
		t.Errorf("map entry's AllowDevices = %v, want %v", got, kwant)
	}
	// The state file keeps them; a restarted daemon that finds the map
	// entry gone installs them again.
	f.enf.M = map[uint64]entry.Entry{}
	reg := f.open()
	if _, err := reg.Reconcile(); err != nil {
		t.Fatal(err)
	}
	got, err := reg.Get("a")
	if err != nil || fmt.Sprint(got.AllowDevices) != fmt.Sprint(want) {
		t.Errorf("after restart: %v, %v", got.AllowDevices, err)
	}
	if got := f.kernelDevices(t, c); fmt.Sprint(got) != fmt.Sprint(kwant) {
		t.Errorf("re-installed AllowDevices = %v, want %v", got, kwant)
	}
}

func TestAllowDevicesRefused(t *testing.T) {
	f := newDevFixture(t, false)
	f.cgs.Add("/c/a")
	many := make([]string, devallow.Max+1)
	for i := range many {
		many[i] = fmt.Sprintf("c 10:%d", i)
	}
	for _, c := range []struct {
		req registry.Request
		why string
	}{
		{registry.Request{AllowDevices: []string{"c 195:*"}}, "wildcards"},
		{registry.Request{AllowDevices: []string{"c 1:3", "c 1:3"}}, "listed twice"},
		{registry.Request{AllowDevices: many}, "at most 16"},
		{registry.Request{AllowDevices: []string{"/dev/null", "c 1:3"}}, "listed twice"},
		{registry.Request{AllowDevices: []string{"/etc/hostname"}}, "not a device node"},
		{registry.Request{AllowDevices: []string{"/dev/no-such-device"}}, "no such file"},
		{registry.Request{AllowDevices: []string{"/dev/null"}, Activate: registry.ActivateExec}, "needs entrypoint.root"},
		{registry.Request{TerminalsOfInit: true}, "need init_pid"},
		{registry.Request{Terminals: make([]entry.Terminal, entry.MaxTerminals+1)}, "at most 8"},
	} {
		req := c.req
		req.ID, req.Cgroup, req.Ceiling = "a", "/c/a", "network=false"
		_, err := f.reg.Register(req)
		if !errors.Is(err, registry.ErrBadRequest) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%+v: %v; want ErrBadRequest naming %q", c.req, err, c.why)
		}
	}
	if f.enf.Len() != 0 || len(f.reg.List()) != 0 {
		t.Error("a refused registration left something behind")
	}
}

// TestAllowDevicesInsideRoot: a path entry is the device node inside the
// registered process's root, never the host's.
func TestAllowDevicesInsideRoot(t *testing.T) {
	f := newDevFixture(t, false)
	f.cgs.Add("/c/a")
	root := t.TempDir()
	_, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Activate: registry.ActivateExec,
		Entrypoint: &progcheck.Program{Path: "/bin/true", Root: root}, AllowDevices: []string{"/dev/null"}})
	if !errors.Is(err, registry.ErrBadRequest) || !strings.Contains(err.Error(), root) {
		t.Errorf("/dev/null in an empty root: %v, want ErrBadRequest naming the root", err)
	}
}

// TestAllowDevicesMeet: a child (by parent id or by cgroup) keeps only
// the devices every registration it is nested in lists; one that lists
// none leaves none.
func TestAllowDevicesMeet(t *testing.T) {
	f := newDevFixture(t, false)
	f.cgs.Add("/p")
	f.cgs.Add("/p/child")
	f.cgs.Add("/q")
	f.cgs.Add("/p/bare")
	f.cgs.Add("/p/bare/inner")
	if _, err := f.reg.Register(registry.Request{ID: "p", Cgroup: "/p", AllowDevices: []string{"c 226:128", "c 10:200"}}); err != nil {
		t.Fatal(err)
	}
	c, err := f.reg.Register(registry.Request{ID: "child", Cgroup: "/p/child", AllowDevices: []string{"c 10:200", "c 1:3", "b 7:0"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []devallow.Device{{Major: 10, Minor: 200}}; fmt.Sprint(c.AllowDevices) != fmt.Sprint(want) {
		t.Errorf("nested by cgroup: %v, want %v", c.AllowDevices, want)
	}
	if got := f.kernelDevices(t, c); fmt.Sprint(got) != fmt.Sprint([]entry.Device{{Dev: 10<<20 | 200}}) {
		t.Errorf("nested by cgroup, map entry: %v", got)
	}
	q, err := f.reg.Register(registry.Request{ID: "q", Cgroup: "/q", Parent: "p", AllowDevices: []string{"c 226:128", "c 4:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []devallow.Device{{Major: 226, Minor: 128}}; fmt.Sprint(q.AllowDevices) != fmt.Sprint(want) {
		t.Errorf("nested by parent id: %v, want %v", q.AllowDevices, want)
	}
	if _, err := f.reg.Register(registry.Request{ID: "bare", Cgroup: "/p/bare"}); err != nil {
		t.Fatal(err)
	}
	in, err := f.reg.Register(registry.Request{ID: "inner", Cgroup: "/p/bare/inner", AllowDevices: []string{"c 10:200"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.AllowDevices) != 0 || len(f.kernelDevices(t, in)) != 0 {
		t.Errorf("under a registration that lists none: %v", in.AllowDevices)
	}
}

// TestAllowDevicesNeverWiden: whatever a parent and its child list, the
// child's registered list holds only devices the parent lists too, and
// every device both list.
func TestAllowDevicesNeverWiden(t *testing.T) {
	gen := func(bits uint8) []string {
		var out []string
		for i := 0; i < 8; i++ {
			if bits&(1<<i) != 0 {
				out = append(out, fmt.Sprintf("c 10:%d", i))
			}
		}
		return out
	}
	n := 0
	prop := func(parent, child uint8, byCgroup bool) bool {
		f := newDevFixture(t, false)
		n++
		p, c := fmt.Sprintf("/p%d", n), fmt.Sprintf("/p%d/c", n)
		f.cgs.Add(p)
		f.cgs.Add(c)
		if !byCgroup {
			c = fmt.Sprintf("/o%d", n)
			f.cgs.Add(c)
		}
		if _, err := f.reg.Register(registry.Request{ID: "p", Cgroup: p, AllowDevices: gen(parent)}); err != nil {
			t.Log(err)
			return false
		}
		req := registry.Request{ID: "c", Cgroup: c, AllowDevices: gen(child)}
		if !byCgroup {
			req.Parent = "p"
		}
		got, err := f.reg.Register(req)
		if err != nil {
			t.Log(err)
			return false
		}
		var bits uint8
		for _, d := range got.AllowDevices {
			bits |= 1 << d.Minor
		}
		return bits == parent&child && len(f.kernelDevices(t, got)) == len(got.AllowDevices)
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 100}); err != nil {
		t.Error(err)
	}
}

func TestOwnTerminalsOfInit(t *testing.T) {
	f := newDevFixture(t, false)
	f.cgs.Add("/c/a")
	f.cgs.SetPid(10, "/c/a")
	f.start[10] = 500
	pty := entry.Terminal{Dev: 136<<20 | 3, PtsDev: 25}
	f.terms[10] = []entry.Terminal{pty}
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", InitPID: 10, Activate: registry.ActivateExec, TerminalsOfInit: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []state.Terminal{{Dev: pty.Dev, PtsDev: 25}}; fmt.Sprint(c.Terminals) != fmt.Sprint(want) {
		t.Errorf("Terminals = %v, want %v", c.Terminals, want)
	}
	en, err := f.enf.Lookup(c.CgroupID)
	if err != nil || len(en.Terminals) != 1 || en.Terminals[0] != pty {
		t.Errorf("map entry's Terminals = %v, %v", en.Terminals, err)
	}
	// Given by the caller (the API, for its client).
	f.cgs.Add("/c/b")
	c, err = f.reg.Register(registry.Request{ID: "b", Cgroup: "/c/b", Terminals: []entry.Terminal{{Dev: 4<<20 | 64}}})
	if err != nil || len(c.Terminals) != 1 || c.Terminals[0].Dev != 4<<20|64 {
		t.Errorf("given terminals: %v, %v", c.Terminals, err)
	}
	// An init that cannot be read refuses the registration.
	f.cgs.Add("/c/d")
	f.cgs.SetPid(11, "/c/d")
	f.start[11] = 600
	if _, err := f.reg.Register(registry.Request{ID: "d", Cgroup: "/c/d", InitPID: 11, Activate: registry.ActivateExec, TerminalsOfInit: true}); !errors.Is(err, registry.ErrBadRequest) {
		t.Errorf("unreadable init: %v, want ErrBadRequest", err)
	}
	if _, err := f.reg.Get("d"); err == nil {
		t.Error("a refused registration is listed")
	}
}

func TestDenyConsoleEgress(t *testing.T) {
	f := newDevFixture(t, false)
	f.cgs.Add("/p")
	f.cgs.Add("/p/c")
	f.cgs.Add("/o")
	p, err := f.reg.Register(registry.Request{ID: "p", Cgroup: "/p", Ceiling: "network=false", DenyConsoleEgress: true})
	if err != nil || !p.DenyConsoleEgress {
		t.Fatalf("asked: %v, %v", p.DenyConsoleEgress, err)
	}
	if en, _ := f.enf.Lookup(p.CgroupID); !en.DenyConsoleEgress {
		t.Error("map entry without DenyConsoleEgress")
	}
	c, err := f.reg.Register(registry.Request{ID: "c", Cgroup: "/p/c"})
	if err != nil || !c.DenyConsoleEgress {
		t.Errorf("nested by cgroup: %v, %v (an outer registration's choice holds)", c.DenyConsoleEgress, err)
	}
	o, err := f.reg.Register(registry.Request{ID: "o", Cgroup: "/o", Parent: "p"})
	if err != nil || !o.DenyConsoleEgress {
		t.Errorf("nested by parent id: %v, %v", o.DenyConsoleEgress, err)
	}
	g := newDevFixture(t, true) // deny_console_egress: true
	g.cgs.Add("/x")
	x, err := g.reg.Register(registry.Request{ID: "x", Cgroup: "/x"})
	if err != nil || !x.DenyConsoleEgress {
		t.Errorf("daemon setting: %v, %v", x.DenyConsoleEgress, err)
	}
}

// TestDeviceFieldsSurviveNarrowing: narrowing re-installs the entry with
// the state's device list and terminals.
func TestDeviceFieldsSurviveNarrowing(t *testing.T) {
	f := newDevFixture(t, false)
	f.cgs.Add("/c/a")
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", AllowDevices: []string{"c 226:128"}, Terminals: []entry.Terminal{{Dev: 4<<20 | 1}}})
	if err != nil {
		t.Fatal(err)
	}
	// A map that does not read the lists back (as a Lookup may not).
	en := f.enf.M[c.CgroupID]
	en.AllowDevices, en.Terminals = nil, nil
	f.enf.M[c.CgroupID] = en
	if _, err := f.reg.Narrow("a", "network=false"); err != nil {
		t.Fatal(err)
	}
	en = f.enf.M[c.CgroupID]
	if len(en.AllowDevices) != 1 || len(en.Terminals) != 1 || en.Ceiling.Network {
		t.Errorf("after narrowing: %+v", en)
	}
}
