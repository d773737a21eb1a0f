package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/progcheck"
)

var update = flag.Bool("update", false, "rewrite testdata/wire.golden from the current wire format")

// wireRequest is a registration as the OCI hook sends it, every field set
// (omitempty fields included), except audit_only which the parent sets.
var wireRequest = api.RegisterRequest{
	ID: "child", Cgroup: "/c/child", PID: 77, Role: "implement", Ceiling: "shell=none",
	Parent: "parent", ToolGroups: "messaging,meta", Activate: api.ActivateExec, InitPID: 77,
	Entrypoint: &api.Entrypoint{Path: "agent", Root: "/proc/77/root/rootfs", EnvPath: "/bin", Cwd: "/work"},
}

// TestWireGolden pins the API's JSON byte for byte: the empty list, a
// registration request as the client encodes it, the responses to it (201
// with a pending container and its coverage gaps, and one activated at
// once with the reason), the list, one container, narrowings (one refused
// because the child cannot take the parent's new ceiling, one carried down
// to the child), the surface, unregistration, and the error bodies with
// their status and code. The wire and the state file evolve separately; neither may change
// the other's bytes unnoticed. After an intended change of the wire:
// go test ./daemon/api -run TestWireGolden -update.
func TestWireGolden(t *testing.T) {
	enf, cgs := registrytest.NewEnforcer(false), registrytest.NewCgroups()
	enf.CanShell = true
	for _, g := range []string{"/host", "/c/parent", "/c/child", "/c/x", "/c/dev"} {
		cgs.Add(g)
	}
	cgs.SetPid(77, "/c/child")
	cgs.SetPid(88, "/c/x")
	cgs.SetPid(99, "/c/dev")
	now := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	ts := start(t, enf, cgs, func(o *registry.Options) {
		o.Now = func() time.Time { return now }
		o.StartTime = func(int) (uint64, error) { return 4242, nil }
		o.AllowPartial = true
		o.OwnTerminals = func(int) ([]entry.Terminal, error) {
			return []entry.Terminal{{Dev: 136<<20 | 2, PtsDev: 0<<20 | 25}, {Dev: 4<<20 | 64}}, nil
		}
		o.CheckEntrypoint = func(p progcheck.Program) (progcheck.Vetted, error) {
			if p.Path == "sh" {
				return progcheck.Vetted{Resolved: "/bin/sh"}, fmt.Errorf("%w: /bin/sh is a shell", progcheck.ErrUnsafe)
			}
			return progcheck.Vetted{Resolved: "/bin/" + p.Path}, nil
		}
	})
	reqBody, err := json.Marshal(wireRequest)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, x := range []struct{ method, path, body string }{
		{"GET", "/v1/containers", ""},
		{"POST", "/v1/containers", `{"id":"parent","cgroup":"/c/parent","ceiling":"network=false","audit_only":true}`},
		{"POST", "/v1/containers", string(reqBody)},
		{"GET", "/v1/containers", ""},
		{"GET", "/v1/containers/child", ""},
		{"POST", "/v1/containers/parent/narrow", `{"ceiling":"write=false"}`},
		{"POST", "/v1/containers/child/narrow", `{"ceiling":"write=false"}`},
		{"POST", "/v1/containers/parent/narrow", `{"ceiling":"tools=false"}`},
		{"GET", "/v1/containers/child", ""},
		{"GET", "/v1/containers/child/surface", ""},
		{"POST", "/v1/containers", string(reqBody)},
		{"POST", "/v1/containers", ``},
		{"POST", "/v1/containers", `{"id":"x","cgroup":"/c/x"} {}`},
		{"POST", "/v1/containers", `{"id":"x","cgroup":"/c/x","ceiling":"network=false","CEILING":""}`},
		{"POST", "/v1/containers", `{"id":"x","cgroup":"/c/x","ceiling":"network=false","ceiling":""}`},
		{"POST", "/v1/containers", `{"id":"x","cgroup":"/c/x","role":"nope"}`},
		{"POST", "/v1/containers", `{"id":"x","cgroup":"/c/x","ceiling":"shell=none","activate":"exec"}`},
		{"POST", "/v1/containers", `{"id":"x","cgroup":"/c/x","ceiling":"shell=none","activate":"exec","entrypoint":{"path":"sh","root":"/r"}}`},
		{"GET", "/v1/containers/nope", ""},
		{"PUT", "/v1/containers", ""},
		{"POST", "/v1/containers", `{"id":"x","cgroup":"/c/x","ceiling":"network=false","activate":"exec"}`},
		{"POST", "/v1/containers", `{"id":"dev","cgroup":"/c/dev","activate":"exec","init_pid":99,"own_terminals":"init","allow_devices":["c 226:128","b 7:0"],"deny_console_egress":true}`},
		{"DELETE", "/v1/containers/child", ""},
		{"GET", "/v1/containers", ""},
	} {
		status, ctype, body := exchange(t, ts.socket, x.method, x.path, x.body)
		fmt.Fprintf(&out, ">>> %s %s\n%s\n<<< %d %s\n%s\n", x.method, x.path, x.body, status, ctype, body)
	}
	golden := filepath.Join("testdata", "wire.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("the wire changed; got:\n%s\nwant (%s):\n%s", out.Bytes(), golden, want)
	}
}

// TestClientDecodesWhatTheServerSends: a container read through the client
// encodes to the very bytes the server sent (no field lost or renamed
// between the server's and the client's types).
func TestClientDecodesWhatTheServerSends(t *testing.T) {
	enf, cgs := registrytest.NewEnforcer(false), registrytest.NewCgroups()
	enf.CanShell = true
	for _, g := range []string{"/host", "/c/parent", "/c/child"} {
		cgs.Add(g)
	}
	cgs.SetPid(77, "/c/child")
	ts := start(t, enf, cgs, func(o *registry.Options) {
		o.AllowPartial = true
		o.StartTime = func(int) (uint64, error) { return 4242, nil }
		o.CheckEntrypoint = func(p progcheck.Program) (progcheck.Vetted, error) {
			return progcheck.Vetted{Resolved: "/bin/" + p.Path}, nil
		}
	})
	ctx := context.Background()
	if _, err := ts.client.Register(ctx, api.RegisterRequest{ID: "parent", Cgroup: "/c/parent", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.client.Register(ctx, wireRequest); err != nil {
		t.Fatal(err)
	}
	_, _, sent := exchange(t, ts.socket, "GET", "/v1/containers/child", "")
	c, err := ts.client.Get(ctx, "child")
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), sent) {
		t.Fatalf("client round trip:\n got %s\nsent %s", got, sent)
	}
	_, _, sent = exchange(t, ts.socket, "GET", "/v1/containers", "")
	list, err := ts.client.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err = json.Marshal(map[string]any{"containers": list})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), sent) {
		t.Fatalf("client round trip of the list:\n got %s\nsent %s", got, sent)
	}
}

// exchange sends one request over the API socket and returns the status,
// the content type and the body as sent.
func exchange(t *testing.T, socket, method, path, body string) (int, string, []byte) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("unix", socket)
	}}}
	req, err := http.NewRequest(method, "http://x"+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// TestStatusKeepsItsKeys: the typed status encodes byte for byte as the
// JSON object of sorted keys the daemon served before it had a type (plus
// pin_dir, added since), with each hook in snake_case (program, hook,
// layer, attached, adopted, optional, error).
func TestStatusKeepsItsKeys(t *testing.T) {
	cov := []coverage.Field{
		{Field: "network", State: coverage.StatePartial, By: "cgroup-bpf", Gaps: []coverage.Gap{{Code: coverage.GapTamper, Field: "all", Detail: "d"}}},
		{Field: "write", State: coverage.StateNone},
	}
	hooks := api.HooksFrom([]coverage.HookStatus{{Program: "file_open", Name: "file_open", Layer: coverage.LayerLSM, Attached: true, Adopted: true}})
	typed, err := json.Marshal(api.Status{ActivateAtExec: true, AllowPartial: true, Containers: 3, Coverage: cov,
		Hooks: hooks, LostRecords: 7, PID: 42, PinDir: "/sys/fs/bpf/enforcerd", Version: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	untyped, err := json.Marshal(map[string]any{
		"version": "v1.2.3", "pid": 42, "containers": 3, "coverage": cov, "activate_at_exec": true,
		"allow_partial": true, "lost_records": uint64(7), "pin_dir": "/sys/fs/bpf/enforcerd",
		"hooks": json.RawMessage(`[{"program":"file_open","hook":"file_open","layer":"bpf-lsm","attached":true,"adopted":true}]`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(typed, untyped) {
		t.Fatalf("status:\n typed %s\n   was %s", typed, untyped)
	}
}
