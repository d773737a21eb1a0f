package coverage

import (
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/policy"
)

// Layer names a family of kernel programs.
type Layer string

// The layers.
const (
	LayerLSM       Layer = "bpf-lsm"    // LSM hooks: network and write
	LayerCgroup    Layer = "cgroup-bpf" // cgroup socket hooks: network (inet only)
	LayerLifecycle Layer = "lifecycle"  // tp_btf/sched_process_exec: activation at exec
)

// Layers are the layers of kernel programs the coverage rule weighs, each
// by the error that keeps it from enforcing on this host (nil: attached).
// enforcer.Enforcer.Layers reports them.
type Layers struct {
	LSM    error // LayerLSM
	Cgroup error // LayerCgroup
}

// HookStatus reports one program.
type HookStatus struct {
	// Program is the program's name in its object (bpf2go's *Prog*
	// constants), e.g. "inode_setattr_pre63".
	Program string
	// Name is what the program attaches to, from its ELF section: the LSM
	// hook or tracepoint ("file_open", "sched_process_exec"), or for
	// cgroup-BPF and fentry programs the section itself
	// ("cgroup/connect4", "fentry/crypto_alg_mod_lookup").
	Name     string
	Layer    Layer
	Attached bool
	Adopted  bool   // re-adopted from a pin of this build
	Optional bool   // the hook does not exist on every kernel
	Err      string // why it is not attached (ErrHookNotInKernel: an optional hook this kernel lacks)
}

// ErrHookNotInKernel is HookStatus.Err of an optional program whose hook
// this kernel does not have: it was not loaded, and nothing is missing
// for it. Any other Err of an optional program is a failure like a
// required one's.
const ErrHookNotInKernel = "hook not in this kernel"

// Subject is what the rule (Of) judges of a registration: its ceiling,
// its allowed endpoints and the layers outside the kernel programs that
// enforce it. entry.Entry.Subject gives it for an entry.
type Subject struct {
	Ceiling policy.KernelCeiling
	// AllowConnect: the endpoints still reachable under network=false.
	AllowConnect []endpoint.Endpoint
	// Process: the command restricts itself before its exec (`enforcerd
	// run` without BPF LSM, sandbox/fallback); nil: no process layer.
	Process *ProcessLayer
	// Spec: what the container's runtime spec enforces by itself (the
	// OCI hook, oci/speccheck); nil: not known.
	Spec *SpecLayer
}
