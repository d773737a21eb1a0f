package inroot

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStatStaysInsideRoot: "..", absolute symlinks and symlinks climbing
// out resolve inside the root, never to the host's file of that name.
func TestStatStaysInsideRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "here"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"abs":   filepath.Join(outside, "secret"),
		"climb": "../../../../../../" + filepath.Join(outside, "secret"),
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
		if _, err := Stat(root, name); err == nil {
			t.Errorf("%s -> %s: resolved outside the root", name, target)
		}
	}
	if err := os.Symlink("/here", filepath.Join(root, "in")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"here", "/here", "../../here", "in"} {
		st, err := Stat(root, name)
		if err != nil || st.Size != 1 {
			t.Errorf("%s: %+v, %v; want the root's file", name, st.Size, err)
		}
	}
	if _, err := Stat(filepath.Join(root, "missing"), "x"); err == nil {
		t.Error("a missing root: no error")
	}
}
