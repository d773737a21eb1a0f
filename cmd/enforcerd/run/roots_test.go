package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
	"github.com/enforcerd/enforcerd/entry"
)

// TestRunWriteRootFlags: --write-root resolves to identities with
// --write=deny, and every bad use is a usage error naming the flag.
func TestRunWriteRootFlags(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(a, 0o755))
	must(os.Mkdir(b, 0o755))
	file := filepath.Join(dir, "file")
	must(os.WriteFile(file, nil, 0o644))
	if _, err := entry.WriteRootOf(dir); err != nil {
		t.Skipf("the test directory's filesystem cannot hold writable roots: %v", err)
	}
	o, _, err := parseRunArgs(t, []string{"--write=deny", "--write-root", a, "--write-root", b + "/", "--", "true"})
	if err != nil {
		t.Fatal(err)
	}
	ida, _ := entry.WriteRootOf(a)
	idb, _ := entry.WriteRootOf(b)
	if len(o.writeRootIDs) != 2 || o.writeRootIDs[0] != ida || o.writeRootIDs[1] != idb {
		t.Errorf("ids %v, want [%v %v]", o.writeRootIDs, ida, idb)
	}
	many := []string{"--write=deny"}
	for i := range 17 {
		d := filepath.Join(dir, "m", string(rune('a'+i)))
		must(os.MkdirAll(d, 0o755))
		many = append(many, "--write-root", d)
	}
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"write allowed", []string{"--write-root", a}, "--write=deny"},
		{"write allowed explicitly", []string{"--write=allow", "--write-root", a}, "--write=deny"},
		{"relative", []string{"--write=deny", "--write-root", "rel"}, "not an absolute path"},
		{"missing", []string{"--write=deny", "--write-root", filepath.Join(dir, "nope")}, "no such file"},
		{"a file", []string{"--write=deny", "--write-root", file}, "not a directory"},
		{"twice", []string{"--write=deny", "--write-root", a, "--write-root", a}, "twice"},
		{"17 roots", many, "at most 16"},
		{"procfs", []string{"--write=deny", "--write-root", "/proc"}, "not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := clitest.Run(t, nil, append(append([]string{"run"}, c.args...), "--", "true")...)
			if r.Code != cli.ExitUsage {
				t.Errorf("exit %d, want %d (stderr: %s)", r.Code, cli.ExitUsage, r.Stderr)
			}
			if !strings.Contains(r.Stderr, "--write") || !strings.Contains(r.Stderr, c.says) {
				t.Errorf("stderr %q does not name the flag and %q", r.Stderr, c.says)
			}
		})
	}
}
