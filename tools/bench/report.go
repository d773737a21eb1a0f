package bench

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The measured phases, and the scale phases.
const (
	PhaseA     = "a"            // no programs: in the VM, every program unloaded (not merely detached) before the group
	PhaseA0    = "a0"           // (a) again, in the same unloaded group: the null check, (a0)/(a) must be 1
	PhaseB     = "b"            // programs loaded, process not enforced
	PhaseC     = "c"            // enforced, all-allow ceiling
	PhaseC2    = "c2"           // enforced, a typical agent ceiling: network=false with one allowed endpoint, write=false with one writable root, shell=read_only
	PhaseD     = "d"            // enforced, denied path
	PhaseE1    = "e1"           // no enforcerd programs; Landlock handling every right it has, rooted at the workspace, allowing everything the benchmark does (against (c))
	PhaseE2    = "e2"           // no enforcerd programs; (c2)'s Landlock twin: one writable root, the rest read-only, TCP connect and UDP send to (c2)'s endpoints only (against (c2))
	PhaseE0    = "e0"           // no enforcerd programs; Landlock denying: read-only /, no exec, no TCP connect (the intent of (d))
	PhaseOne   = "scale-k1"     // enforced, 1 registered cgroup (scale.go: scalePhase(1))
	PhaseTenK  = "scale-k10000" // enforced, 10,000 registered cgroups, each with a live process (scalePhase(10000))
	phaseProfB = "b"
)

// Doc is the result of one part of the run (the native part or one VM boot).
type Doc struct {
	Where       string `json:"where"` // "host" or "vm"
	Kernel      string `json:"kernel"`
	Machine     string `json:"machine"`
	LandlockABI int    `json:"landlock_abi"`
	Reps        int    `json:"reps"`
	// OrderSeed: seed of the per-round shuffled phase order (native part),
	// or group and phase order (VM part).
	OrderSeed uint64 `json:"order_seed,omitempty"`
	// Icount: the guest ran under QEMU -icount shift=0,sleep=off with one
	// vCPU: its clocks count instructions (1 ns per instruction).
	Icount bool `json:"icount,omitempty"`
	// Background: what else ran on the guest during the rounds (the
	// background sandbox, background.go); empty: nothing (runs before it
	// existed, or -background=false).
	Background string       `json:"background,omitempty"`
	Cells      []Cell       `json:"cells"`
	Values     []Value      `json:"values"`
	Profile    []ProfileRow `json:"profile"`
	Notes      []string     `json:"notes"`
	ElapsedS   float64      `json:"elapsed_s"`
}

// Cell is one operation under one phase: ns/op of each repetition.
type Cell struct {
	Op      Op        `json:"op"`
	Phase   string    `json:"phase"`
	Iters   int       `json:"iters"`
	Samples []float64 `json:"samples_ns"` // CPU ns/op per repetition
	Wall    []float64 `json:"wall_ns"`    // wall ns/op per repetition
}

// Median ns/op.
func (c Cell) Median() float64 { return Median(c.Samples) }

// Value is a figure that is not a ratio.
type Value struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// ProfileRow is one program's share of one operation (BPF run-time stats).
type ProfileRow struct {
	Phase     string  `json:"phase"`
	Op        Op      `json:"op"`
	Program   string  `json:"program"`
	RunsPerOp float64 `json:"runs_per_op"`
	NsPerRun  float64 `json:"ns_per_run"`
}

// Label names the doc in summary lines: "host", "vm6.12", or "icount/6.12"
// for a guest run under QEMU -icount.
func (d *Doc) Label() string {
	if d.Where == "host" {
		return "host"
	}
	if d.Icount {
		return "icount/" + d.shortKernel()
	}
	return "vm" + d.shortKernel()
}

// shortKernel is the kernel's major.minor ("6.12").
func (d *Doc) shortKernel() string {
	v := d.Kernel
	if i := strings.IndexByte(v, '.'); i >= 0 {
		if j := strings.IndexAny(v[i+1:], ".-+"); j >= 0 {
			v = v[:i+1+j]
		}
	}
	return v
}

func (d *Doc) add(op Op, phase string, iters int, ns, wall float64) {
	for i := range d.Cells {
		if d.Cells[i].Op == op && d.Cells[i].Phase == phase {
			d.Cells[i].Samples = append(d.Cells[i].Samples, ns)
			d.Cells[i].Wall = append(d.Cells[i].Wall, wall)
			return
		}
	}
	d.Cells = append(d.Cells, Cell{Op: op, Phase: phase, Iters: iters, Samples: []float64{ns}, Wall: []float64{wall}})
}

func (d *Doc) cell(op Op, phase string) (Cell, bool) {
	for _, c := range d.Cells {
		if c.Op == op && c.Phase == phase && len(c.Samples) > 0 {
			return c, true
		}
	}
	return Cell{}, false
}

// Ratio of phase to base for op: the median of the per-round ratios when
// both ran in the same rounds, else the ratio of the medians (false when
// either is missing).
func (d *Doc) Ratio(op Op, phase, base string) (float64, bool) {
	c, ok := d.cell(op, phase)
	b, ok2 := d.cell(op, base)
	if !ok || !ok2 || b.Median() == 0 {
		return 0, false
	}
	if len(c.Samples) == len(b.Samples) {
		// Paired: repetition i of both ran in the same round.
		rs := make([]float64, len(c.Samples))
		for i := range rs {
			rs[i] = c.Samples[i] / b.Samples[i]
		}
		return Median(rs), true
	}
	return c.Median() / b.Median(), true
}

// Estimate is Ratio with its bootstrap 95% interval (PairedEstimate when
// both ran in the same rounds, else UnpairedEstimate); false when either
// cell is missing or has fewer than 2 samples.
func (d *Doc) Estimate(op Op, phase, base string) (Estimate, bool) {
	c, ok := d.cell(op, phase)
	b, ok2 := d.cell(op, base)
	if !ok || !ok2 {
		return Estimate{}, false
	}
	var (
		e   Estimate
		err error
	)
	if len(c.Samples) == len(b.Samples) {
		e, err = PairedEstimate(c.Samples, b.Samples)
	} else {
		e, err = UnpairedEstimate(c.Samples, b.Samples)
	}
	return e, err == nil
}

// Method says how the doc's figures are measured, for the header of
// docs/benchmarks.md.
func (d *Doc) Method() string {
	var how string
	switch {
	case d.Where == "host":
		how = "native"
		if d.OrderSeed != 0 {
			how += fmt.Sprintf(", phase order shuffled per round (seed %d)", d.OrderSeed)
		}
	case d.Icount:
		how = "QEMU TCG -icount shift=0,sleep=off, 1 vCPU, default mitigations: guest clocks count instructions (1 ns = 1 instruction), so ratios are ratios of instruction counts"
	default:
		how = "QEMU TCG (guest clocks are host time under emulation)"
	}
	if d.Where != "host" && d.OrderSeed != 0 {
		how += fmt.Sprintf("; groups unloaded/floor/loaded and their phases shuffled per round (seed %d)", d.OrderSeed)
	}
	return fmt.Sprintf("%s; median of %d paired rounds (per-round ratios), bootstrap 95%% interval (%d resamples, fixed seed)", how, d.Reps, BootstrapResamples)
}

// Emit writes the doc as base64 chunks on lines of their own, so that it
// survives a serial console; Collect reassembles it.
func Emit(w io.Writer, d *Doc) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	enc := base64.StdEncoding.EncodeToString(b)
	const chunk = 96
	n := (len(enc) + chunk - 1) / chunk
	fmt.Fprintf(w, "\nBENCH-JSON-BEGIN %s %d\n", hex.EncodeToString(sum[:]), n)
	for i := 0; i < n; i++ {
		end := min((i+1)*chunk, len(enc))
		fmt.Fprintf(w, "BENCH-JSON %d %s\n", i, enc[i*chunk:end])
	}
	_, err = fmt.Fprintln(w, "BENCH-JSON-END")
	return err
}

// Collect finds the last emitted doc in a console log.
func Collect(r io.Reader) (*Doc, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var (
		want   string
		n      int
		chunks map[int]string
		done   []byte
	)
	for sc.Scan() {
		f := strings.Fields(strings.TrimRight(sc.Text(), "\r"))
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "BENCH-JSON-BEGIN":
			if len(f) != 3 {
				continue
			}
			want = f[1]
			n, _ = strconv.Atoi(f[2])
			chunks = map[int]string{}
		case "BENCH-JSON":
			if chunks == nil || len(f) != 3 {
				continue
			}
			i, err := strconv.Atoi(f[1])
			if err == nil {
				chunks[i] = f[2]
			}
		case "BENCH-JSON-END":
			if chunks == nil {
				continue
			}
			var sb strings.Builder
			for i := 0; i < n; i++ {
				c, ok := chunks[i]
				if !ok {
					return nil, fmt.Errorf("bench result: chunk %d of %d missing", i, n)
				}
				sb.WriteString(c)
			}
			b, err := base64.StdEncoding.DecodeString(sb.String())
			if err != nil {
				return nil, fmt.Errorf("bench result: %w", err)
			}
			sum := sha256.Sum256(b)
			if hex.EncodeToString(sum[:]) != want {
				return nil, fmt.Errorf("bench result: checksum mismatch (console corrupted a line)")
			}
			done = b
			chunks = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if done == nil {
		return nil, fmt.Errorf("no bench result in the log")
	}
	var d Doc
	if err := json.Unmarshal(done, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Markdown renders docs/benchmarks.md.
func Markdown(w io.Writer, docs []*Doc, command, host string, wallS float64) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("# Benchmarks (`make bench`)\n\n")
	p("Generated by `%s` — do not edit by hand; rerun it. The analysis against the goals (where the time goes, what was done) is in [performance.md](performance.md).\n\n", command)
	p("- Command: `%s` (wall time of this run: %.0f s)\n", command, wallS)
	p("- Host: %s\n", host)
	for _, d := range docs {
		// The Landlock ABI matters only to a part with Landlock phases
		// (the host part has none and does not probe it).
		ll := ""
		for _, c := range d.Cells {
			if c.Phase == PhaseE1 || c.Phase == PhaseE2 || c.Phase == PhaseE0 {
				ll = fmt.Sprintf("; Landlock ABI %d", d.LandlockABI)
				break
			}
		}
		bg := ""
		if d.Background != "" {
			bg = ". Background: " + d.Background
		}
		p("- %s: kernel %s, %s%s; part took %.0f s. Figures: %s%s\n",
			d.Label(), d.Kernel, d.Machine, ll, d.ElapsedS, d.Method(), bg)
	}
	p("\nPhases: (a) no enforcerd program: in the VM, every round runs three groups in an order shuffled per round ")
	p("(seeded; the phases within a group shuffled too), loading or unloading between groups as they need: ")
	p("unloaded ((a), (a0), (e1), (e0): every program and link of enforcerd's closed and unpinned, and the kernel's count of loaded ")
	p("BPF programs back at what it was before the first load, or the run fails: merely detached programs were measured to ")
	p("keep file operations 4–16%% dearer on 6.12), floor ((f)) and loaded ((b), (c), (c2), (d)), the guest idling a moment (-settle) after every load or unload so that ")
	p("the kernel's deferred freeing is not charged to the next phase; the loader's figures ")
	p("come from the first load of the boot; (a0) is (a) run a second time in the same unloaded group, the null check ")
	p("of the method ((a0)/(a) should be within 0.995–1.005); ")
	p("in the VM (unless a part's line says otherwise) one other sandbox is on the guest during the rounds, as on a real agent host: a sibling cgroup of the phase cgroups ")
	p("(same level) holding one live process that makes a socket()+close() now and then, its cgroup registered with a ceiling of (c2)'s shape (its own writable root) ")
	p("from each load to just before each unload, so (b), (c), (c2) and (d) are measured with one (c2) sandbox registered elsewhere on the host; ")
	p("in (f) there is nothing of enforcerd's to register it with (the floor programs are attached) and only its process is there, as in the unloaded group; ")
	p("on the host (a) runs in a sibling subtree of the cgroup the programs attach to, ")
	p("at the same cgroup depth, and every round runs (a), (f), (b), (c), (c2), (d) once each in a shuffled order; ")
	p("(f) the floor: in place of enforcerd's programs, allow-only programs (r0 = allow; exit) of the same ")
	p("types on the same hooks (a twin of every program enforcerd attached: in the VM every LSM, tracing and cgroup-BPF ")
	p("program; on the host those it can load, no BPF LSM), so (f)/(a) is what attaching at those hooks costs at all and (b) over (f) what enforcerd's ")
	p("program bodies add; ")
	p("(b) every program loaded and attached, the process in an unregistered cgroup; ")
	p("(c) the process in a registered cgroup with the all-allow ceiling network=true, write=true, shell=full ")
	p("(every hook still resolves the ceiling, from the per-cgroup cache of the ancestor walk: the walk itself runs only after the ceilings map changed; then it checks the allow path); ")
	p("(c2) the process in a registered cgroup under the ceiling a real agent gets: ")
	p("network=false with the listener and the UDP sink as its allowed endpoints (tcp:127.0.0.1:PORT, udp:127.0.0.1:PORT), write=false with one writable root, ")
	p("shell=read_only; its scratch directory lies 8 levels beneath the root, so every allowed write climbs 8 directories to ")
	p("find it (every phase works 8 directories beneath its own phase directory, so the path walk costs the same in each); as in a container, the cgroup is registered once the worker (its entrypoint) runs, so the programs it execs run write-denied (the exec op measures that path too); accept and udp_recvfrom do not run in (c2): their traffic goes to the worker's own listener and UDP socket, which the ceiling does not list (and it denies accept under network=false whatever it lists); ")
	p("(d) registered with network=false, write=false, shell=none: ")
	p("the denied path (every operation must fail with EPERM, or the run fails); ")
	p("(e1) no enforcerd programs, Landlock (go-landlock, best effort: every right the kernel's ABI has, filesystem, ")
	p("TCP bind and connect, UDP bind and send, the signal and abstract unix socket scopes) granting everything the benchmark does, ")
	p("rooted at the phase's workspace as a Landlock agent sandbox is (every filesystem right beneath the workspace, the phase's directory the worker works 8 levels beneath; ")
	p("reading and executing beneath /; TCP connect to the listener and to the worker's own listener, UDP send to the sink and to the worker's own UDP socket): the allow-everything sandbox, to compare with (c); ")
	p("(e2) (c2)'s Landlock twin: the same handled rights, every filesystem right beneath the workspace (its one writable root) and reading and executing beneath / (the rest read-only), ")
	p("TCP connect only to the listener and UDP send only to the sink ((c2)'s endpoints; TCP from ABI 4, UDP from ABI 10), no TCP bind; run on what (c2) runs and Landlock at the kernel's ABI expresses ")
	p("(the part's notes list what it leaves out), to compare with (c2): the goal (c2) <= (e2) is checked there; ")
	p("(e0) the same Landlock handling every right but granting only reading files and directories beneath / ")
	p("(no write, no execute, no TCP connect): the intent of (d)'s deny-all ceiling, run on the operations both deny ")
	p("(every one must fail with EACCES), to compare with (d); the goal (c) <= (e1) is checked only where Landlock ")
	p("expresses the operation (creations, opens, renames and execs by path; TCP connect from ABI 4; signals from ABI 6; ")
	p("UDP send from ABI 10; never socket creation, stat, I/O on an open descriptor (io_uring's too), ioctls on anything but a device, chmod, xattrs, pipes, socketpairs, SysV IPC, fork, threads or mmap). ")
	p("Within a part every workload process sits at the same cgroup depth: in the VM every phase's worker runs in its own ")
	p("cgroup at level 4 (/bench/p/q/<phase>), (a) as deep as (c2). A ratio is the median over rounds of the per-round ratio phase/(a) (both ran ")
	p("in the same round, so drift of the machine between rounds cancels), shown as \"ratio [lo–hi]\" with its ")
	p("percentile bootstrap 95%% interval over rounds (10,000 resamples, fixed seed: the same samples give the same ")
	p("interval); a goal is met only when the whole interval is at or under it, not met when the whole interval is ")
	p("over it, and inconclusive otherwise. Inside the VM (QEMU TCG, no KVM) only ratios are meaningful, the ns ")
	p("columns are TCG time, or instruction counts in icount mode (-icount shift=0: 1 ns of guest time per ")
	p("instruction, so an icount ratio is a ratio of instructions executed, blind to cache and pipeline effects). Time is CPU time of the ")
	p("workload's measuring thread (CLOCK_THREAD_CPUTIME_ID, plus reaped children: exec's and fork's; plus the worker's io_uring io-wq threads: io_uring_rw's requests the kernel does not complete inline), not wall time: on a shared ")
	p("machine the wall time a process spends waiting for a CPU is not the cost of the operation (wall times are ")
	p("kept in the JSON results).\n\n")
	p("Operations: %s.\n\n", opsDoc)

	for _, d := range docs {
		p("## %s (kernel %s)\n\n", d.Label(), d.Kernel)
		p("| operation | iters | (a) ns/op | (f)/(a) | (b)/(a) | (c)/(a) | (c2)/(a) | (d)/(a) | (e1)/(a) | (e2)/(a) | (e0)/(a) | (c)/(e1) | (c2)/(e2) | (d)/(e0) | (a0)/(a) |\n")
		p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		ops := allOps()
		for _, op := range ops {
			a, ok := d.cell(op, PhaseA)
			if !ok {
				continue
			}
			r := func(ph, base string) string {
				if e, ok := d.Estimate(op, ph, base); ok {
					return fmt.Sprintf("%.3f [%.3f–%.3f]", e.Ratio, e.Lo, e.Hi)
				}
				if v, ok := d.Ratio(op, ph, base); ok {
					return fmt.Sprintf("%.3f", v)
				}
				return "n/a"
			}
			// (c)/(e1) compares like with like only where Landlock
			// mediates the operation; elsewhere (e1) is (a) again.
			ce, ce2 := "n/a", "n/a"
			if LandlockExpresses(op, d.LandlockABI) {
				ce, ce2 = r(PhaseC, PhaseE1), r(PhaseC2, PhaseE2)
			}
			p("| %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", op, a.Iters, a.Median(),
				r(PhaseF, PhaseA), r(PhaseB, PhaseA), r(PhaseC, PhaseA), r(PhaseC2, PhaseA), r(PhaseD, PhaseA), r(PhaseE1, PhaseA), r(PhaseE2, PhaseA), r(PhaseE0, PhaseA), ce, ce2, r(PhaseD, PhaseE0), r(PhaseA0, PhaseA))
		}
		p("\n")
		scaleMarkdown(p, d)
		if len(d.Values) > 0 {
			p("| figure | value |\n|---|---:|\n")
			for _, v := range d.Values {
				p("| %s | %s %s |\n", v.Name, fmtNum(v.Value), v.Unit)
			}
			p("\n")
		}
		if len(d.Profile) > 0 {
			p("Profile (BPF run-time stats, `kernel.bpf_stats_enabled=1`, one extra pass per operation; programs that ran on the operation):\n\n")
			p("| phase | operation | program | runs/op | ns/run | ns/op |\n|---|---|---|---:|---:|---:|\n")
			rows := append([]ProfileRow(nil), d.Profile...)
			sort.SliceStable(rows, func(i, j int) bool {
				if rows[i].Phase != rows[j].Phase {
					return rows[i].Phase < rows[j].Phase
				}
				if rows[i].Op != rows[j].Op {
					return opIndex(rows[i].Op) < opIndex(rows[j].Op)
				}
				return rows[i].RunsPerOp*rows[i].NsPerRun > rows[j].RunsPerOp*rows[j].NsPerRun
			})
			for _, r := range rows {
				p("| %s | %s | %s | %.2f | %.0f | %.0f |\n", r.Phase, r.Op, r.Program, r.RunsPerOp, r.NsPerRun, r.RunsPerOp*r.NsPerRun)
			}
			p("\n")
		}
		for _, n := range d.Notes {
			p("- %s\n", n)
		}
		p("\n")
	}

	p("## Goals\n\n")
	p("Every hook enforcerd attaches closes a kind of the threat model (docs/threat-model.md, with each hook's kinds and cost per run), ")
	p("so an operation on whose path one of its programs runs (at least %.1f runs per operation in (b) of the part's profile) ", MinHookRuns)
	p("is judged by what the program bodies add over the floor (f): (b)/(f) <= %.2f for processes nobody enforces, ", GoalBodyNotEnforced)
	p("(c)/(f) <= %.2f for enforced processes doing allowed work, (c2)/(f) <= %.2f under the typical ceiling. ", GoalBodyEnforced, GoalBodyTypical)
	p("An operation no program runs on is judged against no programs at all: (f)/(a) <= %.2f on path walks and macro_untar, ", GoalFloorPathWalk)
	p("<= %.2f elsewhere, (b)/(a) <= %.2f, (c)/(a) <= %.2f, (c2)/(a) <= %.2f; an operation the part's profile has no row of is checked against both sets. ", GoalFloorOther, GoalNotEnforced, GoalEnforced, GoalTypical)
	p("Everywhere: no more than Landlock on the same work ((c)/(e1) <= 1 and (c2)/(e2) <= 1, where Landlock expresses the operation), ")
	p("and K = 10,000 and 20,000 registered cgroups, and 20,000 unregistered busy cgroups, each at most %.2f times the figure without them. ", GoalScale)
	p("Published, for comparison: BPFContain +3.3%% on a kernel build and +26.6%% on file creation; KubeArmor BPF-LSM mode 1–8%%.\n\n")
	var walks []string
	for _, op := range allOps() {
		if PathWalk(op) {
			walks = append(walks, "`"+string(op)+"`")
		}
	}
	p("Path walks, whose cost a path lookup dominates (so their ratios are what enforcement adds to a lookup): %s.\n\n", strings.Join(walks, ", "))
	p("Verdict over the 95%% interval: met (whole interval at or under the goal), **not met** (whole interval over it), ")
	p("inconclusive (the interval straddles the goal: this run cannot tell; always with fewer than %d rounds), ", MinVerdictRounds)
	p("untrusted (the operation's null check failed in the part: (a0)/(a) outside %.3f–%.3f, so none of its ratios there decides a goal).\n\n", NullLo, NullHi)
	p("| part | operation | goal | ratio | 95%% interval | rounds | verdict |\n|---|---|---|---:|---|---:|---|\n")
	for _, v := range Goals(docs) {
		m := v.Verdict
		if m == VerdictNotMet {
			m = "**not met**"
		}
		p("| %s | %s | %s | %.3f | %.3f–%.3f | %d | %s |\n", v.Doc, v.Op, v.Goal, v.Ratio, v.Lo, v.Hi, v.N, m)
	}
	p("\n")
}

func opIndex(op Op) int {
	for i, o := range allOps() {
		if o == op {
			return i
		}
	}
	return 99
}

const opsDoc = "`open_read` open(O_RDONLY)+close of an existing file; " +
	"`create_unlink` open(O_CREAT|O_WRONLY|O_TRUNC)+write 64 B+close+unlink (denied: the open); " +
	"`stat` stat(2); `rename` rename(2) within one directory; " +
	"`exec` fork+execve of a static binary (busybox `true`)+wait (denied: execve, the fork is still paid); " +
	"`socket_close` socket(AF_INET, SOCK_STREAM)+close; " +
	"`connect` socket+connect to a loopback listener+close with linger 0 (denied: connect of a socket created before the ceiling); " +
	"`pread_4k`/`pwrite_4k` pread/pwrite of 4 KiB through a descriptor opened before the ceiling (denied: the pwrite, at file_permission); " +
	"`pipe_pingpong` 1 byte to a partner thread through a pipe and 1 byte back; " +
	"`unix_stream`/`unix_dgram` send+recv of 16 B on an AF_UNIX socketpair; " +
	"`tcp_rr` 16 B request and its echo on an established loopback TCP connection (denied: the send); " +
	"`udp_sendto` sendto of 16 B to a loopback UDP sink from a socket bound before the ceiling; " +
	"`fork` process creation+_exit+wait as posix_spawn and Go's os/exec create a process (clone(CLONE_VM|CLONE_VFORK|SIGCHLD): no copy of the address space); `mmap_exec` mmap(PROT_READ|PROT_EXEC) of one page of the exec op's binary+munmap; " +
	"`kill` kill(getpid(), 0) (the LSM hook task_kill runs for it); " +
	"`open_depth1`/`open_depth10`/`open_depth28` open(O_RDONLY)+close of a file 1/10/28 directories below the phase directory; " +
	"`macro_untar` unpack a tarball of a Go source subtree (archive/tar), walk it with lstat+read of every file, remove it; " +
	"`exec_storm` fork+execve of busybox `true` once per file of a 100-file tree; " +
	"`stat_storm` lstat of every entry of a 3,030-entry tree (as `git status` refreshes its index); " +
	"`mmap_anon` mmap of 64 KiB of anonymous memory+mprotect(PROT_READ)+munmap; " +
	"`ioctl_fcntl` ioctl(FIONREAD)+fcntl(F_GETFL) on a pipe; " +
	"`getdents_1k` open+getdents64 to the end+close of a directory of 1,000 files; " +
	"`readv_writev` pwritev+preadv of 2 × 2 KiB at offset 0 through a descriptor opened before the ceiling (denied: the pwritev, at file_permission); " +
	"`splice` splice of 4 KiB of a file into a pipe+read of the pipe; " +
	"`accept` socket+connect (nonblocking) to a loopback listener of the worker's own+accept4+close of both (denied: the socket); " +
	"`udp_recvfrom` sendto of 16 B to the worker's own bound UDP socket+recvfrom on it (denied: the sendto); " +
	"`sysv_msg` msgsnd+msgrcv of 16 B on a private SysV queue of the worker's own; " +
	"`proc_status` open+read+close of /proc/self/status; " +
	"`chmod_setxattr` fchmodat+setxattr(user.bench, 8 B) of a file (the setxattr left out where tmpfs has no user.* xattrs, before Linux 6.6: the notes say so; denied: the fchmodat); " +
	"`thread` a thread created and joined as pthread_create and pthread_join do (signals blocked around clone, futex wait on the tid); " +
	"`fork_copy` fork(2) (the address space copied)+_exit+wait; " +
	"`exec_dynamic` fork+execve of a dynamically linked `true`+wait (denied: execve); " +
	"`io_uring_rw` one IORING_OP_READ and one IORING_OP_WRITE of 4 KiB, submitted and awaited by one io_uring_enter (denied: the write, at file_permission)"
