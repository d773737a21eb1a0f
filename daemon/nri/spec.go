package nri

import (
	"fmt"
	"os"
	"strconv"

	"github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/prometheus/procfs"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/oci/speccheck"
	"github.com/enforcerd/enforcerd/policy"
)

// specLayer is what the container's runtime spec enforces by itself of
// write=false and network=false, as speccheck judges it, for the daemon to
// credit on a host without BPF LSM (registry.Request.Spec,
// docs/no-bpf-lsm.md "Containers"). NRI gives the namespaces, mounts,
// device cgroup rules and, from runtimes that send it, the seccomp policy
// (specOf). It does not give the capabilities nor root.readonly: with
// initPID 0 (CreateContainer's dry run, before the init exists) both are
// taken as given, so that the dry run refuses only what the spec surely
// lacks; with the init's pid (StartContainer, where the registration is
// decided) they are read from /proc/PID/status (CapBnd, CapEff, CapPrm,
// CapInh, CapAmb) and /proc/PID/mountinfo (the root mount's own "ro")
// below procRoot. A value that cannot be read credits nothing, and says
// why (fail closed). Both fields are judged; the daemon uses those the
// effective ceiling restricts.
func specLayer(ctr *api.Container, writeRoots []string, procRoot string, initPID int) *coverage.SpecLayer {
	spec := specOf(ctr)
	if initPID == 0 {
		spec.Root.Readonly = true
		spec.Process.Capabilities = &specs.LinuxCapabilities{}
	} else {
		caps, err := procCaps(procRoot, initPID)
		if err != nil {
			why := fmt.Sprintf("cannot read the init's capabilities: %v", err)
			return &coverage.SpecLayer{WriteMissing: why, NetworkMissing: why}
		}
		spec.Process.Capabilities = caps
		ro, err := procRootReadonly(procRoot, initPID)
		if err != nil {
			why := fmt.Sprintf("cannot read the init's root mount: %v", err)
			return &coverage.SpecLayer{WriteMissing: why, NetworkMissing: why}
		}
		spec.Root.Readonly = ro
	}
	r := speccheck.Check(spec, policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}, speccheck.Options{
		WriteRoots: writeRoots,
		IsSocket: func(p string) bool {
			fi, err := os.Stat(p)
			return err == nil && fi.Mode()&os.ModeSocket != 0
		},
	})
	w, n := r.Fields()
	return &coverage.SpecLayer{Write: w, Network: n, WriteMissing: r.MissingFor("write"), NetworkMissing: r.MissingFor("network"), WritableMounts: r.WritableMounts}
}

// specOf is the part of the container's OCI spec NRI gives: namespaces,
// mounts, linux.resources.devices and linux.seccomp (nil when the
// runtime does not send the policy). Root and Process are present and
// empty (root read-write, no capabilities) for the caller to fill.
func specOf(ctr *api.Container) *specs.Spec {
	s := &specs.Spec{Root: &specs.Root{}, Process: &specs.Process{}, Linux: &specs.Linux{}}
	for _, m := range ctr.GetMounts() {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: m.GetDestination(), Type: m.GetType(), Source: m.GetSource(), Options: m.GetOptions()})
	}
	l := ctr.GetLinux()
	for _, ns := range l.GetNamespaces() {
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.LinuxNamespaceType(ns.GetType()), Path: ns.GetPath()})
	}
	if devs := l.GetResources().GetDevices(); len(devs) > 0 {
		s.Linux.Resources = &specs.LinuxResources{}
		for _, d := range devs {
			dc := specs.LinuxDeviceCgroup{Allow: d.GetAllow(), Type: d.GetType(), Access: d.GetAccess()}
			if d.GetMajor() != nil {
				v := d.GetMajor().GetValue()
				dc.Major = &v
			}
			if d.GetMinor() != nil {
				v := d.GetMinor().GetValue()
				dc.Minor = &v
			}
			s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, dc)
		}
	}
	if sp := l.GetSeccompPolicy(); sp != nil {
		sc := &specs.LinuxSeccomp{DefaultAction: specs.LinuxSeccompAction(sp.GetDefaultAction()), ListenerPath: sp.GetListenerPath(), ListenerMetadata: sp.GetListenerMetadata()}
		if sp.GetDefaultErrno() != nil {
			v := uint(sp.GetDefaultErrno().GetValue())
			sc.DefaultErrnoRet = &v
		}
		for _, a := range sp.GetArchitectures() {
			sc.Architectures = append(sc.Architectures, specs.Arch(a))
		}
		for _, f := range sp.GetFlags() {
			sc.Flags = append(sc.Flags, specs.LinuxSeccompFlag(f))
		}
		for _, sy := range sp.GetSyscalls() {
			ls := specs.LinuxSyscall{Names: sy.GetNames(), Action: specs.LinuxSeccompAction(sy.GetAction())}
			if sy.GetErrnoRet() != nil {
				v := uint(sy.GetErrnoRet().GetValue())
				ls.ErrnoRet = &v
			}
			for _, a := range sy.GetArgs() {
				ls.Args = append(ls.Args, specs.LinuxSeccompArg{Index: uint(a.GetIndex()), Value: a.GetValue(), ValueTwo: a.GetValueTwo(), Op: specs.LinuxSeccompOperator(a.GetOp())})
			}
			sc.Syscalls = append(sc.Syscalls, ls)
		}
		s.Linux.Seccomp = sc
	}
	return s
}

// capNames are the capability names by number (include/uapi/linux/capability.h).
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
	"CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// capList names the bits of mask (a bit without a name: "CAP_<n>").
func capList(mask uint64) []string {
	var out []string
	for i := 0; i < 64; i++ {
		if mask&(1<<i) == 0 {
			continue
		}
		if i < len(capNames) {
			out = append(out, capNames[i])
		} else {
			out = append(out, "CAP_"+strconv.Itoa(i))
		}
	}
	return out
}

// procCaps reads the five capability sets of pid from procRoot/PID/status
// (github.com/prometheus/procfs; the kernel writes every set there).
func procCaps(procRoot string, pid int) (*specs.LinuxCapabilities, error) {
	p, err := procOf(procRoot, pid)
	if err != nil {
		return nil, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return nil, fmt.Errorf("pid %d status: %w", pid, err)
	}
	return &specs.LinuxCapabilities{Bounding: capList(st.CapBnd), Effective: capList(st.CapEff), Permitted: capList(st.CapPrm),
		Inheritable: capList(st.CapInh), Ambient: capList(st.CapAmb)}, nil
}

// procRootReadonly reports whether the root mount pid sees (the last
// mountinfo entry whose mount point is "/", relative to pid's root) has its
// own read-only flag (a per-mount option "ro").
func procRootReadonly(procRoot string, pid int) (bool, error) {
	p, err := procOf(procRoot, pid)
	if err != nil {
		return false, err
	}
	mis, err := p.MountInfo()
	if err != nil {
		return false, fmt.Errorf("pid %d mountinfo: %w", pid, err)
	}
	found, ro := false, false
	for _, mi := range mis {
		if mi.MountPoint == "/" {
			_, ro = mi.Options["ro"]
			found = true
		}
	}
	if !found {
		return false, fmt.Errorf("pid %d mountinfo has no root mount", pid)
	}
	return ro, nil
}

// procOf is pid's directory in the proc file system mounted at procRoot.
func procOf(procRoot string, pid int) (procfs.Proc, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return procfs.Proc{}, err
	}
	return fs.Proc(pid)
}
