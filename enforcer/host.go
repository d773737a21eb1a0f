package enforcer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// ensureBPFFS makes sure dir's parent is on a bpf filesystem, mounting bpffs
// at /sys/fs/bpf when nothing is mounted there. Errors: the parent is on
// another filesystem, or the mount fails.
func ensureBPFFS(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	var st unix.Statfs_t
	if err := unix.Statfs(parent, &st); err == nil && uint32(st.Type) == unix.BPF_FS_MAGIC {
		return nil
	}
	if parent == "/sys/fs/bpf" {
		if err := unix.Mount("bpf", parent, "bpf", 0, "mode=0700"); err != nil {
			return fmt.Errorf("mount bpffs at %s: %w", parent, err)
		}
		return nil
	}
	return fmt.Errorf("pin dir %s: %s is not on a bpf filesystem", dir, parent)
}

// lsmParams returns the parameter count of bpf_lsm_<hook> in the kernel's
// BTF, or -1 when unknown.
func lsmParams(kernel *btf.Spec, hook string) int {
	if kernel == nil {
		return -1
	}
	var fn *btf.Func
	if err := kernel.TypeByName("bpf_lsm_"+hook, &fn); err != nil {
		return -1
	}
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok {
		return -1
	}
	return len(proto.Params)
}

// kernelHas reports whether the kernel's BTF has what p attaches to: the
// function bpf_lsm_<hook> of an LSM hook, or the kernel function of a
// tracing program.
func kernelHas(kernel *btf.Spec, p program) bool {
	fn := p.target
	if p.isLSM() {
		fn = "bpf_lsm_" + p.target
	}
	_, err := kernel.AnyTypeByName(fn)
	return err == nil
}

// lsmUsable reports why BPF LSM programs would enforce nothing: "bpf" must
// be in the active LSM list (if it is not, programs load and attach but are
// never called, a case the VM harness's positive control guards against).
func lsmUsable() error {
	active, err := ActiveLSMs()
	if err != nil {
		return err
	}
	for _, l := range active {
		if l == "bpf" {
			return nil
		}
	}
	return fmt.Errorf(`"bpf" is not in the active LSM list (%s); boot with lsm=...,bpf`, strings.Join(active, ","))
}

// ActiveLSMs reads the kernel's active LSM list, in its order, from
// /sys/kernel/security/lsm, mounting securityfs first if nothing is mounted
// at /sys/kernel/security. Errors: the file cannot be read.
func ActiveLSMs() ([]string, error) {
	const dir = "/sys/kernel/security"
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && uint32(st.Type) != unix.SECURITYFS_MAGIC {
		_ = unix.Mount("securityfs", dir, "securityfs", 0, "")
	}
	b, err := os.ReadFile(dir + "/lsm")
	if err != nil {
		return nil, fmt.Errorf("active LSM list: %w", err)
	}
	return strings.Split(strings.TrimSpace(string(b)), ","), nil
}
