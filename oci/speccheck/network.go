package speccheck

import (
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// nativeArch is the seccomp architecture of each GOARCH this package
// knows; on another GOARCH the architectures rule is never met.
var nativeArch = map[string]specs.Arch{
	"amd64": specs.ArchX86_64, "arm64": specs.ArchAARCH64,
	"riscv64": specs.ArchRISCV64, "s390x": specs.ArchS390X, "ppc64le": specs.ArchPPC64LE,
}

// hostSocketDirs are host directories whose bind mount brings in the
// host's brokers (the container engine's socket, D-Bus, systemd, the X
// server): refused as a source, at or beneath (and "/" itself).
var hostSocketDirs = []string{"/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm", "/var/lib/docker", "/var/lib/containerd"}

// checkNetwork is the network=false rules.
func checkNetwork(spec *specs.Spec, o Options) []Missing {
	const f = "network"
	if spec == nil || spec.Linux == nil {
		return []Missing{missingf(f, RuleNetNamespace, "the spec has no linux section")}
	}
	// A new network namespace: abstract unix sockets are per namespace,
	// so the host's (and other containers') are out of reach.
	out := privateNamespace(spec, f, RuleNetNamespace, specs.NetworkNamespace)
	// Another process's root (/proc/PID/root) holds the host's unix
	// sockets; a private PID namespace hides every host process.
	out = append(out, privatePIDs(spec, f)...)
	// setns into the host's network namespace needs CAP_SYS_ADMIN.
	out = append(out, noCapSysAdmin(spec, f)...)
	out = append(out, checkSeccomp(spec.Linux.Seccomp, o.Arch)...)
	for _, m := range spec.Mounts {
		if _, _, bind, _ := mountFlags(m); !bind {
			continue
		}
		src := cleanDest(m.Source)
		if src == "/" {
			out = append(out, missingf(f, RuleHostSockets, "mount %s binds the host's root: its unix sockets (brokers outside the container) would be reachable", cleanDest(m.Destination)))
			continue
		}
		for _, d := range hostSocketDirs {
			if beneath(src, d) {
				out = append(out, missingf(f, RuleHostSockets, "mount %s binds %s, beneath %s where host services keep unix sockets", cleanDest(m.Destination), src, d))
				break
			}
		}
		if o.IsSocket != nil && o.IsSocket(m.Source) {
			out = append(out, missingf(f, RuleHostSockets, "mount %s binds the unix socket %s of the host", cleanDest(m.Destination), src))
		}
	}
	return out
}

// checkSeccomp requires linux.seccomp to admit only the native ABI (on
// i386 socketcall(2) passes the family in memory, where a filter cannot
// read it; x32 calls are refused by a filter of the x86_64 architecture
// alone), and to deny socket(2) and socketpair(2) for every family but
// AF_UNIX and io_uring_setup(2) (IORING_OP_SOCKET creates sockets without
// socket(2)) for any argument. An allow list of families only: a rule
// denying some families leaves the others.
func checkSeccomp(sc *specs.LinuxSeccomp, arch string) []Missing {
	const f = "network"
	if sc == nil {
		return []Missing{missingf(f, RuleSeccomp, "linux.seccomp is absent: nothing denies socket(2) of inet, netlink, packet or vsock families")}
	}
	var out []Missing
	native, known := nativeArch[arch]
	switch {
	case !known:
		out = append(out, missingf(f, RuleArchitectures, "host architecture %s: no seccomp architecture known to admit only its native ABI", arch))
	default:
		for _, a := range sc.Architectures {
			if a != native {
				out = append(out, missingf(f, RuleArchitectures, "linux.seccomp.architectures has %s: only %s may be listed (the filter of another ABI, i386's socketcall(2) in particular, cannot see the socket family)", a, native))
			}
		}
	}
	unixOnly := func(v uint64) bool { return v == unix.AF_UNIX }
	for _, name := range []string{"socket", "socketpair"} {
		if v, ok := denied(sc, name, unixOnly); !ok {
			out = append(out, missingf(f, RuleSeccomp, "linux.seccomp lets %s(2) run with family %s: every family but AF_UNIX (1) must be denied (errno, kill or trap), by the default action or a rule such as arg0 != 1", name, family(v)))
		}
	}
	if _, ok := denied(sc, "io_uring_setup", nil); !ok {
		out = append(out, missingf(f, RuleSeccomp, "linux.seccomp lets io_uring_setup(2) run: io_uring creates sockets of any family without socket(2)"))
	}
	return out
}

// family names a socket family number for a message.
func family(v uint64) string {
	names := map[uint64]string{unix.AF_INET: "AF_INET", unix.AF_INET6: "AF_INET6", unix.AF_NETLINK: "AF_NETLINK", unix.AF_PACKET: "AF_PACKET", unix.AF_VSOCK: "AF_VSOCK", 0: "AF_UNSPEC"}
	if n, ok := names[v]; ok {
		return fmt.Sprintf("%s (%d)", n, v)
	}
	return strings.TrimSpace(fmt.Sprintf("%d", v))
}
