package escapetest

// Second attack round: bypass attempts of a hostile workload (root in the
// sandboxed cgroup). A case that documents a confirmed bypass FAILS until
// the kind is closed.

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/enforcer"
)

// X4 through EXT4_IOC_MOVE_EXT (write=true leaves every ioctl open): the
// ioctl swaps data blocks between two files without setting either
// inode's ctime, so a file older than the registration gets new contents
// and keeps its old ctime. The donor was opened for write (marked), but
// the mark is in-memory and lost with the inode (eviction modelled by the
// test's drop_caches, as in TestShellWrittenSurvivesEviction).
func TestAttack2ShellMoveExtent(t *testing.T) {
	kernel(t)
	extDir(t)
	var tool string
	prepBroken := func(t *testing.T) {
		tool = extPath(t, "busybox-mext")
		b, err := os.ReadFile("/bin/busybox")
		if err != nil {
			t.Fatal(err)
		}
		copy(b, "XXXX") // cannot run: ENOEXEC
		if err := os.WriteFile(tool, b, 0o755); err != nil {
			t.Fatal(err)
		}
		unix.Sync()
		time.Sleep(100 * time.Millisecond)
	}
	attempt := func(t *testing.T, dir *os.File) (result, effect) {
		orig := extPath(t, "busybox-orig")
		args := append([]string{"/bin/busybox", orig, tool}, pwnedArgs...)
		return probeEffect(probeSync(t, dir, nil, func() { evictCaches(t) }, "moveext-exec", args...))
	}
	cases := []tcase{
		{name: "X4 none: allowed file given new blocks by EXT4_IOC_MOVE_EXT, then run", ceiling: shellNone, prep: prepBroken,
			allow: allowList(func() string { return tool }), attempt: attempt},
		{name: "X4 read_only: old file given new blocks by EXT4_IOC_MOVE_EXT, then run", ceiling: shellReadOnly, prep: prepBroken, attempt: attempt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			triState(t, c)
			checkAnyRecord(t, records(t, 0), []enforcer.Hook{enforcer.HookBprmCheckSecurity, enforcer.HookFileIoctl}, -1)
		})
	}
}

// E4 through the session autogroup: /proc/self/autogroup is the sandbox's
// own /proc/<pid> entry, but its nice level is that of the session's
// autogroup, which processes outside the sandbox share (the same session).
func TestAttack2AutogroupNice(t *testing.T) {
	kernel(t)
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		t.Fatalf("no /proc/self/autogroup (CONFIG_SCHED_AUTOGROUP): %v", err)
	}
	var o *outside
	reset := func(t *testing.T) {
		if o == nil {
			o = startOutside(t, nil)
		}
		time.Sleep(150 * time.Millisecond)
		if err := writeFile("/proc/self/autogroup", "0"); err != nil {
			t.Fatalf("reset autogroup nice: %v", err)
		}
	}
	t.Cleanup(func() { _ = writeFile("/proc/self/autogroup", "0") })
	c := tcase{name: "E4: nice 19 on the session autogroup shared with a process outside", ceiling: tamperOnly, prep: reset,
		attempt: func(t *testing.T, dir *os.File) (result, effect) {
			r := probe(t, dir, nil, "autogroup-nice", "19")
			return r, func() (bool, string) {
				s := strings.TrimSpace(readAll("/proc/" + o.pid() + "/autogroup"))
				return strings.Contains(s, "nice 19"), "outside process " + o.pid() + " autogroup: " + s
			}
		}}
	triState(t, c)
}
