package escapetest

// The shell ceilings' "changed since the registration" rule against a
// hostile workload (root in the sandboxed cgroup) that rewrites a file
// through the block device (threat model X4, K5). A case that documents a
// confirmed bypass FAILS until the kind is closed.

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// X4 through the block device: the rule "a file changed since the
// registration cannot be executed" rests on the inode's ctime. A write to
// the filesystem's block device changes the file's data blocks without
// touching its inode, so the ctime stays older than the registration.
// write=true leaves block devices writable (only /dev/sg*, SG_IO and NVMe
// passthrough are refused under every ceiling).
//
// The allowed file is busybox with its ELF magic broken (it cannot run,
// ENOEXEC); the sandbox writes "\x7fELF" over its first block through
// /dev/sda and runs it as a shell.
func TestAttackShellRawBlockRewrite(t *testing.T) {
	kt.Enforcer(t)
	extDir(t)
	dev := mustEnv(t, "ENFORCERD_VMTEST_EXT_DEV")
	mustExist(t, dev, "the ext4 disk's block device")
	var tool string
	prepBroken := func(t *testing.T) {
		tool = extPath(t, "busybox-blk")
		b, err := os.ReadFile("/bin/busybox")
		if err != nil {
			t.Fatal(err)
		}
		copy(b, "XXXX")
		if err := os.WriteFile(tool, b, 0o755); err != nil {
			t.Fatal(err)
		}
		unix.Sync() // data blocks allocated and clean
		time.Sleep(100 * time.Millisecond)
	}
	attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		// One probe (the entrypoint: under read_only the only process
		// that may write) runs the file, fails, rewrites it, runs it.
		args := []string{dev, tool, "7f454c46", "sh", "-c", "echo pwned"}
		return probeEffect(sb.Probe(t, "blk-rewrite-exec", args...))
	}
	cases := []kerneltest.Case{
		{Name: "X4 none: allowed file rewritten through the block device, then run", Ceiling: shellNone, Prep: prepBroken,
			Allow: allowList(func() string { return tool }), Attempt: attempt},
		{Name: "X4 read_only: file rewritten through the block device, then run", Ceiling: shellReadOnly, Prep: prepBroken, Attempt: attempt},
	}
	for i := range cases {
		cases[i].Want = kerneltest.Hooks(denial.HookBprmCheckSecurity, denial.HookFileOpen)
	}
	kt.Run(t, cases)
}
