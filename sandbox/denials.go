package sandbox

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
)

// Outer is a registered cgroup at or above the cgroup a sandbox is created
// under: its ceiling applies to the sandbox too (the kernel enforces the
// meet of every registered ancestor).
type Outer struct {
	Cgroup cgroup.Cgroup
	Entry  entry.Entry
	// Unenforced: what this host does not enforce of the outer ceiling
	// (its coverage gaps; filled by Register).
	Unenforced []coverage.Gap
}

// lookuper is the part of *enforcer.Enforcer outerCeilings needs.
type lookuper interface {
	Lookup(cgroupID uint64) (entry.Entry, error)
}

// outerCeilings lists the registered cgroups from group up to the root of
// the cgroup2 hierarchy at mount (the root excluded), nearest first.
// Errors: a cgroup on the way cannot be opened, or a lookup fails for
// another reason than enforcer.ErrNotRegistered.
func outerCeilings(enf lookuper, mount, group string) ([]Outer, error) {
	var out []Outer
	for g := path.Clean(group); g != "/" && g != "."; g = path.Dir(g) {
		cg, err := cgroup.Open(mount, g)
		if err != nil {
			return nil, err
		}
		en, err := enf.Lookup(cg.ID)
		if errors.Is(err, enforcer.ErrNotRegistered) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Outer{Cgroup: cg, Entry: en})
	}
	return out, nil
}

// Denial is one denial record of the sandbox.
type Denial struct {
	denial.Denial
	// Outer is the outer registered cgroup whose ceiling decided; nil
	// when it was the sandbox's own.
	Outer *Outer
}

// WatchDenials reads the denial ring buffer on a goroutine and calls fn
// for each record of this sandbox: those its own ceiling decided, and
// those an outer ceiling decided for a process inside its subtree (a
// sub-cgroup the command made included). Records of anything else are
// dropped. The ring buffer has one reader in practice: records read here
// are gone for any other reader (the daemon's audit log).
//
// stop makes the reader deliver every record already in the ring (hooks
// write them synchronously: once the command exited, all of its records
// are there), waits for fn's last call, closes the reader and returns how
// many records the kernel lost (ring buffer full) since WatchDenials was
// called; each lost record was still a denial. stop may be called more
// than once; Close calls it. Errors: ErrNotRegistered before Register, or
// the ring buffer cannot be opened.
func (s *Sandbox) WatchDenials(fn func(Denial)) (stop func() (lost uint64), err error) {
	if !(s.registered || s.deferred) || s.closed {
		return nil, ErrNotRegistered
	}
	rd, err := s.enf.NewReader()
	if err != nil {
		return nil, err
	}
	lostBefore, lostErr := s.enf.LostRecords()
	keep := denialFilter(s.cg, s.outer)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			d, err := rd.Read()
			if err != nil {
				return
			}
			if oc, ok := keep(d); ok {
				fn(Denial{Denial: d, Outer: oc})
			}
		}
	}()
	var once sync.Once
	var lost uint64
	stop = func() uint64 {
		once.Do(func() {
			_ = rd.Flush()
			<-done
			rd.Close()
			if n, err := s.enf.LostRecords(); err == nil && lostErr == nil && n > lostBefore {
				lost = n - lostBefore
			}
		})
		return lost
	}
	s.stopWatch = stop
	return stop, nil
}

// denialFilter accepts the denials of the sandbox's own ceiling (cgroup
// cg) and those an outer ceiling decided for a process inside cg's subtree
// (attributed to that outer cgroup). A process's cgroup that is neither cg
// nor known is looked for below cg by its id (the inode number of its
// directory), once.
func denialFilter(cg cgroup.Cgroup, outer []Outer) func(denial.Denial) (*Outer, bool) {
	byID := map[uint64]*Outer{}
	for i := range outer {
		byID[outer[i].Cgroup.ID] = &outer[i]
	}
	inside := map[uint64]bool{cg.ID: true}
	return func(d denial.Denial) (*Outer, bool) {
		if d.CeilingCgroupID == cg.ID {
			return nil, true
		}
		oc, ok := byID[d.CeilingCgroupID]
		if !ok {
			return nil, false
		}
		if in, seen := inside[d.CgroupID]; seen {
			return keepIf(oc, in)
		}
		found := false
		_ = filepath.WalkDir(cg.Path(), func(p string, e fs.DirEntry, err error) error {
			if err != nil || found || !e.IsDir() {
				return nil
			}
			var st unix.Stat_t
			if unix.Stat(p, &st) == nil && st.Ino == d.CgroupID {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		inside[d.CgroupID] = found
		return keepIf(oc, found)
	}
}

func keepIf(oc *Outer, keep bool) (*Outer, bool) {
	if !keep {
		return nil, false
	}
	return oc, true
}
