package fallback

import (
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/policy"
)

// TestSeccompForIsPlans: SeccompFor chooses the filter Plan chooses, for
// every ceiling, on a host with Landlock and seccomp (the daemon names a
// record's rule by SeccompFor, the helper loads Plan's).
func TestSeccompForIsPlans(t *testing.T) {
	h := coverage.HostMechanisms{LandlockABI: 3, SeccompActions: []string{"errno", "allow", "log"}}
	if !h.Seccomp() {
		t.Fatalf("test host has no seccomp: %+v", h)
	}
	for _, n := range []bool{true, false} {
		for _, w := range []bool{true, false} {
			for _, s := range []policy.Shell{policy.ShellFull, policy.ShellReadOnly, policy.ShellNone} {
				c := policy.KernelCeiling{Network: n, Write: w, Shell: s}
				sp, err := Plan(Config{Ceiling: c, Host: h, Exec: []string{"/proc/self/exe"}})
				if err != nil {
					t.Fatalf("%+v: %v", c, err)
				}
				if got := SeccompFor(c, false); got != sp.Seccomp {
					t.Errorf("%+v: SeccompFor %+v, Plan %+v", c, got, sp.Seccomp)
				}
			}
		}
	}
}

// TestClassify: each call the filter denies is named with its rule and
// field; a call the filter of that ceiling does not deny (another filter
// denied it) is not ours.
func TestClassify(t *testing.T) {
	info, err := arch.GetInfo("")
	if err != nil {
		t.Skip(err)
	}
	nr := func(name string) uint64 {
		n, ok := info.SyscallNames[name]
		if !ok {
			t.Fatalf("no %s on %s", name, info.Name)
		}
		return uint64(n)
	}
	own := uint32(info.ID)
	write := SeccompFor(policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}, false)
	net := SeccompFor(policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellNone}, false)
	for _, tc := range []struct {
		sc     Seccomp
		arch   uint32
		nr     uint64
		ok     bool
		hook   string
		rule   denial.Rule
		field  string
		opname string
	}{
		{write, own, nr("fchmodat"), true, "seccomp:fchmodat", denial.RuleWrite, "write", "setattr"},
		{write, own, nr("fsetxattr"), true, "seccomp:fsetxattr", denial.RuleWrite, "write", "setxattr"},
		{write, own, nr("lremovexattr"), true, "seccomp:lremovexattr", denial.RuleWrite, "write", "removexattr"},
		{write, own, nr("io_uring_setup"), true, "seccomp:io_uring_setup", denial.RuleWrite, "write", "io-uring"},
		{write, own, nr("socket"), false, "", "", "", ""},
		{write, own, nr("memfd_create"), false, "", "", "", ""},
		{write, own, nr("getpid"), false, "", "", "", ""},
		{net, own, nr("socket"), true, "seccomp:socket", denial.RuleNetwork, "network", "socket"},
		{net, own, nr("socketpair"), true, "seccomp:socketpair", denial.RuleNetwork, "network", "socket"},
		{net, own, nr("io_uring_enter"), true, "seccomp:io_uring_enter", denial.RuleNetwork, "network", "io-uring"},
		{net, own, nr("memfd_create"), true, "seccomp:memfd_create", denial.RuleShellNone, "shell", "memfd-create"},
		{net, own, nr("fchmodat"), false, "", "", "", ""},
		{Seccomp{}, own, nr("ioctl"), true, "seccomp:ioctl", denial.RuleTTYInject, "tamper", "tty-inject"},
		{Seccomp{}, own ^ 1, 5, true, "seccomp:arch-" + hex32(own^1), denial.RuleTamper, "tamper", "syscall-other-abi"},
		{Seccomp{}, own, 5000, false, "", "", "", ""},
	} {
		c, ok := Classify(tc.sc, tc.arch, tc.nr)
		if ok != tc.ok {
			t.Errorf("%+v arch %#x nr %d: ours %v, want %v (%+v)", tc.sc, tc.arch, tc.nr, ok, tc.ok, c)
			continue
		}
		if !ok {
			continue
		}
		if c.Hook(tc.arch) != tc.hook || c.Rule != tc.rule || c.Field != tc.field || c.Operation != tc.opname {
			t.Errorf("nr %d: %s %+v, want %s %s %s %s", tc.nr, c.Hook(tc.arch), c, tc.hook, tc.rule, tc.field, tc.opname)
		}
	}
	if info.ID == arch.X86_64.ID {
		x32 := uint64(arch.X32.SeccompMask) | nr("fchmodat")
		if c, ok := Classify(Seccomp{}, own, x32); !ok || c.Rule != denial.RuleTamper {
			t.Errorf("x32 call: %+v %v, want tamper", c, ok)
		}
	}
}
