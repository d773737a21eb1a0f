package escapetest

// Attack round: bypass attempts of a hostile workload (root in the
// sandboxed cgroup). Tri-state cases as everywhere in this package: a case
// that documents a confirmed bypass FAILS until the kind is closed.

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/testing/kerneltest"
	"github.com/enforcerd/enforcerd/internal/testing/probe"
	"github.com/enforcerd/enforcerd/policy"
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
		cases[i].Want = kerneltest.Hooks(enforcer.HookBprmCheckSecurity, enforcer.HookFileOpen)
	}
	kt.Run(t, cases)
}

// N4 for AF_UNIX stream sockets connected outside and passed in: the
// connected peer decides at socket_sendmsg. Every way of writing into the
// socket must reach that decision (on 6.1, sendfile and splice use
// unix_stream_sendpage, which has no sendmsg hook).
func TestAttackInheritedOutsideUnixStream(t *testing.T) {
	kt.Enforcer(t)
	unixPair := func(t *testing.T) sockPair {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		return sockPair{peer: fds[0], probe: fds[1]}
	}
	sendHooks := hooks(enforcer.HookSocketSendmsg, enforcer.HookFilePermission)
	var cases []kerneltest.Case
	for _, o := range []struct{ name, op string }{
		{"write", "fd-write"},
		{"sendfile file to socket", "fd-sendfile"},
		{"splice pipe to socket", "fd-splice-out"},
		{"io_uring IORING_OP_WRITE", "fd-uring-write"},
		{"io_uring IORING_OP_SEND", "fd-uring-send"},
	} {
		cases = append(cases, kerneltest.Case{Name: "N4 inherited outside unix stream " + o.name, Ceiling: netOff,
			Attempt: sockOp(unixPair, o.op, effPeerGot), Want: kerneltest.Want{Hooks: sendHooks}})
	}
	kt.Run(t, cases)
}

// K9 through a kernel thread: the caller-context request_module is
// refused (and its failure ignored by the crypto API), but an unknown
// template "T(sha256)" is then probed by the crypto manager in a kthread
// (cryptomgr_probe, root cgroup), which asks for "crypto-T": modprobe runs
// as root outside. Reached without a socket: KEYCTL_DH_COMPUTE's KDF name.
func TestAttackModuleAutoloadKthread(t *testing.T) {
	kt.Enforcer(t)
	attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		marker := kt.TmpPath("modprobe-ran")
		helper := kt.TmpPath("modprobe.sh")
		if err := os.WriteFile(helper, []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile("/proc/sys/kernel/modprobe")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("/proc/sys/kernel/modprobe", []byte(helper), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile("/proc/sys/kernel/modprobe", old, 0o644) })
		tmpl := fmt.Sprintf("esc%d", kt.Seq())
		r := sb.Probe(t, "keyctl-dh-kdf", tmpl+"(sha256)")
		return r, func() (bool, string) {
			for i := 0; i < 100; i++ {
				if b, err := os.ReadFile(marker); err == nil && strings.Contains(string(b), "crypto-"+tmpl) {
					return true, fmt.Sprintf("modprobe helper ran outside the sandbox: %q", strings.TrimSpace(string(b)))
				}
				time.Sleep(20 * time.Millisecond)
			}
			return false, "helper did not run"
		}
	}
	strictest := policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellNone}
	kt.Run(t, []kerneltest.Case{
		{Name: "K9 crypto template probe (KEYCTL_DH_COMPUTE KDF) runs modprobe outside", Ceiling: tamperOnly, Nested: true, Attempt: attempt},
		{Name: "K9 crypto template probe under network=false,write=false,shell=none", Ceiling: strictest, Allow: allowList(), Nested: true, Attempt: attempt},
	})
}
