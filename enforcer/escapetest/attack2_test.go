package escapetest

// Second attack round: bypass attempts of a hostile workload (root in the
// sandboxed cgroup). A case that documents a confirmed bypass FAILS until
// the kind is closed.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/policy"
)

// E4 through the session autogroup: /proc/self/autogroup is the sandbox's
// own /proc/<pid> entry, but the nice level written there is that of the
// session's autogroup (a scheduling group), which every process of the
// session shares, inside the sandbox or not. A session leader outside
// (setsid: its own autogroup) starts a process that stays outside, then
// moves itself into the sandbox and execs the probe (the entrypoint).
func TestAttack2AutogroupNice(t *testing.T) {
	kernel(t)
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		t.Fatalf("no /proc/self/autogroup (CONFIG_SCHED_AUTOGROUP): %v", err)
	}
	attempt := func(t *testing.T, dir *os.File) (result, effect) {
		pidFile := tmpPath("outside-pid")
		b, _ := json.Marshal([]string{"19"})
		script := "/bin/busybox sleep 30 </dev/null >/dev/null 2>&1 & echo $! > " + pidFile + "; echo $$ > /proc/self/fd/3/cgroup.procs && exec " + shared.self
		cmd := exec.Command("/bin/busybox", "sh", "-c", script)
		cmd.Env = []string{envOp + "=autogroup-nice", envArgs + "=" + string(b), "PATH=/bin:/sbin:/usr/bin"}
		cmd.ExtraFiles = []*os.File{dir}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.Output()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var r result
		if json.Unmarshal([]byte(lines[len(lines)-1]), &r) != nil {
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
	runCases(t, []tcase{{name: "E4: nice 19 on the session autogroup shared with a process outside", ceiling: tamperOnly, attempt: attempt}})
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
	kernel(t)
	attemptN := func(nest int) func(t *testing.T, dir *os.File) (result, effect) {
		return func(t *testing.T, dir *os.File) (result, effect) {
			marker := tmpPath("modprobe-ran")
			helper := tmpPath("modprobe.sh")
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
			tmpl := fmt.Sprintf("esc%d", seq.Add(1))
			name := strings.Repeat("hmac(", nest) + tmpl + "(sha256)" + strings.Repeat(")", nest)
			r := probe(t, dir, nil, "keyctl-dh-kdf", name)
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
	runCases(t, []tcase{
		{name: "K9 long nested crypto name (KEYCTL_DH_COMPUTE KDF) runs modprobe outside", ceiling: tamperOnly, nested: true, attempt: attemptN(12)},
		{name: "K9 long nested crypto name under network=false,write=false,shell=none", ceiling: strictest, allow: allowList(), nested: true, attempt: attemptN(12)},
		// "crypto-" + 6 x "hmac(" + "escN(sha256)" + 6 x ")" is >= 56 bytes:
		// just over MODULE_NAME_LEN, the smallest such name.
		{name: "K9 crypto name just over MODULE_NAME_LEN under network=false,write=false,shell=none", ceiling: strictest, allow: allowList(), nested: true, attempt: attemptN(6)},
	})
}

// K10 through NETLINK_AUDIT: CAP_AUDIT_WRITE is on the capability allow
// list, and with network=true AF_NETLINK sockets are allowed: a user
// message (AUDIT_USER_AVC passes even with audit disabled) goes to the
// host's audit trail, or with no auditd into the kernel log (kauditd
// prints held records).
func TestAttack2AuditUserMessage(t *testing.T) {
	kernel(t)
	attempt := func(t *testing.T, dir *os.File) (result, effect) {
		marker := fmt.Sprintf("escapetest-audit-%d", seq.Add(1))
		r := probe(t, dir, nil, "audit-user-msg", marker)
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
	runCases(t, []tcase{
		{name: "K10 AUDIT_USER_AVC over NETLINK_AUDIT reaches the kernel log", ceiling: tamperOnly, attempt: attempt},
	})
}
