package escapetest

// What every enforced process is denied on the host itself (threat model
// E2, E6): mounts, the kernel's helpers and settings; enforcement that
// outlives its loader; the audit path under a flood and in audit-only
// mode.

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// tmpMount mounts a small tmpfs at a fresh directory; ro bind-remounts it
// read-only at the mount (not superblock) level.
func tmpMount(t *testing.T, ro bool) string {
	t.Helper()
	d := kt.TmpPath("mnt")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("escapetest", d, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for unix.Unmount(d, unix.MNT_DETACH) == nil {
		}
	})
	if ro {
		if err := unix.Mount("", d, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func readOnly(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Flags&unix.ST_RDONLY != 0
}

func TestMounts(t *testing.T) {
	kt.Enforcer(t)
	cases := []kerneltest.Case{
		{Name: "mount tmpfs", Want: kerneltest.Hooks(denial.HookSbMount), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			d := kt.TmpPath("mnt")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Unmount(d, unix.MNT_DETACH) })
			return sb.Probe(t, "mount-tmpfs", d), func() (bool, string) {
				return strings.Contains(readAll("/proc/self/mountinfo"), d+" "), d + " mounted"
			}
		}},
		// mount_setattr(2) changes mount attributes with no LSM hook in
		// its path: a read-only bind mount (e.g. /proc/sys in a container)
		// becomes writable.
		{Name: "mount_setattr clears MOUNT_ATTR_RDONLY", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			d := tmpMount(t, true)
			return sb.Probe(t, "mount-setattr", d), func() (bool, string) {
				return !readOnly(d), d + " became writable"
			}
		}},
		// The new mount API's remount: fspick + fsconfig(RECONFIGURE).
		{Name: "fspick + fsconfig RECONFIGURE remounts read-only", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			d := tmpMount(t, false)
			return sb.Probe(t, "fspick-remount", d), func() (bool, string) {
				return readOnly(d), d + " remounted read-only"
			}
		}},
		// fsopen/fsmount: a new (detached) mount without sb_mount.
		{Name: "fsopen + fsmount a new tmpfs", Attempt: kerneltest.Op("fsmount")},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)
}

// E2 "asking a host service to spawn for it": the kernel's core dump helper
// runs as root outside every cgroup of ours. With write=true and shell=none
// the sandbox sets core_pattern to a pipe and crashes: busybox runs.
func TestCorePatternHostSpawn(t *testing.T) {
	kt.Enforcer(t)
	orig := readAll("/proc/sys/kernel/core_pattern")
	t.Cleanup(func() { _ = writeFile("/proc/sys/kernel/core_pattern", strings.TrimSpace(orig)) })
	kt.Run(t, []kerneltest.Case{{Name: "E2 core_pattern pipe helper runs outside", Ceiling: shellNone, Allow: allowList(),
		Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			f := kt.TmpPath("core-helper-ran")
			r := sb.Probe(t, "core-pattern", "|/bin/busybox touch "+f)
			return r, func() (bool, string) {
				for i := 0; i < 30; i++ {
					if _, err := os.Stat(f); err == nil {
						return true, "core_pattern helper created " + f
					}
					time.Sleep(100 * time.Millisecond)
				}
				return false, "core_pattern helper created " + f
			}
		}}})
}

// Enforcement survives the loader: a separate process loaded the programs,
// registered a cgroup and was SIGKILLed (prepare, in main_test.go, before
// this process opened any BPF object); fresh children in that cgroup were
// still denied.
func TestEnforcementSurvivesLoaderKilled(t *testing.T) {
	kt.Enforcer(t)
	if len(fx.survive.results) != 3 {
		t.Fatalf("survive probes did not run: %v", fx.survive.results)
	}
	for _, r := range fx.survive.results {
		if !r.Denied() {
			t.Errorf("BYPASS after the loader was SIGKILLed: %v, want EPERM", r)
		}
	}
	if fx.survive.killed {
		t.Errorf("BYPASS after the loader was SIGKILLed: a process outside was killed")
	}
}

// E6: a flood of denied operations: every one denied, every one counted
// (one record, the first; the kernel's tally counts them all exactly),
// enforcement intact afterwards.
func TestAuditFlood(t *testing.T) {
	e := kt.Enforcer(t)
	const n = 200000
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: tamperOnly})
	tl, err := e.Tally()
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Rotate(); err != nil {
		t.Fatal(err)
	}
	tl.Collect()
	start := time.Now()
	r := sb.Probe(t, "flood", strconv.Itoa(n))
	took := time.Since(start)
	if r.Setup != "" || r.Out != "0" {
		t.Errorf("flood of %d denied bpf() calls: %v (Out = calls not denied)", n, r)
	}
	if err := tl.Rotate(); err != nil {
		t.Fatal(err)
	}
	got := len(kt.Records(t, sb.Cg.ID))
	var counted uint64
	for _, s := range tl.Collect() {
		if s.CeilingCgroupID == sb.Cg.ID && s.Hook == denial.HookBPF {
			counted += s.Count
		}
	}
	t.Logf("flood: %d calls in %v, %d records read, %d counted", n, took.Round(time.Millisecond), got, counted)
	if counted != n || got < 1 {
		t.Errorf("counted %d denials (records read %d), want %d and a first record", counted, got, n)
	}
	if r := sb.Probe(t, "bpf-map-next-id"); !r.Denied() {
		t.Errorf("BYPASS after the flood: %v", r)
	}
}

// Audit-only: the operation is allowed and recorded as audited.
func TestAuditOnly(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: shellNone, AuditOnly: true, ExecAllow: allowList()(t)})
	f := kt.TmpPath("touched")
	if r := sb.Probe(t, "exec", "/bin/sh", "-c", "/bin/busybox touch "+f); r.Errno != 0 || r.Exit != 0 {
		t.Errorf("audit-only shell=none: exec /bin/sh: %v, want allowed", r)
	}
	if _, err := os.Stat(f); err != nil {
		t.Errorf("audit-only: side effect missing: %v", err)
	}
	kt.Expect(t, sb.Cg.ID, kerneltest.Want{Hooks: []denial.Hook{denial.HookBprmCheckSecurity}, Audited: true})

	sb2 := kt.Sandbox(t, "case")
	sb2.Register(t, entry.Entry{Ceiling: tamperOnly, AuditOnly: true})
	if r := sb2.Probe(t, "bpf-map-next-id"); r.Errno != 0 {
		t.Errorf("audit-only: bpf(): %v, want allowed", r)
	}
	kt.Expect(t, sb2.Cg.ID, kerneltest.Want{Hooks: []denial.Hook{denial.HookBPF}, Audited: true})
}

// The host itself: its network configuration, its clock, and the usermode
// helpers the kernel runs outside every sandbox (module autoload).
func TestHostStateOutside(t *testing.T) {
	kt.Enforcer(t)
	kt.Run(t, []kerneltest.Case{
		{Name: "E2 interface flags via an AF_UNIX socket (CAP_NET_ADMIN)", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookCapable), Attempt: kerneltest.Op("ifflags")},
		{Name: "E2 set the clock (CAP_SYS_TIME)", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookCapable), Attempt: kerneltest.Op("settime")},
		// /dev/kmsg is a device off the allow list: its open is refused
		// first (D1); a descriptor passed in meets the kmsg rule at the
		// write (TestHostDevices).
		{Name: "E6 write a line into the kernel log", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleHostDevice), Attempt: kerneltest.Op("write", "/dev/kmsg", "escapetest: forged kernel log line")},
		// The kernel ignores a failed autoload (socket() still says
		// EAFNOSUPPORT): judged by the helper not running and the record.
		{Name: "E2 module autoload runs modprobe outside", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookKernelModuleRequest), Nested: true,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				marker := fakeModprobe(t, "/bin/busybox touch %s")
				// AF_ALG is a module in the guest kernels: socket()
				// asks for "net-pf-38".
				r := sb.Probe(t, "afsock", "38")
				return r, func() (bool, string) {
					// The helper runs asynchronously; give it a moment.
					for i := 0; i < 50; i++ {
						if _, err := os.Stat(marker); err == nil {
							return true, "modprobe helper ran outside the sandbox"
						}
						time.Sleep(20 * time.Millisecond)
					}
					return false, "helper did not run"
				}
			}},
	})
}
