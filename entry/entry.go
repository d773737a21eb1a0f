// Package entry is the Go form of one registration: the ceiling and the
// lists a cgroup is registered with (Entry), the identities they name
// (FileID, Device, Terminal), their limits (MaxEndpoints, MaxWriteRoots,
// MaxAllowDevices, MaxTerminals) and the checks an entry must pass before
// any kernel state changes (Check). enforcer writes an Entry into the
// kernel's maps and reads it back; the daemon keeps it in its state file.
//
// It may import the standard library, golang.org/x/sys and the
// vocabulary packages policy, endpoint and coverage; never cilium/ebpf,
// bpf or enforcer. The limits are the BPF maps' (bpf/maps.h,
// bpf/endpoints.h): enforcer's tests check them against bpf2go's
// constants.
package entry

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/policy"
)

// Entry is what is registered for one cgroup.
type Entry struct {
	Ceiling policy.KernelCeiling
	// AuditOnly records would-be denials and allows the operation.
	AuditOnly bool
	// Pending: registered but not yet in force; the first exec in the
	// cgroup's subtree activates it (the container's entrypoint), and under
	// shell=none that file is added to the allow list.
	Pending bool
	// ExecAllow: with shell=none, the files processes in the cgroup may
	// execute besides the entrypoint, by identity (device + inode).
	ExecAllow []FileID
	// ExecInterp: with shell=none, the program interpreters (ELF
	// PT_INTERP) vetted as dynamic loaders for the entrypoint and the
	// ExecAllow files (progcheck). The kernel opens an ELF's
	// interpreter by path at every exec without checking it as a
	// program, so every other open for exec after the program's check is
	// refused (bpf/exec.h exec_open); an interpreter is never allowed as
	// a program by this list. Like ExecAllow, Lookup does not return it.
	ExecInterp []FileID
	// Entrypoints: with a pending shell=none entry, the files the first
	// exec (the one that takes the entrypoint) may name: the vetted
	// entrypoint, every file a lookup of it could pick. The first exec
	// of any other file is refused, so a file swapped in at the
	// entrypoint's path after the vetting never runs (bpf/exec.h
	// pending_verdict). Empty: the first exec's file is taken, whatever
	// it is. Kept in the map until Unregister; Lookup does not return it.
	Entrypoints []FileID
	// AllowPartial: the caller accepts that this host enforces the ceiling
	// only in part (coverage.Coverage.Partial). It is kept with the entry (a flag
	// bit the programs ignore), so Lookup returns it and re-registering a
	// looked-up entry is accepted as it was.
	AllowPartial bool
	// AllowConnect: under network=false, the endpoints processes in the
	// cgroup may still connect and send to (and receive from over that
	// connection), at most MaxEndpoints; unix endpoints resolved
	// (endpoint.Resolve). Only the meet of every registered ancestor's
	// list is reachable (docs/design.md "Allowed endpoints"). Lookup
	// returns unix endpoints without their path.
	AllowConnect []endpoint.Endpoint
	// WriteRoots: with write=false, the directories (by identity,
	// WriteRootOf) beneath which writes stay allowed; at most
	// MaxWriteRoots (bpf/roots.h, docs/design.md "Writable roots").
	WriteRoots []FileID
	// ShmDir: the sandbox's POSIX shared memory directory (/dev/shm as
	// its processes see it: ShmDirOf), the root of a tmpfs; zero: none
	// known. Files the sandbox creates there (sem_open(3), shm_open(3))
	// stay usable under every ceiling, write=false included; files made
	// outside are not usable inside (bpf/shm.h). Zero: no such rule, its
	// files are written like any other (fail closed).
	ShmDir FileID
	// AllowDevices: device nodes processes in the cgroup may use besides
	// the null-like devices and their own terminals, at most
	// MaxAllowDevices; only a device every registered ancestor lists is
	// usable (the meet).
	AllowDevices []Device
	// Terminals: the sandbox's own terminals, declared at registration
	// (the entrypoint's stdio and controlling terminal), at most
	// MaxTerminals. Every other terminal is a host device.
	Terminals []Terminal
	// DenyConsoleEgress: under network=false, an own terminal that
	// leaves the machine (the system console, a serial line, a
	// hypervisor console: on a cloud VM the provider's serial log) is
	// refused like a network. Off by default: the operator opts in.
	DenyConsoleEgress bool
	// Process: the command restricts itself before its exec (`enforcerd
	// run` without BPF LSM, sandbox/fallback); nil: no process layer.
	// Only the coverage rule (coverage.Of) reads it: the kernel programs
	// never see it, and enforcer's Lookup does not return it.
	Process *coverage.ProcessLayer
	// Spec: what the container's runtime spec enforces by itself (the
	// OCI hook, oci/speccheck); nil: not known. The coverage rule reads
	// it, like Process; enforcer's Lookup returns it while its Enforcer lives (it is kept in
	// memory, not in the maps: after a restart the daemon registers
	// again with the Spec its state kept).
	Spec *coverage.SpecLayer
}

// Subject is what the coverage rule (coverage.Of) judges of the entry.
func (en Entry) Subject() coverage.Subject {
	return coverage.Subject{Ceiling: en.Ceiling, AllowConnect: en.AllowConnect, Process: en.Process, Spec: en.Spec}
}

// Check refuses an entry whose lists cannot be registered as given, in
// this order: CheckEndpoints (ErrBadEndpoints), CheckDevices
// (ErrBadDevices), CheckWriteRoots (ErrBadWriteRoot).
func Check(en Entry) error {
	if err := CheckEndpoints(en); err != nil {
		return err
	}
	if err := CheckDevices(en); err != nil {
		return err
	}
	return CheckWriteRoots(en)
}

// FileID identifies a file the way the kernel does: the device of its
// filesystem (kernel dev_t encoding, major<<20|minor) and its inode number.
type FileID struct {
	Dev uint32
	Ino uint64
}

// FileIDOf returns the identity of the file at path (symlinks followed:
// the file that would be executed). Errors: the path cannot be stat'ed.
func FileIDOf(path string) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FileID{}, fmt.Errorf("file identity of %s: %w", path, err)
	}
	return FileIDOfStat(&st), nil
}

// FileIDOfStat is the identity of the file st describes: its device in
// the kernel's encoding (major<<20 | minor, as BPF programs read
// inode->i_sb->s_dev) and its inode number.
func FileIDOfStat(st *unix.Stat_t) FileID {
	return FileID{Dev: unix.Major(st.Dev)<<20 | unix.Minor(st.Dev), Ino: st.Ino}
}
