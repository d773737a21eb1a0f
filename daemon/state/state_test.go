package state

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// good is a container as the daemon writes one: pending, with every list.
func good() Container {
	reg := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dl := reg.Add(30 * time.Second)
	narrow := policy.Ceiling{Network: false, Write: false, Shell: policy.ShellNone, Tools: true, DelegationDepth: 0}
	allow := []string{"api.example.com"}
	return Container{
		ID: "c1", Cgroup: "/machine.slice/c1", CgroupID: 4242, Role: "implement",
		Session: policy.DefaultSession(), Ceiling: narrow, Kernel: narrow.Kernel(), Fingerprint: "sha256:ab",
		Parent: "p0", ToolGroups: "read", ProxyAllow: &allow, Registered: reg,
		InitPID: 10, InitStart: 500, Activation: ActivationAtExec, State: StatePending, PendingDeadline: &dl,
		Entrypoint:   &progcheck.Program{Path: "/agent", Root: "/proc/10/root/rootfs"},
		AllowConnect: []endpoint.Endpoint{mustEndpoint("tcp:10.0.0.1:443")},
		WriteRoots:   []WriteRoot{{Path: "/work", Dev: 2049, Ino: 12}},
		ExecAllow:    []ExecFile{{Path: "/usr/bin/git", Dev: 2049, Ino: 13}},
		ExecInterp:   []ExecFile{{Path: "/lib64/ld-linux-x86-64.so.2", Dev: 2049, Ino: 14}},
	}
}

func mustEndpoint(s string) endpoint.Endpoint {
	e, err := endpoint.Parse(s)
	if err != nil {
		panic(err)
	}
	return e
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	if cs, err := Load(p); err != nil || cs != nil {
		t.Fatalf("missing file: %v, %v; want an empty state", cs, err)
	}
	other := good()
	other.ID, other.CgroupID, other.Cgroup, other.State, other.PendingDeadline, other.Activation = "a0", 7, "/a0", StateActive, nil, ActivationImmediate
	want := []Container{other, good()} // sorted by id
	if err := Save(p, []Container{good(), other}); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if err := Save(p, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(p); err != nil || len(got) != 0 {
		t.Fatalf("empty save: %v, %v", got, err)
	}
}

// TestLoadRefusesBadFields: each field the daemon would never write is
// ErrCorrupt naming the field (the daemon then refuses to start while the
// pinned maps keep enforcing).
func TestLoadRefusesBadFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  func(*Container)
		want string
	}{
		{"empty id", func(c *Container) { c.ID = "" }, "not a container id"},
		{"id with a slash", func(c *Container) { c.ID = "a/b" }, "not a container id"},
		{"cgroup id 0", func(c *Container) { c.CgroupID = 0 }, "cgroup_id 0"},
		{"relative cgroup", func(c *Container) { c.Cgroup = "machine.slice/c1" }, "cgroup"},
		{"root cgroup", func(c *Container) { c.Cgroup = "/" }, "cgroup"},
		{"unclean cgroup", func(c *Container) { c.Cgroup = "/a/../b" }, "cgroup"},
		{"own parent", func(c *Container) { c.Parent = "c1" }, "parent"},
		{"bad parent", func(c *Container) { c.Parent = "-x" }, "parent"},
		{"role with a newline", func(c *Container) { c.Role = "a\nb" }, "role"},
		{"no fingerprint", func(c *Container) { c.Fingerprint = "" }, "fingerprint"},
		{"unknown shell", func(c *Container) { c.Ceiling.Shell = "bash" }, "ceiling.shell"},
		{"unknown kernel shell", func(c *Container) { c.Kernel.Shell = "" }, "kernel.shell"},
		{"ceiling wider than session", func(c *Container) { c.Session.Network = false; c.Ceiling.Network = true }, "wider than its session"},
		{"unknown activation", func(c *Container) { c.Activation = "later" }, "activation"},
		{"unknown state", func(c *Container) { c.State = "asleep" }, "state"},
		{"pending without deadline", func(c *Container) { c.PendingDeadline = nil }, "without a pending_deadline"},
		{"deadline before registration", func(c *Container) { d := c.Registered.Add(-time.Second); c.PendingDeadline = &d }, "before registered"},
		{"active with a deadline", func(c *Container) { c.State = StateActive }, "with a pending_deadline"},
		{"init start without pid", func(c *Container) { c.InitPID = 0 }, "init_pid"},
		{"negative init pid", func(c *Container) { c.InitPID = -1 }, "init_pid"},
		{"bad entrypoint", func(c *Container) { c.Entrypoint.Root = "relative" }, "entrypoint"},
		{"too many endpoints", func(c *Container) {
			for range MaxListLen {
				c.AllowConnect = append(c.AllowConnect, c.AllowConnect[0])
			}
		}, "allow_connect"},
		{"bad endpoint", func(c *Container) { c.AllowConnect[0].Kind = "smtp" }, "allow_connect"},
		{"too many write roots", func(c *Container) {
			for range policy.MaxWriteRoots {
				c.WriteRoots = append(c.WriteRoots, c.WriteRoots[0])
			}
		}, "write_roots"},
		{"relative write root", func(c *Container) { c.WriteRoots[0].Path = "work" }, "write_roots"},
		{"write root without inode", func(c *Container) { c.WriteRoots[0].Ino = 0 }, "write_roots"},
		{"unclean exec file", func(c *Container) { c.ExecAllow[0].Path = "/usr/bin/../bin/git" }, "exec_allow"},
		{"interpreter without inode", func(c *Container) { c.ExecInterp[0].Ino = 0 }, "exec_interp"},
		{"device without major", func(c *Container) { c.AllowDevices = []devallow.Device{{Minor: 3}} }, "allow_devices"},
		{"device twice", func(c *Container) {
			c.AllowDevices = []devallow.Device{{Major: 10, Minor: 1}, {Major: 10, Minor: 1, Path: "/dev/x"}}
		}, "allow_devices"},
		{"setup program without inode", func(c *Container) { c.SetupProgram = &ExecFile{Path: "/usr/bin/systemd-nspawn"} }, "setup_program"},
		{"too many terminals", func(c *Container) { c.Terminals = make([]Terminal, 9) }, "terminals"},
	} {
		c := good()
		tc.bad(&c)
		p := filepath.Join(t.TempDir(), "state.json")
		if err := Save(p, []Container{c}); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrCorrupt naming %q", tc.name, err, tc.want)
		}
	}
}

// TestLoadRefusesBadFiles: what no Save writes.
func TestLoadRefusesBadFiles(t *testing.T) {
	a, b := good(), good()
	b.ID = "c2"
	dupCgroup, _ := json.Marshal(file{Version: fileVersion, Containers: []Container{a, b}})
	b.CgroupID, b.ID = 1, "c1"
	dupID, _ := json.Marshal(file{Version: fileVersion, Containers: []Container{a, b}})
	for name, body := range map[string]string{
		"not json":         "{",
		"version 2":        `{"version":2,"containers":[]}`,
		"no version":       `{"containers":[]}`,
		"same cgroup id":   string(dupCgroup),
		"same id":          string(dupID),
		"container a list": `{"version":1,"containers":{}}`,
	} {
		p := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// FuzzLoad: never panics; an accepted file round-trips through Save.
func FuzzLoad(f *testing.F) {
	b, _ := json.Marshal(file{Version: fileVersion, Containers: []Container{good()}})
	f.Add(b)
	f.Add([]byte(`{"version":1,"containers":[]}`))
	f.Add([]byte(`{"version":1,"containers":[{"id":"a","cgroup":"/a","cgroup_id":1,"fingerprint":"x","session":{"shell":"full"},"ceiling":{"shell":"none"},"kernel":{"shell":"none"}}]}`))
	f.Add([]byte(`{"version":1,"containers":[{"id":"a","state":"pending"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "state.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cs, err := Load(p)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if err := Save(p, cs); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err != nil {
			t.Fatalf("saved an accepted state, load: %v", err)
		}
	})
}

// TestRoundTripDevices: a container's device allow list, own terminals
// and console egress choice read back as they were saved.
func TestRoundTripDevices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	a, b := good(), good()
	a.ID, a.CgroupID, a.Cgroup = "a", 7, "/c/a"
	a.AllowDevices = []devallow.Device{{Major: 226, Minor: 128, Path: "/dev/dri/renderD128"}, {Block: true, Major: 7, Minor: 0}}
	a.Terminals = []Terminal{{Dev: 136<<20 | 3, PtsDev: 25}, {Dev: 4<<20 | 64}}
	a.DenyConsoleEgress = true
	b.ID, b.CgroupID, b.Cgroup = "b", 8, "/c/b"
	in := []Container{a, b}
	if err := Save(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("read back\n%+v\nwant\n%+v", out, in)
	}
}
