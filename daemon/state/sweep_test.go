package state_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/policy"
)

func TestSweepTempRemovesOnlyInterruptedSaves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := state.Save(path, []state.Container{{ID: "a", Cgroup: "/a", CgroupID: 7, Fingerprint: "f",
		Session: policy.DefaultSession(), Ceiling: policy.DefaultSession(), Kernel: policy.DefaultSession().Kernel(),
		Activation: state.ActivationImmediate, State: state.StateActive}}); err != nil {
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

func TestIntentRoundTripAndCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if _, ok, err := state.LoadIntent(path); ok || err != nil {
		t.Fatalf("no intent: ok=%v err=%v", ok, err)
	}
	c := state.Container{ID: "x", Cgroup: "/x", CgroupID: 42}
	if err := state.SaveIntent(path, c); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(state.IntentPath(path)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("intent file: %v %v", st, err)
	}
	got, ok, err := state.LoadIntent(path)
	if err != nil || !ok || got.ID != "x" || got.CgroupID != 42 {
		t.Fatalf("LoadIntent = %+v %v %v", got, ok, err)
	}
	for _, torn := range []string{"", "{", `{"id":""}`, `{"id":"x"}`} {
		if err := os.WriteFile(state.IntentPath(path), []byte(torn), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := state.LoadIntent(path); ok || !errors.Is(err, state.ErrCorrupt) {
			t.Errorf("intent %q: ok=%v err=%v, want ErrCorrupt", torn, ok, err)
		}
	}
	if err := state.RemoveIntent(path); err != nil {
		t.Fatal(err)
	}
	if err := state.RemoveIntent(path); err != nil {
		t.Fatalf("removing no intent: %v", err)
	}
}
