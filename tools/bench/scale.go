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
	defaultScaleKs    = "1,1000,10000,20000"
	defaultChurn      = "0,10,100"
	defaultChurnAt    = 10000
	defaultScaleRate  = 2000
	defaultScaleUnreg = "20000"
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
	unreg   []int // Ns of the unregistered-cgroups figure, ascending; nil: none
	churn   []int // registrations+unregistrations per second, ascending, starting at 0; nil: no churn
	churnAt int   // the K (one of ks) at which churn is measured
	rate    float64
	ops     []Op
}

// scaleFlags registers the scale flags on fs. The returned function parses
// them once fs is parsed: -scale-ops must be a subset of have (the
// operations the run measures); when not given, it is defaultOps restricted
// to have. Errors name the flag.
func scaleFlags(fs *flag.FlagSet, defaultOps []Op, withUnreg bool) func(have []Op) (scaleConfig, error) {
	ks := fs.String("scale", defaultScaleKs, "scale figure: numbers K of real registered cgroups (level 4), each with a live process, comma-separated, the first 1 (empty: no scale figure)")
	unreg := new(string)
	if withUnreg {
		unreg = fs.String("scale-unreg", defaultScaleUnreg, "unregistered-cgroups figure: numbers N of unregistered cgroups (level 4), each with a live process, all together at -scale-rate, measured from an unregistered and from a registered cgroup against N=0, comma-separated (empty: no such figure)")
	}
	churn := fs.String("churn", defaultChurn, "churn figure: registrations+unregistrations of extra cgroups per second while measuring at -churn-at, comma-separated, the first 0 (empty: no churn figure)")
	churnAt := fs.Int("churn-at", defaultChurnAt, "the K of -scale at which churn is measured")
	rate := fs.Float64("scale-rate", defaultScaleRate, "socket()+close() calls per second of all background processes together, at every K")
	ops := fs.String("scale-ops", joinOps(defaultOps), "operations of the scale and churn figures (each must also be measured by the run)")
	return func(have []Op) (scaleConfig, error) {
		o := *ops
		if !flagSet(fs, "scale-ops") {
			o = joinOps(scaleOpsIn(defaultOps, have))
		}
		return parseScale(*ks, *churn, *churnAt, *unreg, *rate, o, have)
	}
}

// parseScale checks the scale flags (see scaleFlags); unreg is
// -scale-unreg (empty: no such figure).
func parseScale(ks, churn string, churnAt int, unreg string, rate float64, ops string, have []Op) (scaleConfig, error) {
	var c scaleConfig
	var err error
	if c.ks, err = parseCounts("-scale", ks, 1, maxScaleK); err != nil {
		return c, err
	}
	if c.unreg, err = parseCounts("-scale-unreg", unreg, 1, maxScaleK); err != nil {
		return c, err
	}
	if c.ks == nil && c.unreg == nil {
		return c, nil
	}
	if c.ks != nil && c.ks[0] != 1 {
		return c, fmt.Errorf("-scale %q: the list must start at 1 (the figure's base)", ks)
	}
	if c.ks != nil && len(c.ks) < 2 {
		return c, fmt.Errorf("-scale %q: want at least one K beside 1", ks)
	}
	if !(rate > 0) || rate > 1e6 {
		return c, fmt.Errorf("-scale-rate %v: want a positive rate up to 1e6 per second", rate)
	}
	c.rate = rate
	if c.ks == nil {
		churn = "" // churn is measured at one of the Ks
	}
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

func (l scaleLayout) measured() string { return l.measuredAt(0) }

// measuredAt is measured cell i (a figure measured from more than one).
func (l scaleLayout) measuredAt(i int) string { return path.Join(l.base, "s-m", fmt.Sprintf("c%d", i)) }

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

// scaleCells is the state of one scale-type figure below one base (a
// scaleLayout): the idler pools, the groups and cells it made, the
// cgroups it registered. Its methods are the figure's steps; close tears
// everything down.
type scaleCells struct {
	r     *run
	enf   *enforcer.Enforcer
	mount string
	l     scaleLayout
	c     scaleConfig
	// maxCells is the most background cells the figure has at once.
	maxCells int
	// registerCells: background cells are registered (all-allow) as they
	// are made (the scale figure), or left unregistered (-scale-unreg).
	registerCells                      bool
	pool, pacer                        *idlerPool
	restore                            []func()
	measuredIDs                        []uint64        // registered measured cells
	cellIDs                            []uint64        // registered background cells, in cells' order
	made                               []string        // level-3 groups created
	cells                              []cgroup.Cgroup // background cell i+1 is cells[i], its idler pool slot i
	churn                              []cgroup.Cgroup
	pacerCells                         []cgroup.Cgroup
	pacerCg                            cgroup.Cgroup
	pacerPeriod                        time.Duration
	memBase                            float64
	createD, registerD, spawnD, unregD time.Duration
}

// newScaleCells prepares a figure of up to maxCells background cells below
// base: room for as many more tasks and pids (a 1 GiB guest allows about
// 7,800 threads in all), the idler pools. Errors: a sysctl that cannot be
// raised, the idlers unsupported.
func newScaleCells(r *run, enf *enforcer.Enforcer, mount, base string, c scaleConfig, maxCells int, registerCells bool) (*scaleCells, error) {
	s := &scaleCells{r: r, enf: enf, mount: mount, l: scaleLayout{base}, c: c, maxCells: maxCells, registerCells: registerCells}
	for _, f := range []string{"/proc/sys/kernel/threads-max", "/proc/sys/kernel/pid_max"} {
		want := tasksNow() + int64(maxCells) + 8192
		restore, err := raiseSysctl(f, want)
		if err != nil {
			s.undoSysctls()
			return nil, fmt.Errorf("scale: %w", err)
		}
		s.restore = append(s.restore, restore)
	}
	var err error
	if s.pool, err = newIdlerPool(maxCells); err != nil {
		s.undoSysctls()
		return nil, err
	}
	if s.pacer, err = newIdlerPool(pacerCount(c.rate)); err != nil {
		s.pool.close(true)
		s.undoSysctls()
		return nil, err
	}
	return s, nil
}

func (s *scaleCells) undoSysctls() {
	for i := len(s.restore) - 1; i >= 0; i-- {
		s.restore[i]()
	}
	s.restore = nil
}

// unregister unregisters ids (one not registered is no error).
func (s *scaleCells) unregister(ids []uint64) (rerr error) {
	for _, id := range ids {
		if uerr := s.enf.Unregister(id); uerr != nil && !errors.Is(uerr, enforcer.ErrNotRegistered) {
			rerr = errors.Join(rerr, uerr)
		}
	}
	return rerr
}

// close tears the figure down: every idler killed and reaped, every cgroup
// it registered unregistered, every group it made removed, the sysctls
// restored.
func (s *scaleCells) close() error {
	t0 := time.Now()
	for _, g := range s.l.parents(s.maxCells + 1) {
		if cg, oerr := cgroup.Open(s.mount, g); oerr == nil {
			_ = cg.Kill()
		}
	}
	rerr := s.pool.reap(0, 30*time.Second)
	s.pool.close(rerr == nil)
	perr := s.pacer.reap(0, 30*time.Second)
	s.pacer.close(perr == nil)
	rerr = errors.Join(rerr, perr, s.unregister(s.measuredIDs), s.unregister(s.cellIDs))
	for _, cg := range s.churn { // a churn error may leave one registered
		rerr = errors.Join(rerr, s.unregister([]uint64{cg.ID}))
	}
	for _, g := range s.made {
		if cg, oerr := cgroup.Open(s.mount, g); oerr == nil {
			rerr = errors.Join(rerr, cg.Remove(10*time.Second))
		}
	}
	s.undoSysctls()
	s.r.log("%s: torn down in %.1fs", s.l.base, time.Since(t0).Seconds())
	return rerr
}

// mkcell creates the cgroup group (its level-3 parent too, when new).
func (s *scaleCells) mkcell(group string) (cgroup.Cgroup, error) {
	parent := path.Dir(group)
	if _, err := os.Stat(path.Join(s.mount, parent)); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(path.Join(s.mount, parent), 0o755); err != nil {
			return cgroup.Cgroup{}, fmt.Errorf("scale: %w", err)
		}
		s.made = append(s.made, parent)
	}
	if err := unix.Mkdir(path.Join(s.mount, group), 0o755); err != nil {
		return cgroup.Cgroup{}, fmt.Errorf("scale: create cgroup %s: %w", group, err)
	}
	return cgroup.Open(s.mount, group)
}

// measuredCell makes measured cell i, registered (all-allow) or not.
func (s *scaleCells) measuredCell(i int, register bool) (cgroup.Cgroup, error) {
	cg, err := s.mkcell(s.l.measuredAt(i))
	if err != nil || !register {
		return cg, err
	}
	if err := s.enf.Register(cg, allowAll); err != nil {
		return cg, fmt.Errorf("scale: %w", err)
	}
	s.measuredIDs = append(s.measuredIDs, cg.ID)
	return cg, nil
}

// setupPacers makes the cells of the base's background: pacerCount
// processes in unregistered cells at the same total rate, so that
// interrupts, wake-ups and switches of background work weigh on every
// count alike. Frozen (cgroup.freeze of their parent) while background
// cells have the load. Its processes start with the first pacersOn.
func (s *scaleCells) setupPacers() error {
	for i := 0; i < pacerCount(s.c.rate); i++ {
		cg, err := s.mkcell(s.l.pacer(i))
		if err != nil {
			return err
		}
		s.pacerCells = append(s.pacerCells, cg)
	}
	cg, err := cgroup.Open(s.mount, s.l.pacers())
	if err != nil {
		return err
	}
	s.pacerCg = cg
	s.pacerPeriod = time.Duration(float64(len(s.pacerCells)) / s.c.rate * float64(time.Second))
	return nil
}

// setupChurn makes the cells churn registers and unregisters.
func (s *scaleCells) setupChurn() error {
	for i := 0; i < churnCells; i++ {
		cg, err := s.mkcell(s.l.churnCell(i))
		if err != nil {
			return err
		}
		s.churn = append(s.churn, cg)
	}
	return nil
}

// periodOf is each background process's period with n background cells:
// together they make c.rate calls per second.
func (s *scaleCells) periodOf(n int) time.Duration {
	return time.Duration(float64(n) / s.c.rate * float64(time.Second))
}

// load puts the background load where a count of n background cells has it
// (n = 0: the pacers, else the cells' processes on n's schedule) and
// returns the call counts the warm-up starts from.
func (s *scaleCells) load(n int, rng *rand.Rand) ([]uint64, error) {
	if n == 0 {
		before := s.pacer.snapshot()
		if len(s.pacer.slots) == 0 {
			for _, cg := range s.pacerCells {
				if err := s.pacer.spawn(cg, time.Duration(rng.Int64N(int64(s.pacerPeriod))), s.pacerPeriod); err != nil {
					return nil, err
				}
			}
			return before, nil
		}
		s.pacer.retime(s.pacerPeriod, rng)
		return before, s.pacerCg.Thaw()
	}
	if err := s.pacerCg.Freeze(30 * time.Second); err != nil {
		return nil, err
	}
	s.pool.retime(s.periodOf(n), rng)
	return s.pool.snapshot(), nil
}

// grow makes background cells up to n (each created, registered when
// registerCells, its process started on n's schedule).
func (s *scaleCells) grow(n int, rng *rand.Rand) error {
	t0 := time.Now()
	for i := len(s.cells) + 1; i <= n; i++ {
		ta := time.Now()
		cg, err := s.mkcell(s.l.cell(i))
		if err != nil {
			return err
		}
		tb := time.Now()
		if s.registerCells {
			if err := s.enf.Register(cg, allowAll); err != nil {
				return fmt.Errorf("scale: %w", err)
			}
			s.cellIDs = append(s.cellIDs, cg.ID)
		}
		tc := time.Now()
		if err := s.pool.spawn(cg, time.Duration(rng.Int64N(int64(s.periodOf(n)))), s.periodOf(n)); err != nil {
			return err
		}
		s.cells = append(s.cells, cg)
		s.createD += tb.Sub(ta)
		s.registerD += tc.Sub(tb)
		s.spawnD += time.Since(tc)
		if i%5000 == 0 {
			s.r.log("%s: %d cells so far (%.0fs)", s.l.base, i, time.Since(t0).Seconds())
		}
	}
	return nil
}

// shrink removes background cells beyond n: their processes killed and
// reaped, the cells unregistered (when registered) and removed.
func (s *scaleCells) shrink(n int) error {
	for _, cg := range s.cells[n:] {
		if err := cg.Kill(); err != nil {
			return err
		}
	}
	if err := s.pool.reap(n, 30*time.Second); err != nil {
		return err
	}
	if s.registerCells {
		t1 := time.Now()
		if err := s.unregister(s.cellIDs[n:]); err != nil {
			return err
		}
		s.unregD += time.Since(t1)
		s.cellIDs = s.cellIDs[:n]
	}
	for _, cg := range s.cells[n:] {
		if err := unix.Rmdir(cg.Path()); err != nil {
			return fmt.Errorf("scale: remove cgroup %s: %w", cg.Group, err)
		}
	}
	s.cells = s.cells[:n]
	return nil
}

// measure warms the background up (every process of n's load makes a
// call since before), then runs r.reps rounds of run (the workers);
// record: the ascending pass, whose background rate is recorded as
// <value>_background_calls.
func (s *scaleCells) measure(label string, n int, before []uint64, value string, record bool, run func() error) error {
	p, per := s.pool, s.periodOf(n)
	if n == 0 {
		p, per = s.pacer, s.pacerPeriod
	}
	if err := s.r.scaleWarm(p, before, per); err != nil {
		return fmt.Errorf("%s: %s: %w", s.l.base, label, err)
	}
	calls0, _, _ := p.counts()
	t1 := time.Now()
	for i := 0; i < s.r.reps; i++ {
		if err := run(); err != nil {
			return err
		}
	}
	calls1, fails, _ := p.counts()
	if fails > 0 {
		return fmt.Errorf("%s: %s: %d background socket() calls failed", s.l.base, label, fails)
	}
	bg := float64(calls1-calls0) / time.Since(t1).Seconds()
	if record {
		s.r.doc.Values = append(s.r.doc.Values, Value{value + "_background_calls", bg, "per s"})
	}
	s.r.log("%s: %s measured; background %.0f calls/s during it", s.l.base, label, bg)
	return nil
}

// sweep measures at every count of counts ascending, each count's cells
// made on top of the previous count's (cellsOf: its number of background
// cells), then again descending down to the first, cells removed on the
// way down (the largest once, every other twice, the first at both ends),
// so that drift of the machine over the figure weighs on every count
// alike. name gives a count's log label and value prefix, run its
// workers; after (may be nil) runs after a count's ascending measurement.
func (s *scaleCells) sweep(counts []int, cellsOf func(int) int, name func(int) (string, string), run func(int) error, after func(int) error, rng *rand.Rand) error {
	for _, k := range counts {
		n := cellsOf(k)
		label, value := name(k)
		t0 := time.Now()
		before, err := s.load(n, rng)
		if err != nil {
			return err
		}
		if err := s.grow(n, rng); err != nil {
			return err
		}
		setup := time.Since(t0)
		avail := memAvailableKiB()
		used := (s.memBase - avail) / 1024
		s.r.log("%s: %s: set up in %.1fs (cumulative: create %.1fs, register %.1fs, spawn %.1fs), %.0f MiB more in use than before the figure (MemAvailable %.0f MiB), period %v",
			s.l.base, label, setup.Seconds(), s.createD.Seconds(), s.registerD.Seconds(), s.spawnD.Seconds(), used, avail/1024, s.periodOf(n))
		s.r.doc.Values = append(s.r.doc.Values,
			Value{value + "_setup", setup.Seconds(), "s"},
			Value{value + "_memory", used, "MiB"})
		if err := s.measure(label, n, before, value, true, func() error { return run(k) }); err != nil {
			return err
		}
		if after != nil {
			if err := after(k); err != nil {
				return err
			}
		}
	}
	for i := len(counts) - 2; i >= 0; i-- {
		k := counts[i]
		n := cellsOf(k)
		label, value := name(k)
		t0 := time.Now()
		if err := s.shrink(n); err != nil {
			return err
		}
		before, err := s.load(n, rng)
		if err != nil {
			return err
		}
		s.r.log("%s: down to %s in %.1fs", s.l.base, label, time.Since(t0).Seconds())
		if err := s.measure(label, n, before, value, false, func() error { return run(k) }); err != nil {
			return err
		}
	}
	return nil
}

// scaleRun measures the scale figure (and churn at c.churnAt) with the
// cells below base (scaleCells.sweep over c.ks): each K's cells created,
// registered (all-allow ceiling) and their idlers started on top of the
// previous K's, then a warm-up until every idler made a call (so the cache
// has seen every cell), then r.reps workers in the measured cell, one per
// round (phase scale-k<K>); at churnAt, r.reps rounds of every churn rate
// in an order shuffled per round (phase churn-<R>ps, paired with
// churn-0ps). Everything is torn down at the end (idlers killed and
// reaped, every cell unregistered and removed), also on error. Errors: a
// cgroup, registration or clone failure, an idler silent after the
// warm-up or failing its socket(), a worker failure.
func (r *run) scaleRun(enf *enforcer.Enforcer, mount, base string, c scaleConfig, seed uint64) (err error) {
	s, err := newScaleCells(r, enf, mount, base, c, c.ks[len(c.ks)-1]-1, true)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.close()) }()
	measured, err := s.measuredCell(0, true)
	if err != nil {
		return err
	}
	if err := s.setupPacers(); err != nil {
		return err
	}
	if c.churn != nil {
		if err := s.setupChurn(); err != nil {
			return err
		}
	}
	r.doc.Notes = append(r.doc.Notes, fmt.Sprintf("scale: the measured process and every background process sit at cgroup level %d, each in its own registered cgroup (all-allow ceiling); the background processes together make %.0f socket()+close() calls per second at every K, each one every (K-1)/%.0f s; a background process is a process of its own in its own cgroup that shares the driver's address space and fd table (clone3 CLONE_VM|CLONE_FILES|CLONE_INTO_CGROUP), so that 20,000 fit in a small guest; at K=1 %d processes in unregistered cells make the same calls at the same total rate (frozen while K > 1), so that every K has the same background load; the Ks are measured ascending, then again descending (the largest once), so that K=1 has samples from both ends", measured.Level, c.rate, c.rate, pacerCount(c.rate)))
	s.memBase = memAvailableKiB()
	rng := rand.New(rand.NewPCG(seed, 1))
	name := func(k int) (string, string) { return fmt.Sprintf("K=%d", k), fmt.Sprintf("scale_k%d", k) }
	run := func(k int) error { return r.microIn(measured, "scale", scalePhase(k), c.ops) }
	churn := func(k int) error {
		if k != c.churnAt || c.churn == nil {
			return nil
		}
		return r.churnRounds(enf, measured, s.churn, c, rng)
	}
	if err := s.sweep(c.ks, func(k int) int { return k - 1 }, name, run, churn, rng); err != nil {
		return err
	}
	nb := float64(c.ks[len(c.ks)-1] - 1)
	r.doc.Values = append(r.doc.Values,
		Value{"scale_register_mean", float64(s.registerD.Microseconds()) / nb, "us"},
		Value{"scale_cgroup_create_mean", float64(s.createD.Microseconds()) / nb, "us"},
		Value{"scale_process_spawn_mean", float64(s.spawnD.Microseconds()) / nb, "us"},
		Value{"scale_unregister_mean", float64(s.unregD.Microseconds()) / nb, "us"})
	return nil
}

// The two measured cells of the unregistered-cgroups figure.
const (
	fromUnreg = "from-unreg" // the worker's cgroup unregistered, as in (b)
	fromReg   = "from-reg"   // the worker's cgroup registered all-allow, as in (c)
)

// unregPhase is the phase of the unregistered-cgroups figure at N cells,
// measured from (fromUnreg or fromReg).
func unregPhase(n int, from string) string { return fmt.Sprintf("scale-unreg-n%d-%s", n, from) }

// scaleUnregRun measures the unregistered-cgroups figure below base
// (scaleCells.sweep over 0 and c.unreg): N unregistered cgroups at level 4,
// each with a live process, all of them together making c.rate
// socket()+close() calls per second (at N=0 the pacers make them), measured
// from an unregistered cell (phase scale-unreg-n<N>-from-unreg) and from a
// registered one (all-allow; -from-reg), one worker of each per round,
// against N=0. A host runs many more cgroups than sandboxes (every system
// service, every pod's other containers): this is what theirs cost the
// enforced and the unenforced process. Torn down at the end, also on error.
// Errors: as scaleRun's.
func (r *run) scaleUnregRun(enf *enforcer.Enforcer, mount, base string, c scaleConfig, seed uint64) (err error) {
	s, err := newScaleCells(r, enf, mount, base, c, c.unreg[len(c.unreg)-1], false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.close()) }()
	unreg, err := s.measuredCell(0, false)
	if err != nil {
		return err
	}
	reg, err := s.measuredCell(1, true)
	if err != nil {
		return err
	}
	if err := s.setupPacers(); err != nil {
		return err
	}
	r.doc.Notes = append(r.doc.Notes, fmt.Sprintf("scale-unreg: N unregistered cgroups at level %d, each with a live process of the scale figure's shape, together making %.0f socket()+close() calls per second at every N (each one every N/%.0f s; at N=0 %d processes in unregistered cells make them); measured from an unregistered cgroup (as (b)) and from a registered one (all-allow, as (c)), both at level %d, against N=0; ascending, then again descending", unreg.Level, c.rate, c.rate, pacerCount(c.rate), reg.Level))
	s.memBase = memAvailableKiB()
	rng := rand.New(rand.NewPCG(seed, 2))
	name := func(n int) (string, string) { return fmt.Sprintf("N=%d", n), fmt.Sprintf("scale_unreg_n%d", n) }
	run := func(n int) error {
		if err := r.microIn(unreg, "scale", unregPhase(n, fromUnreg), c.ops); err != nil {
			return err
		}
		return r.microIn(reg, "scale", unregPhase(n, fromReg), c.ops)
	}
	return s.sweep(append([]int{0}, c.unreg...), func(n int) int { return n }, name, run, nil, rng)
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
//	bench: <l>/scale-unreg/n<N>/<op>/from-unreg ratio=R ...
//	bench: <l>/scale-unreg/n<N>/<op>/from-reg ratio=R ...
//	                                            N unregistered busy cgroups against none,
//	                                            from an unregistered and a registered cgroup
func scaleSummary(w io.Writer, d *Doc) {
	l := d.Label()
	ks, rates := scaleNumbers(d)
	ns := unregNumbers(d)
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
	for _, n := range ns {
		if n == 0 {
			continue
		}
		for _, op := range ops {
			for _, from := range []string{fromUnreg, fromReg} {
				line(fmt.Sprintf("%s/scale-unreg/n%d/%s/%s", l, n, op, from), op, unregPhase(n, from), unregPhase(0, from))
			}
		}
	}
}

// unregNumbers are the Ns d has cells of the unregistered-cgroups figure
// of, ascending (0, the base, among them).
func unregNumbers(d *Doc) []int {
	var ns []int
	seen := map[int]bool{}
	for _, c := range d.Cells {
		for _, from := range []string{fromUnreg, fromReg} {
			if n, ok := parsePhaseNumber(c.Phase, "scale-unreg-n", "-"+from); ok && !seen[n] {
				seen[n] = true
				ns = append(ns, n)
			}
		}
	}
	sort.Ints(ns)
	return ns
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
	ns := unregNumbers(d)
	for _, from := range []struct{ name, what string }{
		{fromUnreg, "an unregistered cgroup (as (b))"},
		{fromReg, "a registered cgroup (all-allow, as (c))"},
	} {
		table(fmt.Sprintf("Unregistered cgroups: per-operation cost of a process in %s while N unregistered cgroups (level 4) each hold a live process calling socket()+close() periodically (all of them together at the scale figure's rate), against N=0 (unpaired: the Ns run one after the other; bootstrap 95%% interval).", from.what),
			"N", ns, func(n int) string { return unregPhase(n, from.name) })
	}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
