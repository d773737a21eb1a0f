package bench

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// Native is the "native" subcommand: the cgroup-BPF path (socket+close,
// connect) on this host's own kernel under (a), (b), (c), (c2), (d). The
// programs attach at a private cgroup (not the hierarchy's root) and pin in a
// private directory, so other work on the host is neither slowed nor denied;
// both are removed at the end.
//
// Layout: <tag>/na/a, <tag>/flr/f and <tag>/att/{b,c,c2,d}, the programs
// attached at <tag>/att, the floor (PhaseF: allow-only programs on the same
// hooks) at <tag>/flr. cgroup-BPF programs run only for processes below the cgroup they
// are attached to, so (a) runs in a sibling subtree, at the same depth as the
// others (the cgroup's depth is itself a cost: charging and the effective
// program arrays walk it). Every round runs each phase once, in an order
// shuffled per round (seed logged and kept in the result), so neither drift
// of the machine nor the position in a round favours one phase; ratios are
// medians of per-round ratios with a bootstrap 95% interval (Doc.Estimate).
func Native(args []string) error {
	fs := flag.NewFlagSet("native", flag.ContinueOnError)
	reps := fs.Int("reps", 31, "rounds: each runs every phase once (ratios are medians of per-round ratios)")
	target := fs.Duration("target", 150*time.Millisecond, "time per operation per repetition")
	seed := fs.Uint64("seed", 0, "seed of the per-round phase order (0: from the clock; the seed used is logged)")
	out := fs.String("out", "", "write the result here (default: stdout, chunked)")
	scaleOf := scaleFlags(fs, NetOps, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	scaleCfg, err := scaleOf(NetOps)
	if err != nil {
		return err
	}
	if *reps < 2 {
		return fmt.Errorf("native: -reps %d: need at least 2 rounds for an interval", *reps)
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	t0 := time.Now()
	r := &run{reps: *reps, target: *target, exec: "/bin/true", iters: map[Op]int{}, log: newLogger("bench-host")}
	r.doc = &Doc{Where: "host", Kernel: uname(), Machine: "native (no VM); cgroup-BPF programs only (the BPF LSM part is measured in the guests)", Reps: *reps, OrderSeed: *seed}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		return err
	}
	tag := fmt.Sprintf("enforcerd-bench-%d", os.Getpid())
	top, err := cgroup.Create(mount, "/"+tag)
	if err != nil {
		return err
	}
	defer func() { _ = top.Remove(5 * time.Second) }()
	cgs := map[string]cgroup.Cgroup{}
	for _, name := range []string{"na", "na/" + PhaseA, "flr", "flr/" + PhaseF, "att", "att/" + PhaseB, "att/" + PhaseC, "att/" + PhaseC2, "att/" + PhaseD} {
		cg, err := cgroup.Create(mount, "/"+tag+"/"+name)
		if err != nil {
			return err
		}
		cgs[filepath.Base(name)] = cg
	}
	r.root, err = os.MkdirTemp("", "enforcerd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(r.root)
	port, stop, err := listen()
	if err != nil {
		return err
	}
	defer stop()
	r.port = port
	if n := loadedPrograms(); n > 0 {
		r.doc.Notes = append(r.doc.Notes, fmt.Sprintf("shared host: %d LSM/cgroup/tracing BPF programs of other origin were loaded during the run (other work on the machine); they are in every phase", n))
	}
	r.doc.Notes = append(r.doc.Notes,
		fmt.Sprintf("host: (a) runs in a sibling subtree of the cgroup the programs attach to (cgroup-BPF runs only below its attach point), at the same cgroup depth (level %d) as (f), (b), (c), (c2), (d); each of %d rounds runs every phase once in an order shuffled per round (seed %d)", cgs[PhaseA].Level, r.reps, *seed),
		"host: (f) runs below a third sibling where allow-only programs (r0 = allow; exit) of the same types sit on the same hooks as every program enforcerd attached here (cgroup-BPF at that sibling; tracing programs, where the host loads them, globally, so they are in every phase): (f)/(a) is the cost of attaching at all, (b)/(f) what enforcerd's program bodies add",
		"host: (c2) is the network part of the typical ceiling (network=false, the listener as its one allowed endpoint; write and shell full): cgroup-BPF has no file or exec hooks")
	ops := NetOps
	if err := r.calibrate(cgs[PhaseA], ops); err != nil {
		return err
	}
	pin := filepath.Join("/sys/fs/bpf", tag)
	if err := r.load(pin, cgs["att"].Path(), true); err != nil {
		return err
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: mount, CgroupAttach: cgs["att"].Path()})
	if err != nil {
		return err
	}
	defer func() { _ = enf.Uninstall() }()
	if err := enf.LayerError(coverage.LayerCgroup); err != nil {
		return fmt.Errorf("cgroup-BPF layer not in force: %w", err)
	}
	if err := enf.Register(cgs[PhaseC], allowAll); err != nil {
		return err
	}
	floor, err := attachFloor(enf, cgs["flr"].Path())
	if err != nil {
		return err
	}
	defer floor.close()
	c2, err := netTypical(r.port)
	if err != nil {
		return err
	}
	phases := []struct {
		name string
		run  func() error
	}{
		{PhaseA, func() error { return r.micro(cgs[PhaseA], PhaseA, ops) }},
		{PhaseF, func() error { return r.micro(cgs[PhaseF], PhaseF, ops) }},
		{PhaseB, func() error { return r.micro(cgs[PhaseB], PhaseB, ops) }},
		{PhaseC, func() error { return r.micro(cgs[PhaseC], PhaseC, ops) }},
		{PhaseC2, func() error { return r.registered(enf, cgs[PhaseC2], PhaseC2, c2, ops) }},
		{PhaseD, func() error { return r.denied(enf, cgs[PhaseD], denyNet, ops) }},
	}
	r.log("phase order seed %d", *seed)
	rng := rand.New(rand.NewPCG(*seed, 0))
	for i := 0; i < r.reps; i++ {
		rng.Shuffle(len(phases), func(x, y int) { phases[x], phases[y] = phases[y], phases[x] })
		names := make([]string, len(phases))
		for j, p := range phases {
			names[j] = "(" + p.name + ")"
		}
		r.log("round %d/%d: %s", i+1, r.reps, strings.Join(names, " "))
		for _, p := range phases {
			if err := p.run(); err != nil {
				return err
			}
		}
	}
	if scaleCfg.ks != nil {
		if err := r.scaleRun(enf, mount, cgs["att"].Group, scaleCfg, *seed); err != nil {
			return err
		}
	}
	prof, err := newProfiler(pin)
	if err != nil {
		r.doc.Notes = append(r.doc.Notes, "no profile: "+err.Error())
	} else {
		if err := r.profile(prof, cgs[PhaseC], PhaseC, ops, nil, nil); err != nil {
			return err
		}
		prof.close()
	}
	r.doc.ElapsedS = time.Since(t0).Seconds()
	if *out == "" {
		return Emit(os.Stdout, r.doc)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := Emit(f, r.doc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// netTypical is the part of (c2)'s ceiling (typical) that cgroup-BPF
// enforces: network=false with the listener at port as its one allowed
// endpoint; write and shell full. AllowPartial as for denyNet (inet sockets
// only without BPF LSM). Errors: the endpoint's syntax.
func netTypical(port int) (entry.Entry, error) {
	ep, err := endpoint.Parse(fmt.Sprintf("tcp:127.0.0.1:%d", port))
	if err != nil {
		return entry.Entry{}, err
	}
	return entry.Entry{
		Ceiling:      policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull},
		AllowConnect: []endpoint.Endpoint{ep},
		AllowPartial: true,
	}, nil
}
