package fallback

import (
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg1 = 16 + 8 // args[1], low 32 bits (little-endian hosts)
)

var errEPERM = uint32(seccomp.ActionErrno) | uint32(unix.EPERM)

// fileMetaCalls change a file's mode, owner, extended attributes or
// timestamps: Landlock handles none of them.
var fileMetaCalls = []string{
	"chmod", "fchmod", "fchmodat", "fchmodat2",
	"chown", "fchown", "lchown", "fchownat",
	"setxattr", "lsetxattr", "fsetxattr", "setxattrat",
	"removexattr", "lremovexattr", "fremovexattr", "removexattrat",
	"utime", "utimes", "futimesat", "utimensat",
}

var ioURingCalls = []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}

// filter assembles the seccomp program of sc for the running
// architecture: a prefix of our own (every system call of another
// architecture, e.g. i386 through int 0x80, and ioctl TIOCSTI compared on
// the low 32 bits the kernel uses, are denied), then go-seccomp-bpf's
// policy (which also denies the x32 ABI) with default allow.
func filter(sc Seccomp) ([]bpf.RawInstruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	ioctlNr, ok := info.SyscallNames["ioctl"]
	if !ok {
		return nil, fmt.Errorf("seccomp: no ioctl on %s", info.Name)
	}
	prefix := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: errEPERM},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(ioctlNr), SkipFalse: 3},
		bpf.LoadAbsolute{Off: offArg1, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipFalse: 1},
		bpf.RetConstant{Val: errEPERM},
	}
	var groups []seccomp.SyscallGroup
	deny := func(names ...string) {
		groups = append(groups, seccomp.SyscallGroup{Names: names, Action: seccomp.ActionErrno})
	}
	if sc.FileMeta {
		deny(fileMetaCalls...)
	}
	if sc.IOURing {
		deny(ioURingCalls...)
	}
	if sc.Memfd {
		deny("memfd_create")
	}
	if sc.Sockets {
		socket := seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}
		if sc.AllowInet {
			socket = append(socket,
				seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET},
				seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET6})
		}
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
			{Name: "socket", Conditions: socket},
			{Name: "socketpair", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
		}})
	}
	if len(groups) == 0 {
		// Policy wants a group: one that matches nothing real.
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionAllow, Names: []string{"getpid"}})
	}
	p := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
	insts, err := p.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	raw, err := bpf.Assemble(append(prefix, insts...))
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	return raw, nil
}
