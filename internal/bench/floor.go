package bench

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/enforcerd/enforcerd/bpf"
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

// attachFloor loads a floor program (floorSpec) for every attached hook of
// enf's cgroup-BPF layer and attaches it at the cgroup cgroupPath. Only
// cgroup-BPF programs: the native part cannot load BPF LSM programs.
// Errors: a hook whose program is in no embedded object, a load or attach
// failure, no hook at all; nothing stays attached on error.
func attachFloor(enf *enforcer.Enforcer, cgroupPath string) (*floorSet, error) {
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
	for _, h := range enf.Hooks() {
		if !h.Attached || h.Layer != enforcer.LayerCgroup {
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
		l, err := link.AttachCgroup(link.CgroupOptions{Path: cgroupPath, Attach: ps.AttachType, Program: prog})
		if err != nil {
			f.close()
			return nil, fmt.Errorf("floor: attach %s: %w", h.Name, err)
		}
		f.links = append(f.links, l)
	}
	if len(f.links) == 0 {
		return nil, errors.New("floor: no attached cgroup-BPF hook to mirror")
	}
	return f, nil
}

func (f *floorSet) close() {
	for _, l := range f.links {
		l.Close()
	}
	for _, p := range f.progs {
		p.Close()
	}
}
