package enforcer_test

// Outside attacks on three fast paths (docs/design.md "The decision
// cache", "Resolving a task's ceiling"; docs/threat-model.md R4, E1, N4,
// N6, N7):
//
//   - inode_rename decides a rename before it counts it (bpf/file.bpf.c,
//     bpf/roots.h rename_begin/rename_end): its own check may read and fill
//     the roots decision cache. TestAttackFastpathRenameKinds: every kind
//     of rename the sandbox can make under write=false with root R (one
//     that fills the cache, RENAME_EXCHANGE, RENAME_WHITEOUT, io_uring,
//     refused by the ceiling, failing after the check with ENOTEMPTY or
//     EBUSY, EXDEV) leaves renames_active at 0, and a write from the directory the
//     cache knew, once the host moved it out of the root, is refused.
//     TestAttackFastpathOwnRenameWindow: the sandbox's own renames (whose
//     checks fill the cache) race the host moving their directory out;
//     every write from it once outside must be refused.
//   - resolve_cache entries are copied, then checked again (bpf/walk.h
//     cache_copy). TestAttackFastpathResolveCacheChurn: the LRU is churned
//     with tens of thousands of keys (more than its 16,384 elements, so
//     the sandbox's own elements are evicted and recycled under it) while
//     elements that look like a recycled one half rewritten (the current
//     generation, found=0, another cgroup's low key bits) or a stale one
//     (an old generation) are forged for the sandbox's own cgroups; a
//     network=false sandbox moving between its sub-cgroups on every call
//     (past the CPU's last answer) must have every socket() refused.
//     The exec gate (bpf/lifecycle.bpf.c) under the same forgeries must
//     still activate a pending registration.
//   - file_permission reads a socket's family only after the cgroup check
//     (bpf/file.bpf.c). TestAttackFastpathSocketIO: every read and write
//     entry (read, readv, write, writev, splice both ways, sendfile,
//     io_uring read and write) on inet, netlink and outside unix sockets
//     and a tun device, inherited or passed in over SCM_RIGHTS, is refused
//     under network=false with no side effect, and works outside every
//     sandbox (the control).
//   - The socket rules take the per-CPU answer's network bits alone
//     (bpf/walk.h resolve_for): an answer that denies and audits no
//     network returns before it is copied. TestAttackSocketNetworkBitsOnly:
//     a child registered with network=true below a parent with
//     network=false is refused every socket read and write (the meet keeps
//     the parent's bit), while the same ceiling registered alone is
//     allowed.

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// fp-rename KIND OLD NEW: one rename of KIND (rename, exchange,
		// whiteout, uring).
		"fp-rename": probe.Func(fpRename),
		// fp-own-rename-window D P: renameWindowWrite's trials (fd 3
		// control, fd 4 reports), with the zero-length writes replaced by
		// the sandbox's own renames inside D (D/x <-> D/y through a
		// descriptor of D), whose checks read and fill the cache for D.
		"fp-own-rename-window": fpOwnRenameWindow,
		// fp-sock-io MODE PAYLOAD: MODE on fd 3 (see sockIO).
		"fp-sock-io": probe.Func(func(a []string) error { return sockIO(a[0], a[1], probe.InheritedFD) }),
		// fp-scm-io MODE PAYLOAD: receive a descriptor over the unix socket at fd
		// 3 (SCM_RIGHTS), then MODE on it.
		"fp-scm-io": probe.Func(func(a []string) error {
			buf := make([]byte, 16)
			oob := make([]byte, unix.CmsgSpace(4))
			_, oobn, _, _, err := unix.Recvmsg(probe.InheritedFD, buf, oob, 0)
			if err != nil {
				return probe.Setupf("recvmsg: %v", err)
			}
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil || len(msgs) != 1 {
				return probe.Setupf("control message: %v (%d)", err, len(msgs))
			}
			fds, err := unix.ParseUnixRights(&msgs[0])
			if err != nil || len(fds) != 1 {
				return probe.Setupf("SCM_RIGHTS: %v", err)
			}
			return sockIO(a[0], a[1], fds[0])
		}),
	})
}

// ---- 1. inode_rename: decided before it is counted -------------------

func fpRename(a []string) error {
	kind, o, n := a[0], a[1], a[2]
	switch kind {
	case "rename":
		return unix.Rename(o, n)
	case "exchange":
		return unix.Renameat2(unix.AT_FDCWD, o, unix.AT_FDCWD, n, unix.RENAME_EXCHANGE)
	case "whiteout":
		return unix.Renameat2(unix.AT_FDCWD, o, unix.AT_FDCWD, n, unix.RENAME_WHITEOUT)
	case "uring":
		return uringRename(o, n)
	}
	return probe.Setupf("unknown rename kind %q", kind)
}

// renameKind: a rename the sandbox (or, with host, the test) makes in the
// fixture R/a/sub (f, d/, full/x, b/ beneath R; T1 outside on the same
// tmpfs; T2 another tmpfs), the errno it must end with without and with
// the ceiling, and what must not exist after a refused one.
type renameKind struct {
	name       string
	setup      func(t *testing.T, fx outsideFx)
	host       func(t *testing.T, fx outsideFx)
	kind       string
	old, new   string
	ctl, under unix.Errno
	absent     string
}

var renameKinds = []renameKind{
	// The check of a rename inside R/a/sub reads and fills the cache for
	// R/a/sub before the rename is counted.
	{name: "fills-cache-then-dir-moved", kind: "rename", old: "R/a/sub/f", new: "R/a/sub/g"},
	{name: "dir-across-root", kind: "rename", old: "R/a/sub/d", new: "R/b/d"},
	{name: "exchange-dirs", kind: "exchange", old: "R/a/sub/d", new: "R/b"},
	{name: "exchange-file-dir", kind: "exchange", old: "R/a/sub/f", new: "R/a/sub/d"},
	{name: "whiteout", kind: "whiteout", old: "R/a/sub/f", new: "R/a/sub/w"},
	{name: "io-uring-renameat", kind: "uring", old: "R/a/sub/f", new: "R/a/sub/g"},
	// Refused by the ceiling: never counted.
	{name: "refused-out-of-root", kind: "rename", old: "R/a/sub/f", new: "T1/f", under: unix.EPERM, absent: "T1/f"},
	{name: "refused-exchange-with-outside", kind: "exchange", old: "R/a/sub/d", new: "T1/e", under: unix.EPERM, absent: "T1/e/dd",
		setup: func(t *testing.T, fx outsideFx) { must(t, os.MkdirAll(fx.path("T1/e"), 0o755)) }},
	// Failing after the check (counted, ended by vfs_rename's return).
	{name: "enotempty-after-check", kind: "rename", old: "R/a/sub/d", new: "R/a/sub/full", ctl: unix.ENOTEMPTY, under: unix.ENOTEMPTY},
	{name: "ebusy-mountpoint-after-check", kind: "rename", old: "R/a/sub/mp", new: "R/a/sub/mq", ctl: unix.EBUSY, under: unix.EBUSY,
		setup: func(t *testing.T, fx outsideFx) {
			must(t, os.MkdirAll(fx.path("R/a/sub/mp"), 0o755))
			must(t, unix.Mount("tmpfs", fx.path("R/a/sub/mp"), "tmpfs", 0, "size=1m"))
			t.Cleanup(func() { _ = unix.Unmount(fx.path("R/a/sub/mp"), unix.MNT_DETACH) })
		}},
	// Failing before the hook (another mount).
	{name: "exdev", kind: "rename", old: "R/a/sub/f", new: "T2/f", ctl: unix.EXDEV, under: unix.EXDEV},
}

// runRenameKind: the fixture, the ceiling (or none), warm-up writes in
// R/a/sub (the cache's entry), the rename, then the host moves R/a/sub
// out of the root and the sandbox creates T1/sub/new. It returns the
// rename's result, the create's, whether new exists and whether absent
// exists.
func runRenameKind(t *testing.T, k renameKind, ceiling bool) (rr, cr probe.Result, created, leaked bool) {
	sb := kt.Sandbox(t, "fp-rename")
	fx := newOutsideFx(t)
	for _, d := range []string{"R/a/sub/d/dd", "R/a/sub/full/x", "R/b"} {
		must(t, os.MkdirAll(fx.path(d), 0o755))
	}
	must(t, os.WriteFile(fx.path("R/a/sub/f"), []byte("hello"), 0o644))
	if k.setup != nil {
		k.setup(t, fx)
	}
	if ceiling {
		sb.Register(t, fx.entry(t, "R"))
	}
	if r := sb.Probe(t, "append", fx.path("R/a/sub/f")); r.Setup != "" || r.Errno != 0 {
		t.Fatalf("warm-up: %v, want success", r)
	}
	if n := renamesActive(t); n != 0 {
		t.Fatalf("before %s: renames_active %d, want 0", k.name, n)
	}
	if k.host != nil {
		k.host(t, fx)
	} else {
		rr = sb.Probe(t, "fp-rename", k.kind, fx.path(k.old), fx.path(k.new))
	}
	if n := renamesActive(t); n != 0 {
		t.Errorf("after %s (ceiling=%v): renames_active %d, want 0 (a counted rename never ended: the cache is off for good)", k.name, ceiling, n)
	}
	if k.absent != "" {
		_, err := os.Lstat(fx.path(k.absent))
		leaked = err == nil
	}
	moveSub(t, fx)
	cr = sb.Probe(t, "create", fx.path("T1/sub/new"))
	_, err := os.Lstat(fx.path("T1/sub/new"))
	return rr, cr, err == nil, leaked
}

// TestAttackFastpathRenameKinds: see the file comment.
func TestAttackFastpathRenameKinds(t *testing.T) {
	kt.Enforcer(t)
	for _, k := range renameKinds {
		t.Run(k.name, func(t *testing.T) {
			rr, cr, created, _ := runRenameKind(t, k, false)
			if rr.Setup != "" || rr.Errno != k.ctl {
				t.Fatalf("control (no ceiling): rename %v, want errno %d", rr, k.ctl)
			}
			if cr.Setup != "" || cr.Errno != 0 || !created {
				t.Fatalf("control (no ceiling): create in the moved directory %v (created %v), want success", cr, created)
			}
			rr, cr, created, leaked := runRenameKind(t, k, true)
			if rr.Setup != "" || rr.Errno != k.under {
				t.Errorf("ceiling: rename %v, want errno %d", rr, k.under)
			}
			if leaked {
				t.Errorf("BYPASS %s: %s exists after a refused rename", k.name, k.absent)
			}
			if cr.Setup != "" || !cr.Denied() || created {
				t.Errorf("BYPASS %s: create in R/a/sub moved out of the root: %v (created %v), want EPERM and no file", k.name, cr, created)
			}
			if n := renamesActive(t); n != 0 {
				t.Errorf("at the end: renames_active %d, want 0", n)
			}
		})
	}
}

func fpOwnRenameWindow(r *probe.Result, a []string) {
	dir, parent := a[0], a[1]
	ctl, rep := probe.InheritedFD, probe.InheritedFD+1
	fd, dfd, trig, ok := windowFDs(r, dir, parent)
	if !ok {
		return
	}
	var stop atomic.Bool
	var renames, renameOK atomic.Int64
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }()
	// W: renames inside D by its descriptor (wherever D is): each one's
	// own check climbs from D or reads the cache for D, before it is
	// counted; allowed ones also move the generation.
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for i := 0; !stop.Load(); i++ {
			o, n := "x", "y"
			if i%2 == 1 {
				o, n = n, o
			}
			renames.Add(1)
			if unix.Renameat(dfd, o, dfd, n) == nil {
				renameOK.Add(1)
			} else {
				_ = unix.Renameat(dfd, n, dfd, o) // out of step: swap back
			}
		}
	}()
	runtime.LockOSThread()
	w, ok := triggeredWrites(r, fd, trig, ctl, rep, nil)
	stop.Store(true)
	wg.Wait()
	if !ok {
		return
	}
	r.Out = fmt.Sprintf("%s renames=%d/%d", w, renameOK.Load(), renames.Load())
	if w.trials > 0 && renameOK.Load() == 0 {
		r.Setup = "no own rename succeeded: " + r.Out
		return
	}
	w.verdict(r)
}

// ownRenameWindowRun: the host moves R/a/sub to T1/out and back, trials
// times or until budget, while the sandbox renames inside it and writes
// to R/a/sub/f at once when it left.
func ownRenameWindowRun(t *testing.T, ceiling bool, trials int, budget time.Duration) (probe.Result, string, map[byte]int) {
	sb := kt.Sandbox(t, "fp-own-rename")
	fx := newOutsideFx(t)
	d := fx.path("R/a/sub")
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "f"), []byte("hello"), 0o644))
	must(t, os.WriteFile(filepath.Join(d, "x"), nil, 0o644))
	if ceiling {
		sb.Register(t, fx.entry(t, "R"))
	}
	r, got := hostMoveTrials(t, sb, probe.Cmd{Op: "fp-own-rename-window", Args: []string{d, fx.path("R/a")}},
		d, fx.path("T1/out"), 300*time.Millisecond, trials, budget)
	bs, err := os.ReadFile(filepath.Join(d, "f"))
	must(t, err)
	t.Logf("ceiling=%v: %v; reports %v", ceiling, r, got)
	return r, string(bs), got
}

// TestAttackFastpathOwnRenameWindow: see the file comment.
func TestAttackFastpathOwnRenameWindow(t *testing.T) {
	kt.Enforcer(t)
	r, f, _ := ownRenameWindowRun(t, false, 3, 10*time.Second)
	if r.Setup != "" || r.Errno != 0 || f != "Xello" {
		t.Fatalf("control (no ceiling): %v, f = %q; want success and Xello", r, f)
	}
	r, f, got := ownRenameWindowRun(t, true, 100000, 6*time.Second)
	if r.Setup != "" {
		t.Fatalf("ceiling: could not attempt: %v", r)
	}
	if !r.Denied() || f != "hello" || got['y'] > 0 {
		t.Errorf("BYPASS own-rename window: %v, f = %q, reports %v; want every write refused and hello", r, f, got)
	}
	if n := renamesActive(t); n != 0 {
		t.Errorf("renames_active %d after the race, want 0", n)
	}
}

// ---- 2. resolve_cache: copied, then checked again ---------------------

// cacheForger writes resolve_cache elements from user space, the way an
// LRU element recycled for another cgroup is rewritten in the kernel
// (htab_lru_map_update_elem): churn keys (ids no cgroup has) and forged
// elements for victims (found=0, no ceiling: "not enforced").
type cacheForger struct {
	cache, config *ebpf.Map
	size          int
}

func newCacheForger(t *testing.T) *cacheForger {
	t.Helper()
	c, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(kt.PinDir(), bpf.SharedMapResolveCache), nil)
	must(t, err)
	g, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(kt.PinDir(), bpf.SharedMapEnforcerdConfig), nil)
	must(t, err)
	t.Cleanup(func() { c.Close(); g.Close() })
	if c.KeySize() != 8 || c.ValueSize() < 16 {
		t.Fatalf("resolve_cache key %d value %d bytes: not the layout this test forges", c.KeySize(), c.ValueSize())
	}
	return &cacheForger{cache: c, config: g, size: int(c.ValueSize())}
}

func (f *cacheForger) generation(t *testing.T) uint64 {
	var v uint64
	if err := f.config.Lookup(uint32(0), &v); err != nil {
		t.Errorf("enforcerd_config: %v", err)
	}
	return v
}

// put writes an element for key: generation gen, found 0, cgid_lo lo,
// an effective ceiling of zeros (nothing denied, nothing pending).
func (f *cacheForger) put(key, gen uint64, lo uint32) error {
	v := make([]byte, f.size)
	binary.LittleEndian.PutUint64(v[0:], gen)
	binary.LittleEndian.PutUint32(v[8:], 0)
	binary.LittleEndian.PutUint32(v[12:], lo)
	return f.cache.Update(key, v, ebpf.UpdateAny)
}

// forge: until stop, for each victim cgroup id: an element of the current
// generation whose low key bits are another cgroup's (a recycled element
// caught mid-rewrite) and one of an older generation with the right bits
// (stale); between them churn keys (more than the map holds).
func (f *cacheForger) forge(t *testing.T, victims []uint64, stop *atomic.Bool) (chan struct{}, *atomic.Int64) {
	done := make(chan struct{})
	var n atomic.Int64
	go func() {
		defer close(done)
		churn := uint64(1) << 62
		for i := 0; !stop.Load(); i++ {
			gen := f.generation(t)
			for _, v := range victims {
				if err := f.put(v, gen-1, uint32(v)); err != nil {
					t.Errorf("forge: %v", err)
					return
				}
				if err := f.put(v, gen, uint32(v)+1); err != nil {
					t.Errorf("forge: %v", err)
					return
				}
				n.Add(2)
			}
			for j := 0; j < 64; j++ {
				churn++
				if err := f.put(churn, gen, uint32(churn)); err != nil {
					t.Errorf("churn: %v", err)
					return
				}
				n.Add(1)
			}
		}
	}()
	return done, &n
}

// TestAttackFastpathResolveCacheChurn: see the file comment.
func TestAttackFastpathResolveCacheChurn(t *testing.T) {
	e := kt.Enforcer(t)
	f := newCacheForger(t)
	const n = 200
	cpus := runtime.NumCPU()
	t.Run("sandbox-moving-between-sub-cgroups", func(t *testing.T) {
		for _, ceiling := range []bool{false, true} {
			sb := kt.Sandbox(t, "fp-churn")
			if ceiling {
				sb.Register(t, networkDenyEntry)
			}
			var subs []string
			var victims []uint64
			for _, s := range []string{"a", "b"} {
				p := filepath.Join(sb.Cg.Path(), s)
				must(t, os.Mkdir(p, 0o755))
				var st unix.Stat_t
				must(t, unix.Stat(p, &st))
				subs = append(subs, p)
				victims = append(victims, st.Ino)
			}
			var stop atomic.Bool
			forged, writes := f.forge(t, victims, &stop)
			var wg sync.WaitGroup
			rs := make([]probe.Result, cpus)
			for c := 0; c < cpus; c++ {
				wg.Add(1)
				go func(c int) {
					defer wg.Done()
					rs[c] = sb.Probe(t, "socket-loop", append([]string{strconv.Itoa(n), strconv.Itoa(c)}, subs...)...)
				}(c)
			}
			wg.Wait()
			stop.Store(true)
			<-forged
			t.Logf("ceiling=%v: %d cache writes; %v", ceiling, writes.Load(), rs)
			for c, r := range rs {
				if r.Setup != "" {
					t.Fatalf("cpu %d: could not attempt: %v", c, r)
				}
				want := fmt.Sprintf("succeeded=%d of %d", n, n)
				if !ceiling && (r.Errno != 0 || r.Out != want) {
					t.Fatalf("control (no ceiling) cpu %d: %v, want %s", c, r, want)
				}
				if ceiling && (!r.Denied() || r.Out != fmt.Sprintf("succeeded=0 of %d", n)) {
					t.Errorf("BYPASS resolve_cache: a socket() under network=false was allowed (cpu %d): %v", c, r)
				}
			}
		}
	})
	// The exec gate: a pending network=false registration of a cgroup
	// whose element says "nothing pending" (forged as above, and churned)
	// must be activated by the probe's exec.
	t.Run("exec-gate-pending", func(t *testing.T) {
		const rounds = 4
		for i := 0; i < rounds; i++ {
			for _, ceiling := range []bool{false, true} {
				sb := kt.Sandbox(t, "fp-gate")
				if r := sb.Probe(t, "socket", sockArgs(unix.AF_INET, unix.SOCK_DGRAM, 0)...); r.Setup != "" || r.Errno != 0 {
					t.Fatalf("warm-up: %v", r)
				}
				if ceiling {
					sb.Register(t, entry.Entry{Ceiling: networkDeny, Pending: true})
				}
				var stop atomic.Bool
				forged, _ := f.forge(t, []uint64{sb.Cg.ID}, &stop)
				r := sb.Probe(t, "socket", sockArgs(unix.AF_INET, unix.SOCK_DGRAM, 0)...)
				stop.Store(true)
				<-forged
				if r.Setup != "" {
					t.Fatalf("could not attempt: %v", r)
				}
				if !ceiling {
					if r.Errno != 0 {
						t.Fatalf("control (no ceiling): %v, want success", r)
					}
					continue
				}
				if !r.Denied() {
					t.Errorf("BYPASS exec gate (round %d): socket() after the first exec under a pending network=false registration: %v", i, r)
				}
				if en, err := e.Lookup(sb.Cg.ID); err != nil || en.Pending {
					t.Errorf("BYPASS exec gate (round %d): still pending after an exec in the cgroup: %+v %v", i, en, err)
				}
			}
		}
	})
}

// ---- 3. file_permission on sockets and network devices ----------------

// sockIO performs mode on fd: read, readv, recv-splice (socket -> pipe),
// write, writev, splice (pipe -> socket), sendfile (memfd -> socket),
// uring-read, uring-write. Writes send payload kind's bytes (sockPayload);
// reads need data waiting (the test sends it first).
func sockIO(mode, kind string, fd int) error {
	payload := sockPayload(kind)
	buf := make([]byte, 4096)
	switch mode {
	case "read":
		_, err := unix.Read(fd, buf)
		return err
	case "readv":
		_, err := unix.Readv(fd, [][]byte{buf[:2], buf[2:]})
		return err
	case "write":
		_, err := unix.Write(fd, payload)
		return err
	case "writev":
		_, err := unix.Writev(fd, [][]byte{payload[:2], payload[2:]})
		return err
	case "recv-splice", "splice":
		p := make([]int, 2)
		if err := unix.Pipe2(p, unix.O_CLOEXEC); err != nil {
			return probe.Setupf("pipe: %v", err)
		}
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		if mode == "recv-splice" {
			_, err := unix.Splice(fd, nil, p[1], nil, 4096, 0)
			return err
		}
		if _, err := unix.Write(p[1], payload); err != nil {
			return probe.Setupf("pipe write: %v", err)
		}
		_, err := unix.Splice(p[0], nil, fd, nil, len(payload), 0)
		return err
	case "sendfile":
		m, err := unix.MemfdCreate("src", unix.MFD_CLOEXEC)
		if err != nil {
			return probe.Setupf("memfd: %v", err)
		}
		defer unix.Close(m)
		if _, err := unix.Write(m, payload); err != nil {
			return probe.Setupf("memfd write: %v", err)
		}
		var off int64
		_, err = unix.Sendfile(fd, m, &off, len(payload))
		return err
	case "uring-read", "uring-write":
		ring, err := probe.NewRing()
		if err != nil {
			return err
		}
		defer ring.Close()
		const opRead, opWrite = 22, 23 // IORING_OP_READ, IORING_OP_WRITE
		s := probe.SQE{Op: opRead, FD: int32(fd), Addr: probe.Ptr(buf), Len: uint32(len(buf)), Off: ^uint64(0)}
		if mode == "uring-write" {
			s = probe.SQE{Op: opWrite, FD: int32(fd), Addr: probe.Ptr(payload), Len: uint32(len(payload)), Off: ^uint64(0)}
		}
		_, err = ring.Do(s)
		runtime.KeepAlive(buf)
		runtime.KeepAlive(payload)
		return err
	}
	return probe.Setupf("unknown mode %q", mode)
}

// sockPayload: "text" probe.Payload; "ip" an IPv4/UDP packet from and to
// TEST-NET-1 carrying it (a tun device takes whole packets); "rtm" an
// RTM_GETLINK request for ifindex 1 (the kernel answers on the socket).
func sockPayload(kind string) []byte {
	switch kind {
	case "ip":
		data := []byte(probe.Payload)
		b := make([]byte, 20+8+len(data))
		b[0], b[8], b[9] = 0x45, 64, unix.IPPROTO_UDP
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		copy(b[12:], []byte{192, 0, 2, 1, 192, 0, 2, 2})
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(b[10:], ^uint16(sum))
		binary.BigEndian.PutUint16(b[20:], 9999)
		binary.BigEndian.PutUint16(b[22:], 9)
		binary.BigEndian.PutUint16(b[24:], uint16(8+len(data)))
		copy(b[28:], data)
		return b
	case "rtm":
		return rtmGetlink()
	}
	return []byte(probe.Payload)
}

var readModes = []string{"read", "readv", "recv-splice", "uring-read"}
var writeModes = []string{"write", "writev", "splice", "sendfile", "uring-write"}

// sockPair: the sandbox's socket (given to the probe, a duplicate kept
// here) and a way to send data to it and to see what reached the peer.
type sockPair struct {
	mine *os.File // passed to the probe
	keep int      // the test's duplicate of the same socket
	feed func()   // puts data where the probe reads
	peer func() (bool, string)
	addr string // the peer's address (inet)
}

// readEffect: the data fed to the socket was consumed (no longer there
// for the duplicate to peek at).
func readEffect(t *testing.T, keep int) func() (bool, string) {
	return func() (bool, string) {
		b := make([]byte, 64)
		for i := 0; i < 20; i++ {
			n, _, err := unix.Recvfrom(keep, b, unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if err == nil && n > 0 {
				return false, fmt.Sprintf("%d bytes still waiting", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return true, "the waiting data was consumed"
	}
}

func keepDup(t *testing.T, f *os.File) int {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// inetPair: a tcp4 or udp4 socket connected to a listener of the test.
func inetPair(t *testing.T, network string) sockPair {
	var conn net.Conn
	var mine net.Conn
	var addr string
	switch network {
	case "tcp4":
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		must(t, err)
		t.Cleanup(func() { l.Close() })
		mine, err = net.Dial("tcp4", l.Addr().String())
		must(t, err)
		conn, err = l.Accept()
		must(t, err)
		addr = l.Addr().String()
	default:
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		must(t, err)
		mine, err = net.DialUDP("udp4", nil, c.LocalAddr().(*net.UDPAddr))
		must(t, err)
		// connect the listener back so it can write to mine
		c.Close()
		conn, err = net.DialUDP("udp4", c.LocalAddr().(*net.UDPAddr), mine.LocalAddr().(*net.UDPAddr))
		must(t, err)
		addr = c.LocalAddr().String()
	}
	t.Cleanup(func() { conn.Close(); mine.Close() })
	f, err := mine.(interface{ File() (*os.File, error) }).File()
	must(t, err)
	keep := keepDup(t, f)
	return sockPair{mine: f, keep: keep, addr: addr,
		feed: func() { _, err := conn.Write([]byte("waiting data")); must(t, err) },
		peer: connReader(t, conn)}
}

// unixOutsidePair: a unix socket of the test connected to a listener (or
// bound datagram socket) of the test: outside the sandbox.
func unixOutsidePair(t *testing.T, typ string, abstract bool) sockPair {
	addr := brokerAddr(t, abstract)
	if typ == "unix" {
		l, err := net.Listen("unix", addr)
		must(t, err)
		t.Cleanup(func() { l.Close() })
		c, err := net.Dial("unix", addr)
		must(t, err)
		srv, err := l.Accept()
		must(t, err)
		t.Cleanup(func() { c.Close() })
		f, err := c.(interface{ File() (*os.File, error) }).File()
		must(t, err)
		return sockPair{mine: f, keep: keepDup(t, f), peer: connReader(t, srv)}
	}
	srv, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	must(t, err)
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	f, err := c.File()
	must(t, err)
	return sockPair{mine: f, keep: keepDup(t, f), peer: packetListener(t, srv)}
}

// netlinkPair: an AF_NETLINK NETLINK_ROUTE socket; a write is an
// RTM_GETLINK dump request (the kernel queues its answer on the socket),
// feed makes the test's duplicate ask first.
func netlinkPair(t *testing.T) sockPair {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	must(t, err)
	must(t, unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}))
	f := os.NewFile(uintptr(fd), "netlink")
	keep := keepDup(t, f)
	return sockPair{mine: f, keep: keep,
		feed: func() { _, err := unix.Write(keep, rtmGetlink()); must(t, err) },
		peer: func() (bool, string) {
			b := make([]byte, 8192)
			for i := 0; i < 20; i++ {
				if n, _, err := unix.Recvfrom(keep, b, unix.MSG_DONTWAIT); err == nil && n > 0 {
					return true, fmt.Sprintf("the kernel answered (%d bytes)", n)
				}
				time.Sleep(10 * time.Millisecond)
			}
			return false, "no answer queued"
		}}
}

// rtmGetlink is an RTM_GETLINK request for ifindex 1 (nlmsghdr +
// ifinfomsg): one answer.
func rtmGetlink() []byte {
	b := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg)
	binary.LittleEndian.PutUint32(b[0:], uint32(len(b)))
	binary.LittleEndian.PutUint16(b[4:], unix.RTM_GETLINK)
	binary.LittleEndian.PutUint16(b[6:], unix.NLM_F_REQUEST)
	binary.LittleEndian.PutUint32(b[8:], 1)
	b[unix.NLMSG_HDRLEN] = unix.AF_UNSPEC
	binary.LittleEndian.PutUint32(b[unix.NLMSG_HDRLEN+4:], 1)
	return b
}

var tunSeq atomic.Int64

// tunPair: /dev/net/tun attached to a new up interface (IFF_TUN,
// IFF_NO_PI); a write is an IPv4 packet the kernel receives (rx_packets).
func tunPair(t *testing.T) sockPair {
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	must(t, err)
	name := fmt.Sprintf("fptun%d", tunSeq.Add(1))
	ifr, err := unix.NewIfreq(name)
	must(t, err)
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	must(t, unix.IoctlIfreq(int(f.Fd()), unix.TUNSETIFF, ifr))
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(s)
	up, err := unix.NewIfreq(name)
	must(t, err)
	up.SetUint16(unix.IFF_UP)
	must(t, unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, up))
	stat := "/sys/class/net/" + name + "/statistics/rx_packets"
	rx := func() string { b, _ := os.ReadFile(stat); return strings.TrimSpace(string(b)) }
	before := rx()
	return sockPair{mine: f, keep: keepDup(t, f), peer: func() (bool, string) {
		after := rx()
		return after != before, fmt.Sprintf("rx_packets %s -> %s", before, after)
	}}
}

// scm: the socket sent over a socketpair (SCM_RIGHTS) whose other end is
// the probe's fd 3; the test closes its copy of the sent socket.
func scm(t *testing.T, p sockPair) *os.File {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fds[0])
	must(t, unix.Sendmsg(fds[0], []byte("fd"), unix.UnixRights(int(p.mine.Fd())), nil, 0))
	p.mine.Close()
	return os.NewFile(uintptr(fds[1]), "scm")
}

func sockCase(name, mode, kind string, scmRights bool, mk func(t *testing.T) sockPair) kerneltest.Case {
	return kerneltest.Case{Name: name, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		p := mk(t)
		read := false
		for _, m := range readModes {
			read = read || m == mode
		}
		eff := p.peer
		if read {
			p.feed()
			time.Sleep(20 * time.Millisecond)
			eff = readEffect(t, p.keep)
		}
		if scmRights {
			return sb.ProbeFiles(t, []*os.File{scm(t, p)}, "fp-scm-io", mode, kind), eff
		}
		return sb.ProbeFiles(t, []*os.File{p.mine}, "fp-sock-io", mode, kind), eff
	}}
}

func fastpathSocketCases() []kerneltest.Case {
	var cs []kerneltest.Case
	tcp := func(t *testing.T) sockPair { return inetPair(t, "tcp4") }
	udp := func(t *testing.T) sockPair { return inetPair(t, "udp4") }
	for _, m := range append(append([]string{}, readModes...), writeModes...) {
		cs = append(cs, sockCase("tcp4-inherited/"+m, m, "text", false, tcp))
	}
	for _, m := range []string{"read", "write", "uring-write"} {
		cs = append(cs, sockCase("tcp4-scm-rights/"+m, m, "text", true, tcp))
	}
	for _, m := range []string{"read", "uring-read", "write", "sendfile"} {
		cs = append(cs, sockCase("udp4-inherited/"+m, m, "text", false, udp))
	}
	for _, m := range []string{"read", "write", "uring-write", "sendfile"} {
		cs = append(cs, sockCase("netlink-route/"+m, m, "rtm", false, netlinkPair))
	}
	cs = append(cs, sockCase("netlink-route-scm-rights/write", "write", "rtm", true, netlinkPair))
	for _, m := range []string{"write", "writev", "uring-write"} {
		cs = append(cs, sockCase("dev-net-tun/"+m, m, "ip", false, tunPair))
	}
	for _, k := range []struct {
		typ      string
		abstract bool
	}{{"unix", false}, {"unix", true}, {"unixgram", false}, {"unixgram", true}} {
		k := k
		name := k.typ + "-outside-path"
		if k.abstract {
			name = k.typ + "-outside-abstract"
		}
		mk := func(t *testing.T) sockPair { return unixOutsidePair(t, k.typ, k.abstract) }
		for _, m := range writeModes {
			if k.typ == "unixgram" && m == "splice" {
				continue // datagram sockets take no splice_write (EINVAL)
			}
			cs = append(cs, sockCase(name+"/"+m, m, "text", false, mk))
		}
		cs = append(cs, sockCase(name+"-scm-rights/write", "write", "text", true, mk))
	}
	return cs
}

// TestAttackFastpathSocketIO: see the file comment.
func TestAttackFastpathSocketIO(t *testing.T) {
	kt.Enforcer(t)
	runCases(t, fastpathSocketCases(), networkDeny, kerneltest.InSandbox)
}

// sockAttempt runs mode on p's socket in sb (feeding it first for a read)
// and returns the result and whether the effect happened.
func sockAttempt(t *testing.T, sb *kerneltest.Sandbox, p sockPair, mode string) (probe.Result, bool, string) {
	eff := p.peer
	for _, m := range readModes {
		if m == mode {
			p.feed()
			time.Sleep(20 * time.Millisecond)
			eff = readEffect(t, p.keep)
		}
	}
	r := sb.ProbeFiles(t, []*os.File{p.mine}, "fp-sock-io", mode, "text")
	ok, what := eff()
	return r, ok, what
}

// TestAttackFastpathSocketIOAuditAndEndpoints: the family read behind
// the cgroup check under the two other network verdicts. Audit-only
// network=false: every read and write of an inet socket passed in works
// and is recorded (file_permission, audited). network=false with the
// socket's peer listed: works without a record; the same socket kind
// connected to an unlisted peer is refused with the data left unread or
// unsent.
func TestAttackFastpathSocketIOAuditAndEndpoints(t *testing.T) {
	kt.Enforcer(t)
	modes := []string{"read", "uring-read", "recv-splice", "write", "sendfile", "uring-write"}
	t.Run("audit-only", func(t *testing.T) {
		for _, m := range modes {
			sb := kt.Sandbox(t, "fp-audit")
			sb.Register(t, entry.Entry{Ceiling: networkDeny, AuditOnly: true})
			r, ok, what := sockAttempt(t, sb, inetPair(t, "tcp4"), m)
			if r.Setup != "" || r.Errno != 0 || !ok {
				t.Errorf("%s under audit-only network=false: %v (%s), want success and its effect", m, r, what)
			}
			kt.Expect(t, sb.Cg.ID, kerneltest.Want{Hooks: []denial.Hook{denial.HookFilePermission}, Audited: true})
		}
	})
	t.Run("endpoints", func(t *testing.T) {
		for _, m := range modes {
			listed, other := inetPair(t, "tcp4"), inetPair(t, "tcp4")
			sb := registered(t, "tcp:"+listed.addr)
			r, ok, what := sockAttempt(t, sb, listed, m)
			if r.Setup != "" || r.Errno != 0 || !ok {
				t.Errorf("%s on a socket connected to the listed endpoint: %v (%s), want success and its effect", m, r, what)
			}
			for _, d := range sb.Records(t) {
				t.Errorf("%s to the listed endpoint: unexpected record %v", m, d)
			}
			r, ok, what = sockAttempt(t, sb, other, m)
			if r.Setup != "" || !r.Denied() || ok {
				t.Errorf("BYPASS %s on a socket connected to an unlisted peer: %v (%s), want EPERM and no effect", m, r, what)
			}
		}
	})
}

// TestAttackSocketNetworkBitsOnly: see the file comment. The child's
// ceiling denies writes, so that its answer is a registered one whose only
// missing bit is the network's. Tri-state per socket and entry: allowed
// (and arriving) with the ceiling alone, refused with nothing arriving
// below the network=false parent.
func TestAttackSocketNetworkBitsOnly(t *testing.T) {
	kt.Enforcer(t)
	netOn := policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}
	tcp := func(t *testing.T) sockPair { return inetPair(t, "tcp4") }
	unixPath := func(t *testing.T) sockPair { return unixOutsidePair(t, "unix", false) }
	gramAbstract := func(t *testing.T) sockPair { return unixOutsidePair(t, "unixgram", true) }
	for _, c := range []struct {
		name  string
		mk    func(t *testing.T) sockPair
		modes []string
	}{
		{"tcp4-inherited", tcp, []string{"read", "uring-read", "write", "sendfile", "uring-write"}},
		{"unix-outside-path", unixPath, []string{"write", "splice", "sendfile", "uring-write"}},
		{"unixgram-outside-abstract", gramAbstract, []string{"write", "writev"}},
	} {
		for _, m := range c.modes {
			t.Run(c.name+"/"+m, func(t *testing.T) {
				alone := kt.Sandbox(t, "netbits")
				alone.Register(t, entry.Entry{Ceiling: netOn})
				r, ok, what := sockAttempt(t, alone, c.mk(t), m)
				if r.Setup != "" || r.Errno != 0 || !ok {
					t.Fatalf("%s under network=true alone: %v (%s), want success and its effect", m, r, what)
				}
				parent := kt.Sandbox(t, "netbits-parent")
				child := kt.SandboxAt(t, parent.Cg.Group+"/child")
				parent.Register(t, entry.Entry{Ceiling: networkDeny})
				child.Register(t, entry.Entry{Ceiling: netOn})
				r, ok, what = sockAttempt(t, child, c.mk(t), m)
				if r.Setup != "" || !r.Denied() || ok {
					t.Errorf("BYPASS %s with network=true below a network=false parent: %v (%s), want EPERM and no effect", m, r, what)
				}
			})
		}
	}
}
