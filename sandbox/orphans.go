package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"golang.org/x/sys/unix"
)

// runCgroupPrefix names the transient cgroups `enforcerd run` creates
// (enforcerd-run-<pid of the run>) when Config.CgroupName is empty.
const runCgroupPrefix = "enforcerd-run-"

// Orphan is a cgroup a killed `enforcerd run` left behind.
type Orphan struct {
	Group string // the group path, e.g. /user.slice/enforcerd-run-42
	// Registered: the cgroup still had a map entry, now removed.
	Registered bool
}

// CleanOrphans removes what `enforcerd run` processes killed with SIGKILL
// (which cannot clean up) left under the parent cgroup: each cgroup
// LeftByKilledRun names. The cgroup directory is removed first and its map
// entry only then, so an entry is never dropped while its cgroup can
// still hold a process. A cgroup that still holds processes stays, with
// its entry: the command of a killed run keeps running, enforced, until it
// exits; a later run removes the cgroup then.
//
// Entries of cgroups that no longer exist at all are left to the daemon's
// reconciliation (it knows which entries are its own; cgroup ids are never
// reused, so such an entry never applies again). Errors: the parent cannot
// be read; a cgroup that cannot be removed is skipped silently (a later
// run retries), so an error here never stops a run.
func (s *Sandbox) CleanOrphans() ([]Orphan, error) {
	dir := path.Join(s.mount, s.parent)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("orphaned runs under %s: %w", s.parent, err)
	}
	var out []Orphan
	for _, de := range ents {
		if !de.IsDir() {
			continue
		}
		cg, ok := LeftByKilledRun(s.mount, path.Join(s.parent, de.Name()))
		if !ok {
			continue
		}
		_, lookErr := s.enf.Lookup(cg.ID)
		registered := lookErr == nil
		if err := cg.Remove(time.Second); err != nil {
			continue
		}
		if registered {
			if err := s.enf.Unregister(cg.ID); err != nil && !errors.Is(err, enforcer.ErrNotRegistered) {
				continue
			}
		}
		out = append(out, Orphan{Group: cg.Group, Registered: registered})
	}
	return out, nil
}

// LeftByKilledRun reports whether group is a cgroup a killed `enforcerd
// run` left behind: named enforcerd-run-<pid>, its run process gone (no
// process <pid>: a reused pid only delays a cleanup, never removes a live
// run's cgroup, which is empty between its creation and the command's
// start) and holding no process. cg is the opened cgroup when ok.
func LeftByKilledRun(mount, group string) (cg cgroup.Cgroup, ok bool) {
	name := path.Base(group)
	if !strings.HasPrefix(name, runCgroupPrefix) {
		return cgroup.Cgroup{}, false
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(name, runCgroupPrefix))
	if err != nil || pid <= 0 || ProcessExists(pid) {
		return cgroup.Cgroup{}, false
	}
	cg, err = cgroup.Open(mount, group)
	if err != nil {
		return cgroup.Cgroup{}, false
	}
	if procs, err := cg.Procs(); err != nil || len(procs) > 0 {
		return cgroup.Cgroup{}, false
	}
	return cg, true
}

// ProcessExists reports whether pid names a process, or whether it does
// cannot be told (EPERM): callers that remove things on "gone" then keep
// them.
func ProcessExists(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}
