package escapetest

// Kernel module autoload reached by a hostile workload (root in the
// sandboxed cgroup) through requests the kernel makes on its behalf in
// kernel threads (threat model K9). A case that documents a confirmed
// bypass FAILS until the kind is closed.

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// K9 through a kernel thread: the caller-context request_module is
// refused (and its failure ignored by the crypto API), but an unknown
// template "T(sha256)" is then probed by the crypto manager in a kthread
// (cryptomgr_probe, root cgroup), which asks for "crypto-T": modprobe runs
// as root outside. Reached without a socket: KEYCTL_DH_COMPUTE's KDF name.
func TestAttackModuleAutoloadKthread(t *testing.T) {
	kt.Enforcer(t)
	attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		marker := fakeModprobe(t, "echo \"$@\" >> %s")
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

// K9 through a crypto name too long for a module name: __request_module
// returns ENAMETOOLONG for "crypto-NAME" of MODULE_NAME_LEN (56) bytes or
// more before calling the kernel_module_request hook, so the sandbox's own
// (caller-context) request never reaches enforcerd and nothing is tainted.
// The crypto manager then probes "hmac(hmac(...(T(sha256))...))" level by
// level in cryptomgr_probe kthreads, whose shorter requests
// ("crypto-hmac(...)", "crypto-T(sha256)", "crypto-T") are untainted:
// modprobe runs as root outside, under every ceiling.
func TestAttackModuleAutoloadLongCryptoName(t *testing.T) {
	kt.Enforcer(t)
	attemptN := func(nest int) func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			marker := fakeModprobe(t, "echo \"$@\" >> %s")
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
