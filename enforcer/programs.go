package enforcer

import (
	"fmt"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/enforcerd/enforcerd/bpf"
)

// object is one eBPF object of package bpf. Its programs, and what each
// attaches to, come from the object's ELF (section names such as
// "lsm/file_open" or "cgroup/connect4"); the table below adds only what the
// ELF cannot say: which hooks a kernel may lack, and which programs are
// variants of one hook for different kernel signatures.
type object struct {
	layer Layer
	load  func() (*ebpf.CollectionSpec, error)
	// optional names programs whose hook does not exist on every kernel:
	// where it is missing, the layer is in force without them.
	optional map[string]bool
	// params selects variants: a program listed here attaches only where
	// the kernel's bpf_lsm_<hook> takes this many parameters (hooks whose
	// signature changed between kernels; exactly one variant matches).
	params map[string]int
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

var objects = []object{
	{layer: LayerLSM, load: bpf.LoadNetwork},
	{layer: LayerLSM, load: bpf.LoadFile,
		optional: set(
			// Added in Linux 6.2; 6.1 reaches the same operations
			// through path_truncate and inode_setxattr.
			bpf.FileProgFileTruncate, bpf.FileProgInodeSetAcl, bpf.FileProgInodeRemoveAcl,
			// Linux 6.7+: 32-bit ioctls have their own hook; older
			// kernels pass them (with their compat numbers) through
			// file_ioctl.
			bpf.FileProgFileIoctlCompat),
		// inode_setattr gained a struct mnt_idmap * first argument in 6.3.
		params: map[string]int{bpf.FileProgInodeSetattr: 3, bpf.FileProgInodeSetattrPre63: 2}},
	{layer: LayerLSM, load: bpf.LoadExec},
	{layer: LayerLSM, load: bpf.LoadTamper,
		optional: set(
			// Absent from kernels built without io_uring.
			bpf.TamperProgUringCmd,
			// A tracing (fentry) program: names a sandbox asked the
			// crypto API for, so kernel threads cannot load modules
			// for them; attached where the kernel allows it.
			bpf.TamperProgCryptoAlgModLookup),
		// security_bpf gained a bool kernel argument in 6.9.
		params: map[string]int{bpf.TamperProgBpf: 3, bpf.TamperProgBpfV4: 4}},
	{layer: LayerLSM, load: bpf.LoadIpc,
		// Linux 6.1 has it; 6.12 has no bpf_lsm_key_free: there a
		// record is replaced at the next key_alloc of the same address.
		optional: set(bpf.IpcProgKeyFree)},
	{layer: LayerCgroup, load: bpf.LoadSock},
	{layer: LayerLifecycle, load: bpf.LoadLifecycle},
}

// program is one program of an object, as this kernel would attach it.
type program struct {
	name     string // ELF program name (bpf2go's *Prog* constants)
	hook     string // HookStatus.Name
	optional bool
	// From the ELF section: the program type, its attach type, and the
	// kernel hook, function or tracepoint it attaches to ("" for
	// cgroup-BPF, which attaches to the cgroup2 root).
	typ    ebpf.ProgramType
	attach ebpf.AttachType
	target string
}

// programs loads obj's spec and lists its programs in name order, without variants meant for
// another kernel signature (without kernel BTF: no variant). Errors: the
// embedded object cannot be parsed, or the table names a program the
// object does not have (both build errors).
func (obj object) programs(kernel *btf.Spec) (*ebpf.CollectionSpec, []program, error) {
	spec, err := obj.load()
	if err != nil {
		return nil, nil, fmt.Errorf("%s object: %w", obj.layer, err)
	}
	for name := range obj.optional {
		if spec.Programs[name] == nil {
			return nil, nil, fmt.Errorf("%s object: no program %s", obj.layer, name)
		}
	}
	for name := range obj.params {
		if spec.Programs[name] == nil {
			return nil, nil, fmt.Errorf("%s object: no program %s", obj.layer, name)
		}
	}
	var out []program
	for name, ps := range spec.Programs {
		if n, ok := obj.params[name]; ok && lsmParams(kernel, ps.AttachTo) != n {
			continue // another variant serves this kernel
		}
		out = append(out, program{name: name, hook: hookName(ps), optional: obj.optional[name],
			typ: ps.Type, attach: ps.AttachType, target: ps.AttachTo})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return spec, out, nil
}

// hookName is HookStatus.Name for a program: the LSM hook or tracepoint
// ("file_open", "sched_process_exec"), else the ELF section
// ("cgroup/connect4", "fentry/crypto_alg_mod_lookup").
func hookName(ps *ebpf.ProgramSpec) string {
	switch {
	case ps.Type == ebpf.LSM, ps.Type == ebpf.Tracing && ps.AttachType == ebpf.AttachTraceRawTp:
		return ps.AttachTo
	default:
		return ps.SectionName
	}
}
