package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/entry"
)

// TestHookWriteRoots: enforcerd.io/write-roots is resolved inside the
// container's root (the bundle's root.path seen through /proc/PID/root)
// and installed with the entry; a malformed list fails the hook as a usage
// error, a root the daemon cannot resolve (400) as a failure, and neither
// registers anything.
func TestHookWriteRoots(t *testing.T) {
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	for _, d := range []string{"work", "bin"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := entry.WriteRootOf(rootfs); err != nil {
		t.Skipf("the test directory's filesystem cannot hold writable roots: %v", err)
	}
	cfg := `{"ociVersion":"1.0.2","process":{"args":["/bin/agent"],"cwd":"/"},"root":{"path":"rootfs"}}`
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// The daemon of hookDaemon, with a host that enforces write=false.
	enf := registrytest.NewEnforcer(true)
	sock, _ := hookDaemonOf(t, enf, false)

	state := func(id, ann string) string {
		return `{"ociVersion":"1.0.2-dev","id":"` + id + `","status":"created","pid":` + itoa(os.Getpid()) + `,"bundle":"` + bundle + `","annotations":{"enforcerd.io/ceiling":"write=false"` + ann + `}}`
	}
	for _, c := range []struct {
		name, ann string
		want      int
	}{
		{"relative", `,"enforcerd.io/write-roots":"work"`, cli.ExitUsage},
		{"empty", `,"enforcerd.io/write-roots":""`, cli.ExitUsage},
		{"missing inside the container", `,"enforcerd.io/write-roots":"/nope"`, cli.ExitFailure},
		{"a symlink cannot leave the root", `,"enforcerd.io/write-roots":"/../../../../proc"`, cli.ExitFailure},
	} {
		code, msg := runHookWith(sock, "createRuntime", state("bad", c.ann))
		if code != c.want || !strings.Contains(msg, "write") {
			t.Errorf("%s: exit %d (%s), want %d naming the roots", c.name, code, msg, c.want)
		}
		if enf.Len() != 0 {
			t.Fatalf("%s: registered", c.name)
		}
	}
	code, msg := runHookWith(sock, "createRuntime", state("ok", `,"enforcerd.io/write-roots":"/work"`))
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, msg)
	}
	want, _ := entry.WriteRootOf(filepath.Join(rootfs, "work"))
	for _, en := range enf.M {
		if len(en.WriteRoots) != 1 || en.WriteRoots[0] != want {
			t.Fatalf("entry roots %v, want [%v]", en.WriteRoots, want)
		}
	}
}
