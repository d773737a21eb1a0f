// Command control is the vmtest guest's positive control: before any kernel
// test runs, it proves that BPF LSM programs not only load and attach but
// enforce. A kernel without "bpf" in its active LSM list still loads and
// attaches LSM programs and then enforces nothing, so a denial that must
// happen is the only trustworthy signal.
//
// It loads a BPF_PROG_TYPE_LSM program on socket_create that returns -EPERM
// only for this process's tgid (patched into the instructions at run time, so
// nothing else in the guest is affected), attaches it, checks that
// socket(AF_INET, SOCK_STREAM, 0) fails with EPERM, detaches, and checks that
// the socket call succeeds again. Exit status 0 means all of that held.
//
// It must not import github.com/cilium/ebpf/rlimit: that package probes BPF
// in init(), possibly before the guest has mounted /proc, and caches the
// failure. Kernels >= 5.11 account BPF memory to the cgroup, not memlock.
package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

const hook = "socket_create"

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "vmtest-control: FAIL: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("vmtest-control: PASS: BPF LSM denied socket_create for its own tgid and allowed it after detach")
}

// denyOwnTgid is the LSM program: deny with -EPERM when the calling process
// is tgid, allow (0) otherwise.
func denyOwnTgid(tgid int) asm.Instructions {
	return asm.Instructions{
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32), // upper 32 bits: tgid
		asm.JNE.Imm(asm.R0, int32(tgid), "allow"),
		asm.Mov.Imm(asm.R0, -int32(syscall.EPERM)),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("allow"),
		asm.Return(),
	}
}

func trySocket() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	return syscall.Close(fd)
}

func run() error {
	tgid := os.Getpid()
	if err := trySocket(); err != nil {
		return fmt.Errorf("socket before attach: %w (expected success)", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "vmtest_control",
		Type:         ebpf.LSM,
		AttachType:   ebpf.AttachLSMMac,
		AttachTo:     hook,
		License:      "GPL",
		Instructions: denyOwnTgid(tgid),
	})
	if err != nil {
		return fmt.Errorf("load LSM program on %s: %w", hook, err)
	}
	defer prog.Close()
	l, err := link.AttachLSM(link.LSMOptions{Program: prog})
	if err != nil {
		return fmt.Errorf("attach LSM program on %s: %w", hook, err)
	}
	err = trySocket()
	if cerr := l.Close(); cerr != nil {
		return fmt.Errorf("detach LSM program: %w", cerr)
	}
	if !errors.Is(err, syscall.EPERM) {
		return fmt.Errorf("socket with LSM program attached (tgid %d): got %v, want EPERM: BPF LSM is not enforcing", tgid, err)
	}
	fmt.Printf("vmtest-control: socket(AF_INET) denied while attached: %v\n", err)
	if err := trySocket(); err != nil {
		return fmt.Errorf("socket after detach: %w (expected success)", err)
	}
	return nil
}
