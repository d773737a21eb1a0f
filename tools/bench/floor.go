package bench

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
)

// PhaseF is the floor: in place of enforcerd's programs, programs that only
// allow (a body of "r0 = allow; exit") on the same hooks, of the same
// program and attach types, taken from the same ELF sections; (f)/(a) is
// what attaching anything at those hooks costs, (b)/(f) what enforcerd's
// program bodies add to it.
const PhaseF = "f"

// objectSpecs are every embedded object's collection spec (bpf2go loaders).
var objectSpecs = []func() (*ebpf.CollectionSpec, error){
	bpf.LoadExec, bpf.LoadFile, bpf.LoadIpc, bpf.LoadLifecycle,
	bpf.LoadNetwork, bpf.LoadShared, bpf.LoadSock, bpf.LoadTamper,
}

// floorSpec is spec with its body replaced by "r0 = allow; exit": for
// cgroup-BPF programs allow is 1, for every other type (LSM, tracing) 0.
// Type, attach type, attach target, section name and license stay.
func floorSpec(spec *ebpf.ProgramSpec) *ebpf.ProgramSpec {
	ret := int32(0)
	switch spec.Type {
	case ebpf.CGroupSock, ebpf.CGroupSockAddr, ebpf.CGroupSockopt, ebpf.CGroupSKB, ebpf.CGroupSysctl, ebpf.CGroupDevice:
		ret = 1
	}
	fs := spec.Copy()
	fs.Instructions = asm.Instructions{
		asm.Mov.Imm(asm.R0, ret).WithSymbol(spec.Name),
		asm.Return(),
	}
	return fs
}

// floorSet is the floor programs, attached.
type floorSet struct {
	progs []*ebpf.Program
	links []link.Link
}

// attachFloor mirrors enf's attached hooks with floor programs
// (attachFloorHooks), the cgroup-BPF ones at the cgroup cgroupPath.
func attachFloor(enf *enforcer.Enforcer, cgroupPath string) (*floorSet, error) {
	return attachFloorHooks(enf.Hooks(), cgroupPath)
}

// attachFloorHooks loads a floor program (floorSpec) for every attached hook
// in hooks (enforcer.Enforcer.Hooks: every LSM, tracing and cgroup-BPF
// program enforcerd attached) and attaches it the way enforcerd attaches
// its own: an LSM hook, a tracing target (fentry, tp_btf), or for
// cgroup-BPF the cgroup cgroupPath with the section's attach type. Hooks
// that are not attached (optional hooks missing from the kernel, layers the
// host cannot load) get no twin. Errors: a hook whose program is in no
// embedded object, a program type with no attach method, a load or attach
// failure, no attached hook at all; nothing stays loaded on error.
func attachFloorHooks(hooks []coverage.HookStatus, cgroupPath string) (*floorSet, error) {
	specs := map[string]*ebpf.ProgramSpec{}
	for _, load := range objectSpecs {
		cs, err := load()
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		for name, ps := range cs.Programs {
			specs[name] = ps
		}
	}
	f := &floorSet{}
	for _, h := range hooks {
		if !h.Attached {
			continue
		}
		ps, ok := specs[h.Program]
		if !ok {
			f.close()
			return nil, fmt.Errorf("floor: program %s (%s) is in no embedded object", h.Program, h.Name)
		}
		prog, err := ebpf.NewProgram(floorSpec(ps))
		if err != nil {
			f.close()
			return nil, fmt.Errorf("floor: load %s: %w", h.Name, err)
		}
		f.progs = append(f.progs, prog)
		var l link.Link
		switch ps.Type {
		case ebpf.LSM:
			l, err = link.AttachLSM(link.LSMOptions{Program: prog})
		case ebpf.Tracing:
			l, err = link.AttachTracing(link.TracingOptions{Program: prog})
		case ebpf.CGroupSock, ebpf.CGroupSockAddr:
			l, err = link.AttachCgroup(link.CgroupOptions{Path: cgroupPath, Attach: ps.AttachType, Program: prog})
		default:
			err = fmt.Errorf("program type %s: no attach method", ps.Type)
		}
		if err != nil {
			f.close()
			return nil, fmt.Errorf("floor: attach %s: %w", h.Name, err)
		}
		f.links = append(f.links, l)
	}
	if len(f.links) == 0 {
		return nil, errors.New("floor: no attached hook to mirror")
	}
	return f, nil
}

// close detaches and closes every floor program: with no other holder they
// are unloaded.
func (f *floorSet) close() {
	for _, l := range f.links {
		l.Close()
	}
	for _, p := range f.progs {
		p.Close()
	}
	f.links, f.progs = nil, nil
}
