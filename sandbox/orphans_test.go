package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"testing"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// TestRegisterCleansOrphansOfKilledRuns: a run killed with SIGKILL leaves
// enforcerd-run-<pid> and its map entry. The next run's Register removes
// such a cgroup when its run is gone and it is empty (cgroup first, then
// the entry); it keeps the cgroup of a live run (empty before its command
// starts) and one that still holds a process (the killed run's command,
// still enforced).
func TestRegisterCleansOrphansOfKilledRuns(t *testing.T) {
	vmtest.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	parentGroup := fmt.Sprintf("/enforcerd-orphans-test-%d", os.Getpid())
	parent, err := cgroup.Create(mount, parentGroup)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Remove(0)

	// A pid that is gone: a process that ran and was reaped.
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid

	enf, err := enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: mount})
	if err != nil {
		t.Fatal(err)
	}
	defer enf.Close()
	mk := func(name string) cgroup.Cgroup {
		cg, err := cgroup.Create(mount, path.Join(parentGroup, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := enf.Register(cg, entry.Entry{Ceiling: noNetwork, AllowPartial: true}); err != nil {
			t.Fatal(err)
		}
		return cg
	}
	orphan := mk(fmt.Sprintf("enforcerd-run-%d", deadPID))
	live := mk(fmt.Sprintf("enforcerd-run-%d", os.Getpid()))     // a run that is alive
	busy := mk(fmt.Sprintf("enforcerd-run-%d", deadPID+1000000)) // gone run, command still running
	defer busy.Remove(0)
	defer live.Remove(0)
	dir, err := busy.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sleep", "60")
	cmd.SysProcAttr = cgroup.SysProcAttr(dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dir.Close()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	sb, err := Open(Config{Ceiling: noNetwork, AllowPartial: true, Entrypoint: self, PinDir: testPinDir, CgroupParent: parentGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	// This test process plays the live run (its enforcerd-run-<pid> is
	// taken), so the cleanup Register starts with is called directly.
	got, err := sb.CleanOrphans()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Group != orphan.Group || !got[0].Registered {
		t.Errorf("removed %+v, want only %s (registered)", got, orphan.Group)
	}
	if _, err := os.Stat(orphan.Path()); !os.IsNotExist(err) {
		t.Errorf("orphan %s still there: %v", orphan.Group, err)
	}
	if _, err := enf.Lookup(orphan.ID); err == nil {
		t.Errorf("orphan %s still registered", orphan.Group)
	}
	for _, kept := range []cgroup.Cgroup{live, busy} {
		if _, err := os.Stat(kept.Path()); err != nil {
			t.Errorf("%s removed: %v", kept.Group, err)
		}
		if _, err := enf.Lookup(kept.ID); err != nil {
			t.Errorf("%s unregistered: %v", kept.Group, err)
		}
	}
	enf.Unregister(live.ID)
	enf.Unregister(busy.ID)
}
