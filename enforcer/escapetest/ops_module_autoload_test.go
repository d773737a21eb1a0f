package escapetest

// Probe ops of the module autoload cases (module_autoload_test.go).

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	// keyctl-dh-kdf NAME: KEYCTL_DH_COMPUTE with a KDF hash NAME. The
	// crypto API looks NAME up before any key is read: an unknown
	// template "T(sha256)" makes the crypto manager probe T in a kernel
	// thread, which asks for module "crypto-T". The call itself fails
	// whatever happens (no such keys): the effect is the helper running.
	probe.Register("keyctl-dh-kdf", func(r *probe.Result, a []string) {
		const keyctlDHCompute = 23
		name := append([]byte(a[0]), 0)
		params := [3]int32{1, 2, 3}
		var kdf struct {
			hashname     uintptr
			otherinfo    uintptr
			otherinfolen uint32
			spare        [8]uint32
		}
		kdf.hashname = uintptr(unsafe.Pointer(&name[0]))
		out := make([]byte, 32)
		_, _, e := unix.Syscall6(unix.SYS_KEYCTL, keyctlDHCompute, uintptr(unsafe.Pointer(&params[0])),
			uintptr(unsafe.Pointer(&out[0])), uintptr(len(out)), uintptr(unsafe.Pointer(&kdf)), 0)
		if e == unix.EOPNOTSUPP {
			r.Setup = "KEYCTL_DH_COMPUTE is not built in (CONFIG_KEY_DH_OPERATIONS)"
			return
		}
		// ENOENT/ENOKEY/...: the lookup happened; the call's own result
		// says nothing about the helper.
		r.Out = unix.ErrnoName(e)
	})
}
