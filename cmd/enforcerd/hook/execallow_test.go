package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/entry"
)

// TestHookExecAllow: enforcerd.io/exec-allow is resolved by the daemon
// inside the container's root (the bundle's root.path seen through
// /proc/PID/root; no symlink or ".." leaves it) and installed by identity
// with the entry; a malformed list fails the hook as a usage error, a file
// the daemon cannot resolve (400) as a failure, a shell (422
// unsafe_program) as a ceiling that cannot be enforced, and none of them
// registers anything.
func TestHookExecAllow(t *testing.T) {
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	for p, b := range map[string]string{"etc/shells": "/bin/sh\n", "bin/sh": "sh\n", "bin/agent": "agent\n", "bin/tool": "tool\n"} {
		if err := os.MkdirAll(filepath.Join(rootfs, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rootfs, p), []byte(b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := `{"ociVersion":"1.0.2","process":{"args":["/bin/agent"],"cwd":"/"},"root":{"path":"rootfs"}}`
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// The daemon refuses an exec_allow file whose inode changed since just
	// before it vetted it (recheckExecAllow): the files must be older.
	time.Sleep(50 * time.Millisecond)
	enf := registrytest.NewEnforcer(true)
	enf.CanShell = true
	sock, reg := hookDaemonOf(t, enf, false)

	state := func(id, ceiling, ann string) string {
		return `{"ociVersion":"1.0.2-dev","id":"` + id + `","status":"created","pid":` + itoa(os.Getpid()) + `,"bundle":"` + bundle + `","annotations":{"enforcerd.io/ceiling":"` + ceiling + `"` + ann + `}}`
	}
	for _, c := range []struct {
		name, ceiling, ann string
		want               int
	}{
		{"relative", "shell=none", `,"enforcerd.io/exec-allow":"bin/tool"`, cli.ExitUsage},
		{"empty", "shell=none", `,"enforcerd.io/exec-allow":""`, cli.ExitUsage},
		{"missing inside the container", "shell=none", `,"enforcerd.io/exec-allow":"/nope"`, cli.ExitFailure},
		{"a path cannot leave the root", "shell=none", `,"enforcerd.io/exec-allow":"/../../../../proc/self/exe"`, cli.ExitFailure},
		{"without shell=none", "write=false", `,"enforcerd.io/exec-allow":"/bin/tool"`, cli.ExitFailure},
		{"a shell", "shell=none", `,"enforcerd.io/exec-allow":"/bin/tool,/bin/sh"`, cli.ExitCannotEnforce},
	} {
		code, msg := runHookWith(sock, "createRuntime", state("bad", c.ceiling, c.ann))
		if code != c.want || !strings.Contains(msg, "exec") {
			t.Errorf("%s: exit %d (%s), want %d naming exec_allow", c.name, code, msg, c.want)
		}
		if enf.Len() != 0 {
			t.Fatalf("%s: registered", c.name)
		}
	}
	code, msg := runHookWith(sock, "createRuntime", state("ok", "shell=none", `,"enforcerd.io/exec-allow":"/bin/tool"`))
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, msg)
	}
	want, _ := entry.FileIDOf(filepath.Join(rootfs, "bin/tool"))
	for _, en := range enf.M {
		if len(en.ExecAllow) != 1 || en.ExecAllow[0] != want {
			t.Fatalf("entry exec allow %v, want [%v]", en.ExecAllow, want)
		}
	}
	c, err := reg.Get("ok")
	if err != nil || len(c.ExecAllow) != 1 || c.ExecAllow[0].Path != "/bin/tool" {
		t.Fatalf("registration %+v (%v)", c.ExecAllow, err)
	}
}
