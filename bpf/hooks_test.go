package bpf_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/enforcer"
)

// TestHookTableMatchesBPFEnum: every value of enum hook_id in
// enforcerd.h has an entry in enforcer's hook table, in the same order, with the
// kernel's hook name: a record's hook id can never be misnamed.
func TestHookTableMatchesBPFEnum(t *testing.T) {
	src, err := os.ReadFile("enforcerd.h")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)enum hook_id \{(.*?)\};`).FindSubmatch(src)
	if body == nil {
		t.Fatal("enum hook_id not found in bpf/enforcerd.h")
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*HOOK_(\w+)`).FindAllSubmatch(body[1], -1) {
		names = append(names, string(m[1]))
	}
	if len(names) != len(enforcer.AllHooks) {
		t.Fatalf("enum hook_id has %d values, enforcer.AllHooks %d", len(names), len(enforcer.AllHooks))
	}
	if next := enforcer.Hook(len(names) + 1); !strings.HasPrefix(next.String(), "hook(") {
		t.Fatalf("enforcer names hook %d (%s), which enum hook_id does not have", next, next)
	}
	// Where the record's hook is the LSM hook of the same name, the names
	// must agree; the rest are named after the hook that produces them.
	aliases := map[string]string{
		"TTY_IOCTL": "file_ioctl", "BPFFS_UNLINK": "inode_unlink", "KERNEL_SETTING": "inode_permission",
		"TASK_SETSCHED": "task_setscheduler", "PROC_WRITE": "inode_permission", "KMSG_WRITE": "file_permission",
		"IPC_ASSOCIATE": "shm_associate",
	}
	for i, n := range names {
		h := enforcer.Hook(i + 1)
		want := strings.ToLower(n)
		if strings.HasPrefix(n, "CGROUP_") {
			want = "cgroup/" + strings.ToLower(strings.TrimPrefix(n, "CGROUP_"))
		}
		if a, ok := aliases[n]; ok {
			want = a
		}
		if h.String() != want {
			t.Errorf("hook %d: HOOK_%s is named %q in Go, want %q", h, n, h.String(), want)
		}
		if h.Operation() == "unknown" {
			t.Errorf("hook %d (HOOK_%s) has no operation", h, n)
		}
	}
}
