package escapetest

// Second attack round: bypass attempts of a hostile workload (root in the
// sandboxed cgroup). A case that documents a confirmed bypass FAILS until
// the kind is closed.

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/testing/kerneltest"
	"github.com/enforcerd/enforcerd/internal/testing/probe"
	"github.com/enforcerd/enforcerd/policy"
)

// E4 through the session autogroup: /proc/self/autogroup is the sandbox's
// own /proc/<pid> entry, but the nice level written there is that of the
// session's autogroup (a scheduling group), which every process of the
// session shares, inside the sandbox or not. A session leader outside
// (setsid: its own autogroup) starts a process that stays outside, then
// moves itself into the sandbox and execs the probe (the entrypoint).
func TestAttack2AutogroupNice(t *testing.T) {
	kt.Enforcer(t)
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		t.Fatalf("no /proc/self/autogroup (CONFIG_SCHED_AUTOGROUP): %v", err)
	}
	attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		pidFile := kt.TmpPath("outside-pid")
		script := "/bin/busybox sleep 30 </dev/null >/dev/null 2>&1 & echo $! > " + pidFile + "; echo $$ > /proc/self/fd/3/cgroup.procs && exec " + kt.Self()
		cmd := exec.Command("/bin/busybox", "sh", "-c", script)
		cmd.Env = append(probe.Env("autogroup-nice", "19"), "PATH=/bin:/sbin:/usr/bin")
		cmd.ExtraFiles = []*os.File{sb.Dir}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.Output()
		r, perr := probe.ParseResult(out)
		if perr != nil {
			t.Fatalf("autogroup probe: no result (%v): %q", err, out)
		}
		pb, _ := os.ReadFile(pidFile)
		pid := strings.TrimSpace(string(pb))
		if pid == "" {
			t.Fatal("no outside pid")
		}
		t.Cleanup(func() {
			if n, err := strconv.Atoi(pid); err == nil {
				_ = unix.Kill(n, unix.SIGKILL)
			}
		})
		return r, func() (bool, string) {
			s := strings.TrimSpace(readAll("/proc/" + pid + "/autogroup"))
			return strings.Contains(s, "nice 19"), "outside process " + pid + " autogroup: " + s
		}
	}
	kt.Run(t, []kerneltest.Case{{Name: "E4: nice 19 on the session autogroup shared with a process outside", Ceiling: tamperOnly, Attempt: attempt}})
}

// K9 through a crypto name too long for a module name: __request_module
// returns ENAMETOOLONG for "crypto-NAME" of MODULE_NAME_LEN (56) bytes or
// more before calling the kernel_module_request hook, so the sandbox's own
// (caller-context) request never reaches enforcerd and nothing is tainted.
// The crypto manager then probes "hmac(hmac(...(T(sha256))...))" level by
// level in cryptomgr_probe kthreads, whose shorter requests
// ("crypto-hmac(...)", "crypto-T(sha256)", "crypto-T") are untainted:
// modprobe runs as root outside, under every ceiling.
func TestAttack2ModuleAutoloadLongCryptoName(t *testing.T) {
	kt.Enforcer(t)
	attemptN := func(nest int) func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
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
			name := strings.Repeat("hmac(", nest) + tmpl + "(sha256)" + strings.Repeat(")", nest)
			r := sb.Probe(t, "keyctl-dh-kdf", name)
			return r, func() (bool, string) {
				for i := 0; i < 150; i++ {
					if b, err := os.ReadFile(marker); err == nil && strings.Contains(string(b), "crypto-"+tmpl) {
						return true, fmt.Sprintf("modprobe helper ran outside the sandbox: %q", strings.TrimSpace(string(b)))
					}
					time.Sleep(20 * time.Millisecond)
				}
				b, _ := os.ReadFile(marker)
				return false, fmt.Sprintf("helper did not run for crypto-%s (marker: %q)", tmpl, string(b))
			}
		}
	}
	strictest := policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellNone}
	kt.Run(t, []kerneltest.Case{
		{Name: "K9 long nested crypto name (KEYCTL_DH_COMPUTE KDF) runs modprobe outside", Ceiling: tamperOnly, Nested: true, Attempt: attemptN(12)},
		{Name: "K9 long nested crypto name under network=false,write=false,shell=none", Ceiling: strictest, Allow: allowList(), Nested: true, Attempt: attemptN(12)},
		// "crypto-" + 6 x "hmac(" + "escN(sha256)" + 6 x ")" is >= 56 bytes:
		// just over MODULE_NAME_LEN, the smallest such name.
		{Name: "K9 crypto name just over MODULE_NAME_LEN under network=false,write=false,shell=none", Ceiling: strictest, Allow: allowList(), Nested: true, Attempt: attemptN(6)},
	})
}

// K10 through NETLINK_AUDIT: CAP_AUDIT_WRITE is on the capability allow
// list, and with network=true AF_NETLINK sockets are allowed: a user
// message (AUDIT_USER_AVC passes even with audit disabled) goes to the
// host's audit trail, or with no auditd into the kernel log (kauditd
// prints held records).
func TestAttack2AuditUserMessage(t *testing.T) {
	kt.Enforcer(t)
	attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		marker := fmt.Sprintf("escapetest-audit-%d", kt.Seq())
		r := sb.Probe(t, "audit-user-msg", marker)
		return r, func() (bool, string) {
			for i := 0; i < 50; i++ {
				buf := make([]byte, 1<<20)
				n, err := unix.Klogctl(3, buf) // SYSLOG_ACTION_READ_ALL
				if err == nil {
					for _, l := range strings.Split(string(buf[:n]), "\n") {
						if strings.Contains(l, marker) {
							return true, "kernel log: " + strings.TrimSpace(l)
						}
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			return false, "marker " + marker + " in the kernel log"
		}
	}
	kt.Run(t, []kerneltest.Case{
		{Name: "K10 AUDIT_USER_AVC over NETLINK_AUDIT reaches the kernel log", Ceiling: tamperOnly, Attempt: attempt},
	})
}
