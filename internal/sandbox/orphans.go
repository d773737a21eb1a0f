package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
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
// (which cannot clean up) left under the parent cgroup: each
// enforcerd-run-<pid> cgroup whose run process is gone (no process <pid>:
// a reused pid only delays the cleanup, never removes a live run's cgroup,
// which is empty between its creation and the command's start) and that
// holds no process any more. The cgroup directory is removed first and its map
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
		pid, ok := runPID(de)
		if !ok || runAlive(pid) {
			continue
		}
		cg, err := cgroup.Open(s.mount, path.Join(s.parent, de.Name()))
		if err != nil {
			continue
		}
		if procs, err := cg.Procs(); err != nil || len(procs) > 0 {
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

// runPID is the run's pid in a cgroup directory named enforcerd-run-<pid>.
func runPID(de fs.DirEntry) (int, bool) {
	if !de.IsDir() || !strings.HasPrefix(de.Name(), runCgroupPrefix) {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(de.Name(), runCgroupPrefix))
	return pid, err == nil && pid > 0
}

// runAlive: process pid exists, or whether it does cannot be told (then
// nothing is removed).
func runAlive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return !errors.Is(err, fs.ErrNotExist)
}
