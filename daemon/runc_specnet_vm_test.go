package daemon_test

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// spec-net is the entrypoint of a runc container that tries, in order,
// each "what=kind[:target]" of its arguments and prints "what=ok" or
// "what=<error>": kind "inet" creates an AF_INET stream socket and
// connects it to target (host:port), "netlink" creates an AF_NETLINK
// (NETLINK_ROUTE) socket, "uring" calls io_uring_setup(2) with one entry,
// "unix" creates an AF_UNIX socket.
func init() {
	probe.Register("spec-net", func(r *probe.Result, a []string) {
		for _, arg := range a {
			what, spec, _ := strings.Cut(arg, "=")
			kind, target, _ := strings.Cut(spec, ":")
			var err error
			switch kind {
			case "inet":
				err = inetConnect(target)
			case "netlink":
				err = openClose(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
			case "unix":
				err = openClose(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			case "uring":
				var params [120]byte // struct io_uring_params, zeroed
				fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
				if e != 0 {
					err = e
				} else {
					unix.Close(int(fd))
				}
			default:
				err = fmt.Errorf("unknown kind %q", kind)
			}
			res := "ok"
			if err != nil {
				res = err.Error()
			}
			fmt.Printf("%s=%s\n", what, res)
		}
	})
}

func openClose(family, typ, proto int) error {
	fd, err := unix.Socket(family, typ, proto)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	return unix.Close(fd)
}

// inetConnect connects an AF_INET stream socket to addr ("ip:port").
func inetConnect(addr string) error {
	ap, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrInet4{Port: ap.Port}
	copy(sa.Addr[:], ap.IP.To4())
	if err := unix.Connect(fd, sa); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// nativeSeccompArch is the seccomp architecture of the test's GOARCH.
func nativeSeccompArch(t *testing.T) string {
	switch runtime.GOARCH {
	case "amd64":
		return "SCMP_ARCH_X86_64"
	case "arm64":
		return "SCMP_ARCH_AARCH64"
	}
	t.Fatalf("no seccomp architecture known for %s", runtime.GOARCH)
	return ""
}

// specNetBundle writes a bundle whose entrypoint is this test binary
// running spec-net with args, under ceiling. conform: the spec gives every
// network=false rule of oci/speccheck (its own PID and network
// namespaces, a seccomp filter of the native ABI that denies socket and
// socketpair for every family but AF_UNIX and io_uring_setup, no
// CAP_SYS_ADMIN, no host directory bound in); otherwise it shares the
// host's network namespace and has no seccomp filter (still no
// CAP_SYS_ADMIN, its own PID namespace).
func specNetBundle(t *testing.T, e *vmEnv, id, ceiling string, conform bool, args []string) string {
	caps := []string{"CAP_CHOWN", "CAP_NET_BIND_SERVICE"}
	namespaces := []map[string]string{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}}
	linux := map[string]any{"cgroupsPath": "/vmtest-runc/" + id}
	if conform {
		namespaces = append(namespaces, map[string]string{"type": "network"})
		ne1 := []map[string]any{{"index": 0, "value": unix.AF_UNIX, "op": "SCMP_CMP_NE"}}
		linux["seccomp"] = map[string]any{
			"defaultAction": "SCMP_ACT_ALLOW",
			"architectures": []string{nativeSeccompArch(t)},
			"syscalls": []map[string]any{
				{"names": []string{"socket", "socketpair"}, "action": "SCMP_ACT_ERRNO", "errnoRet": int(unix.EPERM), "args": ne1},
				{"names": []string{"io_uring_setup"}, "action": "SCMP_ACT_ERRNO", "errnoRet": int(unix.EPERM)},
			},
		}
	}
	linux["namespaces"] = namespaces
	return writeProbeBundle(t, e, id, nil, probe.Env("spec-net", args...), caps, map[string]any{
		"root":        map[string]any{"path": "rootfs"},
		"mounts":      []map[string]any{{"destination": "/proc", "type": "proc", "source": "proc"}},
		"annotations": map[string]string{"enforcerd.io/ceiling": ceiling},
		"linux":       linux,
	})
}

// TestNoBPFLSMRuncContainerSpecNetwork: on a host without BPF LSM, whose
// daemon allows partial coverage, a network=false runc container is
// judged by its config.json (container-spec, docs/no-bpf-lsm.md
// "Containers"). Tri-state, with Debian's runc and a TCP listener on the
// guest's loopback: (a) a control container (network=true, the host's
// network namespace, no seccomp filter) connects to the listener and
// creates netlink sockets and an io_uring; (b) a network=false container
// whose spec conforms is registered through the hook and runs: its inet
// socket, netlink socket and io_uring_setup fail with EPERM/EACCES, an
// AF_UNIX socket still works, and the registration names the gap
// network-unix; the same ceiling on the control's spec (no network
// namespace, no seccomp filter) is accepted under allow_partial with the
// cgroup-BPF layer alone: its inet socket is denied, its netlink socket
// works (the gap network-non-inet, whose record names the rules the spec
// misses); (c) the listener saw no connection from either.
// With BPF LSM the spec is not relied on: the non-conforming container is
// registered and the programs deny its inet and netlink sockets.
func TestNoBPFLSMRuncContainerSpecNetwork(t *testing.T) {
	e, lsm := runcSpecDaemon(t, "127.0.0.1:19469", "network")
	defer e.stopDaemon(t.Failed())

	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	args := []string{"inet=inet:" + addr, "netlink=netlink", "uring=uring", "unix=unix"}
	outcomes := func(out string) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && (k == "inet" || k == "netlink" || k == "uring" || k == "unix") {
				m[k] = v
			}
		}
		return m
	}
	denied := func(res string) bool {
		return strings.HasSuffix(res, unix.EPERM.Error()) || strings.HasSuffix(res, unix.EACCES.Error())
	}
	// seen waits briefly for the accept loop to count what connected.
	seen := func(want int64) int64 {
		for deadline := time.Now().Add(2 * time.Second); conns.Load() < want && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		}
		return conns.Load()
	}

	// (a) control: everything works, the listener sees the connection.
	b := specNetBundle(t, e, "net-ctl", "network=true", false, args)
	code, out := runRunc(t, e, "net-ctl", b)
	got := outcomes(out)
	if code != 0 || got["inet"] != "ok" || got["netlink"] != "ok" || got["uring"] != "ok" || got["unix"] != "ok" {
		t.Fatalf("control (network=true): runc exit %d, outcomes %v, want every call ok; output:\n%s", code, got, out)
	}
	if n := seen(1); n != 1 {
		t.Fatalf("control: the listener saw %d connections, want 1", n)
	}

	// (b) network=false, the spec misses the rules (the host's network
	// namespace, no seccomp filter).
	b = specNetBundle(t, e, "net-open", "network=false", false, args)
	code, out = runRunc(t, e, "net-open", b)
	got = outcomes(out)
	t.Logf("network=false, non-conforming spec: runc exit %d: %s", code, out)
	if !lsm {
		// allow_partial is the operator's opt-in to the gaps check lists:
		// the cgroup-BPF layer denies the inet socket, the other families
		// stay open (the gap the registration reports, which must name
		// the rules the spec misses).
		if code != 0 {
			t.Fatalf("no BPF LSM, allow_partial, network=false, non-conforming spec: runc exit %d, want 0 (partial coverage accepted); output:\n%s", code, out)
		}
		if !denied(got["inet"]) {
			t.Errorf("BYPASS: no BPF LSM, network=false, non-conforming spec: inet: %q, want EPERM or EACCES (cgroup-BPF)", got["inet"])
		}
		if got["netlink"] != "ok" {
			t.Errorf("no BPF LSM, non-conforming spec: netlink: %q, want ok (the reported gap network-non-inet: the report must be honest)", got["netlink"])
		}
		// The registration record names the gaps (their details, which
		// name the rules the spec misses, are in the API's answer while
		// the container is registered: enforcer's coverage tests check
		// that text).
		audit, _ := os.ReadFile(e.audit)
		if !strings.Contains(string(audit), `"container":"net-open"`) || !strings.Contains(string(audit), `"unenforced":["network-non-inet","tamper"]`) {
			t.Errorf("audit log: no registration of net-open with the gaps network-non-inet and tamper:\n%s", audit)
		}
	} else {
		if code != 0 {
			t.Fatalf("BPF LSM, network=false: runc exit %d, want 0 (the programs enforce it); output:\n%s", code, out)
		}
		for _, k := range []string{"inet", "netlink"} {
			if !denied(got[k]) {
				t.Errorf("BYPASS: BPF LSM, network=false: %s: %q, want EPERM or EACCES", k, got[k])
			}
		}
	}
	// (c) no connection.
	if n := seen(2); n != 1 {
		t.Errorf("BYPASS: network=false with a non-conforming spec: the listener saw %d connections, want 1 (the control's)", n)
	}

	// (b) network=false, conforming spec: registered, every non-unix
	// socket denied.
	b = specNetBundle(t, e, "net-spec", "network=false", true, args)
	code, out = runRunc(t, e, "net-spec", b)
	got = outcomes(out)
	t.Logf("network=false, conforming spec: runc exit %d: %s", code, out)
	if code != 0 {
		t.Fatalf("network=false, conforming spec: runc exit %d, want 0 (accepted); output:\n%s", code, out)
	}
	for _, k := range []string{"inet", "netlink", "uring"} {
		if !denied(got[k]) {
			t.Errorf("BYPASS: network=false, conforming spec: %s: %q, want EPERM or EACCES", k, got[k])
		}
	}
	if got["unix"] != "ok" {
		t.Errorf("network=false, conforming spec: unix: %q, want ok (the filter allows AF_UNIX)", got["unix"])
	}
	// The registration record names the spec's gap (no BPF LSM) or none.
	audit, _ := os.ReadFile(e.audit)
	if named := strings.Contains(string(audit), `"network-unix"`); named == lsm {
		t.Errorf("audit log: network-unix named %v with BPF LSM %v:\n%s", named, lsm, audit)
	}
	// (c) no connection.
	if n := seen(2); n != 1 {
		t.Errorf("BYPASS: network=false, conforming spec: the listener saw %d connections, want 1 (the control's)", n)
	}
}
