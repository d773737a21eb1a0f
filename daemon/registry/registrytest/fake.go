// Package registrytest provides in-memory fakes of the enforcer map and the
// cgroup tree so the registry and the API are testable without BPF.
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package registrytest

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// Enforcer is a fake ceiling map whose coverage is the real rule
// (coverage.Of) for the host it models, with the fake's short gap details
// ("fake: no BPF LSM") in place of the real ones. CanWrite=false models a
// host without BPF LSM (cgroup-BPF attached): write=false ceilings are
// refused with coverage.ErrCannotEnforce unless a container spec layer
// credits them, network=false is partial. CanWrite=true models a host
// with BPF LSM, where every field is enforced in full. Two knobs depart
// from the rule, for tests of what comes after coverage: shell ceilings
// other than full are refused with BPF LSM unless CanShell is set (the
// real enforcer refuses them without its exec maps), and CanShell without
// CanWrite lets them through (shell=none vetting tests on a host without
// BPF LSM).
type Enforcer struct {
	mu       sync.Mutex
	M        map[uint64]entry.Entry
	CanWrite bool
	CanShell bool
	// FailRegister makes every Register fail (an I/O-like error).
	FailRegister bool
}

// errNoLSM is the BPF LSM layer's error on the host a fake without
// CanWrite models.
var errNoLSM = errors.New("fake: no BPF LSM")

// NewEnforcer returns an empty map.
func NewEnforcer(canWrite bool) *Enforcer {
	return &Enforcer{M: map[uint64]entry.Entry{}, CanWrite: canWrite}
}

// Register implements registry.Enforcer: the entry is refused as the
// real enforcer refuses it by coverage (Coverage.Err of CoverageOf).
func (e *Enforcer) Register(cg cgroup.Cgroup, en entry.Entry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.FailRegister {
		return fmt.Errorf("register cgroup %s: injected failure", cg.Group)
	}
	if err := e.coverageOf(en.Subject()).Err(en.AuditOnly, en.AllowPartial); err != nil {
		return fmt.Errorf("register cgroup %s: %w", cg.Group, err)
	}
	e.M[cg.ID] = en
	return nil
}

// Coverage implements registry.Enforcer: the real rule for a registration
// of c alone on the modelled host.
func (e *Enforcer) Coverage(c policy.KernelCeiling) coverage.Coverage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.coverageOf(coverage.Subject{Ceiling: c})
}

// CoverageOf implements registry.Enforcer: the real rule for the entry
// (its endpoints and spec layer included) on the modelled host.
func (e *Enforcer) CoverageOf(en entry.Entry) coverage.Coverage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.coverageOf(en.Subject())
}

// Layers are the kernel layers of the modelled host.
func (e *Enforcer) Layers() coverage.Layers {
	if e.CanWrite {
		return coverage.Layers{}
	}
	return coverage.Layers{LSM: errNoLSM}
}

// coverageOf is coverage.Of on the modelled host, with the CanShell
// knob applied and the fake's gap details.
func (e *Enforcer) coverageOf(s coverage.Subject) coverage.Coverage {
	cov := coverage.Of(s, e.Layers())
	if s.Ceiling.Shell != policy.ShellFull {
		switch {
		case e.CanWrite && !e.CanShell:
			delete(cov.Mechanisms, "shell")
			cov.Missing = append(cov.Missing, coverage.Gap{Code: coverage.GapShell, Field: "shell"})
		case !e.CanWrite && e.CanShell:
			cov.Missing = slices.DeleteFunc(cov.Missing, func(g coverage.Gap) bool { return g.Code == coverage.GapShell })
		}
	}
	for i := range cov.Missing {
		cov.Missing[i].Detail = fakeDetail(cov.Missing[i])
	}
	for i := range cov.Partial {
		cov.Partial[i].Detail = fakeDetail(cov.Partial[i])
	}
	return cov
}

// specNote is how the real rule's details say what a container's spec
// lacks; the fake keeps it on GapWrite.
const specNote = "; the container's spec does not cover it either: "

// fakeDetail is the fake's short detail of a gap of the real rule.
func fakeDetail(g coverage.Gap) string {
	switch g.Code {
	case coverage.GapShell:
		return "fake"
	case coverage.GapWriteInheritedFDs:
		return "fake: container spec"
	case coverage.GapWrite:
		if i := strings.Index(g.Detail, specNote); i >= 0 {
			return "fake: no BPF LSM" + g.Detail[i:]
		}
	}
	return "fake: no BPF LSM"
}

// Unregister implements registry.Enforcer.
func (e *Enforcer) Unregister(id uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.M[id]; !ok {
		return fmt.Errorf("unregister cgroup id %d: %w", id, enforcer.ErrNotRegistered)
	}
	delete(e.M, id)
	return nil
}

// Lookup implements registry.Enforcer.
func (e *Enforcer) Lookup(id uint64) (entry.Entry, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.M[id]
	if !ok {
		return en, fmt.Errorf("cgroup id %d: %w", id, enforcer.ErrNotRegistered)
	}
	return en, nil
}

// List implements registry.Enforcer.
func (e *Enforcer) List() ([]enforcer.Registration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []enforcer.Registration
	for id, en := range e.M {
		out = append(out, enforcer.Registration{CgroupID: id, Entry: en})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CgroupID < out[j].CgroupID })
	return out, nil
}

// Len is the number of map entries.
func (e *Enforcer) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.M)
}

// Cgroups is a fake cgroup tree: group path → id, and pid → group.
// Freezing sets a flag per group; FailFreeze and FailKill inject errors;
// Thawed and Killed record what was done.
type Cgroups struct {
	mu         sync.Mutex
	groups     map[string]uint64
	pids       map[int]string
	next       uint64
	frozen     map[string]bool
	FailFreeze bool
	FailKill   bool
	FailProcs  bool
	Killed     []string
	// BeforeFreeze, when set, runs at the start of Freeze (without the
	// fake's lock): tests simulate an exec racing the freeze.
	BeforeFreeze func(group string)
	// BeforeProcs, when set, runs at the start of Procs (without the
	// fake's lock): tests simulate an exec and a fork racing the pending
	// checker's listing.
	BeforeProcs func(group string)
}

// NewCgroups returns a tree holding only the root (id 1).
func NewCgroups() *Cgroups {
	return &Cgroups{groups: map[string]uint64{"/": 1}, pids: map[int]string{}, next: 100, frozen: map[string]bool{}}
}

// Add creates a group (and its parents) and returns its id.
func (c *Cgroups) Add(group string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	group = path.Clean(group)
	for g := path.Dir(group); g != "/"; g = path.Dir(g) {
		if _, ok := c.groups[g]; !ok {
			c.next++
			c.groups[g] = c.next
		}
	}
	if id, ok := c.groups[group]; ok {
		return id
	}
	c.next++
	c.groups[group] = c.next
	return c.next
}

// Remove deletes a group (as rmdir of an empty cgroup).
func (c *Cgroups) Remove(group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.groups, group)
}

// SetPid puts pid into group.
func (c *Cgroups) SetPid(pid int, group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pids[pid] = group
}

// Procs implements registry.Cgroups: the pids in group or below.
func (c *Cgroups) Procs(group string) ([]int, error) {
	if c.BeforeProcs != nil {
		c.BeforeProcs(group)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.FailProcs {
		return nil, fmt.Errorf("processes of cgroup %s: injected failure", group)
	}
	if _, ok := c.groups[group]; !ok {
		return nil, fmt.Errorf("cgroup %s: %w", group, os.ErrNotExist)
	}
	var out []int
	for pid, g := range c.pids {
		if g == group || len(g) > len(group) && g[:len(group)+1] == group+"/" {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out, nil
}

// Freeze implements registry.Cgroups.
func (c *Cgroups) Freeze(group string) error {
	if c.BeforeFreeze != nil {
		c.BeforeFreeze(group)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.FailFreeze {
		return fmt.Errorf("freeze cgroup %s: injected failure", group)
	}
	c.frozen[group] = true
	return nil
}

// Frozen implements registry.Cgroups.
func (c *Cgroups) Frozen(group string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.groups[group]; !ok {
		return false, fmt.Errorf("cgroup %s: %w", group, os.ErrNotExist)
	}
	return c.frozen[group], nil
}

// Thaw implements registry.Cgroups.
func (c *Cgroups) Thaw(group string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.frozen, group)
	return nil
}

// Kill implements registry.Cgroups: every pid of the subtree exits.
func (c *Cgroups) Kill(group string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.FailKill {
		return fmt.Errorf("kill cgroup %s: injected failure", group)
	}
	for pid, g := range c.pids {
		if g == group || len(g) > len(group) && g[:len(group)+1] == group+"/" {
			delete(c.pids, pid)
		}
	}
	c.Killed = append(c.Killed, group)
	return nil
}

// Open implements registry.Cgroups.
func (c *Cgroups) Open(group string) (cgroup.Cgroup, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.groups[group]
	if !ok {
		return cgroup.Cgroup{}, fmt.Errorf("cgroup %s: %w", group, os.ErrNotExist)
	}
	return cgroup.Cgroup{Mountpoint: "/fake", Group: group, ID: id, Level: cgroup.Level(group)}, nil
}

// PidGroup implements registry.Cgroups.
func (c *Cgroups) PidGroup(pid int) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.pids[pid]
	if !ok {
		return "", fmt.Errorf("cgroup of pid %d: %w", pid, os.ErrNotExist)
	}
	return g, nil
}

// LiveIDs implements registry.Cgroups.
func (c *Cgroups) LiveIDs() (map[uint64]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[uint64]bool{}
	for _, id := range c.groups {
		out[id] = true
	}
	return out, nil
}
