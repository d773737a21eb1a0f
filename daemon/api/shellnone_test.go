package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/progcheck"
)

// shellRoot is a container root whose /etc/shells lists /bin/sh (an
// executable script: a login shell by identity, whatever its content)
// and which also holds /bin/agent, a program that is not a shell, and
// /bin/agent.sh, a script whose interpreter /bin/true is not allowed.
func shellRoot(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for p, b := range map[string]string{"etc/shells": "/bin/sh\n", "bin/sh": "#!/bin/true\n", "bin/agent": "agent\n",
		"bin/agent.sh": "#!/bin/true\n", "bin/true": "true\n"} {
		if err := os.MkdirAll(filepath.Join(d, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, p), []byte(b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestRegisterShellNoneEntrypoint: a pending shell=none registration
// names its entrypoint; the daemon resolves it inside its root and
// answers 422 with a stable code when it is a shell or cannot be vetted.
func TestRegisterShellNoneEntrypoint(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	enf.CanShell = true
	cgs.Add("/c/x")
	root := shellRoot(t)
	body := func(ep *progcheck.Program) []byte {
		b, _ := json.Marshal(api.RegisterRequest{ID: "x", Cgroup: "/c/x", Ceiling: "network=false,shell=none", Activate: api.ActivateExec, Entrypoint: api.EntrypointFrom(ep)})
		return b
	}
	for _, c := range []struct {
		name   string
		ep     *progcheck.Program
		status int
		code   string
		says   string
	}{
		{"no entrypoint", nil, 422, "entrypoint_required", "entrypoint"},
		{"not found", &progcheck.Program{Path: "nope", Root: root, EnvPath: "/bin"}, 422, "entrypoint_required", "nope"},
		{"a shell via PATH", &progcheck.Program{Path: "sh", Root: root, EnvPath: "/usr/bin:/bin"}, 422, "unsafe_program", "/bin/sh is a shell"},
		{"a script whose interpreter is not allowed", &progcheck.Program{Path: "/bin/agent.sh", Root: root}, 422, "unsafe_program", "/bin/true (the #! interpreter of /bin/agent.sh)"},
		{"a relative root", &progcheck.Program{Path: "sh", Root: "rootfs"}, 400, "bad_request", "root"},
	} {
		status, eb := ts.raw(t, "POST", "/v1/containers", body(c.ep))
		if status != c.status || eb.Code != c.code || !strings.Contains(eb.Error, c.says) {
			t.Errorf("%s: %d %s %q, want %d %s saying %q", c.name, status, eb.Code, eb.Error, c.status, c.code, c.says)
		}
	}
	if enf.Len() != 0 {
		t.Fatal("a refused registration left a map entry")
	}
	status, eb := ts.raw(t, "POST", "/v1/containers", body(&progcheck.Program{Path: "agent", Root: root, EnvPath: "/bin"}))
	if status != 201 {
		t.Fatalf("a safe entrypoint: %d %+v", status, eb)
	}
	if en := enf.M; len(en) != 1 {
		t.Fatalf("map %v", en)
	}
}
