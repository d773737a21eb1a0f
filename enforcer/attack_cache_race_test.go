package enforcer_test

// Outside attacks on the two caches added for speed: the writable roots'
// decision cache (bpf/roots.h roots_check, invalidated by names_generation,
// which inode_rename moves before and fexit/vfs_rename after every rename)
// and resolve()'s per-CPU last answer (bpf/walk.h).
//
// TestAttackRootsCacheRenameWindow: names_generation moves before a
// rename (inode_rename) and after vfs_rename returns; d_move happens in
// between. Before renames in progress were counted (renames_active), a
// climb that read the generation after the first move and walked the old
// tree before d_move recorded "allowed" under a generation that stayed
// current until the second move, and a write from the moved directory
// between d_move and that move (vfs_rename's unlock, fsnotify_move, its
// return) hit the entry although the directory was already outside the
// root: 3 to 12 of about 1,200-1,900 writes on 6.12, 166 of 1,925 on 6.1
// with vCPUs in parallel, also on ext4. The sandbox widens both windows
// itself: it holds the moved directory's i_rwsem (getdents over many
// entries: 6.12 locks the source directory of a cross-directory rename
// after the security hook) while another thread keeps recording
// "allowed" with zero-length writes, and it watches the moved directory
// from many inotify instances, whose events fsnotify_move delivers after
// d_move, before vfs_rename returns. A thread woken by the first event
// (IN_MOVED_FROM on the old parent, delivered after d_move) writes at
// once. Tri-state: without a ceiling every such write lands; under
// write=false with root R each must be refused and the file keep its
// bytes. The cache-off subtest runs the same race with
// names_generation.tracking 0 (every write climbs).

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// rename-window-write: args D (the directory the host moves out
		// and back), P (D's parent beneath the root), the inotify
		// instance count, optionally "nolock" (no getdents holder). fd 3: the host's control pipe (EOF: stop), fd
		// 4: one byte per trial to the host ('y' written, 'n' refused,
		// 'e' other error). Out: the counts.
		"rename-window-write": renameWindowWrite,
	})
}

func renameWindowWrite(r *probe.Result, a []string) {
	dir, parent := a[0], a[1]
	n, err := strconv.Atoi(a[2])
	noLock := len(a) > 3 && a[3] == "nolock"
	if !r.Require(err, "instances") {
		return
	}
	ctl, rep := probe.InheritedFD, probe.InheritedFD+1
	fd, dfd, trig, ok := windowFDs(r, dir, parent)
	if !ok {
		return
	}
	// The widening: IN_MOVE_SELF on D from many instances.
	var slow []int
	for i := 0; i < n; i++ {
		s, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			break // the per-user instance limit: fewer is enough
		}
		if _, err := unix.InotifyAddWatch(s, dir, unix.IN_MOVE_SELF|unix.IN_MOVED_FROM|unix.IN_MOVED_TO); err != nil {
			unix.Close(s)
			break
		}
		slow = append(slow, s)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }()
	// W: zero-length writes (the hook runs, nothing changes): each one
	// climbs or reads the cache, so some climb falls between the first
	// move of names_generation and d_move.
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for !stop.Load() {
			_, _ = unix.Pwrite(fd, nil, 0)
		}
	}()
	// L: D's i_rwsem held shared (getdents over many entries), so the
	// rename waits after inode_rename and before d_move.
	wg.Add(1)
	go func() {
		defer wg.Done()
		if noLock {
			return
		}
		runtime.LockOSThread()
		buf := make([]byte, 1<<20)
		for !stop.Load() {
			if _, err := unix.Seek(dfd, 0, 0); err != nil {
				return
			}
			_, _ = unix.Getdents(dfd, buf)
		}
	}()
	runtime.LockOSThread()
	w, ok := triggeredWrites(r, fd, trig, ctl, rep, slow)
	if !ok {
		return
	}
	r.Out = fmt.Sprintf("%s instances=%d", w, len(slow))
	w.verdict(r)
}

// windowFDs opens what the sandbox's side of a rename-window attack
// holds: f beneath dir for writing, dir itself, and the trigger (inotify
// IN_MOVED_FROM on parent, which fires after d_move). ok is false when one
// could not be had (r says which).
func windowFDs(r *probe.Result, dir, parent string) (fd, dfd, trig int, ok bool) {
	fd, err := unix.Open(filepath.Join(dir, "f"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if !r.Require(err, "open f beneath the root") {
		return
	}
	dfd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if !r.Require(err, "open D") {
		return
	}
	trig, err = unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if !r.Require(err, "inotify_init1") {
		return
	}
	if _, err := unix.InotifyAddWatch(trig, parent, unix.IN_MOVED_FROM); !r.Require(err, "watch parent") {
		return
	}
	return fd, dfd, trig, true
}

// windowTally counts the writes of a rename-window attack.
type windowTally struct {
	trials, written, refused, other int
	lastErr                         error
}

func (w windowTally) String() string {
	return fmt.Sprintf("trials=%d written=%d refused=%d other=%d", w.trials, w.written, w.refused, w.other)
}

// verdict fills r from the tally (its Out already set): Setup when no
// trial ran or the writes failed otherwise, Errno with the refusal when
// every write was refused, nothing when one got through (the operation
// succeeded: Errno 0).
func (w windowTally) verdict(r *probe.Result) {
	switch {
	case w.trials == 0:
		r.Setup = "no trial ran: " + r.Out
	case w.written > 0:
	case w.other > 0:
		r.Setup = fmt.Sprintf("writes failed otherwise (%v): %s", w.lastErr, r.Out)
	default:
		r.Errno = w.lastErr.(unix.Errno)
	}
}

// triggeredWrites is the sandbox's side of a rename-window attack: each
// time trig (inotify on the old parent) says the directory has moved out,
// one write to fd at once; then trig and every descriptor of drain are
// emptied and y (written), n (refused) or e (failed otherwise) is
// reported on rep. It returns when ctl is readable; ok is false when
// poll or the report failed (r.Setup says so).
func triggeredWrites(r *probe.Result, fd, trig, ctl, rep int, drain []int) (w windowTally, ok bool) {
	ev := make([]byte, 64*1024)
	empty := func(d int) {
		for {
			if _, err := unix.Read(d, ev); err != nil {
				return
			}
		}
	}
	for {
		pfd := []unix.PollFd{{Fd: int32(trig), Events: unix.POLLIN}, {Fd: int32(ctl), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			r.Require(err, "poll")
			return w, false
		}
		if pfd[0].Revents&unix.POLLIN != 0 {
			// D is outside now: write at once.
			_, werr := unix.Pwrite(fd, []byte("X"), 0)
			w.trials++
			b := byte('y')
			switch werr {
			case nil:
				w.written++
			case unix.EPERM, unix.EACCES:
				w.refused++
				b = 'n'
				w.lastErr = werr
			default:
				w.other++
				b = 'e'
				w.lastErr = werr
			}
			empty(trig)
			for _, d := range drain {
				empty(d)
			}
			if _, err := unix.Write(rep, []byte{b}); !r.Require(err, "report") {
				return w, false
			}
			continue
		}
		if pfd[1].Revents != 0 {
			return w, true
		}
	}
}

// renameWindowRun: the sandbox under (ceiling) write=false with root R
// writes into R/a/sub while this (host) thread moves R/a/sub to T1/out and
// back, trials times or until budget. It returns the probe's result and
// the bytes of f at the end. ext: the fixture on the VM's ext4 disk
// (base/R, base/out) instead of a tmpfs.
func renameWindowRun(t *testing.T, ceiling, ext bool, trials int, budget time.Duration, extra ...string) (probe.Result, string) {
	sb := kt.Sandbox(t, "rename-window")
	path := newOutsideFx(t).path
	if ext {
		dir := os.Getenv("ENFORCERD_VMTEST_EXT")
		if dir == "" {
			t.Fatal("ENFORCERD_VMTEST_EXT is not set (the VM's ext4 disk)")
		}
		base, err := os.MkdirTemp(dir, "rename-window-")
		must(t, err)
		t.Cleanup(func() { os.RemoveAll(base) })
		path = func(p string) string {
			if p == "T1/out" {
				return filepath.Join(base, "out")
			}
			return filepath.Join(base, p)
		}
	}
	d := path("R/a/sub")
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "f"), []byte("hello"), 0o644))
	// Many entries: getdents holds D's lock for longer.
	for i := 0; i < 2000; i++ {
		fd, err := unix.Open(filepath.Join(d, fmt.Sprintf("entry-with-a-longish-name-%05d", i)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		must(t, err)
		unix.Close(fd)
	}
	if ceiling {
		sb.Register(t, writeRootsEntry(t, path, "R"))
	}
	r, got := hostMoveTrials(t, sb, probe.Cmd{Op: "rename-window-write", Args: append([]string{d, path("R/a")}, extra...)},
		d, path("T1/out"), 500*time.Millisecond, trials, budget)
	bs, err := os.ReadFile(filepath.Join(d, "f"))
	must(t, err)
	t.Logf("ceiling=%v: %v; reports %q", ceiling, r, fmt.Sprint(got))
	return r, string(bs)
}

// hostMoveTrials runs cmd in sb with a control pipe and a report pipe
// (probe.InheritedFD and the next; see triggeredWrites), waits settle for
// its watches, then moves d to out and back, trials times or until
// budget, reading the probe's one-byte report of each move. It closes the
// control pipe and returns the probe's result and the count of each
// report byte.
func hostMoveTrials(t *testing.T, sb *kerneltest.Sandbox, cmd probe.Cmd, d, out string, settle time.Duration, trials int, budget time.Duration) (probe.Result, map[byte]int) {
	t.Helper()
	ctlR, ctlW, err := os.Pipe()
	must(t, err)
	repR, repW, err := os.Pipe()
	must(t, err)
	defer repR.Close()
	cmd.Files = []*os.File{ctlR, repW}
	cmd.Timeout = budget + 60*time.Second
	done := make(chan probe.Result, 1)
	go func() { done <- sb.Run(t, cmd) }()
	time.Sleep(settle)
	deadline := time.Now().Add(budget)
	got := map[byte]int{}
	var b [1]byte
	for i := 0; i < trials && time.Now().Before(deadline); i++ {
		must(t, os.Rename(d, out))
		must(t, repR.SetReadDeadline(time.Now().Add(20*time.Second)))
		if _, err := repR.Read(b[:]); err != nil {
			ctlW.Close()
			t.Fatalf("trial %d: no report from the probe: %v (%v)", i, err, <-done)
		}
		got[b[0]]++
		must(t, os.Rename(out, d))
	}
	ctlW.Close()
	select {
	case r := <-done:
		return r, got
	case <-time.After(budget + 90*time.Second):
		t.Fatal("probe did not finish")
	}
	return probe.Result{}, nil
}

// namesGeneration mirrors struct names_generation (bpf/roots.h).
type namesGeneration struct{ Gen, Tracking uint64 }

// namesGenerationMap opens the pinned names_generation map (the caller
// closes it).
func namesGenerationMap(t *testing.T) *ebpf.Map {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(kt.PinDir(), bpf.SharedMapNamesGeneration), nil)
	must(t, err)
	return m
}

// setRenameTracking writes names_generation (bpf/roots.h) as enforcer.Open
// does: a fresh generation, and tracking on (the decision cache used) or
// off (every write climbs).
func setRenameTracking(t *testing.T, on bool) {
	t.Helper()
	m := namesGenerationMap(t)
	defer m.Close()
	v := namesGeneration{Gen: uint64(time.Now().UnixNano())}
	if on {
		v.Tracking = 1
	}
	must(t, m.Update(uint32(0), v, ebpf.UpdateAny))
}

func TestAttackRootsCacheRenameWindow(t *testing.T) {
	kt.Enforcer(t)
	// The same race with the decision cache off (every write climbs):
	// every write after d_move must be refused, so a write the cached run
	// lets through is the cache's doing.
	t.Run("cache-off", func(t *testing.T) {
		setRenameTracking(t, false)
		defer setRenameTracking(t, true)
		r, f := renameWindowRun(t, true, false, 100000, 5*time.Second, "100")
		if r.Setup != "" || !r.Denied() || f != "hello" {
			t.Errorf("uncached climb: %v, f = %q; want every write refused and hello", r, f)
		}
	})
	r, f := renameWindowRun(t, false, false, 3, 20*time.Second, "100")
	if r.Setup != "" || r.Errno != 0 {
		t.Fatalf("control (no ceiling): %v, want success", r)
	}
	if f != "Xello" {
		t.Fatalf("control (no ceiling): f = %q, want the write (Xello)", f)
	}
	r, f = renameWindowRun(t, true, false, 100000, 10*time.Second, "100")
	if r.Setup != "" {
		t.Fatalf("ceiling: could not attempt: %v", r)
	}
	if !r.Denied() {
		t.Errorf("BYPASS rename window: a write from R/a/sub after it was moved out of the root was allowed: %v", r)
	}
	if f != "hello" {
		t.Errorf("BYPASS rename window: f (moved out of the root) = %q, want hello", f)
	}
}

// TestAttackRootsCacheRenameWindowExt4: the same race with the root on
// ext4 (a workspace on the host's disk): the rename's first window also
// holds ext4's journal work.
func TestAttackRootsCacheRenameWindowExt4(t *testing.T) {
	kt.Enforcer(t)
	r, f := renameWindowRun(t, false, true, 3, 20*time.Second, "100")
	if r.Setup != "" || r.Errno != 0 || f != "Xello" {
		t.Fatalf("control (no ceiling): %v, f = %q; want success and Xello", r, f)
	}
	r, f = renameWindowRun(t, true, true, 100000, 10*time.Second, "100")
	if r.Setup != "" {
		t.Fatalf("ceiling: could not attempt: %v", r)
	}
	if !r.Denied() || f != "hello" {
		t.Errorf("BYPASS rename window on ext4: %v, f = %q; want every write refused and hello", r, f)
	}
}
