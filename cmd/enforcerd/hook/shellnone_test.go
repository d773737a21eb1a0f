package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// shellBundle writes an OCI bundle whose rootfs lists /bin/sh in
// /etc/shells (an executable script: a shell by identity) and holds
// /bin/agent (not a shell) and /bin/agent.sh (a script whose interpreter
// /bin/true is not allowed), and whose process runs args.
func shellBundle(t *testing.T, args ...string) string {
	t.Helper()
	b := t.TempDir()
	for p, content := range map[string]string{"rootfs/etc/shells": "/bin/sh\n", "rootfs/bin/sh": "#!/bin/true\n", "rootfs/bin/agent": "agent\n",
		"rootfs/bin/agent.sh": "#!/bin/true\n", "rootfs/bin/true": "true\n"} {
		if err := os.MkdirAll(filepath.Join(b, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b, p), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, _ := json.Marshal(map[string]any{
		"ociVersion": "1.0.2",
		"process":    map[string]any{"args": args, "env": []string{"PATH=/usr/bin:/bin"}, "cwd": "/"},
		"root":       map[string]any{"path": "rootfs"},
	})
	if err := os.WriteFile(filepath.Join(b, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func bundleState(id, bundle, ann string) string {
	return `{"ociVersion":"1.0.2-dev","id":"` + id + `","status":"created","pid":` + itoa(os.Getpid()) + `,"bundle":"` + bundle + `","annotations":{` + ann + `}}`
}

// TestHookShellNoneEntrypoint: under shell=none the hook names the
// container's entrypoint from config.json, seen through the init's
// /proc/PID/root; the daemon refuses a shell (exit 125, nothing
// registered) and accepts a program that is not one.
func TestHookShellNoneEntrypoint(t *testing.T) {
	sock, enf := hookDaemon(t)
	enf.CanShell = true
	const none = `"enforcerd.io/ceiling":"network=true,write=true,shell=none"`
	code, msg := runHookWith(sock, "createRuntime", bundleState("sh", shellBundle(t, "sh", "-c", "rm -f /x"), none))
	if code != cli.ExitCannotEnforce || !strings.Contains(msg, "unsafe program") || !strings.Contains(msg, "/bin/sh is a shell") {
		t.Fatalf("shell entrypoint: exit %d, want %d naming /bin/sh as a shell: %s", code, cli.ExitCannotEnforce, msg)
	}
	code, msg = runHookWith(sock, "createRuntime", bundleState("advisor", shellBundle(t, "/bin/sh"), `"enforcerd.io/role":"advisor"`))
	if code != cli.ExitCannotEnforce || !strings.Contains(msg, "shell") {
		t.Fatalf("role advisor (shell=none), shell entrypoint: exit %d: %s", code, msg)
	}
	code, msg = runHookWith(sock, "createRuntime", bundleState("script", shellBundle(t, "agent.sh"), none))
	if code != cli.ExitCannotEnforce || !strings.Contains(msg, "/bin/true (the #! interpreter of /bin/agent.sh)") || !strings.Contains(msg, "must itself be allowed") {
		t.Fatalf("script entrypoint whose interpreter is not allowed: exit %d, want %d naming /bin/true: %s", code, cli.ExitCannotEnforce, msg)
	}
	code, msg = runHookWith(sock, "createRuntime", bundleState("noconfig", t.TempDir(), none))
	if code != cli.ExitCannotEnforce || !strings.Contains(msg, "config.json") {
		t.Fatalf("no config.json: exit %d, want %d saying why: %s", code, cli.ExitCannotEnforce, msg)
	}
	if enf.Len() != 0 {
		t.Fatal("a refused container left a map entry")
	}
	code, msg = runHookWith(sock, "createRuntime", bundleState("agent", shellBundle(t, "agent"), none))
	if code != cli.ExitOK {
		t.Fatalf("non-shell entrypoint: exit %d: %s", code, msg)
	}
	for _, en := range enf.M {
		if !en.Pending || en.Ceiling.Shell != "none" {
			t.Fatalf("entry %+v: want pending shell=none", en)
		}
	}
	if code, msg := runHookWith(sock, "poststop", `{"ociVersion":"1.0.2-dev","id":"agent","status":"stopped"}`); code != cli.ExitOK {
		t.Fatalf("poststop: %d %s", code, msg)
	}
	// Without shell=none the entrypoint is not vetted.
	code, msg = runHookWith(sock, "createRuntime", bundleState("full", shellBundle(t, "sh"), `"enforcerd.io/ceiling":"network=false"`))
	if code != cli.ExitOK {
		t.Fatalf("shell entrypoint without shell=none: exit %d: %s", code, msg)
	}
}
