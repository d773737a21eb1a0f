// Package vmtest lets kernel tests say what they need from the machine.
//
// Tests that need BPF LSM programs call RequireLSM. On a host that cannot load
// them (the project's development hosts refuse LSM and fentry
// programs with EPERM) the test is skipped with the reason. Inside the
// scripts/vmtest guest, where ENFORCERD_VMTEST=1 is set by /init, a missing
// capability is a test failure instead: VM runs must never skip silently.
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package vmtest

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/test/testroot"
)

// EnvVar is set to "1" by the vmtest guest's /init.
const EnvVar = "ENFORCERD_VMTEST"

// NoBPFLSMEnvVar is set to "1" by the guest's /init when the VM was booted
// without "bpf" in lsm= (scripts/vmtest --lsm LIST). Only tests named
// TestNoBPFLSM... run in that boot; they check that enforcerd notices the
// missing BPF LSM and refuses instead of pretending to enforce.
const NoBPFLSMEnvVar = "ENFORCERD_VMTEST_NO_BPF_LSM"

// NativePrefix starts the name of every test that runs only natively (make
// unit, as root on a development host): one whose subject does not depend on
// the kernel, and that the VM would only run again at a high cost under TCG.
// The guest's /init leaves such tests out of the VM run (-test.skip
// '^TestNative'), so they are neither run nor counted there. They call
// NativeOnly first.
const NativePrefix = "TestNative"

// DebianGuestPattern matches (as -test.run does) the names of the tests
// that need the Debian guest (scripts/vmtest --rootfs debian: systemd as
// PID 1, auditd, the shipped units): the initramfs guest leaves them out
// (-test.skip), and `make vmtest-debian` (scripts/vmtest --rootfs debian
// --tests DebianGuestPattern) runs only them. Such a test calls
// RequireDebianGuest first.
const DebianGuestPattern = "SystemdUnit|AuditTrail"

// RequireDebianGuest marks t as a test of the Debian guest: its name must
// match DebianGuestPattern (the initramfs guest leaves out only tests so
// named); outside the VM it is skipped, inside it fails unless systemd is
// PID 1.
func RequireDebianGuest(t testing.TB) {
	t.Helper()
	if !regexp.MustCompile(DebianGuestPattern).MatchString(t.Name()) {
		t.Fatalf("vmtest: Debian-guest test %s must have %s in its name: the initramfs guest leaves out only tests so named", t.Name(), DebianGuestPattern)
	}
	if !InVM() {
		Skip(t, "needs the Debian guest (scripts/vmtest --rootfs debian)")
	}
	if exe, err := os.Readlink("/proc/1/exe"); err != nil || !strings.Contains(exe, "systemd") {
		t.Fatalf("vmtest: %s needs the Debian guest with systemd as PID 1 (scripts/vmtest --rootfs debian); PID 1 is %q (%v)", t.Name(), exe, err)
	}
}

// NoBPFLSM reports whether the test binary runs inside a vmtest guest booted
// without the BPF LSM.
func NoBPFLSM() bool { return InVM() && os.Getenv(NoBPFLSMEnvVar) == "1" }

// InVM reports whether the test binary runs inside the scripts/vmtest guest.
func InVM() bool { return os.Getenv(EnvVar) == "1" }

// LSMActive reports whether "bpf" is in the kernel's active LSM list
// (/sys/kernel/security/lsm, a comma-separated list).
func LSMActive() (bool, error) {
	b, err := os.ReadFile("/sys/kernel/security/lsm")
	if err != nil {
		return false, err
	}
	for _, name := range strings.Split(strings.TrimSpace(string(b)), ",") {
		if name == "bpf" {
			return true, nil
		}
	}
	return false, nil
}

// Skip skips t with reason on a host, and fails it inside the VM, where every
// kernel test must run.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if InVM() {
		t.Fatalf("vmtest: test cannot run inside the VM: %s", reason)
	}
	t.Skipf("needs the vmtest VM (make vmtest): %s", reason)
}

// NativeOnly marks t as a native-only test: its name must start with
// NativePrefix (a test that says it is native-only under another name fails,
// since the VM would run it), and inside the VM, where the guest leaves such
// tests out and only an explicit -test.run can start one, it is skipped with
// the reason (the verdict counts a skip in the VM's test run as a failure).
func NativeOnly(t testing.TB) {
	t.Helper()
	if !strings.HasPrefix(t.Name(), NativePrefix) {
		t.Fatalf("vmtest: native-only test %s must be named %s...: the VM leaves out only tests so named", t.Name(), NativePrefix)
	}
	if InVM() {
		t.Skipf("native-only test (%s...): it runs in make unit, not in the VM", NativePrefix)
	}
}

// RequireRoot skips (host) or fails (VM) unless running as uid 0: the test
// loads BPF programs, makes cgroups or otherwise acts as root. On a host the
// skip is one line naming the uid (make unit as root runs the test).
func RequireRoot(t testing.TB) {
	t.Helper()
	RequireRootFor(t, "a kernel test: it loads eBPF programs, pins them in bpffs and creates cgroups")
}

// RequireRootFor is RequireRoot with why, the reason the test needs root,
// in the skip line: "needs root (running as uid 1000): why".
func RequireRootFor(t testing.TB, why string) {
	t.Helper()
	reason := testroot.Reason(why)
	if reason == "" {
		return
	}
	if InVM() {
		t.Fatalf("vmtest: test cannot run inside the VM: %s", reason)
	}
	t.Skip(reason)
}

// RequireLSM skips (host) or fails (VM) unless this process can load BPF LSM
// programs. probe is called to try a real load (the only reliable test: the
// host lists "bpf" in its LSM list but refuses LSM programs); it returns nil
// when a BPF LSM program loaded and attached.
func RequireLSM(t testing.TB, probe func() error) {
	t.Helper()
	RequireRoot(t)
	active, err := LSMActive()
	if err != nil {
		Skip(t, "cannot read active LSM list: "+err.Error())
	}
	if !active {
		Skip(t, `"bpf" is not in /sys/kernel/security/lsm`)
	}
	if probe != nil {
		if err := probe(); err != nil {
			Skip(t, "BPF LSM programs cannot be loaded here: "+err.Error())
		}
	}
}

// SharedPinDir is the bpffs directory every kernel test binary of one VM
// boot pins enforcerd's programs in (enforcerd's default). Loading the
// programs takes ~20 s under TCG; re-adopting pins takes ~1 s, so only the
// first test binary of a boot pays for the load.
const SharedPinDir = "/sys/fs/bpf/enforcerd"

// PinDir returns the bpffs directory a kernel test should pass as
// enforcer.Options.PinDir. Inside the VM it is SharedPinDir and shared is
// true: the caller must not remove it (the guest is thrown away). On a host
// it is private to this process (name distinguishes callers) and the caller
// removes it when done.
func PinDir(name string) (dir string, shared bool) {
	if InVM() {
		return SharedPinDir, true
	}
	return fmt.Sprintf("/sys/fs/bpf/enforcerd-%s-%d", name, os.Getpid()), false
}
