package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
)

// The scale figure: the per-operation cost of an enforced process while K
// real cgroups are registered, each with a live process in it that keeps
// going through the hooks, against K = 1; and the same at one K while extra
// cgroups are registered and unregistered in the background (churn),
// against no churn.
//
// Layout (base at cgroup level 2, so every cell sits at level 4, the depth
// of a container under a runtime's slice):
//
//	<base>/s-m/c0            the measured cell (its worker runs there)
//	<base>/s-g<g>/c<c>       background cell i >= 1: g = (i-1)/100, c = (i-1)%100
//	<base>/s-churn/c<c>      the cgroups churn registers and unregisters
//
// Each background cell holds one idler (idler_amd64.s): a process that
// shares the driver's address space, fd table and signal handlers, so that
// 20,000 of them fit in a small guest, and that does socket()+close() (the
// LSM hook socket_create and the cgroup-BPF hook cgroup/sock_create, each
// resolving its cgroup's ceiling through the per-cgroup cache) once per
// period. The periods are (K-1)/rate, so that the idlers together make
// -scale-rate such calls per second at every K (the background load is the
// same; what changes with K is how many distinct cgroups the maps and the
// cache see), spread evenly over the period.

// Defaults of the scale flags.
const (
	defaultScaleKs   = "1,1000,10000,20000"
	defaultChurn     = "0,10,100"
	defaultChurnAt   = 10000
	defaultScaleRate = 2000
	// maxScaleK stays well under the ceilings map's MAX_CEILINGS (65536),
	// leaving room for the other phases' and churn's registrations.
	maxScaleK = 60000
	// churnCells is how many extra cgroups churn cycles through.
	churnCells = 16
	// cellsPerGroup is the fan-out of a background cell's parent.
	cellsPerGroup = 100
)

// scaleConfig is what the scale flags ask for.
type scaleConfig struct {
	ks      []int // ascending, starting at 1; nil: no scale figure
	churn   []int // registrations+unregistrations per second, ascending, starting at 0; nil: no churn
	churnAt int   // the K (one of ks) at which churn is measured
	rate    float64
	ops     []Op
}

// scaleFlags registers the scale flags on fs. The returned function parses
// them once fs is parsed: -scale-ops must be a subset of have (the
// operations the run measures); when not given, it is defaultOps restricted
// to have. Errors name the flag.
func scaleFlags(fs *flag.FlagSet, defaultOps []Op) func(have []Op) (scaleConfig, error) {
	ks := fs.String("scale", defaultScaleKs, "scale figure: numbers K of real registered cgroups (level 4), each with a live process, comma-separated, the first 1 (empty: no scale figure)")
	churn := fs.String("churn", defaultChurn, "churn figure: registrations+unregistrations of extra cgroups per second while measuring at -churn-at, comma-separated, the first 0 (empty: no churn figure)")
	churnAt := fs.Int("churn-at", defaultChurnAt, "the K of -scale at which churn is measured")
	rate := fs.Float64("scale-rate", defaultScaleRate, "socket()+close() calls per second of all background processes together, at every K")
	ops := fs.String("scale-ops", joinOps(defaultOps), "operations of the scale and churn figures (each must also be measured by the run)")
	return func(have []Op) (scaleConfig, error) {
		o := *ops
		if !flagSet(fs, "scale-ops") {
			o = joinOps(scaleOpsIn(defaultOps, have))
		}
		return parseScale(*ks, *churn, *churnAt, *rate, o, have)
	}
}

// parseScale checks the scale flags (see scaleFlags).
func parseScale(ks, churn string, churnAt int, rate float64, ops string, have []Op) (scaleConfig, error) {
	var c scaleConfig
	var err error
	if c.ks, err = parseCounts("-scale", ks, 1, maxScaleK); err != nil {
		return c, err
	}
	if c.ks == nil {
		return c, nil
	}
	if c.ks[0] != 1 {
		return c, fmt.Errorf("-scale %q: the list must start at 1 (the figure's base)", ks)
	}
	if len(c.ks) < 2 {
		return c, fmt.Errorf("-scale %q: want at least one K beside 1", ks)
	}
	if !(rate > 0) || rate > 1e6 {
		return c, fmt.Errorf("-scale-rate %v: want a positive rate up to 1e6 per second", rate)
	}
	c.rate = rate
	if c.churn, err = parseCounts("-churn", churn, 0, 10000); err != nil {
		return c, err
	}
	if c.churn != nil {
		if c.churn[0] != 0 {
			return c, fmt.Errorf("-churn %q: the list must start at 0 (the figure's base)", churn)
		}
		if len(c.churn) < 2 {
			return c, fmt.Errorf("-churn %q: want at least one rate beside 0", churn)
		}
		found := false
		for _, k := range c.ks {
			found = found || k == churnAt
		}
		if !found {
			return c, fmt.Errorf("-churn-at %d: not one of -scale %q", churnAt, ks)
		}
		c.churnAt = churnAt
	}
	for _, f := range strings.Split(ops, ",") {
		op := Op(strings.TrimSpace(f))
		if op == "" {
			continue
		}
		ok := false
		for _, h := range have {
			ok = ok || h == op
		}
		if !ok {
			return c, fmt.Errorf("-scale-ops: %q is not measured by this run (have %s)", op, joinOps(have))
		}
		for _, o := range c.ops {
			if o == op {
				return c, fmt.Errorf("-scale-ops: %q given twice", op)
			}
		}
		c.ops = append(c.ops, op)
	}
	if len(c.ops) == 0 {
		return c, fmt.Errorf("-scale-ops %q: no operation left (this run measures %s)", ops, joinOps(have))
	}
	return c, nil
}

// scaleOpsIn is want restricted to have, in want's order (the default
// scale operations of a run that measures only some operations).
func scaleOpsIn(want, have []Op) []Op {
	var out []Op
	for _, w := range want {
		for _, h := range have {
			if w == h {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// parseCounts parses a comma-separated list of integers in [lo, hi] into
// an ascending list without repeats; nil for an empty list. Errors: a
// non-number, a number out of range, a repeat.
func parseCounts(flagName, list string, lo, hi int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %q is not a whole number", flagName, list, f)
		}
		if v < lo || v > hi {
			return nil, fmt.Errorf("%s %q: %d is out of range [%d, %d]", flagName, list, v, lo, hi)
		}
		if seen[v] {
			return nil, fmt.Errorf("%s %q: %d given twice", flagName, list, v)
		}
		seen[v] = true
		out = append(out, v)
	}
	sort.Ints(out)
	return out, nil
}

// Phase names of the scale and churn cells.
func scalePhase(k int) string    { return fmt.Sprintf("scale-k%d", k) }
func churnPhase(rate int) string { return fmt.Sprintf("churn-%dps", rate) }

// parsePhaseNumber is the number in a scale or churn phase name (prefix,
// number, suffix); false for other names.
func parsePhaseNumber(phase, prefix, suffix string) (int, bool) {
	s, ok := strings.CutPrefix(phase, prefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, suffix)
	if !ok || s == "" {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || strconv.Itoa(v) != s {
		return 0, false
	}
	return v, true
}

// scaleLayout names the cells below base (a group path, e.g. /bench/scale).
type scaleLayout struct{ base string }

func (l scaleLayout) measured() string { return path.Join(l.base, "s-m", "c0") }

// cell is background cell i (1 <= i < K).
func (l scaleLayout) cell(i int) string {
	return path.Join(l.base, fmt.Sprintf("s-g%03d", (i-1)/cellsPerGroup), fmt.Sprintf("c%03d", (i-1)%cellsPerGroup))
}

// pacers is the parent of K=1's background cells (unregistered), pacer
// one of them.
func (l scaleLayout) pacers() string     { return path.Join(l.base, "s-p") }
func (l scaleLayout) pacer(i int) string { return path.Join(l.pacers(), fmt.Sprintf("p%02d", i)) }

// pacerCount is how many processes make K=1's background calls: each at
// most 100 per second (one process every 0.5 ms does not keep up under
// TCG: the guest's timers are coarser).
func pacerCount(rate float64) int { return max(1, int(math.Ceil(rate/100))) }

func (l scaleLayout) churnCell(i int) string {
	return path.Join(l.base, "s-churn", fmt.Sprintf("c%03d", i))
}

// parents are the level-3 groups of cells 1..n-1, the measured cell and
// churn's, for kill and removal.
func (l scaleLayout) parents(n int) []string {
	out := []string{path.Join(l.base, "s-m"), l.pacers(), path.Join(l.base, "s-churn")}
	for g := 0; g*cellsPerGroup < n-1; g++ {
		out = append(out, path.Join(l.base, fmt.Sprintf("s-g%03d", g)))
	}
	return out
}

// idlerSlot is one idler's shared state (idler_amd64.s reads and writes it
// by fixed offsets). It is in memory the Go runtime does not manage (an
// anonymous mapping), one cache line each.
type idlerSlot struct {
	next   int64    // CLOCK_MONOTONIC ns of the next call (the idler adds period after each)
	period int64    // ns between calls
	ts     [2]int64 // the idler's timespec scratch
	count  uint64   // socket()+close() done (written by the idler only)
	fails  uint64   // socket() failed (written by the idler only)
	ppid   int64    // the driver's pid: an idler whose parent differs exits
	mask   uint64   // all ones: the signal mask the idler sets
}

// cloneArgs is the kernel's struct clone_args (CLONE_ARGS_SIZE_VER2); the
// blanks are pidfd, child_tid, parent_tid and tls, set_tid, set_tid_size.
type cloneArgs struct {
	flags                        uint64
	_                            [3]uint64
	exitSignal, stack, stackSize uint64
	_                            [3]uint64
	cgroup                       uint64
}

// idlerPool owns the idlers: their slots, their stack (one page for all:
// the idler never touches it) and the locked OS thread that clones them
// (PR_SET_PDEATHSIG is relative to that thread: it lives until close).
type idlerPool struct {
	mem   []byte
	stack []byte
	slots []*idlerSlot
	pids  []int
	do    chan func()
	done  chan struct{}
}

func newIdlerPool(n int) (*idlerPool, error) {
	if !idlersSupported {
		return nil, fmt.Errorf("scale: the background processes (idler_amd64.s) exist for amd64 only, this is %s (-scale \"\" runs without the figure)", runtime.GOARCH)
	}
	size := int(unsafe.Sizeof(idlerSlot{}))
	mem, err := unix.Mmap(-1, 0, max(n, 1)*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("scale: idler slots: %w", err)
	}
	stack, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("scale: idler stack: %w", err)
	}
	p := &idlerPool{mem: mem, stack: stack, do: make(chan func()), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		for f := range p.do {
			f()
		}
		close(p.done)
	}()
	return p, nil
}

// spawn starts one idler in cg with its first call at first and period
// between calls. Errors: clone3 fails (ENOSYS on other architectures).
func (p *idlerPool) spawn(cg cgroup.Cgroup, first time.Duration, period time.Duration) error {
	dir, err := cg.OpenDir()
	if err != nil {
		return err
	}
	defer dir.Close()
	i := len(p.slots)
	size := int(unsafe.Sizeof(idlerSlot{}))
	if (i+1)*size > len(p.mem) {
		return fmt.Errorf("scale: more idlers than slots (%d)", len(p.mem)/size)
	}
	s := (*idlerSlot)(unsafe.Pointer(&p.mem[i*size]))
	*s = idlerSlot{next: monotonicNs() + int64(first), period: int64(period), ppid: int64(os.Getpid()), mask: ^uint64(0)}
	args := cloneArgs{
		flags:      unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_INTO_CGROUP,
		exitSignal: uint64(unix.SIGCHLD),
		stack:      uint64(uintptr(unsafe.Pointer(&p.stack[0]))),
		stackSize:  uint64(len(p.stack)),
		cgroup:     uint64(dir.Fd()),
	}
	res := make(chan int64)
	p.do <- func() { res <- idlerClone(&args, unsafe.Sizeof(args), s) }
	pid := <-res
	runtime.KeepAlive(dir)
	if pid < 0 {
		return fmt.Errorf("scale: clone3 of an idler into %s: %w", cg, unix.Errno(-pid))
	}
	p.slots = append(p.slots, s)
	p.pids = append(p.pids, int(pid))
	return nil
}

// retime gives every idler the period and a next call at a uniformly
// random point of the coming period (an idler asleep until its old next
// call makes that one, then follows the new schedule).
func (p *idlerPool) retime(period time.Duration, rng *rand.Rand) {
	now := monotonicNs()
	for _, s := range p.slots {
		atomic.StoreInt64(&s.period, int64(period))
		atomic.StoreInt64(&s.next, now+rng.Int64N(int64(period)))
	}
}

// counts sums the idlers' calls and failures, and counts idlers that made
// no call yet.
func (p *idlerPool) counts() (calls, fails uint64, silent int) {
	for _, s := range p.slots {
		c := atomic.LoadUint64(&s.count)
		calls += c
		fails += atomic.LoadUint64(&s.fails)
		if c == 0 {
			silent++
		}
	}
	return calls, fails, silent
}

// reap waits for idlers from..end to exit (after they were killed), up to
// timeout, and drops them. Errors: an idler still running at the timeout.
func (p *idlerPool) reap(from int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, pid := range p.pids[from:] {
		for {
			var ws unix.WaitStatus
			got, err := unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil)
			if got == pid || errors.Is(err, unix.ECHILD) {
				break
			}
			if err != nil && !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("scale: wait for idler %d: %w", pid, err)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("scale: idler %d still running %v after the kill", pid, timeout)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	p.pids = p.pids[:from]
	p.slots = p.slots[:from]
	return nil
}

// close ends the cloning thread (an idler still alive gets SIGKILL) and
// frees the slots (only after reap: the idlers use them until they exit).
func (p *idlerPool) close(reaped bool) {
	close(p.do)
	<-p.done
	if reaped {
		_ = unix.Munmap(p.mem)
		_ = unix.Munmap(p.stack)
	}
}

// raiseSysctl makes the integer sysctl file at least min (threads-max and
// pid_max of a small guest are below 20,000 idlers plus the rest) and
// returns what restores it. Errors: the file unreadable or unwritable.
func raiseSysctl(file string, min int64) (func(), error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	old, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if old >= min {
		return func() {}, nil
	}
	if err := os.WriteFile(file, []byte(strconv.FormatInt(min, 10)), 0o644); err != nil {
		return nil, fmt.Errorf("raise %s from %d to %d: %w", file, old, min, err)
	}
	return func() { _ = os.WriteFile(file, b, 0o644) }, nil
}

// tasksNow is the number of tasks (threads) in the system, from
// /proc/loadavg's "running/total" field (0 when unreadable).
func tasksNow() int64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0
	}
	_, total, _ := strings.Cut(f[3], "/")
	v, _ := strconv.ParseInt(total, 10, 64)
	return v
}

// guestMem is the guest's memory as QEMU's -m gave it ("-m 3G"): MemTotal
// rounded up to whole GiB (the kernel keeps some of -m for itself).
func guestMem() string {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return "-m ?"
	}
	defer f.Close()
	kib := meminfoField(f, "MemTotal")
	return fmt.Sprintf("-m %dG", int64(math.Ceil(kib/(1<<20))))
}

// memAvailableKiB is MemAvailable of /proc/meminfo (0 when unreadable).
func memAvailableKiB() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	return meminfoField(f, "MemAvailable")
}

// meminfoField is procField of /proc/meminfo's field (KiB), 0 when absent.
func meminfoField(r io.Reader, field string) float64 {
	v, _ := procField(r, field)
	return v
}

// scaleRun measures the scale figure (and churn at c.churnAt) with the
// cells below base: first K ascending, each K's cells created, registered
// (all-allow ceiling) and their idlers started on top of the previous K's,
// then a warm-up until every idler made a call (so the cache has seen
// every cell), then r.reps workers in the measured cell, one per round
// (phase scale-k<K>); at churnAt, r.reps rounds of every churn rate in an
// order shuffled per round (phase churn-<R>ps, paired with churn-0ps).
// Then the Ks are measured again in descending order, cells removed on
// the way down (the largest K once, every other K twice, K=1 at both ends).
// Everything is torn down at the end (idlers killed and reaped, every cell
// unregistered and removed), also on error. Errors: a cgroup, registration
// or clone failure, an idler silent after the warm-up or failing its
// socket(), a worker failure.
func (r *run) scaleRun(enf *enforcer.Enforcer, mount, base string, c scaleConfig, seed uint64) (err error) {
	l := scaleLayout{base}
	maxK := c.ks[len(c.ks)-1]
	// Room for maxK more tasks and pids (a 1 GiB guest allows about 7,800
	// threads in all).
	for _, f := range []string{"/proc/sys/kernel/threads-max", "/proc/sys/kernel/pid_max"} {
		want := tasksNow() + int64(maxK) + 8192
		restore, err := raiseSysctl(f, want)
		if err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		defer restore()
	}
	pool, err := newIdlerPool(maxK - 1)
	if err != nil {
		return err
	}
	pacer, err := newIdlerPool(pacerCount(c.rate))
	if err != nil {
		pool.close(true)
		return err
	}
	var registered []uint64 // the measured cell's first
	var made []string       // level-3 groups created
	var churn []cgroup.Cgroup
	unregister := func(ids []uint64) (rerr error) {
		for _, id := range ids {
			if uerr := enf.Unregister(id); uerr != nil && !errors.Is(uerr, enforcer.ErrNotRegistered) {
				rerr = errors.Join(rerr, uerr)
			}
		}
		return rerr
	}
	defer func() {
		t0 := time.Now()
		for _, g := range l.parents(maxK) {
			if cg, oerr := cgroup.Open(mount, g); oerr == nil {
				_ = cg.Kill()
			}
		}
		rerr := pool.reap(0, 30*time.Second)
		pool.close(rerr == nil)
		perr := pacer.reap(0, 30*time.Second)
		pacer.close(perr == nil)
		rerr = errors.Join(rerr, perr, unregister(registered))
		for _, cg := range churn { // a churn error may leave one registered
			rerr = errors.Join(rerr, unregister([]uint64{cg.ID}))
		}
		for _, g := range made {
			if cg, oerr := cgroup.Open(mount, g); oerr == nil {
				rerr = errors.Join(rerr, cg.Remove(10*time.Second))
			}
		}
		r.log("scale: torn down in %.1fs", time.Since(t0).Seconds())
		err = errors.Join(err, rerr)
	}()
	mkcell := func(group string) (cgroup.Cgroup, error) {
		parent := path.Dir(group)
		if _, err := os.Stat(path.Join(mount, parent)); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(path.Join(mount, parent), 0o755); err != nil {
				return cgroup.Cgroup{}, fmt.Errorf("scale: %w", err)
			}
			made = append(made, parent)
		}
		if err := unix.Mkdir(path.Join(mount, group), 0o755); err != nil {
			return cgroup.Cgroup{}, fmt.Errorf("scale: create cgroup %s: %w", group, err)
		}
		return cgroup.Open(mount, group)
	}
	register := func(cg cgroup.Cgroup) error {
		if err := enf.Register(cg, allowAll); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		registered = append(registered, cg.ID)
		return nil
	}
	measured, err := mkcell(l.measured())
	if err != nil {
		return err
	}
	if err := register(measured); err != nil {
		return err
	}
	// K=1's background: pacerCount processes in unregistered cells at
	// the same total rate, so that interrupts, wake-ups and switches of
	// background work weigh on every K alike. Frozen (cgroup.freeze of
	// their parent) while K > 1.
	var pacerCells []cgroup.Cgroup
	for i := 0; i < pacerCount(c.rate); i++ {
		cg, err := mkcell(l.pacer(i))
		if err != nil {
			return err
		}
		pacerCells = append(pacerCells, cg)
	}
	pacerCg, err := cgroup.Open(mount, l.pacers())
	if err != nil {
		return err
	}
	pacerPeriod := time.Duration(float64(len(pacerCells)) / c.rate * float64(time.Second))
	pacerOn := func(rng *rand.Rand) error {
		if len(pacer.slots) == 0 {
			for _, cg := range pacerCells {
				if err := pacer.spawn(cg, time.Duration(rng.Int64N(int64(pacerPeriod))), pacerPeriod); err != nil {
					return err
				}
			}
			return nil
		}
		pacer.retime(pacerPeriod, rng)
		return pacerCg.Thaw()
	}
	if c.churn != nil {
		for i := 0; i < churnCells; i++ {
			cg, err := mkcell(l.churnCell(i))
			if err != nil {
				return err
			}
			churn = append(churn, cg)
		}
	}
	r.doc.Notes = append(r.doc.Notes, fmt.Sprintf("scale: the measured process and every background process sit at cgroup level %d, each in its own registered cgroup (all-allow ceiling); the background processes together make %.0f socket()+close() calls per second at every K, each one every (K-1)/%.0f s; a background process is a process of its own in its own cgroup that shares the driver's address space and fd table (clone3 CLONE_VM|CLONE_FILES|CLONE_INTO_CGROUP), so that 20,000 fit in a small guest; at K=1 %d processes in unregistered cells make the same calls at the same total rate (frozen while K > 1), so that every K has the same background load; the Ks are measured ascending, then again descending (the largest once), so that K=1 has samples from both ends", measured.Level, c.rate, c.rate, pacerCount(c.rate)))
	memBase := memAvailableKiB()
	var createD, registerD, spawnD time.Duration
	var cells []cgroup.Cgroup // background cell i is cells[i-1], its idler pool slot i-1
	rng := rand.New(rand.NewPCG(seed, 1))
	periodOf := func(k int) time.Duration { return time.Duration(float64(k-1) / c.rate * float64(time.Second)) }
	// measure warms the cells up (every idler makes a call), then runs
	// r.reps workers at K=k; up: the ascending pass (its figures recorded).
	measure := func(k int, before []uint64, up bool) error {
		p, per := pool, periodOf(k)
		if k == 1 {
			p, per = pacer, pacerPeriod
		}
		if err := r.scaleWarm(p, before, per); err != nil {
			return fmt.Errorf("scale: K=%d: %w", k, err)
		}
		calls0, _, _ := p.counts()
		t1 := time.Now()
		for i := 0; i < r.reps; i++ {
			if err := r.microIn(measured, "scale", scalePhase(k), c.ops); err != nil {
				return err
			}
		}
		calls1, fails, _ := p.counts()
		if fails > 0 {
			return fmt.Errorf("scale: K=%d: %d background socket() calls failed", k, fails)
		}
		bg := float64(calls1-calls0) / time.Since(t1).Seconds()
		if up {
			r.doc.Values = append(r.doc.Values, Value{fmt.Sprintf("scale_k%d_background_calls", k), bg, "per s"})
		}
		r.log("scale: K=%d measured; background %.0f calls/s during it", k, bg)
		return nil
	}
	// The ascending pass: each K's new cells on top of the previous K's.
	for _, k := range c.ks {
		t0 := time.Now()
		before := pacer.snapshot()
		if k == 1 {
			if err := pacerOn(rng); err != nil {
				return err
			}
		} else {
			if err := pacerCg.Freeze(30 * time.Second); err != nil {
				return err
			}
			pool.retime(periodOf(k), rng)
			before = pool.snapshot()
		}
		for n := len(cells) + 1; n < k; n++ {
			ta := time.Now()
			cg, err := mkcell(l.cell(n))
			if err != nil {
				return err
			}
			tb := time.Now()
			if err := register(cg); err != nil {
				return err
			}
			tc := time.Now()
			if err := pool.spawn(cg, time.Duration(rng.Int64N(int64(periodOf(k)))), periodOf(k)); err != nil {
				return err
			}
			cells = append(cells, cg)
			createD += tb.Sub(ta)
			registerD += tc.Sub(tb)
			spawnD += time.Since(tc)
			if n%5000 == 0 {
				r.log("scale: %d cells so far (%.0fs)", n, time.Since(t0).Seconds())
			}
		}
		setup := time.Since(t0)
		avail := memAvailableKiB()
		used := (memBase - avail) / 1024
		r.log("scale: K=%d: set up in %.1fs (cumulative: create %.1fs, register %.1fs, spawn %.1fs), %.0f MiB more in use than before the scale figure (MemAvailable %.0f MiB), period %v",
			k, setup.Seconds(), createD.Seconds(), registerD.Seconds(), spawnD.Seconds(), used, avail/1024, periodOf(k))
		r.doc.Values = append(r.doc.Values,
			Value{fmt.Sprintf("scale_k%d_setup", k), setup.Seconds(), "s"},
			Value{fmt.Sprintf("scale_k%d_memory", k), used, "MiB"})
		if err := measure(k, before, true); err != nil {
			return err
		}
		if k == c.churnAt && c.churn != nil {
			if err := r.churnRounds(enf, measured, churn, c, rng); err != nil {
				return err
			}
		}
	}
	nb := len(cells)
	r.doc.Values = append(r.doc.Values,
		Value{"scale_register_mean", float64(registerD.Microseconds()) / float64(nb), "us"},
		Value{"scale_cgroup_create_mean", float64(createD.Microseconds()) / float64(nb), "us"},
		Value{"scale_process_spawn_mean", float64(spawnD.Microseconds()) / float64(nb), "us"})
	// The descending pass, down to K=1: the last cells' processes killed
	// and reaped, the cells unregistered and removed, the rest on the new
	// K's schedule; every K below the largest is measured again (the
	// samples join the ascending pass's), so drift of the machine over the
	// figure weighs on every K alike rather than on the largest.
	var unregD time.Duration
	for i := len(c.ks) - 2; i >= 0; i-- {
		k := c.ks[i]
		t0 := time.Now()
		for _, cg := range cells[k-1:] {
			if err := cg.Kill(); err != nil {
				return err
			}
		}
		if err := pool.reap(k-1, 30*time.Second); err != nil {
			return err
		}
		t1 := time.Now()
		if err := unregister(registered[k:]); err != nil {
			return err
		}
		unregD += time.Since(t1)
		registered = registered[:k]
		for _, cg := range cells[k-1:] {
			if err := unix.Rmdir(cg.Path()); err != nil {
				return fmt.Errorf("scale: remove cgroup %s: %w", cg.Group, err)
			}
		}
		cells = cells[:k-1]
		before := pool.snapshot()
		if k > 1 {
			pool.retime(periodOf(k), rng)
		} else {
			before = pacer.snapshot()
			if err := pacerOn(rng); err != nil {
				return err
			}
		}
		r.log("scale: down to K=%d in %.1fs", k, time.Since(t0).Seconds())
		if err := measure(k, before, false); err != nil {
			return err
		}
	}
	r.doc.Values = append(r.doc.Values, Value{"scale_unregister_mean", float64(unregD.Microseconds()) / float64(nb), "us"})
	return nil
}

// snapshot is every idler's call count.
func (p *idlerPool) snapshot() []uint64 {
	out := make([]uint64, len(p.slots))
	for j, s := range p.slots {
		out[j] = atomic.LoadUint64(&s.count)
	}
	return out
}

// scaleWarm waits until every idler made at least one call since base (a
// snapshot; idlers started since count from 0): every cell's cache entry
// was filled in this K's schedule. It waits up to two periods and a
// minute. Errors: idlers still silent, or a failed call.
func (r *run) scaleWarm(pool *idlerPool, base []uint64, period time.Duration) error {
	deadline := time.Now().Add(2*period + time.Minute)
	for {
		silent := 0
		for j, s := range pool.slots {
			var b uint64
			if j < len(base) {
				b = base[j]
			}
			if atomic.LoadUint64(&s.count) == b {
				silent++
			}
		}
		if _, fails, _ := pool.counts(); fails > 0 {
			return fmt.Errorf("%d background socket() calls failed", fails)
		}
		if silent == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d background processes made no call within %v", silent, len(pool.slots), 2*period+time.Minute)
		}
		time.Sleep(min(period/10+time.Millisecond, time.Second))
	}
}

// churnRounds: r.reps rounds, each measuring once at every churn rate in a
// shuffled order; at rate R a goroutine registers (all-allow) and
// unregisters one of the churn cells R times per second while the worker
// runs. The achieved rate is recorded (a registration slower than 1/R
// lowers it).
func (r *run) churnRounds(enf *enforcer.Enforcer, measured cgroup.Cgroup, cells []cgroup.Cgroup, c scaleConfig, rng *rand.Rand) error {
	rates := append([]int(nil), c.churn...)
	done := map[int]int{}
	spent := map[int]time.Duration{}
	for i := 0; i < r.reps; i++ {
		rng.Shuffle(len(rates), func(x, y int) { rates[x], rates[y] = rates[y], rates[x] })
		r.log("churn round %d/%d: %v per second", i+1, r.reps, rates)
		for _, rate := range rates {
			stop := make(chan struct{})
			res := make(chan error, 1)
			var pairs int
			t0 := time.Now()
			go func() {
				if rate == 0 {
					<-stop
					res <- nil
					return
				}
				tick := time.NewTicker(time.Second / time.Duration(rate))
				defer tick.Stop()
				for j := 0; ; j++ {
					if j > 0 { // the first pair at once, the worker starting
						select {
						case <-stop:
							res <- nil
							return
						case <-tick.C:
						}
					}
					cg := cells[j%len(cells)]
					if err := enf.Register(cg, allowAll); err != nil {
						res <- fmt.Errorf("churn: %w", err)
						return
					}
					if err := enf.Unregister(cg.ID); err != nil {
						res <- fmt.Errorf("churn: %w", err)
						return
					}
					pairs++
				}
			}()
			werr := r.microIn(measured, "scale", churnPhase(rate), c.ops)
			close(stop)
			if err := errors.Join(werr, <-res); err != nil {
				return err
			}
			done[rate] += pairs
			spent[rate] += time.Since(t0)
		}
	}
	for _, rate := range c.churn[1:] {
		got := float64(done[rate]) / spent[rate].Seconds()
		r.doc.Values = append(r.doc.Values, Value{fmt.Sprintf("churn_%dps_achieved", rate), got, "per s"})
		r.log("churn %d/s: achieved %.1f registrations+unregistrations per second", rate, got)
	}
	return nil
}

// scaleSummary writes the scale and churn lines of d (label l), each
// "ratio=R" and, with at least 2 samples on each side, "lo=L hi=H" (the
// bootstrap 95% interval):
//
//	bench: <l>/<op>/scale10k ratio=R ...        K=10000 against K=1
//	bench: <l>/scale/k<K>/<op> ratio=R ...      every K against K=1
//	bench: <l>/churn/<R>ps/<op> ratio=R ...     churn R/s against 0, paired
func scaleSummary(w io.Writer, d *Doc) {
	l := d.Label()
	ks, rates := scaleNumbers(d)
	line := func(name string, op Op, phase, base string) {
		v, ok := d.Ratio(op, phase, base)
		if !ok {
			return
		}
		if e, ok := d.Estimate(op, phase, base); ok {
			fmt.Fprintf(w, "bench: %s ratio=%.4f lo=%.4f hi=%.4f\n", name, e.Ratio, e.Lo, e.Hi)
			return
		}
		fmt.Fprintf(w, "bench: %s ratio=%.4f\n", name, v)
	}
	ops := append(append([]Op{}, MicroOps...), OpMacro)
	for _, op := range ops {
		line(fmt.Sprintf("%s/%s/scale10k", l, op), op, scalePhase(10000), scalePhase(1))
	}
	for _, k := range ks {
		if k == 1 {
			continue
		}
		for _, op := range ops {
			line(fmt.Sprintf("%s/scale/k%d/%s", l, k, op), op, scalePhase(k), scalePhase(1))
		}
	}
	for _, rate := range rates {
		if rate == 0 {
			continue
		}
		for _, op := range ops {
			line(fmt.Sprintf("%s/churn/%dps/%s", l, rate, op), op, churnPhase(rate), churnPhase(0))
		}
	}
}

// scaleNumbers are the Ks and churn rates d has cells of, ascending.
func scaleNumbers(d *Doc) (ks, rates []int) {
	seenK, seenR := map[int]bool{}, map[int]bool{}
	for _, c := range d.Cells {
		if k, ok := parsePhaseNumber(c.Phase, "scale-k", ""); ok && !seenK[k] {
			seenK[k] = true
			ks = append(ks, k)
		}
		if rate, ok := parsePhaseNumber(c.Phase, "churn-", "ps"); ok && !seenR[rate] {
			seenR[rate] = true
			rates = append(rates, rate)
		}
	}
	sort.Ints(ks)
	sort.Ints(rates)
	return ks, rates
}

// scaleMarkdown writes the scale and churn tables of d.
func scaleMarkdown(p func(string, ...any), d *Doc) {
	ks, rates := scaleNumbers(d)
	ops := append(append([]Op{}, MicroOps...), OpMacro)
	cellOf := func(op Op, phase, base string) string {
		if e, ok := d.Estimate(op, phase, base); ok {
			return fmt.Sprintf("%.3f [%.3f–%.3f]", e.Ratio, e.Lo, e.Hi)
		}
		if v, ok := d.Ratio(op, phase, base); ok {
			return fmt.Sprintf("%.3f", v)
		}
		return "n/a"
	}
	table := func(title, col string, nums []int, phase func(int) string) {
		if len(nums) < 2 {
			return
		}
		p("%s\n\n| operation | %s=%d, ns/op |", title, col, nums[0])
		for _, n := range nums[1:] {
			p(" %s=%d / %d |", col, n, nums[0])
		}
		p("\n|---|---:|%s\n", strings.Repeat("---:|", len(nums)-1))
		for _, op := range ops {
			b, ok := d.cell(op, phase(nums[0]))
			if !ok {
				continue
			}
			p("| %s | %.0f |", op, b.Median())
			for _, n := range nums[1:] {
				p(" %s |", cellOf(op, phase(n), phase(nums[0])))
			}
			p("\n")
		}
		p("\n")
	}
	table("Scale, real cgroups: per-operation cost of a process in one of K registered cgroups (level 4), each of the other K-1 with a live process calling socket()+close() periodically (all of them together at a fixed rate), against K=1 (unpaired: the Ks run one after the other; bootstrap 95% interval).", "K", ks, scalePhase)
	table("Churn: the same at the churn K while extra cgroups are registered and unregistered R times per second, against R=0 (paired per round).", "R", rates, churnPhase)
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
