package bench

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
)

// VM is the "vm" subcommand: the whole guest part of `make bench` in one
// boot. Calibration runs before anything is loaded; the first load gives
// the loader's figures and the hooks the floor mirrors, then everything is
// unloaded again. Each of -reps rounds runs three groups in an order
// shuffled per round (-seed), the phases within each group shuffled too:
// unloaded ((a), (a0), (e1), (e2), (e0): every program and link of enforcerd's
// closed and unpinned, the kernel's program count back at what it was
// before the first load), floor ((f): allow-only twins of every program
// enforcerd attaches, on the same hooks) and loaded ((b), (c), (c2), (d)),
// loading or unloading between groups as they need, with one other
// sandbox on the guest throughout (-background, background.go). Every phase's worker
// runs in a cgroup of its own at cgroup level 4, /bench/p/q/<phase>, so
// the cgroup depth (charging, the effective program arrays, enforcerd's
// ancestor walk) costs the same in each phase. The macro workloads (-macro:
// the storms, and macro_untar with -tar) run in (a), (e1), (f), (b), (c)
// and (c2). Then, loaded: scale, registration latency,
// scale with unregistered cgroups (-scale-unreg), memory, the audit flood, and last the profile (BPF stats slow every
// program down, so they are on only for the profile passes). Errors: a
// setup step that fails, programs still loaded after an unload (the
// unloaded phases would not be "nothing loaded"), a phase that fails.
func VM(args []string) error {
	fs := flag.NewFlagSet("vm", flag.ContinueOnError)
	reps := fs.Int("reps", 7, "repetitions per figure (medians)")
	target := fs.Duration("target", 200*time.Millisecond, "time per operation per repetition")
	tarPath := fs.String("tar", "", "tarball for the macro_untar workload (none: no macro_untar)")
	execPath := fs.String("exec", "/bin/true", "static binary for the exec op")
	execDynamic := fs.String("exec-dynamic", "", "dynamically linked binary for exec_dynamic (default: the first of "+strings.Join(dynamicCandidates, ", ")+" that is one; the busybox guest needs one added, with its program interpreter and libraries)")
	pin := fs.String("pin", enforcer.DefaultPinDir, "pin directory")
	scaleOf := scaleFlags(fs, []Op{OpSocket, OpCreateWrite, OpStat, OpOpenRead}, true)
	latN := fs.Int("latency", 50, "registration latency samples")
	floodN := fs.Uint64("flood", 1_000_000, "audit flood: denied operations")
	floodOnly := fs.Bool("flood-only", false, "load enforcerd and run only the audit flood")
	icount := fs.Bool("icount", false, "the guest runs under QEMU -icount with one vCPU (scripts/vmtest --icount): record it, check it")
	kmem := fs.Bool("kmem", false, "with -icount: a cross-check, the guest charges kernel memory to cgroups (booted without cgroup.memory=nokmem: VMTEST_ICOUNT_KMEM=1 scripts/vmtest --icount); its figures vary between workers by the page-charging steps docs/performance.md, \"The null check\", describes)")
	opsList := fs.String("ops", joinOps(MicroOps), "microbenchmarks to run, comma-separated")
	settle := fs.Duration("settle", 2*time.Second, "idle time after every load or unload, before the next phase (the kernel's deferred freeing runs then, not inside a measurement)")
	seed := fs.Uint64("seed", 0, "seed of the per-round group and phase order (0: from the clock; the seed used is logged and kept in the result)")
	macroOn := fs.Bool("macro", true, "run the macro workloads: exec_storm, stat_storm, and macro_untar when -tar is given")
	microOnly := fs.Bool("micro-only", false, "only the microbenchmark phases: no scale, latency, memory, flood or profile")
	phasesList := fs.String("phases", strings.Join(allPhases, ","), "phases the rounds run, comma-separated, a among them (every ratio is against (a)); a subset is a diagnosis, e.g. the null check alone with -phases a,a0")
	bgOn := fs.Bool("background", true, "one other sandbox on the guest during the rounds: a sibling cgroup of the phase cgroups holding one live process, registered with a (c2)-shaped ceiling while enforcerd is loaded (false: without it, as runs before it had one)")
	profileOnly := fs.Bool("profile-only", false, "only the BPF run-time profile of (b), (c) and (c2): no rounds, scale, latency, memory or flood (a diagnosis, not figures)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ops, err := parseOps(*opsList)
	if err != nil {
		return err
	}
	want, err := parsePhases(*phasesList)
	if err != nil {
		return err
	}
	scaleCfg, err := scaleOf(ops)
	if err != nil && !*microOnly && !*floodOnly && !*profileOnly {
		return err
	}
	if os.Getenv("ENFORCERD_VMTEST") != "1" {
		return fmt.Errorf("vm: runs only inside a scripts/vmtest guest (ENFORCERD_VMTEST=1 is not set): it turns address-space randomization and transparent huge pages off and creates cgroups for the whole machine")
	}
	if *kmem && !*icount {
		return fmt.Errorf("vm: -kmem is a variant of -icount; give both")
	}
	if *reps < 1 || *settle < 0 {
		return fmt.Errorf("vm: -reps %d -settle %v: want at least 1 round and no negative time", *reps, *settle)
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	atLeastTwoPs() // this process serves the connect and udp_sendto peers
	t0 := time.Now()
	r := &run{reps: *reps, target: *target, tar: *tarPath, exec: *execPath, execDynamic: *execDynamic, root: "/tmp/bench", scaled: true,
		iters: map[Op]int{}, log: newLogger("bench-vm")}
	abi, _ := llsys.LandlockGetABIVersion()
	r.doc = &Doc{Where: "vm", Kernel: uname(), Machine: "QEMU TCG (no KVM), -smp 2 " + guestMem() + ", busybox initramfs on tmpfs",
		LandlockABI: abi, Reps: *reps, OrderSeed: *seed}
	if *icount {
		if err := checkIcountGuest(*kmem); err != nil {
			return err
		}
		r.doc.Icount = true
		charge := "kernel memory not charged to cgroups (cgroup.memory=nokmem)"
		if *kmem {
			charge = "kernel memory charged to cgroups (a cross-check)"
		}
		r.doc.Machine = "QEMU TCG (no KVM) -icount shift=0,sleep=off, -smp 1 " + guestMem() + ", default mitigations, " + charge + ", busybox initramfs on tmpfs"
	}
	if _, err := os.Stat(*pin); err == nil {
		return fmt.Errorf("%s exists: phase (a) needs a boot where enforcerd was never loaded", *pin)
	}
	// Address-space layout randomization changes the instruction count of
	// mmap, fork and exec from one process to the next (where the maple
	// tree places a mapping, how many page tables fork copies): off in this
	// throwaway guest, so that every phase's worker gets the same layout.
	if err := os.WriteFile("/proc/sys/kernel/randomize_va_space", []byte("0\n"), 0); err != nil {
		return fmt.Errorf("vm: address-space randomization off: %w", err)
	}
	r.doc.Machine += ", ASLR off"
	// Transparent huge pages likewise: whether a stretch of a worker's
	// heap is backed by a huge page depends on its alignment and on when
	// khugepaged came by, and changes what mapping, unmapping and
	// faulting cost (measured: a fork 23 % cheaper in some processes than in
	// others with THP "always", the Debian kernels' default).
	if err := os.WriteFile("/sys/kernel/mm/transparent_hugepage/enabled", []byte("never\n"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("vm: transparent huge pages off: %w", err)
	} else if err == nil {
		r.doc.Machine += ", transparent huge pages off"
	}
	if n := loadedPrograms(); n > 0 {
		r.doc.Notes = append(r.doc.Notes, fmt.Sprintf("%d LSM/cgroup/tracing BPF programs of other origin were loaded during (a)", n))
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		return err
	}
	cgs := map[string]cgroup.Cgroup{}
	for _, name := range []string{PhaseA, PhaseA0, PhaseF, PhaseB, PhaseC, PhaseC2, PhaseD, PhaseE1, PhaseE2, PhaseE0, "lat", "flood"} {
		cg, err := cgroup.Create(mount, phaseCgroup+name)
		if err != nil {
			return err
		}
		cgs[name] = cg
	}
	port, stop, err := listen()
	if err != nil {
		return err
	}
	defer stop()
	r.port = port
	udpPort, stopUDP, err := listenUDP()
	if err != nil {
		return err
	}
	defer stopUDP()
	r.udp = udpPort

	if *floodOnly {
		return r.floodOnly(*pin, mount, cgs["flood"], *floodN, t0)
	}

	// (d) runs what the deny-all ceiling denies; (e0) what Landlock
	// denies of that at this ABI.
	var llDenyOps, denyOps []Op
	for _, op := range ops {
		if Deniable(op) {
			denyOps = append(denyOps, op)
			if LandlockExpresses(op, abi) {
				llDenyOps = append(llDenyOps, op)
			}
		}
	}
	var m []Op // the macro workloads
	if *macroOn {
		for _, op := range MacroOps {
			if op != OpMacro || r.tar != "" {
				m = append(m, op)
			}
		}
	}
	calOps := append(append([]Op{}, ops...), m...)
	r.log("kernel %s, Landlock ABI %d, %d reps of %v per op", r.doc.Kernel, abi, r.reps, r.target)
	if err := r.calibrate(cgs[PhaseA], calOps); err != nil {
		return err
	}

	baseline, err := countPrograms(nil)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.phaseDir(PhaseC2), 0o755); err != nil {
		return err
	}
	c2, err := typical(r.writeRoot(), r.port, r.udp)
	if err != nil {
		return err
	}
	k := &vmKernel{r: r, pin: *pin, mount: mount, baseline: baseline, settle: *settle}
	k.onLoad = func(enf *enforcer.Enforcer) error { return enf.Register(cgs[PhaseC], allowAll) }
	// The first load: its figures are the loader's, its hooks the floor's
	// model; then everything is unloaded again before the first round.
	r.log("first load (loader child); %d BPF programs loaded before it", baseline)
	if err := k.enter(stateLoaded); err != nil {
		return err
	}
	if err := k.enter(stateUnloaded); err != nil {
		return err
	}
	// The background sandbox (background.go): its process from here to
	// the end of the rounds, its cgroup registered from each load to just
	// before each unload.
	var bg *background
	if *bgOn && rounds(r.reps, *profileOnly) > 0 {
		if bg, err = startBackground(mount, backgroundGroup, r.root, r.port, r.udp); err != nil {
			return err
		}
		k.onLoad = func(enf *enforcer.Enforcer) error {
			if err := enf.Register(cgs[PhaseC], allowAll); err != nil {
				return err
			}
			return bg.register(enf)
		}
		k.onUnload = bg.unregister
		r.doc.Background = backgroundNote()
		r.log("background sandbox: %s", bg.cg)
	} else {
		r.doc.Notes = append(r.doc.Notes, "no background sandbox during the rounds (-background=false)")
	}

	type phase struct {
		name string
		run  func() error
	}
	microP := func(ph string, cg cgroup.Cgroup, ops []Op, extra ...string) phase {
		return phase{ph, func() error { return r.micro(cg, ph, ops, extra...) }}
	}
	regP := func(ph string, cg cgroup.Cgroup, en entry.Entry, ops []Op, extra ...string) phase {
		return phase{ph, func() error { return r.registered(k.enf, cg, ph, en, ops, extra...) }}
	}
	unloaded := []phase{microP(PhaseA, cgs[PhaseA], ops), microP(PhaseA0, cgs[PhaseA0], ops)}
	floor := []phase{microP(PhaseF, cgs[PhaseF], ops)}
	loaded := []phase{microP(PhaseB, cgs[PhaseB], ops), microP(PhaseC, cgs[PhaseC], ops),
		regP(PhaseD, cgs[PhaseD], denyAll, denyOps, "-deny")}
	// (c2) runs what its ceiling allows (TypicalDenies).
	if c2Ops := typicalOps(ops); len(c2Ops) > 0 {
		loaded = append(loaded, regP(PhaseC2, cgs[PhaseC2], c2, c2Ops))
	}
	// (e2), (c2)'s Landlock twin, runs what (c2) runs and Landlock at
	// this ABI mediates; the rest is listed in the result.
	e2Ops, e2Left := landlockTwinOps(typicalOps(ops), abi)
	if abi > 0 {
		unloaded = append(unloaded, microP(PhaseE1, cgs[PhaseE1], ops, "-landlock", llAllow, "-landlock-root", r.workspace(PhaseE1)))
		if len(e2Ops) > 0 {
			unloaded = append(unloaded, microP(PhaseE2, cgs[PhaseE2], e2Ops, "-landlock", llTypical, "-landlock-root", r.workspace(PhaseE2)))
		}
		if len(e2Left) > 0 && want[PhaseE2] {
			r.doc.Notes = append(r.doc.Notes, fmt.Sprintf("(e2) leaves out what Landlock ABI %d cannot express: %s", abi, joinOps(e2Left)))
		}
		if len(llDenyOps) > 0 {
			unloaded = append(unloaded, microP(PhaseE0, cgs[PhaseE0], llDenyOps, "-landlock", llDeny, "-deny"))
		}
	}
	if len(m) > 0 {
		unloaded = append(unloaded, microP(PhaseA, cgs[PhaseA], m))
		if abi > 0 {
			unloaded = append(unloaded, microP(PhaseE1, cgs[PhaseE1], m, "-landlock", llAllow, "-landlock-root", r.workspace(PhaseE1)))
			if mOps, _ := landlockTwinOps(m, abi); len(mOps) > 0 {
				unloaded = append(unloaded, microP(PhaseE2, cgs[PhaseE2], mOps, "-landlock", llTypical, "-landlock-root", r.workspace(PhaseE2)))
			}
		}
		floor = append(floor, microP(PhaseF, cgs[PhaseF], m))
		loaded = append(loaded, microP(PhaseB, cgs[PhaseB], m), microP(PhaseC, cgs[PhaseC], m), regP(PhaseC2, cgs[PhaseC2], c2, m))
	}
	type group struct {
		state  kernelState
		phases []phase
	}
	var groups []group
	for _, g := range []group{{stateUnloaded, unloaded}, {stateFloor, floor}, {stateLoaded, loaded}} {
		var kept []phase
		for _, p := range g.phases {
			if want[p.name] {
				kept = append(kept, p)
			}
		}
		if len(kept) > 0 {
			groups = append(groups, group{g.state, kept})
		}
	}
	if len(want) < len(allPhases) {
		r.doc.Notes = append(r.doc.Notes, "phases run: "+*phasesList)
	}

	// Rounds: each runs every group once, groups and the phases within
	// them in an order shuffled per round (seeded), loading or unloading
	// between groups as they need; paired ratios per round cancel drift.
	r.log("phase order seed %d", *seed)
	rng := rand.New(rand.NewPCG(*seed, 0))
	if *profileOnly {
		r.doc.Notes = append(r.doc.Notes, "profile-only run: no phase figures")
	}
	for i := 0; i < rounds(r.reps, *profileOnly); i++ {
		rng.Shuffle(len(groups), func(x, y int) { groups[x], groups[y] = groups[y], groups[x] })
		for _, g := range groups {
			ph := g.phases
			rng.Shuffle(len(ph), func(x, y int) { ph[x], ph[y] = ph[y], ph[x] })
			names := make([]string, len(ph))
			for j, p := range ph {
				names[j] = "(" + p.name + ")"
			}
			r.log("round %d/%d: %s: %s", i+1, r.reps, g.state, strings.Join(names, " "))
			if err := k.enter(g.state); err != nil {
				return err
			}
			for _, p := range ph {
				if err := p.run(); err != nil {
					return err
				}
			}
		}
	}
	r.log("%d loads in all", k.loads)
	// The background sandbox ends with the rounds: scale, latency, flood
	// and the profile have their own layouts.
	if bg != nil {
		if k.enf != nil {
			if err := bg.unregister(k.enf); err != nil {
				return err
			}
		}
		k.onLoad = func(enf *enforcer.Enforcer) error { return enf.Register(cgs[PhaseC], allowAll) }
		k.onUnload = nil
		if err := bg.stop(); err != nil {
			return err
		}
	}
	if *microOnly {
		r.doc.Notes = append(r.doc.Notes, "micro-only run: no scale, latency, memory, flood or profile figures")
		r.doc.ElapsedS = time.Since(t0).Seconds()
		r.log("done in %.0fs", r.doc.ElapsedS)
		return Emit(os.Stdout, r.doc)
	}
	if err := k.enter(stateLoaded); err != nil {
		return err
	}
	enf := k.enf
	defer enf.Close()

	if !*profileOnly {
		if scaleCfg.ks != nil {
			if _, err := cgroup.Create(mount, "/bench/scale"); err != nil {
				return err
			}
			if err := r.scaleRun(enf, mount, "/bench/scale", scaleCfg, *seed); err != nil {
				return err
			}
		}
		if scaleCfg.unreg != nil {
			if _, err := cgroup.Create(mount, "/bench/scale-unreg"); err != nil {
				return err
			}
			if err := r.scaleUnregRun(enf, mount, "/bench/scale-unreg", scaleCfg, *seed); err != nil {
				return err
			}
		}
		if err := r.latency(enf, cgs["lat"], *latN); err != nil {
			return err
		}
		if err := r.runMemory(); err != nil {
			r.doc.Notes = append(r.doc.Notes, "enforcerd run memory: "+err.Error())
		}
		if err := r.flood(enf, cgs["flood"], *floodN); err != nil {
			return err
		}
	}

	r.log("profile (BPF stats on)")
	prof, err := newProfiler(*pin)
	if err != nil {
		return err
	}
	if err := r.profile(prof, cgs[PhaseB], PhaseB, ops, nil, nil); err != nil {
		return err
	}
	if err := r.profile(prof, cgs[PhaseC], PhaseC, ops, nil, nil); err != nil {
		return err
	}
	if err := r.profile(prof, cgs[PhaseC2], PhaseC2, typicalOps(ops), enf, &c2); err != nil {
		return err
	}
	prof.close()
	r.doc.ElapsedS = time.Since(t0).Seconds()
	r.log("done in %.0fs", r.doc.ElapsedS)
	return Emit(os.Stdout, r.doc)
}

// landlockTwinOps splits ops into those Landlock at abi mediates
// (LandlockExpresses: they run in (e2)) and the rest (left out, listed).
func landlockTwinOps(ops []Op, abi int) (in, left []Op) {
	for _, op := range ops {
		if LandlockExpresses(op, abi) {
			in = append(in, op)
		} else {
			left = append(left, op)
		}
	}
	return in, left
}

// rounds is how many rounds the run makes: reps, none with -profile-only.
func rounds(reps int, profileOnly bool) int {
	if profileOnly {
		return 0
	}
	return reps
}

// latency: a child loops on socket(); the time from the Register call to the
// child's first denied socket(), n times (Unregister between samples).
func (r *run) latency(enf *enforcer.Enforcer, cg cgroup.Cgroup, n int) error {
	r.log("registration latency: %d samples", n)
	w, err := startWorker(cg, r.args("lat", "-mode", "latency")...)
	if err != nil {
		return err
	}
	if err := w.start(); err != nil {
		return err
	}
	next := func(want string) (int64, error) {
		line, err := w.out.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("latency worker: %w", err)
		}
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != want {
			return 0, fmt.Errorf("latency worker said %q, want %s", line, want)
		}
		return strconv.ParseInt(f[1], 10, 64)
	}
	var lat []float64
	for i := 0; i < n; i++ {
		time.Sleep(5 * time.Millisecond) // let the child loop on allowed sockets
		start := monotonicNs()
		if err := enf.Register(cg, denyNet); err != nil {
			return err
		}
		t, err := next("D")
		if err != nil {
			return err
		}
		lat = append(lat, float64(t-start)/1000)
		if err := enf.Unregister(cg.ID); err != nil {
			return err
		}
		if _, err := next("A"); err != nil {
			return err
		}
	}
	w.in.Close()
	if err := w.cmd.Wait(); err != nil {
		return fmt.Errorf("latency worker: %w", err)
	}
	r.doc.Values = append(r.doc.Values,
		Value{"registration_latency_p50", Percentile(lat, 50), "us"},
		Value{"registration_latency_p99", Percentile(lat, 99), "us"})
	return nil
}

// runMemory: RSS of `enforcerd run` (programs already pinned: it adopts
// them, as it does next to a running daemon) while its command runs.
func (r *run) runMemory() error {
	bin := os.Getenv("ENFORCERD_BIN")
	if bin == "" {
		bin = "/bin/enforcerd"
	}
	cmd := exec.Command(bin, "run", "-q", "--network", "deny", "--", "/bin/sleep", "3")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	var rss, hwm float64
	for i := 0; i < 25; i++ {
		time.Sleep(100 * time.Millisecond)
		if v, err := procStatusKiB(cmd.Process.Pid, "VmRSS"); err == nil && v > rss {
			rss = v
		}
		if v, err := procStatusKiB(cmd.Process.Pid, "VmHWM"); err == nil {
			hwm = v
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("enforcerd run: %w", err)
	}
	r.doc.Values = append(r.doc.Values, Value{"enforcerd_run_rss", rss / 1024, "MiB"}, Value{"enforcerd_run_peak_rss", hwm / 1024, "MiB"})
	return nil
}

// parseOps parses a comma-separated list of MicroOps names. Errors: an empty
// list, an unknown or repeated name.
func parseOps(list string) ([]Op, error) {
	var ops []Op
	seen := map[Op]bool{}
	for _, f := range strings.Split(list, ",") {
		op := Op(strings.TrimSpace(f))
		if op == "" {
			continue
		}
		if opIndex(op) >= len(MicroOps) {
			return nil, fmt.Errorf("-ops: unknown microbenchmark %q (known: %s)", op, joinOps(MicroOps))
		}
		if seen[op] {
			return nil, fmt.Errorf("-ops: %q given twice", op)
		}
		seen[op] = true
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("-ops: no microbenchmark given")
	}
	return ops, nil
}

// allPhases are the phases a round runs, in the report's order.
var allPhases = []string{PhaseA, PhaseA0, PhaseF, PhaseB, PhaseC, PhaseC2, PhaseD, PhaseE1, PhaseE2, PhaseE0}

// parsePhases parses -phases: a comma-separated subset of allPhases that
// contains PhaseA. Errors: an unknown or repeated name, an empty list, no
// (a) (every ratio is against it).
func parsePhases(list string) (map[string]bool, error) {
	known := map[string]bool{}
	for _, p := range allPhases {
		known[p] = true
	}
	want := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		p := strings.TrimSpace(f)
		if p == "" {
			continue
		}
		if !known[p] {
			return nil, fmt.Errorf("-phases: unknown phase %q (known: %s)", p, strings.Join(allPhases, ","))
		}
		if want[p] {
			return nil, fmt.Errorf("-phases: %q given twice", p)
		}
		want[p] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("-phases: no phase given")
	}
	if !want[PhaseA] {
		return nil, fmt.Errorf("-phases %q: lacks a, the phase every ratio is against", list)
	}
	return want, nil
}

// checkIcountGuest verifies what -icount claims and the guest can see: one
// CPU, no mitigations=off on the kernel command line, and
// cgroup.memory=nokmem on it, or not when kmem (the cross-check)
// (scripts/vmtest --icount boots so: charging
// kernel memory to cgroups goes through a per-CPU stock of bytes charged
// and uncharged a page at a time, and in 10 to 30 % of the workers of a
// test run every unix send+recv crossed a page boundary, 425 instructions
// more on 6.1 and 495 on 6.12, by an accident of the stock's remainder).
func checkIcountGuest(kmem bool) error {
	if n := runtime.NumCPU(); n != 1 {
		return fmt.Errorf("-icount: the guest has %d CPUs, want 1 (scripts/vmtest --icount)", n)
	}
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return fmt.Errorf("-icount: %w", err)
	}
	args := strings.Fields(string(cmdline))
	if slices.Contains(args, "mitigations=off") {
		return fmt.Errorf("-icount: the guest kernel runs with mitigations=off; icount mode measures the default mitigations")
	}
	nokmem := slices.ContainsFunc(args, func(a string) bool {
		v, ok := strings.CutPrefix(a, "cgroup.memory=")
		return ok && slices.Contains(strings.Split(v, ","), "nokmem")
	})
	switch {
	case !nokmem && !kmem:
		return fmt.Errorf("-icount: the guest kernel charges kernel memory to cgroups; icount mode boots with cgroup.memory=nokmem (scripts/vmtest --icount), or give -kmem for the cross-check")
	case nokmem && kmem:
		return fmt.Errorf("-icount -kmem: the guest kernel runs with cgroup.memory=nokmem; the cross-check boots without it (VMTEST_ICOUNT_KMEM=1 scripts/vmtest --icount)")
	}
	return nil
}
