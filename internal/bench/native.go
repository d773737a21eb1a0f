package bench

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
)

// Native is the "native" subcommand: the cgroup-BPF path (socket+close,
// connect) on this host's own kernel under (a), (b), (c), (d). The programs
// attach at a private cgroup (not the hierarchy's root) and pin in a private
// directory, so other work on the host is neither slowed nor denied; both are
// removed at the end.
func Native(args []string) error {
	fs := flag.NewFlagSet("native", flag.ContinueOnError)
	reps := fs.Int("reps", 11, "repetitions per figure (medians)")
	target := fs.Duration("target", 150*time.Millisecond, "time per operation per repetition")
	out := fs.String("out", "", "write the result here (default: stdout, chunked)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t0 := time.Now()
	r := &run{reps: *reps, target: *target, exec: "/bin/true", iters: map[Op]int{}, log: newLogger("bench-host")}
	r.doc = &Doc{Where: "host", Kernel: uname(), Machine: "native (no VM); BPF LSM cannot load here, cgroup-BPF only", Reps: *reps}
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
	// (a) is a sibling of the attach point: cgroup-BPF programs run only
	// for processes below the cgroup they are attached to, so (a) can be
	// interleaved with (b)-(d) in every round.
	cgs := map[string]cgroup.Cgroup{}
	for _, name := range []string{PhaseA, "att", "att/" + PhaseB, "att/" + PhaseC, "att/" + PhaseD} {
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
	r.doc.Notes = append(r.doc.Notes, "host: (a) runs in a sibling of the cgroup the programs attach to (cgroup-BPF runs only below its attach point), interleaved with (b), (c), (d) in every round; (b)-(d) sit one level deeper")
	ops := NetOps
	if err := r.calibrate(cgs[PhaseA], ops); err != nil {
		return err
	}
	pin := filepath.Join("/sys/fs/bpf", tag)
	if err := r.load(pin, cgs["att"].Path()); err != nil {
		return err
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: mount, CgroupAttach: cgs["att"].Path()})
	if err != nil {
		return err
	}
	defer func() { _ = enf.Uninstall() }()
	if err := enf.LayerError(enforcer.LayerCgroup); err != nil {
		return fmt.Errorf("cgroup-BPF layer not in force: %w", err)
	}
	if err := enf.Register(cgs[PhaseC], allowAll); err != nil {
		return err
	}
	for i := 0; i < r.reps; i++ {
		r.log("round %d/%d: (a) (b) (c) (d)", i+1, r.reps)
		if err := r.micro(cgs[PhaseA], PhaseA, ops); err != nil {
			return err
		}
		if err := r.micro(cgs[PhaseB], PhaseB, ops); err != nil {
			return err
		}
		if err := r.micro(cgs[PhaseC], PhaseC, ops); err != nil {
			return err
		}
		if err := r.denied(enf, cgs[PhaseD], denyNet, ops); err != nil {
			return err
		}
	}
	prof, err := newProfiler(pin)
	if err != nil {
		r.doc.Notes = append(r.doc.Notes, "no profile: "+err.Error())
	} else {
		if err := r.profile(prof, cgs[PhaseC], PhaseC, ops); err != nil {
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
