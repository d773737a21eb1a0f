// Package bpf holds enforcerd's eBPF programs (C, CO-RE) and their generated
// Go bindings. One object per concern, all sharing the maps of maps.h,
// exec.h and ipc.h:
//
//   - network.bpf.c:   network=false at LSM socket hooks (endpoints.h: allowed endpoints)
//   - file.bpf.c:      write=false at LSM file and inode hooks, and the device and terminal allow list under every ceiling (devices.h)
//   - exec.bpf.c:      shell=none|read_only at LSM exec hooks (exec.h: shared state)
//   - tamper.bpf.c:    escape and tamper protection for every enforced process
//   - ipc.bpf.c:       SysV IPC objects, kernel keys, POSIX queues, FIFOs and ptys: their creators
//   - sock.bpf.c:      network=false at cgroup-BPF hooks (works without BPF LSM)
//   - lifecycle.bpf.c: activation of pending ceilings at the first exec
//   - tally.h:         counting denials; first records only (event.h)
//   - shared.bpf.c:    no programs: the shared maps and the types Go mirrors
//     (SharedEvent, SharedCeiling, SharedExecKey, SharedExecAllowBit, SharedExecAllowMarker, SharedEndpointList, SharedRootSet, SharedDeviceList, and the enums SharedHookId,
//     SharedRuleId, SharedRuleLayout, SharedObjectKind, SharedDecision, SharedDenyBit, SharedCeilingFlag,
//     SharedStatIndex, SharedLimits, SharedFsMagic, SharedEndpointKind,
//     SharedEndpointLimits, SharedTallyKey, SharedTallyOverflowKey,
//     SharedTallyLimits)
//
// The headers are split by subject; enforcerd.h includes them all and lists
// them. Each program's ELF section names its hook ("lsm/file_open",
// "cgroup/connect4", "tp_btf/sched_process_exec", "fentry/..."): the loader
// takes the attach point from there.
//
// The generated *_bpfel.go and *_bpfel.o files are committed so that a plain
// `go build` needs no clang; `make generate` (go generate ./bpf) rebuilds them
// against the committed headers/vmlinux.h (BTF of Linux 6.18; CO-RE makes the
// objects load on 6.1 and later). They are built for the BPF ISA v3
// (-mcpu=v3: 32-bit jumps and ALU, every kernel since 5.1), which saves
// about 3 instructions per program run on every hook
// (docs/bench-results/diagnosis/README.md).
//
// Loading, attaching and pinning live in package enforcer, not here.
//
// Layering (docs/design.md): layer 2; it may import nothing else of the
// module, and of other modules any (cilium/ebpf included).
package bpf

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel Network network.bpf.c -- -O2 -g -Wall -mcpu=v3 -D__TARGET_ARCH_x86 -I./headers -I.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel File file.bpf.c -- -O2 -g -Wall -mcpu=v3 -D__TARGET_ARCH_x86 -I./headers -I.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel Exec exec.bpf.c -- -O2 -g -Wall -mcpu=v3 -D__TARGET_ARCH_x86 -I./headers -I.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel Tamper tamper.bpf.c -- -O2 -g -Wall -mcpu=v3 -D__TARGET_ARCH_x86 -I./headers -I.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel Sock sock.bpf.c -- -O2 -g -Wall -mcpu=v3 -D__TARGET_ARCH_x86 -I./headers -I.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel Lifecycle lifecycle.bpf.c -- -O2 -g -Wall -mcpu=v3 -D__TARGET_ARCH_x86 -I./headers -I.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel Ipc ipc.bpf.c -- -O2 -g -Wall -mcpu=v3 -D__TARGET_ARCH_x86 -I./headers -I.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel -type event -type ceiling -type exec_key -type exec_allow_bit -type exec_allow_marker -type endpoint_list -type root_set -type ipc_dir -type device_list -type device_kind -type device_limits -type device_flag -type endpoint_kind -type endpoint_limits -type hook_id -type rule_id -type rule_layout -type object_kind -type decision -type deny_bit -type ceiling_flag -type stat_index -type limits -type fs_magic -type tally_key -type tally_overflow_key -type tally_limits Shared shared.bpf.c -- -O2 -g -Wall -mcpu=v3 -D__TARGET_ARCH_x86 -I./headers -I.
