package fallback

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/policy"
)

const envChild = "ENFORCERD_FALLBACK_TEST_CHILD"

// TestMain: as a child (envChild holds a Spec), apply it, try each
// operation and print "name errno" lines.
func TestMain(m *testing.M) {
	if s := os.Getenv(envChild); s != "" {
		os.Exit(child(s))
	}
	os.Exit(m.Run())
}

func child(s string) int {
	var spec Spec
	if err := json.Unmarshal([]byte(s), &spec); err != nil {
		fmt.Println("spec", err)
		return 1
	}
	runtime.LockOSThread()
	if os.Getenv("FALLBACK_NONE") == "" { // (a): nothing applied
		if err := Apply(spec); err != nil {
			fmt.Println("apply", err)
			return 1
		}
	}
	try := func(name string, err error) {
		e, _ := err.(unix.Errno)
		fmt.Printf("%s %d\n", name, e)
	}
	sock := func(fam int) error {
		fd, err := unix.Socket(fam, unix.SOCK_DGRAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	try("unix", sock(unix.AF_UNIX))
	try("inet", sock(unix.AF_INET))
	try("netlink", func() error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}())
	// socket(2) with garbage in the upper 32 bits of the family: the
	// kernel uses the low 32 (AF_NETLINK), the filter must deny.
	_, _, e := unix.RawSyscall(unix.SYS_SOCKET, 1<<32|unix.AF_NETLINK, unix.SOCK_RAW, 0)
	try("netlink-hibits", e)
	// TIOCSTI with garbage in the upper bits (on fd -1: EBADF if allowed).
	_, _, e = unix.RawSyscall(unix.SYS_IOCTL, ^uintptr(0), 1<<32|unix.TIOCSTI, 0)
	try("tiocsti-hibits", e)
	_, err := unix.MemfdCreate("x", 0)
	try("memfd", err)
	dir := os.Getenv("FALLBACK_DIR")
	try("chmod", unix.Chmod(filepath.Join(dir, "f"), 0o777))
	fd, err := unix.Open(filepath.Join(dir, "new"), unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	try("create", err)
	return 0
}

func runChild(t *testing.T, spec *Spec, dir string) map[string]unix.Errno {
	t.Helper()
	b, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+string(b), "FALLBACK_DIR="+dir)
	if spec == nil {
		cmd.Env = append(cmd.Env, envChild+"={}", "FALLBACK_NONE=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]unix.Errno{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var name string
		var e int
		if _, err := fmt.Sscanf(l, "%s %d", &name, &e); err != nil {
			t.Fatalf("child line %q: %v", l, err)
		}
		got[name] = unix.Errno(e)
	}
	return got
}

// TestApplyFilter: tri-state for the seccomp filter and the Landlock
// rules, in a child process: without a spec everything succeeds; with
// the network, write and shell=none spec each listed call fails with
// EPERM (seccomp) or EACCES (Landlock), AF_UNIX stays, and a family or
// ioctl number with high garbage bits is still denied.
func TestApplyFilter(t *testing.T) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		t.Skipf("no Landlock here (%v); the VM tests of enforcerd run cover the helper", err)
	}
	dir := t.TempDir()
	reset := func() {
		os.Remove(filepath.Join(dir, "new"))
		if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, "f"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reset()
	none := runChild(t, nil, dir)
	for _, op := range []string{"unix", "inet", "netlink", "memfd", "chmod", "create"} {
		if none[op] != 0 {
			t.Errorf("(a) without restrictions: %s errno %v", op, none[op])
		}
	}
	if none["tiocsti-hibits"] != unix.EBADF {
		t.Errorf("(a) without restrictions: TIOCSTI on fd -1: %v, want EBADF", none["tiocsti-hibits"])
	}
	reset()
	h := coverage.ProbeHost()
	spec, err := Plan(Config{Ceiling: policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellNone}, Host: h,
		Exec: []string{os.Args[0]}})
	if err != nil {
		t.Fatal(err)
	}
	got := runChild(t, &spec, dir)
	want := map[string]unix.Errno{"unix": 0, "inet": unix.EPERM, "netlink": unix.EPERM, "netlink-hibits": unix.EPERM,
		"tiocsti-hibits": unix.EPERM, "memfd": unix.EPERM, "chmod": unix.EPERM, "create": unix.EACCES}
	for op, w := range want {
		if got[op] != w {
			t.Errorf("(b) %s: errno %v, want %v", op, got[op], w)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "f")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("(c) chmod took effect: %v %v", st.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Errorf("(c) the denied create left a file")
	}
}

// TestPlanByABI: what the spec handles at each Landlock ABI.
func TestPlanByABI(t *testing.T) {
	tcp, _ := endpoint.Parse("tcp:10.0.0.1:443")
	for _, abi := range []int{1, 2, 3, 4, 6} {
		h := coverage.HostMechanisms{LandlockABI: abi}
		s, err := Plan(Config{Ceiling: policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}, Host: h,
			WriteRoots: []string{t.TempDir()}, AllowConnect: []endpoint.Endpoint{tcp}})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.HandledFS&llsys.AccessFSTruncate != 0; got != (abi >= 3) {
			t.Errorf("ABI %d: truncate handled %v", abi, got)
		}
		if got := s.HandledFS&llsys.AccessFSRefer != 0; got != (abi >= 2) {
			t.Errorf("ABI %d: refer handled %v", abi, got)
		}
		if s.HandledFS&(llsys.AccessFSExecute|llsys.AccessFSReadFile|llsys.AccessFSIoctlDev) != 0 {
			t.Errorf("ABI %d: handles execute, read or ioctl under shell=full: %#x", abi, s.HandledFS)
		}
		if got := len(s.ConnectTCP) == 1 && s.ConnectTCP[0] == 443; got != (abi >= 4) {
			t.Errorf("ABI %d: connect ports %v", abi, s.ConnectTCP)
		}
		if got := s.Scoped != 0; got != (abi >= 6) {
			t.Errorf("ABI %d: scoped %#x", abi, s.Scoped)
		}
		if !s.Seccomp.Sockets || !s.Seccomp.AllowInet || !s.Seccomp.FileMeta || !s.Seccomp.IOURing || s.Seccomp.Memfd {
			t.Errorf("ABI %d: seccomp %+v", abi, s.Seccomp)
		}
		if _, err := filter(s.Seccomp); err != nil {
			t.Errorf("ABI %d: filter: %v", abi, err)
		}
	}
	if _, err := Plan(Config{Ceiling: policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull},
		Host: coverage.HostMechanisms{LandlockError: "x"}}); err == nil {
		t.Errorf("write=false planned without Landlock")
	}
}
