package fallback

import (
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/policy"
)

// HookPrefix starts the hook of a denial of the filter: "seccomp:" and
// the system call's name ("seccomp:fchmodat"), or "seccomp:arch-<hex>" for
// a call of another ABI (docs/audit.md).
const HookPrefix = "seccomp:"

// DeniedAction is the action of every denial of the filter, as the
// kernel's AUDIT_SECCOMP record prints it in code=: SECCOMP_RET_ERRNO
// (0x50000; the record has the action only, not its errno, EPERM).
const DeniedAction = unix.SECCOMP_RET_ERRNO

// SeccompFor is the filter the helper loads for ceiling c (the same
// choice as Plan's, on a host with seccomp): write=false denies the file
// metadata calls and io_uring, shell=none memfd_create, network=false
// sockets and io_uring. allowInet is Seccomp.AllowInet (an endpoint is
// TCP or UDP).
func SeccompFor(c policy.KernelCeiling, allowInet bool) Seccomp {
	var s Seccomp
	if !c.Write {
		s.FileMeta, s.IOURing = true, true
	}
	if c.Shell == policy.ShellNone {
		s.Memfd = true
	}
	if !c.Network {
		s.Sockets, s.IOURing, s.AllowInet = true, true, allowInet
	}
	return s
}

// Call is a system call the filter denies, named in the audit record's
// vocabulary (docs/audit.md): Syscall the kernel's name (or "" for a
// call of another ABI), Operation, Rule and Field as a BPF LSM denial of
// the same kind.
type Call struct {
	Syscall   string
	Operation string
	Rule      denial.Rule
	Field     string
}

// Hook is the call's audit hook: HookPrefix and the system call's name,
// or for a call of another ABI "seccomp:arch-" and the audit arch in hex.
func (c Call) Hook(auditArch uint32) string {
	if c.Syscall == "" {
		return HookPrefix + "arch-" + hex32(auditArch)
	}
	return HookPrefix + c.Syscall
}

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b)
}

// callKind is the part of the filter that denies a system call.
type callKind int

const (
	kindFileMeta callKind = iota
	kindIOURing
	kindMemfd
	kindSocket
)

// deniedCall is what the filter denies a named system call for, and
// the operation (the BPF LSM hook's operation for the same effect).
type deniedCall struct {
	kind callKind
	op   string
}

// deniedCalls are the names the filter denies (filter.go) but ioctl.
var deniedCalls = func() map[string]deniedCall {
	m := map[string]deniedCall{
		"memfd_create": {kindMemfd, "memfd-create"},
		"socket":       {kindSocket, "socket"},
		"socketpair":   {kindSocket, "socket"},
	}
	for _, n := range fileMetaCalls {
		op := "setattr"
		switch n {
		case "setxattr", "lsetxattr", "fsetxattr", "setxattrat":
			op = "setxattr"
		case "removexattr", "lremovexattr", "fremovexattr", "removexattrat":
			op = "removexattr"
		}
		m[n] = deniedCall{kindFileMeta, op}
	}
	for _, n := range ioURingCalls {
		m[n] = deniedCall{kindIOURing, "io-uring"}
	}
	return m
}()

// Classify names the denial of system call nr of audit arch auditArch
// (as the kernel's AUDIT_SECCOMP record has them: arch=, syscall=) by
// the filter sc, for this host's architecture: ok is false when that
// filter does not deny the call (another filter did). Always denied: a
// call of another ABI (another arch, or x32's numbers: Syscall "", rule
// tamper) and ioctl (TIOCSTI: the only ioctl the filter denies, rule
// tty-inject). Errors: none; an architecture go-seccomp-bpf does not know
// classifies nothing.
func Classify(sc Seccomp, auditArch uint32, nr uint64) (Call, bool) {
	info, err := arch.GetInfo("")
	if err != nil {
		return Call{}, false
	}
	if auditArch != uint32(info.ID) || (info.ID == arch.X86_64.ID && nr >= uint64(arch.X32.SeccompMask)) {
		return Call{Operation: "syscall-other-abi", Rule: denial.RuleTamper, Field: "tamper"}, true
	}
	name, known := info.SyscallNumbers[int(nr)]
	if !known {
		return Call{}, false
	}
	if name == "ioctl" {
		return Call{Syscall: name, Operation: "tty-inject", Rule: denial.RuleTTYInject, Field: "tamper"}, true
	}
	d, listed := deniedCalls[name]
	if !listed {
		return Call{}, false
	}
	c := Call{Syscall: name, Operation: d.op}
	switch {
	case d.kind == kindFileMeta && sc.FileMeta:
		c.Rule, c.Field = denial.RuleWrite, "write"
	case d.kind == kindMemfd && sc.Memfd:
		c.Rule, c.Field = denial.RuleShellNone, "shell"
	case d.kind == kindSocket && sc.Sockets:
		c.Rule, c.Field = denial.RuleNetwork, "network"
	case d.kind == kindIOURing && sc.IOURing && sc.Sockets:
		c.Rule, c.Field = denial.RuleNetwork, "network"
	case d.kind == kindIOURing && sc.IOURing:
		c.Rule, c.Field = denial.RuleWrite, "write"
	default:
		return Call{}, false
	}
	return c, true
}

// seccompFlags are the flags the helper loads the filter with:
// SECCOMP_FILTER_FLAG_LOG, so that the kernel writes an AUDIT_SECCOMP
// record for each denial (the ERRNO action is logged only for a filter
// loaded with it, and only while "errno" is in
// /proc/sys/kernel/seccomp/actions_logged), which the daemon reads back.
const seccompFlags = unix.SECCOMP_FILTER_FLAG_LOG
