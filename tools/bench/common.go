package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// Ceilings of the phases.
var (
	allowAll = entry.Entry{Ceiling: policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}}
	denyAll  = entry.Entry{Ceiling: policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellNone}}
	// AllowPartial: on a host without BPF LSM (the native part's usual
	// host) network=false is enforced only for inet sockets; the benchmark
	// measures exactly that cgroup-BPF path, so it accepts the partial
	// coverage that run and the daemon refuse by default.
	denyNet = entry.Entry{Ceiling: policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}, AllowPartial: true}
)

// run holds what every part of a run shares.
type run struct {
	doc    *Doc
	reps   int
	target time.Duration // per operation per repetition
	port   int           // loopback TCP listener (listen)
	udp    int           // loopback UDP sink (listenUDP); 0: none
	tar    string
	exec   string
	// execDynamic: exec_dynamic's binary (the worker's -exec-dynamic);
	// empty: the worker finds one.
	execDynamic string
	root        string // scratch root; each phase works in root/<phase>
	iters       map[Op]int
	log         func(format string, a ...any)
	// scaled: an operation's repetition runs sampleScale(op) times
	// -target (the guests, where a repetition's share of deferred work
	// moves a ratio); the host's timed part has bootstrap intervals
	// instead and runs every operation -target long.
	scaled bool
}

func newLogger(prefix string) func(string, ...any) {
	start := time.Now()
	return func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s [%5.1fs] %s\n", prefix, time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
}

// listen starts a loopback TCP listener that echoes what every connection
// sends until the peer closes or resets it (the connect op resets at once;
// tcp_rr's connection lives as long as its worker).
func listen() (int, func(), error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			go func() {
				_, _ = io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port, func() { l.Close() }, nil
}

// listenUDP starts a loopback UDP sink that reads and drops every
// datagram (udp_sendto's destination).
func listenUDP() (int, func(), error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0, nil, err
	}
	go func() {
		b := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFromUDP(b); errors.Is(err, net.ErrClosed) {
				return
			}
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port, func() { c.Close() }, nil
}

func joinOps(ops []Op) string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = string(o)
	}
	return strings.Join(s, ",")
}

// rootDepth is how many directories beneath its phase directory every phase
// works: (c2)'s phase directory is its writable root, so an allowed write
// there climbs them all; every other phase works at the same depth, so that
// the path walk itself costs the same in each and a ratio shows only what
// the phase adds.
const rootDepth = 8

// phaseCgroup is the parent of every guest phase's cgroup: each phase's
// worker runs at cgroup level 4 (/bench/p/q/<phase>), (a) as deep as (c2).
const phaseCgroup = "/bench/p/q/"

// phaseDir is where a phase's worker works: rootDepth levels beneath
// root/<phase> (for (c2), root/c2 is its writable root).
func (r *run) phaseDir(phase string) string {
	d := filepath.Join(r.root, phase)
	for i := 1; i <= rootDepth; i++ {
		d = filepath.Join(d, strconv.Itoa(i))
	}
	return d
}

// workspace is phase's workspace: the directory its worker works
// rootDepth levels beneath, (c2)'s writable root and (e1)'s and (e2)'s
// writable Landlock root.
func (r *run) workspace(phase string) string { return filepath.Join(r.root, phase) }

// writeRoot is (c2)'s writable root.
func (r *run) writeRoot() string { return filepath.Join(r.root, PhaseC2) }

// typical is (c2)'s ceiling: network=false with the listener at port as
// its one allowed TCP endpoint (and the UDP sink at udpPort, when not 0, as
// its one allowed UDP endpoint), write=false with root writable,
// shell=read_only. Errors: the endpoints' syntax, root's identity (it must
// exist).
func typical(root string, port, udpPort int) (entry.Entry, error) {
	eps := []string{fmt.Sprintf("tcp:127.0.0.1:%d", port)}
	if udpPort > 0 {
		eps = append(eps, fmt.Sprintf("udp:127.0.0.1:%d", udpPort))
	}
	allow, err := endpoint.ParseList(eps)
	if err != nil {
		return entry.Entry{}, err
	}
	id, err := entry.FileIDOf(root)
	if err != nil {
		return entry.Entry{}, err
	}
	return entry.Entry{
		Ceiling:      policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellReadOnly},
		AllowConnect: allow,
		WriteRoots:   []entry.FileID{id},
	}, nil
}

// args is a worker's command line for phase, working in the phase's
// directory (a profile pass in its phase's: (c2)'s writable root).
func (r *run) args(phase string, extra ...string) []string {
	return r.argsIn(r.opsDir(phase, nil), extra...)
}

// argsIn is args with the worker working in dir.
func (r *run) argsIn(dir string, extra ...string) []string {
	a := []string{"-dir", dir, "-port", strconv.Itoa(r.port), "-exec", r.exec}
	if r.execDynamic != "" {
		a = append(a, "-exec-dynamic", r.execDynamic)
	}
	if r.udp > 0 {
		a = append(a, "-udp-port", strconv.Itoa(r.udp))
	}
	if r.tar != "" {
		a = append(a, "-tar", r.tar)
	}
	return append(a, extra...)
}

func (r *run) microArgs(phase string, ops []Op, extra ...string) []string {
	its := make([]string, len(ops))
	for i, o := range ops {
		its[i] = strconv.Itoa(r.iters[o])
	}
	return r.argsIn(r.opsDir(phase, ops), append([]string{"-mode", "micro", "-ops", joinOps(ops), "-iters", strings.Join(its, ",")}, extra...)...)
}

// opsDir is where a worker measuring ops for phase works: the phase's
// directory (a profile pass: its phase's), or for macro workloads its
// sibling "<depth>-macro", at the
// same depth and (for (c2)) inside the writable root. The macros create and
// remove thousands of entries; in the micro operations' directory they
// moved rename's cost there on 6.12 by 0.6-0.7 % from their first run
// on (dearer in one run, cheaper in another) and create_unlink's by
// 0.3 %, in (a), whose macros run, and not in (a0), whose do not: a null
// check failing for a reason outside every ratio. In their own directory
// (a) and (a0) agree to 0.16 % (icount, five rounds,
// docs/bench-results/diagnosis/2026-12-02-icount-6.12-macro-dir-*.txt).
func (r *run) opsDir(phase string, ops []Op) string {
	d := r.phaseDir(strings.TrimPrefix(phase, "profile-"))
	for _, op := range ops {
		if isMacro(op) {
			return d + "-macro"
		}
	}
	return d
}

// sampleScale is how many times -target an operation's repetition runs
// in the guests (run.scaled): 4 for those whose cost includes work the
// kernel defers and runs in batches, from a timer tick or an RCU callback,
// wherever the CPU happens to be (the child's task and a socket's inode
// freed after a grace period, TCP's timers), so that a repetition's share
// of it varies less; 1 for the others. Every phase runs the same count, so
// a ratio means the same. Measured on 6.12 in icount mode, seven rounds of
// (a) and (a0) (docs/bench-results/diagnosis/2026-12-01-icount-<kernel>-x1.txt
// and -x4.txt): the spread of socket_close went from 1.7 % to 0.7 % and
// tcp_rr's from 0.75 % to 0.13 %; fork's did not move (2.2 %, 2.1 %),
// connect's was 0.75 % and 0.38 %.
func sampleScale(op Op) int {
	switch op {
	case OpFork, OpSocket, OpTCPRR, OpConnect:
		return 4
	}
	return 1
}

// calibrate picks iteration counts so that one repetition of one operation
// takes about r.target (in cg, before anything is loaded).
func (r *run) calibrate(cg cgroup.Cgroup, ops []Op) error {
	res, err := runWorker(cg, r.args("cal", "-mode", "calibrate", "-ops", joinOps(ops), "-calibrate", "150ms")...)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	for _, op := range ops {
		n := int(float64(r.target.Nanoseconds()) / res.NsPerOp[op])
		if r.scaled {
			n *= sampleScale(op)
		}
		n = max(20, min(n, 2_000_000))
		switch {
		case op == OpMacro:
			n = 1
		case isMacro(op):
			// A storm is hundreds or thousands of operations itself.
			n = max(1, min(int(float64(r.target.Nanoseconds())/res.NsPerOp[op]), 1000))
		}
		r.iters[op] = n
		r.log("calibrated %-14s %9.0f ns/op -> %d iterations", op, res.NsPerOp[op], n)
	}
	return nil
}

// micro runs one repetition of ops in cg and records it under phase.
func (r *run) micro(cg cgroup.Cgroup, phase string, ops []Op, extra ...string) error {
	return r.microIn(cg, phase, phase, ops, extra...)
}

// microIn is micro with the worker in dirPhase's scratch directory (a
// phase measured in another's directory: the scale figure's).
func (r *run) microIn(cg cgroup.Cgroup, dirPhase, phase string, ops []Op, extra ...string) error {
	res, err := runWorker(cg, r.microArgs(dirPhase, ops, extra...)...)
	if err != nil {
		return fmt.Errorf("phase %s: %w", phase, err)
	}
	r.note(res.Notes)
	for _, op := range ops {
		r.doc.add(op, phase, r.iters[op], res.NsPerOp[op], res.WallNsPerOp[op])
	}
	return nil
}

// denied runs one repetition of ops in cg under the deny-all ceiling en
// (phase d): every operation must fail with EPERM.
func (r *run) denied(enf *enforcer.Enforcer, cg cgroup.Cgroup, en entry.Entry, ops []Op) error {
	return r.registered(enf, cg, PhaseD, en, ops, "-deny")
}

// registered runs one repetition of ops in cg under the ceiling en, as a
// container's entrypoint runs: the worker sets up while cg is unregistered
// (its own exec is not one the ceiling sees, so shell=read_only does not
// make it write-denied), then cg is registered, the worker measures, and
// cg is unregistered again.
func (r *run) registered(enf *enforcer.Enforcer, cg cgroup.Cgroup, phase string, en entry.Entry, ops []Op, extra ...string) error {
	w, err := startWorker(cg, r.microArgs(phase, ops, extra...)...)
	if err != nil {
		return err
	}
	if err := enf.Register(cg, en); err != nil {
		_ = w.cmd.Process.Kill()
		_, _ = w.result()
		return fmt.Errorf("phase %s: %w", phase, err)
	}
	defer func() { _ = enf.Unregister(cg.ID) }()
	if err := w.start(); err != nil {
		return err
	}
	res, err := w.result()
	if err != nil {
		return fmt.Errorf("phase %s: %w", phase, err)
	}
	r.note(res.Notes)
	for _, op := range ops {
		r.doc.add(op, phase, r.iters[op], res.NsPerOp[op], res.WallNsPerOp[op])
	}
	return nil
}

// note adds a worker's notes (WorkerResult.Notes) to the document's, each
// once.
func (r *run) note(notes []string) {
	for _, n := range notes {
		if !slices.Contains(r.doc.Notes, n) {
			r.doc.Notes = append(r.doc.Notes, n)
		}
	}
}

// loadResult is what the "load" subcommand prints.
type loadResult struct {
	LoadS  float64 `json:"load_s"`
	HWMKiB float64 `json:"hwm_kib"`
	RSSKiB float64 `json:"rss_kib"`
	Hooks  int     `json:"hooks"`
}

// Load is the "load" subcommand: the loader alone (enforcer.Open, which
// loads, attaches and pins every program), reporting its time and memory.
func Load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	pin := fs.String("pin", enforcer.DefaultPinDir, "pin directory")
	attach := fs.String("cgroup-attach", "", "cgroup the cgroup-BPF programs attach at (default: the cgroup2 root)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t0 := time.Now()
	enf, err := enforcer.Open(enforcer.Options{PinDir: *pin, CgroupAttach: *attach})
	if err != nil {
		return err
	}
	res := loadResult{LoadS: time.Since(t0).Seconds()}
	for _, h := range enf.Hooks() {
		if h.Attached {
			res.Hooks++
		}
	}
	enf.Close()
	res.HWMKiB, _ = procStatusKiB(os.Getpid(), "VmHWM")
	res.RSSKiB, _ = procStatusKiB(os.Getpid(), "VmRSS")
	return json.NewEncoder(os.Stdout).Encode(res)
}

// load runs the "load" subcommand as a child; record: keep its figures (the
// first load of a run only: later loads find the kernel's caches warm).
func (r *run) load(pin, attach string, record bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "load", "-pin", pin, "-cgroup-attach", attach)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("loader: %w", err)
	}
	var lr loadResult
	if err := json.Unmarshal(out, &lr); err != nil {
		return fmt.Errorf("loader output %q: %w", out, err)
	}
	r.log("loader: %d programs attached in %.1fs, VmHWM %.0f KiB", lr.Hooks, lr.LoadS, lr.HWMKiB)
	if !record {
		return nil
	}
	r.doc.Values = append(r.doc.Values,
		Value{"loader_load_time", lr.LoadS, "s"},
		Value{"loader_peak_rss", lr.HWMKiB / 1024, "MiB"},
		Value{"programs_attached", float64(lr.Hooks), "programs"})
	return nil
}

func procStatusKiB(pid int, field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if v, ok := procField(f, field); ok {
		return v, nil
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}

// procField reads the number after "field:" in a procfs "Key: value [kB]"
// file (/proc/meminfo, /proc/<pid>/status); false when the line is absent
// or its value is no number.
func procField(r io.Reader, field string) (float64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == field {
			if fs := strings.Fields(v); len(fs) > 0 {
				x, err := strconv.ParseFloat(fs[0], 64)
				return x, err == nil
			}
		}
	}
	return 0, false
}

// progStat is a snapshot of one attached program's run-time stats.
type progStat struct {
	runs uint64
	ns   time.Duration
}

// profiler reads per-program run-time stats of every pinned link.
type profiler struct {
	progs map[string]*ebpf.Program // by link pin name
	stats interface{ Close() error }
}

func newProfiler(pin string) (*profiler, error) {
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, fmt.Errorf("enable BPF stats: %w", err)
	}
	p := &profiler{progs: map[string]*ebpf.Program{}, stats: st}
	ents, err := os.ReadDir(enforcer.LinkPinDir(pin))
	if err != nil {
		p.close()
		return nil, err
	}
	for _, e := range ents {
		l, err := link.LoadPinnedLink(filepath.Join(enforcer.LinkPinDir(pin), e.Name()), nil)
		if err != nil {
			continue
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			continue
		}
		prog, err := ebpf.NewProgramFromID(info.Program)
		if err != nil {
			continue
		}
		p.progs[e.Name()] = prog
	}
	return p, nil
}

func (p *profiler) snapshot() map[string]progStat {
	out := map[string]progStat{}
	for name, prog := range p.progs {
		if s, err := prog.Stats(); err == nil {
			out[name] = progStat{s.RunCount, s.Runtime}
		}
	}
	return out
}

func (p *profiler) close() {
	for _, prog := range p.progs {
		prog.Close()
	}
	p.stats.Close()
}

// profile runs one worker per operation under phase with stats on and
// records every program that ran at least once per 20 operations. With en
// (and enf), cg is registered with en for each worker once its setup is
// done, as the measured phase does (registered).
func (r *run) profile(p *profiler, cg cgroup.Cgroup, phase string, ops []Op, enf *enforcer.Enforcer, en *entry.Entry) error {
	for _, op := range ops {
		before := p.snapshot()
		var err error
		if en != nil {
			err = r.registered(enf, cg, "profile-"+phase, *en, []Op{op})
		} else {
			err = r.micro(cg, "profile-"+phase, []Op{op})
		}
		if err != nil {
			return err
		}
		after := p.snapshot()
		n := float64(r.iters[op]) * 1.1 // plus the warm-up tenth
		for name, a := range after {
			b := before[name]
			runs := a.runs - b.runs
			if runs == 0 || float64(runs)/n < 0.05 {
				continue
			}
			r.doc.Profile = append(r.doc.Profile, ProfileRow{
				Phase: phase, Op: op, Program: name,
				RunsPerOp: float64(runs) / n,
				NsPerRun:  float64((a.ns - b.ns).Nanoseconds()) / float64(runs),
			})
		}
	}
	// The profile passes are not figures.
	cells := r.doc.Cells[:0]
	for _, c := range r.doc.Cells {
		if !strings.HasPrefix(c.Phase, "profile-") {
			cells = append(cells, c)
		}
	}
	r.doc.Cells = cells
	return nil
}

func uname() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// loadedPrograms counts BPF programs of the types enforcerd attaches that are
// loaded in this kernel, for the report's notes (programs of other origin
// run in every phase); -1 when the kernel refuses to list them.
func loadedPrograms() int {
	n, err := countPrograms(func(p *ebpf.Program) bool {
		switch p.Type() {
		case ebpf.LSM, ebpf.CGroupSock, ebpf.CGroupSockAddr, ebpf.Tracing:
			return true
		}
		return false
	})
	if err != nil {
		return -1
	}
	return n
}
