package nri

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
	"golang.org/x/sys/unix"
)

// conformingCtr is an NRI container whose spec gives every write and
// network rule NRI can show: its own PID, mount and network namespaces,
// read-only mounts (devpts excepted), a device cgroup for harmless
// character devices only, a seccomp policy that allows socket and
// socketpair for AF_UNIX only and denies io_uring_setup.
func conformingCtr() *api.Container {
	dev := func(allow bool, typ string, major, minor int64, access string) *api.LinuxDeviceCgroup {
		d := &api.LinuxDeviceCgroup{Allow: allow, Type: typ, Access: access}
		if major >= 0 {
			d.Major = &api.OptionalInt64{Value: major}
		}
		if minor >= 0 {
			d.Minor = &api.OptionalInt64{Value: minor}
		}
		return d
	}
	return &api.Container{
		Id: "c1", Name: "agent", Pid: 4242,
		Mounts: []*api.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "ro"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "ro"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "newinstance"}},
			{Destination: "/etc/hosts", Type: "bind", Source: "/var/lib/k/hosts", Options: []string{"rbind", "ro", "rro"}},
		},
		Linux: &api.LinuxContainer{
			Namespaces: []*api.LinuxNamespace{{Type: "pid"}, {Type: "mount"}, {Type: "network"}, {Type: "ipc"}},
			Resources: &api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{
				dev(false, "", -1, -1, "rwm"), dev(true, "c", 1, 3, "rwm"), dev(true, "c", 136, -1, "rwm"),
			}},
			SeccompPolicy: &api.LinuxSeccomp{
				DefaultAction: "SCMP_ACT_ERRNO",
				Architectures: []string{"SCMP_ARCH_X86_64"},
				Syscalls: []*api.LinuxSyscall{
					{Names: []string{"read", "write", "execve"}, Action: "SCMP_ACT_ALLOW"},
					{Names: []string{"socket", "socketpair"}, Action: "SCMP_ACT_ALLOW", Args: []*api.LinuxSeccompArg{{Index: 0, Value: unix.AF_UNIX, Op: "SCMP_CMP_EQ"}}},
				},
			},
		},
	}
}

// fakeProc writes procRoot/PID/status with the given CapBnd (the other
// sets 0) and procRoot/PID/mountinfo whose root mount has rootOpts.
func fakeProc(t *testing.T, pid, capBnd, rootOpts string) string {
	t.Helper()
	root := t.TempDir()
	d := filepath.Join(root, pid)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	status := "Name:\trunc:[2:INIT]\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t" + capBnd + "\nCapAmb:\t0000000000000000\n"
	mi := "600 550 0:52 / / " + rootOpts + ",relatime master:1 - overlay overlay rw,lowerdir=/l\n601 600 0:53 / /proc ro,nosuid - proc proc rw\n"
	if err := os.WriteFile(filepath.Join(d, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "mountinfo"), []byte(mi), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestSpecLayerFromNRI: the spec layer NRI's objects and the init's /proc
// give, on amd64 (the seccomp policy names the x86_64 ABI).
func TestSpecLayerFromNRI(t *testing.T) {
	if !strings.HasSuffix(nativeArchForTest(), "X86_64") {
		t.Skip("the fake seccomp policy is for amd64")
	}
	const noSysAdmin, withSysAdmin = "00000000a80425fb", "00000000a82425fb" // Docker's default set; bit 21 added
	cases := []struct {
		name                 string
		edit                 func(*api.Container)
		capBnd, rootOpts     string
		noProc               bool
		write, network       bool
		writeWhy, networkWhy string
	}{
		{"conforming", nil, noSysAdmin, "ro", false, true, true, "", ""},
		{"root read-write", nil, noSysAdmin, "rw", false, false, true, "root-readonly", ""},
		{"CAP_SYS_ADMIN in the bounding set", nil, withSysAdmin, "ro", false, false, false, "cap-sys-admin", "cap-sys-admin"},
		{"no /proc of the init", nil, "", "", true, false, false, "cannot read the init's capabilities", "cannot read the init's capabilities"},
		{"no seccomp policy from the runtime", func(c *api.Container) { c.Linux.SeccompPolicy = nil }, noSysAdmin, "ro", false, true, false, "", "seccomp: linux.seccomp is absent"},
		{"the pod's network namespace joined", func(c *api.Container) { c.Linux.Namespaces[2].Path = "/var/run/netns/cni-1" }, noSysAdmin, "ro", false, true, false, "", "network-namespace"},
		{"host PID namespace", func(c *api.Container) { c.Linux.Namespaces = c.Linux.Namespaces[1:] }, noSysAdmin, "ro", false, false, false, "pid-namespace", "pid-namespace"},
		{"read-write bind mount", func(c *api.Container) { c.Mounts[3].Options = []string{"rbind", "rw"} }, noSysAdmin, "ro", false, false, true, "mount /etc/hosts", ""},
		{"block device writable", func(c *api.Container) {
			c.Linux.Resources.Devices = append(c.Linux.Resources.Devices, &api.LinuxDeviceCgroup{Allow: true, Type: "b", Major: &api.OptionalInt64{Value: 8}, Access: "rw"})
		}, noSysAdmin, "ro", false, false, true, "devices", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctr := conformingCtr()
			if tc.edit != nil {
				tc.edit(ctr)
			}
			proc := t.TempDir()
			if !tc.noProc {
				proc = fakeProc(t, "4242", tc.capBnd, tc.rootOpts)
			}
			s := specLayer(ctr, nil, proc, int(ctr.GetPid()))
			if s.Write != tc.write || s.Network != tc.network {
				t.Fatalf("write %v network %v, want %v %v: %+v", s.Write, s.Network, tc.write, tc.network, s)
			}
			if !strings.Contains(s.WriteMissing, tc.writeWhy) || (tc.writeWhy == "") != (s.WriteMissing == "") {
				t.Errorf("write missing %q, want it to name %q", s.WriteMissing, tc.writeWhy)
			}
			if !strings.Contains(s.NetworkMissing, tc.networkWhy) || (tc.networkWhy == "") != (s.NetworkMissing == "") {
				t.Errorf("network missing %q, want it to name %q", s.NetworkMissing, tc.networkWhy)
			}
		})
	}
}

// TestSpecLayerDryRun: at CreateContainer (no init yet) the capabilities
// and the root's flag are taken as given; what NRI shows is still judged.
func TestSpecLayerDryRun(t *testing.T) {
	if !strings.HasSuffix(nativeArchForTest(), "X86_64") {
		t.Skip("the fake seccomp policy is for amd64")
	}
	s := specLayer(conformingCtr(), nil, "/nonexistent", 0)
	if !s.Write || !s.Network {
		t.Fatalf("dry run of a conforming container: %+v", s)
	}
	ctr := conformingCtr()
	ctr.Linux.Namespaces[2].Path = "/var/run/netns/cni-1"
	if s := specLayer(ctr, nil, "/nonexistent", 0); s.Network || !strings.Contains(s.NetworkMissing, "network-namespace") {
		t.Fatalf("dry run, joined network namespace: %+v", s)
	}
}

// TestProcRootReadonly: the last root mount counts (runc's read-only
// remount of the root is the one the init sees), by its own flag.
func TestProcRootReadonly(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "7"), 0o755)
	os.WriteFile(filepath.Join(root, "7", "mountinfo"), []byte("1 0 0:1 / / rw - ext4 /dev/sda rw\n2 1 0:2 / / ro,nosuid - overlay o rw\n"), 0o644)
	if ro, err := procRootReadonly(root, 7); err != nil || !ro {
		t.Fatalf("ro %v err %v, want true", ro, err)
	}
	os.WriteFile(filepath.Join(root, "7", "mountinfo"), []byte("1 0 0:1 / /proc rw - proc proc rw\n"), 0o644)
	if _, err := procRootReadonly(root, 7); err == nil {
		t.Fatalf("no root mount: no error")
	}
}

func nativeArchForTest() string {
	if runtime.GOARCH == "amd64" {
		return "SCMP_ARCH_X86_64"
	}
	return runtime.GOARCH
}

// TestHandlersSendTheSpecLayer: CreateContainer's dry run sends the spec
// layer of what NRI shows (capabilities and root taken as given), and
// StartContainer's registration the one with the init's capabilities and
// root mount read from ProcRoot: here CAP_SYS_ADMIN in the bounding set,
// so neither field is credited and the registration says why.
func TestHandlersSendTheSpecLayer(t *testing.T) {
	if !strings.HasSuffix(nativeArchForTest(), "X86_64") {
		t.Skip("the fake seccomp policy is for amd64")
	}
	rs := newRuntime(t, "containerd")
	f := newFake()
	proc := fakeProc(t, "4242", "00000000a82425fb", "ro")
	runPlugin(t, rs, f, nil, func(o *Options) { o.ProcRoot = proc })
	ann := map[string]string{"enforcerd.io/ceiling": "network=false,write=false"}
	c := conformingCtr()
	c.PodSandboxId, c.State = "pod", api.ContainerState_CONTAINER_CREATED
	c.Args, c.Env = []string{"/bin/agent"}, []string{"PATH=/bin"}
	if _, err := rs.create(pod("agents", ann), c); err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rs.start(pod("agents", ann), c); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.checked) != 1 || f.checked[0].Spec == nil || !f.checked[0].Spec.Write || !f.checked[0].Spec.Network {
		t.Fatalf("CreateContainer's check: %+v, want a spec layer crediting both fields", f.checked)
	}
	reg, ok := f.registered["c1"]
	if !ok || reg.Spec == nil {
		t.Fatalf("StartContainer registered %+v, want c1 with a spec layer", f.registered)
	}
	if reg.Spec.Write || reg.Spec.Network || !strings.Contains(reg.Spec.WriteMissing, "cap-sys-admin") || !strings.Contains(reg.Spec.NetworkMissing, "cap-sys-admin") {
		t.Fatalf("StartContainer's spec layer %+v, want neither field, both naming cap-sys-admin", reg.Spec)
	}
}
