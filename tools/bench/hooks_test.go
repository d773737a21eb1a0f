package bench

import (
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/enforcer"
)

// TestKindsByHook reads hooks by their names and sections, once per kind,
// from the "closed by" column only.
func TestKindsByHook(t *testing.T) {
	points := []enforcer.AttachPoint{
		{Hook: "file_open", Section: "lsm/file_open"},
		{Hook: "cgroup/connect4", Section: "cgroup/connect4"},
		{Hook: "fexit/vfs_rename", Section: "fexit/vfs_rename"},
	}
	md := "| code | kind | closed by | tests |\n|---|---|---|---|\n" +
		"| W2 | truncation: `file_open` in the kind column does not count | `lsm/file_open`, `file_open` | `file_open` in tests |\n" +
		"| N8 | endpoints (a\\|b) | `cgroup/connect4` and `fexit/vfs_rename` | x |\n" +
		"| R4 | not a hook | `nothing` | `file_open` |\n" +
		"not a row: | W9 | `file_open` |\n"
	got := KindsByHook([]byte(md), points)
	want := map[string]string{"file_open": "W2", "cgroup/connect4": "N8", "fexit/vfs_rename": "N8"}
	for h, k := range want {
		if strings.Join(got[h], " ") != k {
			t.Errorf("%s: kinds %v, want %s", h, got[h], k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("kinds %v, want only %v", got, want)
	}
}

// TestHookTable: one row per program, its kinds, and its cost per run in
// (b) and (c2) as the range over the operations profiled.
func TestHookTable(t *testing.T) {
	d := profiled(icountDoc(), OpStat, OpTCPRR)
	d.Profile = append(d.Profile, ProfileRow{Phase: phaseProfB, Op: OpOpenRead, Program: "lsm_inode_permission", RunsPerOp: 13, NsPerRun: 1200})
	points := []enforcer.AttachPoint{
		{Hook: "inode_permission", Section: "lsm/inode_permission", PinName: "lsm_inode_permission"},
		{Hook: "sb_mount", Section: "lsm/sb_mount", PinName: "lsm_sb_mount", Optional: true},
	}
	var b strings.Builder
	HookTable(&b, points, map[string][]string{"inode_permission": {"E2", "K1"}}, []*Doc{d})
	for _, s := range []string{
		"| hook | program | kinds | icount/6.12 (b) | icount/6.12 (c2) |",
		"| `inode_permission` | lsm_inode_permission | E2 K1 | 90–1,200 | – |",
		"| `sb_mount` | lsm_sb_mount (where the kernel has it) | **none** | – | – |",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
}
