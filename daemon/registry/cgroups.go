package registry

import (
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
)

// Cgroups resolves cgroups on the live system.
type Cgroups interface {
	// Open names an existing cgroup by its group path.
	Open(group string) (cgroup.Cgroup, error)
	// PidGroup is the cgroup v2 group path of a process.
	PidGroup(pid int) (string, error)
	// LiveIDs is the set of ids of every cgroup that exists now.
	LiveIDs() (map[uint64]bool, error)
	// Procs lists the pids of every process in the group's subtree.
	Procs(group string) ([]int, error)
	// Freeze freezes the group's subtree and returns once it is frozen;
	// Frozen reports whether it is; Thaw undoes Freeze.
	Freeze(group string) error
	Frozen(group string) (bool, error)
	Thaw(group string) error
	// Kill sends SIGKILL to every process of the group's subtree.
	Kill(group string) error
}

// SystemCgroups is Cgroups on the real cgroup2 mount.
type SystemCgroups struct{ Mount string }

// Open implements Cgroups.
func (s SystemCgroups) Open(group string) (cgroup.Cgroup, error) { return cgroup.Open(s.Mount, group) }

// PidGroup implements Cgroups.
func (s SystemCgroups) PidGroup(pid int) (string, error) { return cgroup.PidGroup(pid) }

// freezeTimeout bounds how long SystemCgroups.Freeze waits for the kernel
// to report the subtree frozen.
const freezeTimeout = 2 * time.Second

// Procs implements Cgroups.
func (s SystemCgroups) Procs(group string) ([]int, error) {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return nil, err
	}
	return cg.Procs()
}

// Freeze implements Cgroups (waits up to freezeTimeout).
func (s SystemCgroups) Freeze(group string) error {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return err
	}
	return cg.Freeze(freezeTimeout)
}

// Frozen implements Cgroups.
func (s SystemCgroups) Frozen(group string) (bool, error) {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return false, err
	}
	return cg.Frozen()
}

// Thaw implements Cgroups.
func (s SystemCgroups) Thaw(group string) error {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return err
	}
	return cg.Thaw()
}

// Kill implements Cgroups.
func (s SystemCgroups) Kill(group string) error {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return err
	}
	return cg.Kill()
}

// LiveIDs walks the cgroup2 hierarchy (cgroup.Groups).
func (s SystemCgroups) LiveIDs() (map[uint64]bool, error) {
	groups, err := cgroup.Groups(s.Mount)
	if err != nil {
		return nil, err
	}
	ids := make(map[uint64]bool, len(groups))
	for id := range groups {
		ids[id] = true
	}
	return ids, nil
}
