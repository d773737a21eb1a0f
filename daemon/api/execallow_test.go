package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/progcheck"
)

// TestRegisterExecAllow: exec_allow is resolved inside the entrypoint's
// root, vetted, installed by identity and shown in the answers; a
// malformed list is 400 "bad_request", an unsafe file 422
// "unsafe_program", each naming exec_allow, with nothing registered.
func TestRegisterExecAllow(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	enf.CanShell = true
	cgs.Add("/c/x")
	root := shellRoot(t)
	if err := os.WriteFile(filepath.Join(root, "bin/data"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink escaping the root stays inside it (RESOLVE_IN_ROOT):
	// /../../bin/agent is the root's /bin/agent.
	if err := os.Symlink("/../../bin/agent", filepath.Join(root, "esc")); err != nil {
		t.Fatal(err)
	}
	// The daemon refuses an exec_allow file whose inode changed since just
	// before it vetted it (recheckExecAllow): the files must be older.
	time.Sleep(50 * time.Millisecond)
	ep := &progcheck.Program{Path: "/bin/agent", Root: root}
	body := func(ceiling string, allow []string) []byte {
		b, _ := json.Marshal(api.RegisterRequest{ID: "x", Cgroup: "/c/x", Ceiling: ceiling, Activate: api.ActivateExec,
			Entrypoint: api.EntrypointFrom(ep), ExecAllow: allow})
		return b
	}
	many := make([]string, registry.MaxExecAllow+1)
	for i := range many {
		many[i] = "/bin/f" + strings.Repeat("x", i)
	}
	for _, c := range []struct {
		name, ceiling string
		allow         []string
		status        int
		code, says    string
	}{
		{"relative", "shell=none", []string{"bin/true"}, 400, "bad_request", "not an absolute path"},
		{"17 files", "shell=none", many, 400, "bad_request", "at most 16"},
		{"twice", "shell=none", []string{"/bin/true", "/bin/true"}, 400, "bad_request", "twice"},
		{"the same file twice", "shell=none", []string{"/bin/agent", "/esc"}, 400, "bad_request", "the same file"},
		{"shell=full", "network=false", []string{"/bin/true"}, 400, "bad_request", "needs shell=none"},
		{"shell=read_only", "shell=read_only", []string{"/bin/true"}, 400, "bad_request", "needs shell=none"},
		{"missing", "shell=none", []string{"/bin/nope"}, 400, "bad_request", "/bin/nope"},
		{"not executable", "shell=none", []string{"/bin/data"}, 400, "bad_request", "not executable"},
		{"a directory", "shell=none", []string{"/dir"}, 400, "bad_request", "not a regular file"},
		{"a shell", "shell=none", []string{"/bin/true", "/bin/sh"}, 422, "unsafe_program", "/bin/sh is a shell"},
		{"a script whose interpreter is not listed", "shell=none", []string{"/bin/agent.sh"}, 422, "unsafe_program", "/bin/true"},
	} {
		status, eb := ts.raw(t, "POST", "/v1/containers", body(c.ceiling, c.allow))
		if status != c.status || eb.Code != c.code || !strings.Contains(eb.Error, "exec_allow") || !strings.Contains(eb.Error, c.says) {
			t.Errorf("%s: %d %s %q, want %d %s naming exec_allow and %q", c.name, status, eb.Code, eb.Error, c.status, c.code, c.says)
		}
		if enf.Len() != 0 {
			t.Fatalf("%s: a refused registration left a map entry", c.name)
		}
	}
	// Without an entrypoint root, a pending registration has nowhere to
	// resolve the files.
	b, _ := json.Marshal(api.RegisterRequest{ID: "x", Cgroup: "/c/x", Ceiling: "shell=none", Activate: api.ActivateExec, ExecAllow: []string{"/bin/true"}})
	if status, eb := ts.raw(t, "POST", "/v1/containers", b); status != http.StatusBadRequest || eb.Code != "bad_request" || !strings.Contains(eb.Error, "entrypoint.root") {
		t.Errorf("activate=exec without entrypoint: %d %+v", status, eb)
	}

	ctx := context.Background()
	c, err := ts.client.Register(ctx, api.RegisterRequest{ID: "x", Cgroup: "/c/x", Ceiling: "shell=none", Activate: api.ActivateExec,
		Entrypoint: api.EntrypointFrom(ep), ExecAllow: []string{"/bin/agent.sh", "/bin/true"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.ExecAllow, ",") != "/bin/agent.sh,/bin/true" {
		t.Fatalf("answer exec_allow %v", c.ExecAllow)
	}
	script, _ := entry.FileIDOf(filepath.Join(root, "bin/agent.sh"))
	tr, _ := entry.FileIDOf(filepath.Join(root, "bin/true"))
	en, err := enf.Lookup(c.CgroupID)
	if err != nil || len(en.ExecAllow) != 2 || en.ExecAllow[0] != script || en.ExecAllow[1] != tr {
		t.Fatalf("entry exec allow %v (%v), want [%v %v]", en.ExecAllow, err, script, tr)
	}
	g, err := ts.client.Get(ctx, "x")
	if err != nil || strings.Join(g.ExecAllow, ",") != "/bin/agent.sh,/bin/true" {
		t.Fatalf("GET exec_allow %v (%v)", g.ExecAllow, err)
	}
	raw, err := json.Marshal(g)
	if err != nil || !strings.Contains(string(raw), `"exec_allow":["/bin/agent.sh","/bin/true"]`) {
		t.Fatalf("wire form %s (%v)", raw, err)
	}
}
