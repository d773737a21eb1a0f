package vmtest_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/test/vmtest"
)

// mountType returns the filesystem type mounted at dir, from
// /proc/self/mountinfo, or "" when nothing is mounted there.
func mountType(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatalf("mountinfo: %v", err)
	}
	defer f.Close()
	typ := ""
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		fields := strings.Fields(s.Text())
		for i, fld := range fields {
			if fld == "-" && len(fields) > 4 && fields[4] == dir && i+1 < len(fields) {
				typ = fields[i+1] // the last mount on dir wins
			}
		}
	}
	return typ
}

// TestGuestHasBPFLSMAndMounts pins what every kernel test relies on inside
// the VM: "bpf" is an active LSM and cgroup2, bpffs and securityfs are
// mounted where the guest's /init promises.
func TestGuestHasBPFLSMAndMounts(t *testing.T) {
	if !vmtest.InVM() {
		vmtest.Skip(t, "checks the vmtest guest environment")
	}
	if vmtest.NoBPFLSM() {
		t.Fatal("guest booted without BPF LSM: this test must not run (use -test.run NoBPFLSM)")
	}
	active, err := vmtest.LSMActive()
	if err != nil {
		t.Fatalf("LSMActive: %v", err)
	}
	if !active {
		t.Fatal(`"bpf" is not in /sys/kernel/security/lsm`)
	}
	for dir, want := range map[string]string{
		"/sys/fs/cgroup":       "cgroup2",
		"/sys/fs/bpf":          "bpf",
		"/sys/kernel/security": "securityfs",
	} {
		if got := mountType(t, dir); got != want {
			t.Errorf("mount at %s: got %q, want %q", dir, got, want)
		}
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Errorf("kernel BTF: %v", err)
	}
}

// TestNoBPFLSMGuestReportsInactive pins the other boot of `make vmtest`: with
// "bpf" left out of lsm=, the active list must say so, and the guest must tell
// the tests.
func TestNoBPFLSMGuestReportsInactive(t *testing.T) {
	if !vmtest.InVM() {
		vmtest.Skip(t, "checks the vmtest guest environment")
	}
	active, err := vmtest.LSMActive()
	if err != nil {
		t.Fatalf("LSMActive: %v", err)
	}
	if active != !vmtest.NoBPFLSM() {
		t.Fatalf(`"bpf" active in LSM list = %v, but %s=%q`, active, vmtest.NoBPFLSMEnvVar, os.Getenv(vmtest.NoBPFLSMEnvVar))
	}
}

// TestNativeDebianGuestPatternInScripts: scripts/vmtest leaves out of the
// initramfs guest exactly the tests vmtest.DebianGuestPattern names, and
// the Makefile's vmtest-debian runs exactly those.
func TestNativeDebianGuestPatternInScripts(t *testing.T) {
	vmtest.NativeOnly(t)
	for file, want := range map[string]string{
		"../../scripts/vmtest": "DEBIAN_GUEST_TESTS='" + vmtest.DebianGuestPattern + "'",
		"../../Makefile":       "DEBIAN_GUEST_TESTS := " + vmtest.DebianGuestPattern,
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not say %s (vmtest.DebianGuestPattern)", file, want)
		}
	}
}
