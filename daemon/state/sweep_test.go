package state_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/state"
)

func TestSweepTempRemovesOnlyInterruptedSaves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := state.Save(path, []state.Container{{ID: "a", Cgroup: "/a", CgroupID: 7}}); err != nil {
		t.Fatal(err)
	}
	keep := []string{"state.json", "other.json", ".other.json.tmp-1", "state.json.tmp-2"}
	for _, n := range keep[1:] {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{".state.json.tmp-123", ".state.json.tmp-456"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{torn"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := state.SweepTemp(path)
	if err != nil || len(removed) != 2 {
		t.Fatalf("SweepTemp = %v, %v; want the 2 temporary files", removed, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(keep) {
		t.Fatalf("left %v, want %v", ents, keep)
	}
	for _, n := range keep {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if cs, err := state.Load(path); err != nil || len(cs) != 1 {
		t.Fatalf("state after sweep = %v, %v", cs, err)
	}
}
