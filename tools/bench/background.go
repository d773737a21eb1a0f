package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
)

// The background sandbox: a real agent host never runs one sandbox alone,
// so while the rounds measure, one other sandbox sits elsewhere on the
// guest. Its cgroup is a sibling of the phase cgroups (/bench/p/q/bg, the
// same level 4), holding one live process: an idler (idler_amd64.s, the
// scale figure's background process) that makes one socket()+close() every
// backgroundPeriod. The process lives through every group of every round
// (unloaded, floor and loaded alike), so every phase has the same
// background load; in the loaded group its cgroup is registered with a
// ceiling of (c2)'s shape (its own writable root, root/bg), from the load
// to just before the unload, so that (b), (c), (c2) and (d) run with one
// (c2) sandbox registered elsewhere on the host. In the floor group there
// is nothing of enforcerd's to register it with: the floor programs are
// attached and the idle sibling process is all there is.

// backgroundGroup is the background sandbox's cgroup, a sibling of the
// phase cgroups.
const backgroundGroup = phaseCgroup + "bg"

// backgroundPeriod is the time between the background process's calls.
const backgroundPeriod = time.Second

// background is the background sandbox; the zero value (nil) is "none".
type background struct {
	cg       cgroup.Cgroup
	ceiling  entry.Entry
	pool     *idlerPool
	enrolled bool // registered with the loaded enforcerd
}

// backgroundNote is the result's record of the background sandbox (Doc.Background).
func backgroundNote() string {
	return fmt.Sprintf("one other sandbox on the guest during the rounds: a sibling cgroup of the phase cgroups (%s, level 4) holding one live process (a socket()+close() every %v), registered with a (c2)-shaped ceiling (its own writable root) from each load to just before each unload, so (b), (c), (c2) and (d) run with one (c2) sandbox registered elsewhere; in (f) nothing of enforcerd's is loaded to register it with, only the process is there; the process lives through the unloaded group too (the same background load in every phase); the profile passes, scale, latency and flood run without it", backgroundGroup, backgroundPeriod)
}

// startBackground creates the background cgroup group under mount
// (backgroundGroup in the guest), its writable root beneath root, and starts its process. Errors: the cgroup, the
// directory or the ceiling cannot be made, the process cannot be started
// (the idler exists for amd64 only: -background=false runs without it).
func startBackground(mount, group, root string, port, udpPort int) (*background, error) {
	cg, err := cgroup.Create(mount, group)
	if err != nil {
		return nil, fmt.Errorf("background: %w", err)
	}
	dir := filepath.Join(root, "bg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("background: %w", err)
	}
	ceiling, err := typical(dir, port, udpPort)
	if err != nil {
		return nil, fmt.Errorf("background: %w", err)
	}
	pool, err := newIdlerPool(1)
	if err != nil {
		return nil, fmt.Errorf("background (-background=false runs without it): %w", err)
	}
	if err := pool.spawn(cg, 0, backgroundPeriod); err != nil {
		pool.close(false)
		return nil, fmt.Errorf("background: %w", err)
	}
	return &background{cg: cg, ceiling: ceiling, pool: pool}, nil
}

// register registers the background cgroup with enf (after a load, before
// the group's first phase). A nil b does nothing.
func (b *background) register(enf *enforcer.Enforcer) error {
	if b == nil {
		return nil
	}
	if err := enf.Register(b.cg, b.ceiling); err != nil {
		return fmt.Errorf("background: %w", err)
	}
	b.enrolled = true
	return nil
}

// unregister undoes register (before an unload); a cgroup not registered is
// no error. A nil b does nothing.
func (b *background) unregister(enf *enforcer.Enforcer) error {
	if b == nil || !b.enrolled {
		return nil
	}
	b.enrolled = false
	if err := enf.Unregister(b.cg.ID); err != nil && !errors.Is(err, enforcer.ErrNotRegistered) {
		return fmt.Errorf("background: %w", err)
	}
	return nil
}

// stop checks that the process made its calls, kills and reaps it and
// removes the cgroup (register's counterpart must have run). Errors: the
// process made no call or a failed one, it outlived the kill, the cgroup
// stays. A nil b does nothing.
func (b *background) stop() error {
	if b == nil {
		return nil
	}
	calls, fails, _ := b.pool.counts()
	var err error
	switch {
	case fails > 0:
		err = fmt.Errorf("background: %d of its socket() calls failed", fails)
	case calls == 0:
		err = errors.New("background: its process made no call during the rounds (not live)")
	}
	kerr := b.cg.Kill()
	rerr := b.pool.reap(0, 30*time.Second)
	b.pool.close(rerr == nil)
	return errors.Join(err, kerr, rerr, b.cg.Remove(10*time.Second))
}
