package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

var (
	full     = policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}
	noShell  = policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}
	noAccess = policy.KernelCeiling{Shell: policy.ShellReadOnly}
)

// TestOpenRefusesBeforeCreatingAnything: a configuration that cannot be
// enforced is refused before the enforcer is opened (the pin directory is
// never made) and before any cgroup exists. Needs no privileges.
func TestOpenRefusesBeforeCreatingAnything(t *testing.T) {
	pins := filepath.Join(t.TempDir(), "pins")
	for _, c := range []struct {
		name string
		cfg  Config
		is   func(error) bool
	}{
		{"exec allow list without shell=none", Config{Ceiling: noAccess, Entrypoint: "/bin/true", ExecAllow: []string{"/bin/true"}}, nil},
		{"no entrypoint", Config{Ceiling: full}, nil},
		// /bin/sh: dash (in /etc/shells) on Debian, BusyBox in the VM.
		{"shell=none with a shell entrypoint", Config{Ceiling: noShell, Entrypoint: "/bin/sh"},
			func(err error) bool { var ue *progcheck.UnsafeError; return errors.As(err, &ue) }},
		{"shell=none with an unreadable allowed program", Config{Ceiling: noShell, Entrypoint: "/bin/true", ExecAllow: []string{"/enforcerd-test-no-such-file"}}, nil},
		{"missing cgroup parent", Config{Ceiling: full, Entrypoint: "/bin/true", CgroupParent: "/enforcerd-test-no-such-cgroup"}, nil},
	} {
		c.cfg.PinDir = pins
		sb, err := Open(c.cfg)
		if err == nil {
			sb.Close()
			t.Errorf("%s: Open accepted", c.name)
			continue
		}
		if c.is != nil && !c.is(err) {
			t.Errorf("%s: error %v of the wrong kind", c.name, err)
		}
		if _, serr := os.Stat(pins); serr == nil {
			t.Fatalf("%s: the enforcer was opened before the refusal (%v)", c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestNothingRunsUnregistered: Run and WatchDenials refuse a sandbox whose
// registration did not succeed, without starting anything.
func TestNothingRunsUnregistered(t *testing.T) {
	var sb Sandbox
	cmd := exec.Command("/bin/true")
	if err := sb.Run(cmd); !errors.Is(err, ErrNotRegistered) || cmd.Process != nil {
		t.Errorf("Run: %v, process %v", err, cmd.Process)
	}
	if _, err := sb.WatchDenials(func(Denial) {}); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("WatchDenials: %v", err)
	}
}

// TestEntry: the registration lists --exec-allow files by identity, and
// the vetted entrypoint: as the only file the first exec may take
// (pending), or on the list when it cannot be noted at exec;
// partial coverage accepted at Open is recorded in the entry.
func TestEntry(t *testing.T) {
	dir := t.TempDir()
	ep, other := filepath.Join(dir, "agent"), filepath.Join(dir, "tool")
	for _, p := range []string{ep, other} {
		if err := os.WriteFile(p, []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id := func(p string) entry.FileID {
		f, err := entry.FileIDOf(p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	gap := coverage.Gap{Code: coverage.GapTamper}
	epID := id(ep) // as Open vets it
	sb := &Sandbox{cfg: Config{Ceiling: noShell, Entrypoint: ep, ExecAllow: []string{other}}, cov: coverage.Coverage{Partial: []coverage.Gap{gap}}, entryID: &epID, allowIDs: []entry.FileID{id(other)}}
	for _, c := range []struct {
		pending     bool
		want        []entry.FileID
		entrypoints []entry.FileID
	}{{true, []entry.FileID{id(other)}, []entry.FileID{id(ep)}}, {false, []entry.FileID{id(other), id(ep)}, nil}} {
		en := sb.entry(c.pending)
		if en.Pending != c.pending || !slices.Equal(en.ExecAllow, c.want) || !slices.Equal(en.Entrypoints, c.entrypoints) || !en.AllowPartial || en.Ceiling != noShell {
			t.Errorf("pending=%v: %+v; want allow list %v, entrypoints %v", c.pending, en, c.want, c.entrypoints)
		}
	}
	sb = &Sandbox{cfg: Config{Ceiling: full, Entrypoint: ep, AuditOnly: true}}
	if en := sb.entry(false); len(en.ExecAllow) != 0 || en.AllowPartial || !en.AuditOnly {
		t.Errorf("shell=full: %+v", en)
	}
	// A missing allowed file is refused when Open vets the files, before
	// anything is set up.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, "gone")
	if _, err := Open(Config{Ceiling: noShell, Entrypoint: self, ExecAllow: []string{gone}}); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), gone) {
		t.Errorf("a missing allowed file: %v, want an error naming it", err)
	}
}

// TestEntryWriteRoots: the configured writable roots reach the entry.
func TestEntryWriteRoots(t *testing.T) {
	roots := []entry.FileID{{Dev: 1, Ino: 2}, {Dev: 3, Ino: 4}}
	noWrite := policy.KernelCeiling{Network: true, Shell: policy.ShellFull}
	sb := &Sandbox{cfg: Config{Ceiling: noWrite, Entrypoint: "/bin/true", WriteRoots: roots}}
	if en := sb.entry(false); !slices.Equal(en.WriteRoots, roots) {
		t.Fatalf("entry %+v; want roots %v", en, roots)
	}
}

// TestEntryDevices: the device allow list, the own terminals and the
// console egress choice reach the entry; too many of either is refused
// before anything is opened.
func TestEntryDevices(t *testing.T) {
	devs := []entry.Device{{Dev: 226<<20 | 128}, {Block: true, Dev: 7 << 20}}
	terms := []entry.Terminal{{Dev: 136<<20 | 3, PtsDev: 25}}
	sb := &Sandbox{cfg: Config{Ceiling: full, Entrypoint: "/bin/true", AllowDevices: devs, Terminals: terms, DenyConsoleEgress: true}}
	if en := sb.entry(true); !slices.Equal(en.AllowDevices, devs) || !slices.Equal(en.Terminals, terms) || !en.DenyConsoleEgress {
		t.Fatalf("entry %+v; want devices %v, terminals %v, console egress denied", en, devs, terms)
	}
	pins := filepath.Join(t.TempDir(), "pins")
	for _, cfg := range []Config{
		{Ceiling: full, Entrypoint: "/bin/true", AllowDevices: make([]entry.Device, entry.MaxAllowDevices+1), PinDir: pins},
		{Ceiling: full, Entrypoint: "/bin/true", Terminals: make([]entry.Terminal, entry.MaxTerminals+1), PinDir: pins},
	} {
		if sb, err := Open(cfg); err == nil {
			sb.Close()
			t.Errorf("Open accepted %d devices, %d terminals", len(cfg.AllowDevices), len(cfg.Terminals))
		}
		if _, err := os.Stat(pins); err == nil {
			t.Fatal("the enforcer was opened before the refusal")
		}
	}
}
