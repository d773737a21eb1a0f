package speccheck

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/policy"
)

func i64(v int64) *int64 { return &v }

// goodSpec gives every write and network rule: read-only root and
// mounts, new mount and network namespaces, no CAP_SYS_ADMIN, a device
// cgroup allowing only harmless character devices, a default-deny seccomp
// filter that allows socket/socketpair for AF_UNIX only.
func goodSpec() *specs.Spec {
	return &specs.Spec{
		Version: "1.0.2",
		Root:    &specs.Root{Path: "rootfs", Readonly: true},
		Process: &specs.Process{Args: []string{"/agent"}, Capabilities: &specs.LinuxCapabilities{
			Bounding: []string{"CAP_CHOWN", "CAP_NET_BIND_SERVICE"}, Effective: []string{"CAP_CHOWN"},
			Permitted: []string{"CAP_CHOWN"},
		}},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"ro", "nosuid"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k", "ro"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue"},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "ro"}},
			{Destination: "/data", Type: "bind", Source: "/srv/data", Options: []string{"rbind", "ro", "rro"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.MountNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace}},
			Resources: &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{
				{Allow: false, Access: "rwm"},
				{Allow: true, Type: "c", Major: i64(1), Minor: i64(3), Access: "rwm"},
				{Allow: true, Type: "c", Major: i64(136), Access: "rwm"},
				{Allow: true, Type: "b", Major: i64(8), Minor: i64(0), Access: "r"},
			}},
			Seccomp: &specs.LinuxSeccomp{
				DefaultAction: specs.ActErrno,
				Architectures: []specs.Arch{specs.ArchX86_64},
				Syscalls: []specs.LinuxSyscall{
					{Names: []string{"read", "write", "openat", "execve"}, Action: specs.ActAllow},
					{Names: []string{"socket", "socketpair"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpEqualTo}}},
				},
			},
		},
	}
}

var restrictive = policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}

func rules(r Result, field string) []string {
	var out []string
	for _, m := range r.Missing {
		if m.Field == field {
			out = append(out, m.Rule)
		}
	}
	return out
}

func TestCheckGoodSpec(t *testing.T) {
	r := Check(goodSpec(), restrictive, Options{Arch: "amd64"})
	if len(r.Missing) != 0 {
		t.Fatalf("missing: %v", r.Missing)
	}
	w, n := r.Fields()
	if !w || !n {
		t.Fatalf("credited %v", r.Credited)
	}
	// Only restricted fields are credited.
	r = Check(goodSpec(), policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}, Options{Arch: "amd64"})
	if len(r.Credited) != 0 || len(r.Missing) != 0 {
		t.Fatalf("unrestricted ceiling: %+v", r)
	}
}

func TestCheckWrite(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*specs.Spec)
		roots []string
		want  []string // rules missing for write, in order
	}{
		{"root writable", func(s *specs.Spec) { s.Root.Readonly = false }, nil, []string{RuleRootReadonly}},
		{"no root", func(s *specs.Spec) { s.Root = nil }, nil, []string{RuleRootReadonly}},
		{"no mount namespace", func(s *specs.Spec) { s.Linux.Namespaces = s.Linux.Namespaces[:1] }, nil, []string{RuleMountNamespace}},
		{"joined mount namespace", func(s *specs.Spec) { s.Linux.Namespaces[1].Path = "/proc/1/ns/mnt" }, nil, []string{RuleMountNamespace}},
		{"rw bind", func(s *specs.Spec) { s.Mounts[5].Options = []string{"rbind", "rw"} }, nil, []string{RuleMountReadonly}},
		{"ro then rw", func(s *specs.Spec) { s.Mounts[5].Options = []string{"bind", "ro", "rw"} }, nil, []string{RuleMountReadonly}},
		{"rbind ro alone", func(s *specs.Spec) { s.Mounts[5].Options = []string{"rbind", "ro"} }, nil, []string{RuleMountReadonly}},
		{"rbind rro then rrw", func(s *specs.Spec) { s.Mounts[5].Options = []string{"rbind", "ro", "rro", "rrw"} }, nil, []string{RuleMountReadonly}},
		{"bind ro non-recursive", func(s *specs.Spec) { s.Mounts[5].Options = []string{"bind", "ro"} }, nil, nil},
		{"bind in options, no type", func(s *specs.Spec) { s.Mounts[5].Type = ""; s.Mounts[5].Options = []string{"bind"} }, nil, []string{RuleMountReadonly}},
		{"rw proc", func(s *specs.Spec) { s.Mounts[0].Options = []string{"nosuid"} }, nil, []string{RuleMountReadonly}},
		{"rw tmpfs /dev/shm", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm"})
		}, nil, []string{RuleMountReadonly}},
		{"rw devpts bound from the host", func(s *specs.Spec) {
			s.Mounts[2] = specs.Mount{Destination: "/dev/pts", Type: "devpts", Source: "/dev/pts", Options: []string{"bind"}}
		}, nil, []string{RuleMountReadonly}},
		{"rw mount in a writable root", func(s *specs.Spec) {
			s.Mounts[5].Options = []string{"rbind", "rw"}
			s.Mounts[5].Destination = "/work/out"
		}, []string{"/work"}, nil},
		{"rw mount above a writable root", func(s *specs.Spec) { s.Mounts[5].Options = []string{"rbind"}; s.Mounts[5].Destination = "/work" }, []string{"/work/out"}, []string{RuleMountReadonly}},
		{"rw mount beside a writable root", func(s *specs.Spec) { s.Mounts[5].Options = []string{"rbind"}; s.Mounts[5].Destination = "/workx" }, []string{"/work"}, []string{RuleMountReadonly}},
		{"no capabilities", func(s *specs.Spec) { s.Process.Capabilities = nil }, nil, []string{RuleCapSysAdmin}},
		{"no process", func(s *specs.Spec) { s.Process = nil }, nil, []string{RuleCapSysAdmin}},
		{"sys_admin bounding", func(s *specs.Spec) {
			s.Process.Capabilities.Bounding = append(s.Process.Capabilities.Bounding, "CAP_SYS_ADMIN")
		}, nil, []string{RuleCapSysAdmin}},
		{"sys_admin ambient only", func(s *specs.Spec) { s.Process.Capabilities.Ambient = []string{"CAP_SYS_ADMIN"} }, nil, []string{RuleCapSysAdmin}},
		{"sys_admin inheritable only", func(s *specs.Spec) { s.Process.Capabilities.Inheritable = []string{"cap_sys_admin"} }, nil, []string{RuleCapSysAdmin}},
		{"sys_admin in two sets", func(s *specs.Spec) {
			s.Process.Capabilities.Effective = []string{"CAP_SYS_ADMIN"}
			s.Process.Capabilities.Permitted = []string{"CAP_SYS_ADMIN"}
		}, nil, []string{RuleCapSysAdmin, RuleCapSysAdmin}},
		{"no device rules", func(s *specs.Spec) { s.Linux.Resources = nil }, nil, []string{RuleDevices}},
		{"no deny-all first", func(s *specs.Spec) { s.Linux.Resources.Devices = s.Linux.Resources.Devices[1:] }, nil, []string{RuleDevices}},
		{"deny-all of reads only", func(s *specs.Spec) { s.Linux.Resources.Devices[0].Access = "r" }, nil, []string{RuleDevices}},
		{"block device writable", func(s *specs.Spec) { s.Linux.Resources.Devices[3].Access = "rw" }, nil, []string{RuleDevices}},
		{"block device, empty access is rwm", func(s *specs.Spec) { s.Linux.Resources.Devices[3].Access = "" }, nil, []string{RuleDevices}},
		{"mem char 1:1", func(s *specs.Spec) {
			s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, specs.LinuxDeviceCgroup{Allow: true, Type: "c", Major: i64(1), Minor: i64(1), Access: "w"})
		}, nil, []string{RuleDevices}},
		{"char 1:* wildcard", func(s *specs.Spec) {
			s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, specs.LinuxDeviceCgroup{Allow: true, Type: "c", Major: i64(1), Access: "w"})
		}, nil, []string{RuleDevices}},
		{"all devices allowed again", func(s *specs.Spec) {
			s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, specs.LinuxDeviceCgroup{Allow: true, Access: "rwm"})
		}, nil, []string{RuleDevices}},
		{"no linux section", func(s *specs.Spec) { s.Linux = nil }, nil, []string{RuleMountNamespace}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := goodSpec()
			tc.edit(s)
			r := Check(s, policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}, Options{Arch: "amd64", WriteRoots: tc.roots})
			if got := rules(r, "write"); !slices.Equal(got, tc.want) {
				t.Fatalf("missing rules %v, want %v (%v)", got, tc.want, r.Missing)
			}
			w, _ := r.Fields()
			if w != (len(tc.want) == 0) {
				t.Fatalf("write credited %t with missing %v", w, r.Missing)
			}
			for _, m := range r.Missing {
				if m.Detail == "" || m.Field != "write" {
					t.Fatalf("bad missing %+v", m)
				}
			}
		})
	}
}

func TestCheckWritableMounts(t *testing.T) {
	s := goodSpec()
	s.Mounts[5].Destination, s.Mounts[5].Options = "/work/out/", []string{"rbind"}
	r := Check(s, restrictive, Options{Arch: "amd64", WriteRoots: []string{"/work"}})
	if !slices.Equal(r.WritableMounts, []string{"/work/out"}) || len(r.Missing) != 0 {
		t.Fatalf("writable %v missing %v", r.WritableMounts, r.Missing)
	}
}

func seccompOf(def specs.LinuxSeccompAction, rs ...specs.LinuxSyscall) func(*specs.Spec) {
	return func(s *specs.Spec) {
		s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: def, Architectures: []specs.Arch{specs.ArchX86_64}, Syscalls: rs}
	}
}

func arg0(op specs.LinuxSeccompOperator, v uint64) []specs.LinuxSeccompArg {
	return []specs.LinuxSeccompArg{{Index: 0, Value: v, Op: op}}
}

func sock(action specs.LinuxSeccompAction, args []specs.LinuxSeccompArg) specs.LinuxSyscall {
	return specs.LinuxSyscall{Names: []string{"socket", "socketpair"}, Action: action, Args: args}
}

var uringDeny = specs.LinuxSyscall{Names: []string{"io_uring_setup"}, Action: specs.ActErrno}

func TestCheckNetwork(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(*specs.Spec)
		arch     string
		isSocket func(string) bool
		want     []string
	}{
		{"good", func(*specs.Spec) {}, "", nil, nil},
		{"no network namespace", func(s *specs.Spec) { s.Linux.Namespaces = s.Linux.Namespaces[:2] }, "", nil, []string{RuleNetNamespace}},
		{"joined network namespace", func(s *specs.Spec) { s.Linux.Namespaces[2].Path = "/var/run/netns/pod" }, "", nil, []string{RuleNetNamespace}},
		{"sys_admin", func(s *specs.Spec) { s.Process.Capabilities.Bounding = []string{"CAP_SYS_ADMIN"} }, "", nil, []string{RuleCapSysAdmin}},
		{"no seccomp", func(s *specs.Spec) { s.Linux.Seccomp = nil }, "", nil, []string{RuleSeccomp}},
		// Default allow with the "!= AF_UNIX" rule.
		{"allow default, ne unix errno", seccompOf(specs.ActAllow, sock(specs.ActErrno, arg0(specs.OpNotEqual, 1)), uringDeny), "", nil, nil},
		{"allow default, ne unix kill", seccompOf(specs.ActAllow, sock(specs.ActKillProcess, arg0(specs.OpNotEqual, 1)), uringDeny), "", nil, nil},
		{"allow default, ne unix trace", seccompOf(specs.ActAllow, sock(specs.ActTrace, arg0(specs.OpNotEqual, 1)), uringDeny), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		{"allow default, ne unix notify", seccompOf(specs.ActAllow, sock(specs.ActNotify, arg0(specs.OpNotEqual, 1)), uringDeny), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		{"allow default, ne unix log", seccompOf(specs.ActAllow, sock(specs.ActLog, arg0(specs.OpNotEqual, 1)), uringDeny), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		// A deny list of families is not enough.
		{"deny list of families", seccompOf(specs.ActAllow,
			sock(specs.ActErrno, arg0(specs.OpEqualTo, 2)), sock(specs.ActErrno, arg0(specs.OpEqualTo, 10)),
			sock(specs.ActErrno, arg0(specs.OpEqualTo, 16)), sock(specs.ActErrno, arg0(specs.OpEqualTo, 17)), uringDeny), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		// Two ranges around AF_UNIX cover every other family.
		{"ranges around unix", seccompOf(specs.ActAllow,
			sock(specs.ActErrno, arg0(specs.OpLessThan, 1)), sock(specs.ActErrno, arg0(specs.OpGreaterThan, 1)), uringDeny), "", nil, nil},
		{"ranges leaving AF_INET", seccompOf(specs.ActAllow,
			sock(specs.ActErrno, arg0(specs.OpLessThan, 1)), sock(specs.ActErrno, arg0(specs.OpGreaterThan, 2)), uringDeny), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		// A condition on another argument makes a deny rule not sure.
		{"ne unix only for SOCK_STREAM", seccompOf(specs.ActAllow,
			sock(specs.ActErrno, []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpNotEqual}, {Index: 1, Value: 1, Op: specs.OpEqualTo}}), uringDeny), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		// ...but default deny with an allow rule conditioned on it is fine.
		{"default deny, allow unix stream", seccompOf(specs.ActErrno,
			sock(specs.ActAllow, []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpEqualTo}, {Index: 1, Value: 1, Op: specs.OpEqualTo}})), "", nil, nil},
		{"default kill, no socket rule", seccompOf(specs.ActKillProcess), "", nil, nil},
		{"default deny, allow socket unconditionally", seccompOf(specs.ActErrno, sock(specs.ActAllow, nil)), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		{"default deny, allow AF_INET", seccompOf(specs.ActErrno, sock(specs.ActAllow, arg0(specs.OpEqualTo, 2))), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		{"default deny, allow le 2", seccompOf(specs.ActErrno, sock(specs.ActAllow, arg0(specs.OpLessEqual, 2))), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		{"default deny, allow masked", seccompOf(specs.ActErrno, sock(specs.ActAllow, []specs.LinuxSeccompArg{{Index: 0, Value: 0xff, ValueTwo: 1, Op: specs.OpMaskedEqual}})), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		// runc splits a rule naming one argument twice into one rule per
		// condition: allowing 1 or 2 (not "1 and 2", nothing).
		{"allow with arg0 twice", seccompOf(specs.ActErrno, sock(specs.ActAllow, []specs.LinuxSeccompArg{{Index: 0, Value: 1, Op: specs.OpEqualTo}, {Index: 0, Value: 2, Op: specs.OpEqualTo}})), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		{"deny masked is not sure", seccompOf(specs.ActAllow, sock(specs.ActErrno, []specs.LinuxSeccompArg{{Index: 0, Value: 0xffffffff, ValueTwo: 2, Op: specs.OpMaskedEqual}}), uringDeny), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		// A deny and an allow that both match: either may win.
		{"deny and allow both match", seccompOf(specs.ActAllow, sock(specs.ActErrno, arg0(specs.OpNotEqual, 1)), sock(specs.ActAllow, arg0(specs.OpEqualTo, 2)), uringDeny), "", nil, []string{RuleSeccomp, RuleSeccomp}},
		{"socketpair not covered", seccompOf(specs.ActAllow,
			specs.LinuxSyscall{Names: []string{"socket"}, Action: specs.ActErrno, Args: arg0(specs.OpNotEqual, 1)}, uringDeny), "", nil, []string{RuleSeccomp}},
		{"io_uring allowed", seccompOf(specs.ActAllow, sock(specs.ActErrno, arg0(specs.OpNotEqual, 1))), "", nil, []string{RuleSeccomp}},
		{"io_uring allowed by rule", func(s *specs.Spec) {
			s.Linux.Seccomp.Syscalls = append(s.Linux.Seccomp.Syscalls, specs.LinuxSyscall{Names: []string{"io_uring_setup"}, Action: specs.ActAllow})
		}, "", nil, []string{RuleSeccomp}},
		{"io_uring allowed for some args", func(s *specs.Spec) {
			s.Linux.Seccomp.Syscalls = append(s.Linux.Seccomp.Syscalls, specs.LinuxSyscall{Names: []string{"io_uring_setup"}, Action: specs.ActAllow, Args: arg0(specs.OpGreaterThan, 64)})
		}, "", nil, []string{RuleSeccomp}},
		{"i386 listed", func(s *specs.Spec) {
			s.Linux.Seccomp.Architectures = append(s.Linux.Seccomp.Architectures, specs.ArchX86)
		}, "", nil, []string{RuleArchitectures}},
		{"x32 listed", func(s *specs.Spec) {
			s.Linux.Seccomp.Architectures = append(s.Linux.Seccomp.Architectures, specs.ArchX32)
		}, "", nil, []string{RuleArchitectures}},
		{"no architectures: native only", func(s *specs.Spec) { s.Linux.Seccomp.Architectures = nil }, "", nil, nil},
		{"arm64 host, x86_64 listed", func(*specs.Spec) {}, "arm64", nil, []string{RuleArchitectures}},
		{"unknown host arch", func(*specs.Spec) {}, "mips", nil, []string{RuleArchitectures}},
		{"bind /run", func(s *specs.Spec) { s.Mounts[5].Source = "/run" }, "", nil, []string{RuleHostSockets}},
		{"bind under /var/run", func(s *specs.Spec) { s.Mounts[5].Source = "/var/run/docker.sock" }, "", nil, []string{RuleHostSockets}},
		{"bind /tmp/.X11-unix", func(s *specs.Spec) { s.Mounts[5].Source = "/tmp/.X11-unix/" }, "", nil, []string{RuleHostSockets}},
		{"bind host root", func(s *specs.Spec) { s.Mounts[5].Source = "/" }, "", nil, []string{RuleHostSockets}},
		{"bind /running is fine", func(s *specs.Spec) { s.Mounts[5].Source = "/running" }, "", nil, nil},
		{"bind a socket file", func(*specs.Spec) {}, "", func(p string) bool { return p == "/srv/data" }, []string{RuleHostSockets}},
		{"only binds are asked about sockets", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/run", Type: "tmpfs", Source: "/run", Options: []string{"ro"}})
		}, "", func(string) bool { return true }, []string{RuleHostSockets}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := goodSpec()
			tc.edit(s)
			arch := tc.arch
			if arch == "" {
				arch = "amd64"
			}
			r := Check(s, policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}, Options{Arch: arch, IsSocket: tc.isSocket})
			if got := rules(r, "network"); !slices.Equal(got, tc.want) {
				t.Fatalf("missing rules %v, want %v (%v)", got, tc.want, r.Missing)
			}
			_, n := r.Fields()
			if n != (len(tc.want) == 0) {
				t.Fatalf("network credited %t with missing %v", n, r.Missing)
			}
			if n && !slices.Contains(r.Credited, coverage.GapNetwork) {
				t.Fatalf("credited %v", r.Credited)
			}
		})
	}
}

func TestCheckMessages(t *testing.T) {
	s := goodSpec()
	seccompOf(specs.ActAllow, uringDeny)(s)
	s.Mounts[5].Options = []string{"rbind"}
	r := Check(s, restrictive, Options{Arch: "amd64"})
	for _, want := range []string{
		"write: mount-readonly: mount /data (type \"bind\", source \"/srv/data\") is not read-only",
		"network: seccomp: linux.seccomp lets socket(2) run with family AF_INET (2)",
	} {
		found := false
		for _, m := range r.Missing {
			found = found || strings.HasPrefix(m.String(), want)
		}
		if !found {
			t.Errorf("no message %q in %v", want, r.Missing)
		}
	}
	if got := r.MissingFor("write"); !strings.Contains(got, "/data") {
		t.Errorf("MissingFor(write) = %q", got)
	}
}

func TestCheckNilSpec(t *testing.T) {
	r := Check(nil, restrictive, Options{})
	if len(r.Credited) != 0 || len(r.Missing) != 2 {
		t.Fatalf("%+v", r)
	}
}

// FuzzCheck: any config.json that decodes gives an answer without a
// panic, and never credits a field it reports missing.
func FuzzCheck(f *testing.F) {
	good, _ := json.Marshal(goodSpec())
	f.Add(good, "/work")
	f.Add([]byte(`{"linux":{"seccomp":{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["socket"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":18446744073709551615,"op":"SCMP_CMP_GT"},{"index":0,"value":0,"op":"SCMP_CMP_LT"}]}]}}}`), "")
	f.Add([]byte(`{"mounts":[{"destination":""},{"destination":"../..","options":["rbind","rro"]}],"linux":{"resources":{"devices":[{"allow":false},{"allow":true,"major":-1}]}}}`), "/")
	f.Add([]byte(`{"process":{"capabilities":{}},"root":{"readonly":true},"linux":{}}`), "")
	f.Fuzz(func(t *testing.T, data []byte, root string) {
		var s specs.Spec
		if json.Unmarshal(data, &s) != nil {
			return
		}
		r := Check(&s, restrictive, Options{Arch: "amd64", WriteRoots: []string{root}, IsSocket: func(p string) bool { return strings.HasSuffix(p, ".sock") }})
		w, n := r.Fields()
		if w && r.MissingFor("write") != "" || n && r.MissingFor("network") != "" {
			t.Fatalf("credited with missing: %+v", r)
		}
		if !w && r.MissingFor("write") == "" || !n && r.MissingFor("network") == "" {
			t.Fatalf("not credited, nothing missing: %+v", r)
		}
	})
}

// TestCheckPIDNamespace: both fields need a PID namespace of the
// container's own and no host /proc bound in (/proc/PID/root of a host
// process leads to its writable mounts and its unix sockets).
func TestCheckPIDNamespace(t *testing.T) {
	cases := []struct {
		name string
		edit func(*specs.Spec)
	}{
		{"no pid namespace", func(s *specs.Spec) { s.Linux.Namespaces = s.Linux.Namespaces[1:] }},
		{"joined pid namespace", func(s *specs.Spec) { s.Linux.Namespaces[0].Path = "/proc/1/ns/pid" }},
		{"host /proc bound read-only", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/host/proc", Type: "bind", Source: "/proc", Options: []string{"rbind", "ro", "rro"}})
		}},
		{"a host process's root bound", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/r", Source: "/proc/1/root/", Options: []string{"bind", "ro"}})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := goodSpec()
			tc.edit(s)
			r := Check(s, restrictive, Options{Arch: "amd64"})
			for _, f := range []string{"write", "network"} {
				if got := rules(r, f); !slices.Equal(got, []string{RulePIDNamespace}) {
					t.Errorf("%s: missing rules %v, want [%s] (%v)", f, got, RulePIDNamespace, r.Missing)
				}
			}
			if w, n := r.Fields(); w || n {
				t.Errorf("credited write %v network %v without a private PID namespace", w, n)
			}
		})
	}
	// A proc mount of the container's own is no bind: allowed.
	s := goodSpec()
	s.Mounts = append(s.Mounts, specs.Mount{Destination: "/proc2", Type: "proc", Source: "proc", Options: []string{"ro"}})
	if r := Check(s, restrictive, Options{Arch: "amd64"}); len(r.Missing) != 0 {
		t.Fatalf("own proc mount: %v", r.Missing)
	}
}

// TestRuleLists: WriteRules and NetworkRules name every rule Check
// reports for the field, in the order it reports them, and nothing else.
func TestRuleLists(t *testing.T) {
	// A spec missing everything it can.
	s := goodSpec()
	s.Root.Readonly = false
	s.Linux.Namespaces = nil
	s.Linux.Resources = nil
	s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Architectures: []specs.Arch{specs.ArchX86}}
	s.Process.Capabilities.Bounding = []string{"CAP_SYS_ADMIN"}
	s.Mounts[5] = specs.Mount{Destination: "/run", Type: "bind", Source: "/run", Options: []string{"rbind"}}
	r := Check(s, restrictive, Options{Arch: "amd64"})
	for _, f := range []struct {
		name string
		list []string
	}{{"write", WriteRules}, {"network", NetworkRules}} {
		got := slices.Compact(rules(r, f.name))
		if !slices.Equal(got, f.list) {
			t.Errorf("%s: reported %v, list %v", f.name, got, f.list)
		}
	}
}
