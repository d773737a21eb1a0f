package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// The cgroup functions these tests use only stat directories: a temporary
// directory stands in for the cgroup2 mount, needing no privileges.

func mkdirs(t *testing.T, mount string, groups ...string) {
	t.Helper()
	for _, g := range groups {
		if err := os.MkdirAll(filepath.Join(mount, g), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func open(t *testing.T, mount, group string) cgroup.Cgroup {
	t.Helper()
	cg, err := cgroup.Open(mount, group)
	if err != nil {
		t.Fatal(err)
	}
	return cg
}

// fakeMap is a ceiling map: cgroup id → entry.
type fakeMap map[uint64]entry.Entry

func (m fakeMap) Lookup(id uint64) (entry.Entry, error) {
	if en, ok := m[id]; ok {
		return en, nil
	}
	return entry.Entry{}, enforcer.ErrNotRegistered
}

type failingMap struct{}

func (failingMap) Lookup(uint64) (entry.Entry, error) { return entry.Entry{}, unix.EIO }

func TestOuterCeilingsNearestFirst(t *testing.T) {
	mount := t.TempDir()
	mkdirs(t, mount, "/a/b/c")
	a, c := open(t, mount, "/a"), open(t, mount, "/a/b/c")
	noNet := entry.Entry{Ceiling: policy.KernelCeiling{Write: true, Shell: policy.ShellFull}}
	noWrite := entry.Entry{Ceiling: policy.KernelCeiling{Network: true, Shell: policy.ShellFull}}
	outer, err := outerCeilings(fakeMap{a.ID: noNet, c.ID: noWrite}, mount, "/a/b/c")
	if err != nil {
		t.Fatal(err)
	}
	if len(outer) != 2 || outer[0].Cgroup != c || outer[0].Entry.Ceiling != noWrite.Ceiling ||
		outer[1].Cgroup != a || outer[1].Entry.Ceiling != noNet.Ceiling {
		t.Errorf("outer ceilings %+v, want /a/b/c then /a", outer)
	}
	if outer, err := outerCeilings(fakeMap{}, mount, "/a/b"); err != nil || len(outer) != 0 {
		t.Errorf("nothing registered: %+v, %v", outer, err)
	}
}

// TestOuterCeilingsFailClosed: a lookup that fails, or a cgroup on the way
// that cannot be opened, is an error, never "no outer ceiling".
func TestOuterCeilingsFailClosed(t *testing.T) {
	mount := t.TempDir()
	mkdirs(t, mount, "/a")
	if _, err := outerCeilings(failingMap{}, mount, "/a"); !errors.Is(err, unix.EIO) {
		t.Errorf("failing lookup: %v, want EIO", err)
	}
	if _, err := outerCeilings(fakeMap{}, mount, "/a/gone"); err == nil {
		t.Errorf("missing cgroup: no error")
	}
}

// TestDenialFilter: the sandbox's own denials are kept; an outer ceiling's
// are kept, attributed, for processes in the sandbox's subtree (a sub-cgroup
// made after the filter included) and dropped for processes elsewhere;
// denials of unrelated ceilings are dropped.
func TestDenialFilter(t *testing.T) {
	mount := t.TempDir()
	mkdirs(t, mount, "/outer/run", "/outer/sibling", "/other")
	outerCg, run := open(t, mount, "/outer"), open(t, mount, "/outer/run")
	sibling, other := open(t, mount, "/outer/sibling"), open(t, mount, "/other")
	outer := []Outer{{Cgroup: outerCg, Entry: entry.Entry{Ceiling: policy.KernelCeiling{Write: true, Shell: policy.ShellFull}}}}
	keep := denialFilter(run, outer)
	mkdirs(t, mount, "/outer/run/sub/deeper")
	deeper := open(t, mount, "/outer/run/sub/deeper")
	for _, c := range []struct {
		name          string
		ceiling, own  uint64
		kept, byOuter bool
	}{
		{"own ceiling", run.ID, run.ID, true, false},
		{"own ceiling, sub-cgroup", run.ID, deeper.ID, true, false},
		{"outer ceiling, in the sandbox", outerCg.ID, run.ID, true, true},
		{"outer ceiling, sub-cgroup made later", outerCg.ID, deeper.ID, true, true},
		{"outer ceiling, sub-cgroup again (cached)", outerCg.ID, deeper.ID, true, true},
		{"outer ceiling, sibling outside the sandbox", outerCg.ID, sibling.ID, false, false},
		{"outer ceiling, sibling again (cached)", outerCg.ID, sibling.ID, false, false},
		{"unrelated ceiling", other.ID, other.ID, false, false},
	} {
		oc, ok := keep(denial.Denial{CeilingCgroupID: c.ceiling, CgroupID: c.own})
		if ok != c.kept || (oc != nil) != (c.kept && c.byOuter) || oc != nil && oc.Cgroup != outerCg {
			t.Errorf("%s: kept %v by %+v, want kept %v by outer %v", c.name, ok, oc, c.kept, c.byOuter)
		}
	}
}
