package escapetest

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/policy"
)

var netOff = policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}

// hooks is a shorthand for a hook list.
func hooks(h ...denial.Hook) []denial.Hook { return h }

// mustEnv returns the VM environment variable name or fails the test: the
// case needs the VM's extra infrastructure and must not pass without it.
func mustEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: this case needs the VM's ext4 disk (scripts/vmtest infrastructure), it cannot run without it", name)
	}
	return v
}

// mustExist fails the test when a device the case attacks is missing.
func mustExist(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v: the case needs %s in the VM", path, err, why)
	}
}

// pollRead reads what fd has within d (nil on timeout).
func pollRead(fd int, d time.Duration) ([]byte, bool) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, _ := unix.Poll(fds, int(d/time.Millisecond)); n != 1 {
		return nil, false
	}
	b := make([]byte, 4096)
	n, err := unix.Read(fd, b)
	if err != nil || n < 0 {
		return nil, true
	}
	return b[:n], true
}

func contains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }

// dupFile passes a duplicate of fd to a probe (which closes it); the
// test keeps fd, so the object outlives the probe.
func dupFile(t *testing.T, fd int) *os.File {
	t.Helper()
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(d), "inherited")
}

func trimmed(path string) string { return strings.TrimSpace(readAll(path)) }

// fakeModprobe makes the kernel's usermode helper for module autoload
// (/proc/sys/kernel/modprobe) a script running the shell command cmd, in
// which %s is the path of a marker file the test then looks at, until the
// test ends (the old helper is put back). It returns the marker's path.
func fakeModprobe(t *testing.T, cmd string) string {
	t.Helper()
	marker := kt.TmpPath("modprobe-ran")
	helper := kt.TmpPath("modprobe.sh")
	if err := os.WriteFile(helper, []byte("#!/bin/sh\n"+fmt.Sprintf(cmd, marker)+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile("/proc/sys/kernel/modprobe")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("/proc/sys/kernel/modprobe", []byte(helper), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile("/proc/sys/kernel/modprobe", old, 0o644) })
	return marker
}
