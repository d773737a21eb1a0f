package enforcer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/coverage"
)

// object is one eBPF object of package bpf. Its programs, and what each
// attaches to, come from the object's ELF (section names such as
// "lsm/file_open" or "cgroup/connect4"); the table below adds only what the
// ELF cannot say: which hooks a kernel may lack, and which programs are
// variants of one hook for different kernel signatures.
type object struct {
	layer coverage.Layer
	stem  string // bpf2go's name of the object, lower case (bpf.ProgramSections)
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
	{layer: coverage.LayerLSM, stem: "network", load: bpf.LoadNetwork},
	{layer: coverage.LayerLSM, stem: "file", load: bpf.LoadFile,
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
	{layer: coverage.LayerLSM, stem: "exec", load: bpf.LoadExec},
	{layer: coverage.LayerLSM, stem: "tamper", load: bpf.LoadTamper,
		optional: set(
			// Absent from kernels built without io_uring.
			bpf.TamperProgUringCmd,
			// A tracing (fentry) program: names a sandbox asked the
			// crypto API for, so kernel threads cannot load modules
			// for them; attached where the kernel allows it.
			bpf.TamperProgCryptoAlgModLookup),
		// security_bpf gained a bool kernel argument in 6.9.
		params: map[string]int{bpf.TamperProgBpf: 3, bpf.TamperProgBpfV4: 4}},
	{layer: coverage.LayerLSM, stem: "ipc", load: bpf.LoadIpc,
		// Linux 6.1 has it; 6.12 has no bpf_lsm_key_free: there a
		// record is replaced at the next key_alloc of the same address.
		optional: set(bpf.IpcProgKeyFree)},
	{layer: coverage.LayerCgroup, stem: "sock", load: bpf.LoadSock},
	{layer: coverage.LayerLifecycle, stem: "lifecycle", load: bpf.LoadLifecycle},
}

// program is one program of an object, as this kernel would attach it.
type program struct {
	name     string // ELF program name (bpf2go's *Prog* constants)
	section  string // its ELF section: "lsm/file_open", "cgroup/connect4", ...
	hook     string // HookStatus.Name
	optional bool
	// The kernel hook, function or tracepoint it attaches to ("file_open",
	// "crypto_alg_mod_lookup", "sched_process_exec"), from the section.
	target string
}

// programs lists obj's programs in name order, without variants meant for
// another kernel signature (without kernel BTF: no variant), and every
// program name the object has, variants included. It reads the section
// table only: the object is parsed in full only when something must be
// loaded. Errors: the embedded object cannot be read, or the table names a
// program the object does not have (both build errors).
func (obj object) programs(kernel *btf.Spec) (progs []program, all []string, err error) {
	secs, err := bpf.ProgramSections(obj.stem)
	if err != nil {
		return nil, nil, fmt.Errorf("%s object: %w", obj.layer, err)
	}
	for name := range obj.optional {
		if secs[name] == "" {
			return nil, nil, fmt.Errorf("%s object %s: no program %s", obj.layer, obj.stem, name)
		}
	}
	for name := range obj.params {
		if secs[name] == "" {
			return nil, nil, fmt.Errorf("%s object %s: no program %s", obj.layer, obj.stem, name)
		}
	}
	for name, sec := range secs {
		all = append(all, name)
		hook, target := hookOf(sec)
		if n, ok := obj.params[name]; ok && lsmParams(kernel, target) != n {
			continue // another variant serves this kernel
		}
		progs = append(progs, program{name: name, section: sec, hook: hook, target: target, optional: obj.optional[name]})
	}
	sort.Strings(all)
	sort.Slice(progs, func(i, j int) bool { return progs[i].name < progs[j].name })
	return progs, all, nil
}

// hookOf reads a program's ELF section ("kind/target"): HookStatus.Name is
// the LSM hook or tracepoint ("file_open", "sched_process_exec"), else the
// section itself ("cgroup/connect4", "fentry/crypto_alg_mod_lookup");
// target is what follows the kind.
func hookOf(section string) (hook, target string) {
	kind, target, _ := strings.Cut(section, "/")
	switch kind {
	case "lsm", "tp_btf":
		return target, target
	}
	return section, target
}

// isLSM reports whether p is an LSM program (section "lsm/<hook>").
func (p program) isLSM() bool { return strings.HasPrefix(p.section, "lsm/") }

// AttachPoint is one program of enforcerd's eBPF objects and where it
// attaches.
type AttachPoint struct {
	Layer   coverage.Layer
	Object  string // bpf2go's name of the object, lower case ("file")
	Program string // ELF program name ("file_open")
	Section string // ELF section ("lsm/file_open", "cgroup/connect4")
	// Hook is the LSM hook or tracepoint ("file_open",
	// "sched_process_exec"), else the section ("cgroup/connect4",
	// "fexit/vfs_rename").
	Hook string
	// PinName names the program's link pin (LinkPinPath) and its rows in
	// a BPF profile: the layer's prefix and the program name
	// ("lsm_file_open", "cgroup_connect4").
	PinName string
	// Optional: the hook is missing on some kernels, and the layer is in
	// force without it there.
	Optional bool
}

// AttachPoints lists every program of every object enforcerd loads, the
// variants for other kernel signatures included, by object and program
// name; an error only when an embedded object cannot be read (a build
// error).
func AttachPoints() ([]AttachPoint, error) {
	var out []AttachPoint
	for _, obj := range objects {
		secs, err := bpf.ProgramSections(obj.stem)
		if err != nil {
			return nil, fmt.Errorf("%s object: %w", obj.layer, err)
		}
		for name, sec := range secs {
			hook, _ := hookOf(sec)
			out = append(out, AttachPoint{Layer: obj.layer, Object: obj.stem, Program: name, Section: sec, Hook: hook,
				PinName: layerPinPrefix[obj.layer] + name, Optional: obj.optional[name]})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Program < out[j].Program
	})
	return out, nil
}
