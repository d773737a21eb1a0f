// Package registrytest provides in-memory fakes of the enforcer map and the
// cgroup tree so the registry and the API are testable without BPF.
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package registrytest

import (
	"fmt"
	"os"
	"path"
	"sort"
	"sync"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// Enforcer is a fake ceiling map. CanWrite=false mimics a host without BPF
// LSM: write=false ceilings are refused with coverage.ErrCannotEnforce.
// Shell ceilings other than full are refused unless CanShell is set.
type Enforcer struct {
	mu       sync.Mutex
	M        map[uint64]entry.Entry
	CanWrite bool
	CanShell bool
	// FailRegister makes every Register fail (an I/O-like error).
	FailRegister bool
}

// NewEnforcer returns an empty map.
func NewEnforcer(canWrite bool) *Enforcer {
	return &Enforcer{M: map[uint64]entry.Entry{}, CanWrite: canWrite}
}

// Register implements registry.Enforcer.
func (e *Enforcer) Register(cg cgroup.Cgroup, en entry.Entry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.FailRegister {
		return fmt.Errorf("register cgroup %s: injected failure", cg.Group)
	}
	if err := e.withSpec(e.coverage(en.Ceiling), en).Err(en.AuditOnly, en.AllowPartial); err != nil {
		return fmt.Errorf("register cgroup %s: %w", cg.Group, err)
	}
	e.M[cg.ID] = en
	return nil
}

// Coverage implements registry.Enforcer: with CanWrite (a host with BPF
// LSM) every field but shell is enforced in full; without it network=false
// is partial (inet only, no tamper protection) and write=false is missing.
// Shell ceilings other than full are missing unless CanShell is set.
func (e *Enforcer) Coverage(c policy.KernelCeiling) coverage.Coverage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.coverage(c)
}

// CoverageOf implements registry.Enforcer: Coverage, with write=false
// partial (GapWriteInheritedFDs) under a spec layer that credits it, plus
// GapNetworkEndpoints for tcp/udp endpoints without CanWrite (no BPF LSM).
func (e *Enforcer) CoverageOf(en entry.Entry) coverage.Coverage {
	cov := e.Coverage(en.Ceiling)
	cov = e.withSpec(cov, en)
	if e.CanWrite || en.Ceiling.Network {
		return cov
	}
	for _, ep := range en.AllowConnect {
		if ep.Kind != "unix" {
			cov.Partial = append(cov.Partial, coverage.Gap{Code: coverage.GapNetworkEndpoints, Field: "network", Detail: "fake: no BPF LSM"})
			break
		}
	}
	return cov
}

func (e *Enforcer) coverage(c policy.KernelCeiling) coverage.Coverage {
	var cov coverage.Coverage
	if c.Shell != policy.ShellFull && !e.CanShell {
		cov.Missing = append(cov.Missing, coverage.Gap{Code: coverage.GapShell, Field: "shell", Detail: "fake"})
	}
	if e.CanWrite {
		return cov
	}
	if !c.Write {
		cov.Missing = append(cov.Missing, coverage.Gap{Code: coverage.GapWrite, Field: "write", Detail: "fake: no BPF LSM"})
	}
	if !c.Network {
		cov.Partial = append(cov.Partial, coverage.Gap{Code: coverage.GapNetworkNonInet, Field: "network", Detail: "fake: no BPF LSM"})
	}
	if !c.Network || !c.Write || c.Shell != policy.ShellFull {
		cov.Partial = append(cov.Partial, coverage.Gap{Code: coverage.GapTamper, Field: "all", Detail: "fake: no BPF LSM"})
	}
	return cov
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

// withSpec is cov with en's spec layer credited, as coverageOf does it:
// write=false partial (GapWriteInheritedFDs) when the spec covers it, else
// the missing gap names what the spec lacks.
func (e *Enforcer) withSpec(cov coverage.Coverage, en entry.Entry) coverage.Coverage {
	switch {
	case e.CanWrite || en.Ceiling.Write || en.Spec == nil:
	case en.Spec.Write:
		var ms []coverage.Gap
		for _, g := range cov.Missing {
			if g.Code != coverage.GapWrite {
				ms = append(ms, g)
			}
		}
		cov.Missing = ms
		cov.Partial = append(cov.Partial, coverage.Gap{Code: coverage.GapWriteInheritedFDs, Field: "write", Detail: "fake: container spec"})
	default:
		for i, g := range cov.Missing {
			if g.Code == coverage.GapWrite {
				cov.Missing[i].Detail += "; the container's spec does not cover it either: " + en.Spec.WriteMissing
			}
		}
	}
	return cov
}
