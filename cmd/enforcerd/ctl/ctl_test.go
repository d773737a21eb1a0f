package ctl

// enforcerd ctl against a daemon API server over the registry's fakes
// (daemon/api/apitest): the readable tables and the API's JSON of every
// subcommand, the daemon's refusals (404, 400, 422) and a missing daemon
// (exit 1), usage errors (exit 2).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/api/apitest"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/policy"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/coverage"
)

// cliIn runs the CLI with stdin.
func cliIn(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = execute(args, cli.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// ctlServer is an API server over fakes with partial coverage allowed
// and the cgroups /c/one, /c/two, /c/three.
func ctlServer(t *testing.T) *apitest.Server {
	t.Helper()
	ts := apitest.Start(t, func() api.Status {
		return api.Status{Version: "v-test", PID: 42, PinDir: "/sys/fs/bpf/enforcerd", Containers: 1, AllowPartial: true,
			Coverage: []coverage.Field{{Field: "network", State: "partial", By: "cgroup-bpf",
				Gaps: []coverage.Gap{{Code: coverage.GapNetworkNonInet, Field: "network", Detail: "no BPF LSM"}}}},
			Hooks: api.HooksFrom([]coverage.HookStatus{{Program: "file_open", Name: "file_open", Layer: coverage.LayerLSM, Err: "bpf LSM not active"}})}
	}, func(o *registry.Options) { o.AllowPartial = true })
	for _, g := range []string{"/c/one", "/c/two", "/c/three"} {
		ts.Cgs.Add(g)
	}
	ts.Enf.CanShell = true
	return ts
}

// ctl runs "enforcerd ctl --socket SOCK ARGS...".
func ctl(ts *apitest.Server, args ...string) (int, string, string) {
	return cmdline(append([]string{"ctl", "--socket", ts.Socket}, args...)...)
}

func mustCtl(t *testing.T, ts *apitest.Server, args ...string) string {
	t.Helper()
	code, out, errs := ctl(ts, args...)
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("ctl %q: exit %d, stderr %q, stdout %q", args, code, errs, out)
	}
	return out
}

// contains checks that out has every fragment of want; a fragment
// "key:\tvalue" is a whole line of a key-value table ("key:", spaces,
// "value").
func contains(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if key, val, ok := strings.Cut(w, ":\t"); ok {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key+":") + ` +` + regexp.QuoteMeta(val) + `$`).MatchString(out) {
				t.Errorf("%s: no line %q in:\n%s", what, w, out)
			}
			continue
		}
		if !strings.Contains(out, w) {
			t.Errorf("%s: no %q in:\n%s", what, w, out)
		}
	}
}

func TestCtlContainers(t *testing.T) {
	ts := ctlServer(t)
	out := mustCtl(t, ts, "register", "--id", "one", "--cgroup", "/c/one", "--role", "reviewer", "--ceiling", "network=false")
	contains(t, "register", out, "id:\tone", "state:\tactive", "cgroup:\t/c/one (id 103)",
		"role:\treviewer", "kernel:\tnetwork=false,write=false,shell=read_only", "coverage:\tfull")
	// Partial coverage: the fake without BPF LSM enforces network=false for
	// inet only; the daemon allows it.
	ts.Enf.CanWrite = false
	out = mustCtl(t, ts, "register", "--id", "two", "--cgroup", "/c/two", "--ceiling", "network=false",
		"--activate", "exec", "--init-pid", "0", "--tool-groups", "messaging")
	contains(t, "register partial", out, "state:\tpending", "activation:\tat-exec",
		"coverage:\tpartial (2 not enforced)", "NOT enforced:      network-non-inet (network): fake: no BPF LSM\n")
	ts.Enf.CanWrite = true

	out = mustCtl(t, ts, "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 6 || !strings.HasPrefix(lines[0], "ID   STATE    CGROUP  CGROUP-ID  ROLE      KERNEL") {
		t.Fatalf("list:\n%s", out)
	}
	contains(t, "list", out, "\none  active   /c/one", "reviewer  network=false,write=false,shell=read_only  full ",
		"\ntwo  pending  /c/two", "partial (2 not enforced)", "\n\nNot enforced:\n  two: network-non-inet (network): fake: no BPF LSM\n  two: tamper (all): ")

	var lb api.ListBody
	if err := json.Unmarshal([]byte(mustCtl(t, ts, "list", "--json")), &lb); err != nil || len(lb.Containers) != 2 ||
		lb.Containers[1].State != "pending" || len(lb.Containers[1].Unenforced) != 2 {
		t.Fatalf("list --json: %+v, %v", lb, err)
	}
	// --json before the subcommand, as a flag of ctl.
	var c api.Container
	if err := json.Unmarshal([]byte(mustCtl(t, ts, "--json", "get", "one")), &c); err != nil || c.ID != "one" || c.Kernel.Network {
		t.Fatalf("get --json: %+v, %v", c, err)
	}
	contains(t, "get", mustCtl(t, ts, "get", "two"), "id:\ttwo", "tool groups:\tmessaging")

	out = mustCtl(t, ts, "narrow", "one", "--ceiling", "shell=none")
	contains(t, "narrow", out, "kernel:\tnetwork=false,write=false,shell=none")
	if err := json.Unmarshal([]byte(mustCtl(t, ts, "narrow", "--json", "one", "--ceiling", "tools=false")), &c); err != nil || c.Ceiling.Tools {
		t.Fatalf("narrow --json: %+v, %v", c, err)
	}
	// A request that changes nothing (here: asks to widen) succeeds and
	// says so on stderr.
	if code, out, errs := ctl(ts, "narrow", "one", "--ceiling", "network=true"); code != cli.ExitOK ||
		!strings.Contains(errs, "one: ceiling unchanged (network=true is nowhere narrower") || !strings.Contains(out, "kernel:") {
		t.Errorf("narrow widening: exit %d, stderr %q, stdout %q", code, errs, out)
	}

	contains(t, "surface", mustCtl(t, ts, "surface", "two"), "role:\tgeneral (label \"general\", posture general)", "kernel:\tnetwork=false,write=true,shell=full")
	var sf policy.Surface
	if err := json.Unmarshal([]byte(mustCtl(t, ts, "surface", "--json", "two")), &sf); err != nil || sf.Kernel.Network || sf.Fingerprint == "" {
		t.Fatalf("surface --json: %+v, %v", sf, err)
	}

	if out := mustCtl(t, ts, "unregister", "one"); out != "unregistered one\n" {
		t.Errorf("unregister: %q", out)
	}
	if out := mustCtl(t, ts, "unregister", "--json", "two"); out != "{\n  \"unregistered\": \"two\"\n}\n" {
		t.Errorf("unregister --json: %q", out)
	}
	if out := mustCtl(t, ts, "list", "--json"); out != "{\n  \"containers\": []\n}\n" {
		t.Errorf("empty list --json: %q", out)
	}
	if out := mustCtl(t, ts, "list"); strings.Count(out, "\n") != 1 {
		t.Errorf("empty list: %q", out)
	}
}

func TestCtlStatus(t *testing.T) {
	ts := ctlServer(t)
	out := mustCtl(t, ts, "status")
	contains(t, "status", out, "version:\tv-test", "pid:\t42", "allow partial:\ttrue",
		"\nCoverage (each field restricted alone):\nFIELD    STATE    BY          NOT ENFORCED\nnetwork  partial  cgroup-bpf  network-non-inet\n",
		"\nHooks:\n  bpf-lsm: 0/1 hooks attached: bpf LSM not active\n")
	if strings.Contains(out, "HOOK ") {
		t.Errorf("status without --verbose prints the per-hook table:\n%s", out)
	}
	contains(t, "status --verbose", mustCtl(t, ts, "status", "--verbose"),
		"\nHooks:\n  bpf-lsm: 0/1 hooks attached: bpf LSM not active\n\nHOOK       LAYER    PROGRAM    STATE\nfile_open  bpf-lsm  file_open  NOT ATTACHED: bpf LSM not active\n")
	var st api.Status
	if err := json.Unmarshal([]byte(mustCtl(t, ts, "status", "--json")), &st); err != nil || st.PID != 42 || len(st.Hooks) != 1 {
		t.Fatalf("status --json: %+v, %v", st, err)
	}
}

// TestCtlRegisterFile: --file and - send the request as it is; the daemon
// judges every key.
func TestCtlRegisterFile(t *testing.T) {
	ts := ctlServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "req.json")
	writeFile(t, file, `{"id":"one","cgroup":"/c/one","ceiling":"write=false","entrypoint":null}`)
	contains(t, "--file", mustCtl(t, ts, "register", "--file", file), "kernel:\tnetwork=true,write=false,shell=full")
	code, out, errs := cliIn(`{"id":"two","cgroup":"/c/two","role":"test"}`, "ctl", "--socket", ts.Socket, "register", "--json", "--file", "-")
	var c api.Container
	if err := json.Unmarshal([]byte(out), &c); code != 0 || errs != "" || err != nil || c.Role != "test" {
		t.Fatalf("--file -: exit %d, %q, %q", code, out, errs)
	}
	// A key in the wrong case is refused, not dropped (it would register
	// without the ceiling).
	code, out, errs = cliIn(`{"id":"three","cgroup":"/c/three","CEILING":"network=false"}`, "ctl", "--socket", ts.Socket, "register", "--file", "-")
	if code != cli.ExitFailure || out != "" || !strings.HasPrefix(errs, "enforcerd ctl register: the daemon refused: bad_request: ") ||
		!strings.Contains(errs, `CEILING`) || !strings.HasSuffix(errs, "(HTTP 400)\n") {
		t.Errorf("unknown key: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, err := ts.Reg.Get("three"); err == nil {
		t.Error("three registered from a refused request")
	}
}

// TestCtlRefusals: the daemon's errors are exit 1 with the code, the
// message and the HTTP status.
func TestCtlRefusals(t *testing.T) {
	ts := ctlServer(t)
	mustCtl(t, ts, "register", "--id", "one", "--cgroup", "/c/one")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"get", "nope"}, `the daemon refused: not_found: container not registered: "nope" (HTTP 404)`},
		{[]string{"unregister", "nope"}, `the daemon refused: not_found: container not registered: "nope" (HTTP 404)`},
		{[]string{"narrow", "nope", "--ceiling", "write=false"}, `not_found: container not registered: "nope" (HTTP 404)`},
		{[]string{"surface", "nope"}, `not_found: container not registered: "nope" (HTTP 404)`},
		{[]string{"denials", "--container", "nope"}, `not_found: container not registered: "nope" (HTTP 404)`},
		{[]string{"register", "--id", "one", "--cgroup", "/c/two"}, "the daemon refused: conflict: "},
		{[]string{"register", "--id", "x", "--cgroup", "/c/missing"}, "the daemon refused: "},
		{[]string{"register", "--id", "../x", "--cgroup", "/c/two"}, "the daemon refused: bad_request: "},
		{[]string{"register", "--id", "x", "--cgroup", "/c/two", "--ceiling", "shell=none", "--activate", "exec"},
			"the daemon refused: entrypoint_required: "},
	} {
		code, out, errs := ctl(ts, c.args...)
		want := "enforcerd ctl " + c.args[0] + ": "
		if code != cli.ExitFailure || out != "" || !strings.HasPrefix(errs, want) || !strings.Contains(errs, c.msg) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, out, errs, c.msg)
		}
	}
}

// TestCtlNoDaemon: every subcommand names the socket and points at the
// service when nothing listens there.
func TestCtlNoDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	for _, args := range [][]string{{"status"}, {"list"}, {"get", "x"}, {"register", "--id", "x", "--cgroup", "/c"},
		{"unregister", "x"}, {"narrow", "x", "--ceiling", "write=false"}, {"surface", "x"}, {"denials"}, {"denials", "--follow"}} {
		code, out, errs := cmdline(append([]string{"ctl", "--socket", sock}, args...)...)
		want := "enforcerd ctl " + args[0] + ": cannot reach the enforcerd daemon at " + sock +
			" (connect: no such file or directory): is the daemon running? (systemctl status enforcerd.socket enforcerd.service)\n"
		if code != cli.ExitFailure || out != "" || errs != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", args, code, out, errs, want)
		}
	}
}

// TestCtlUsageErrors: bad command lines exit 2 before any request (no
// daemon listens at the socket).
func TestCtlUsageErrors(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	file := filepath.Join(t.TempDir(), "bad.json")
	writeFile(t, file, `{"id":`)
	for _, c := range []struct {
		args []string
		cmd  string
		msg  string
	}{
		{[]string{}, "ctl", "missing command (want status, ready, list, get, register, unregister, narrow, surface, denials)"},
		{[]string{"bogus"}, "ctl", `unknown command "bogus" (want status, ready, list, `},
		{[]string{"--bogus", "list"}, "ctl", "flag provided but not defined: --bogus"},
		{[]string{"list", "--bogus"}, "ctl list", "flag provided but not defined: --bogus"},
		{[]string{"list", "-json"}, "ctl list", "flag provided but not defined: -json (flags take two dashes: --json)"},
		{[]string{"list", "stray"}, "ctl list", `unexpected argument "stray"`},
		{[]string{"status", "--timeout", "soon"}, "ctl status", `invalid value "soon" for flag --timeout`},
		{[]string{"status", "--timeout", "0s"}, "ctl status", "--timeout 0s: want a positive duration"},
		{[]string{"--timeout=-1s", "list"}, "ctl list", "--timeout -1s: want a positive duration"},
		{[]string{"get"}, "ctl get", "missing container ID"},
		{[]string{"get", "a", "b"}, "ctl get", `unexpected argument "b" (one container ID)`},
		{[]string{"unregister"}, "ctl unregister", "missing container ID"},
		{[]string{"surface", ""}, "ctl surface", "empty container ID"},
		{[]string{"narrow", "x"}, "ctl narrow", "missing --ceiling"},
		{[]string{"narrow", "x", "--ceiling", "write=maybe"}, "ctl narrow", "--ceiling: write: invalid value"},
		{[]string{"narrow", "x", "--ceiling"}, "ctl narrow", "flag needs an argument: --ceiling"},
		{[]string{"register", "--cgroup", "/c"}, "ctl register", "missing --id (or --file with the request)"},
		{[]string{"register", "--id", "x", "--role", "boss"}, "ctl register", "--role: "},
		{[]string{"register", "--id", "x", "--role", ""}, "ctl register", "--role: "},
		{[]string{"register", "--id", "x", "--role", "test", "--role", "general"}, "ctl register", `invalid value "general" for flag --role: given more than once`},
		{[]string{"register", "--id", "x", "--ceiling", "net=false"}, "ctl register", "--ceiling: "},
		{[]string{"register", "--id", "x", "--activate", "later"}, "ctl register", `--activate "later": want now or exec`},
		{[]string{"register", "--id", "x", "--pid", "-3"}, "ctl register", "--pid and --init-pid are process ids"},
		{[]string{"register", "--id", "x", "--entrypoint", "agent"}, "ctl register", "--entrypoint needs --entrypoint-root"},
		{[]string{"register", "--id", "x", "--entrypoint-cwd", "/"}, "ctl register", "--entrypoint-cwd needs --entrypoint"},
		{[]string{"register", "--audit-only=maybe", "--id", "x"}, "ctl register", `invalid boolean value "maybe" for flag --audit-only`},
		{[]string{"register", "--file", file, "--id", "x"}, "ctl register", "--file takes the whole request: --id cannot be given with it"},
		{[]string{"register", "--file", file}, "ctl register", "--file " + file + ": not JSON: "},
		{[]string{"register", "--file", "-"}, "ctl register", "--file -: empty (want the request as one JSON object)"},
		{[]string{"register", "--file", ""}, "ctl register", "--file: empty path"},
		{[]string{"denials", "--container", "a", "--cgroup-id", "7"}, "ctl denials", "--container and --cgroup-id cannot be given together"},
		{[]string{"denials", "--cgroup-id", "-1"}, "ctl denials", `invalid value "-1" for flag --cgroup-id`},
		{[]string{"denials", "--cgroup-id", "0"}, "ctl denials", "--cgroup-id: 0 is no cgroup id"},
		{[]string{"denials", "--container", ""}, "ctl denials", "--container: empty container ID"},
		{[]string{"denials", "stray"}, "ctl denials", `unexpected argument "stray"`},
	} {
		code, out, errs := cmdline(append([]string{"ctl", "--socket", sock}, c.args...)...)
		want := "enforcerd " + c.cmd + ": " + c.msg
		hint := "\nRun 'enforcerd " + c.cmd + " --help' for usage.\n"
		if code != cli.ExitUsage || out != "" || !strings.HasPrefix(errs, want) || !strings.HasSuffix(errs, hint) || strings.Count(errs, "\n") != 2 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q...%q", c.args, code, out, errs, want, hint)
		}
	}
	// A file that cannot be read is a failure (exit 1), not a usage error.
	code, _, errs := cmdline("ctl", "--socket", sock, "register", "--file", filepath.Join(t.TempDir(), "missing.json"))
	if code != cli.ExitFailure || !strings.Contains(errs, "no such file or directory") {
		t.Errorf("missing --file: exit %d, %q", code, errs)
	}
}

// TestCtlHelp: ctl and each subcommand print their own hand-written help
// for --help, -h, -help and "enforcerd help ctl [SUB]".
func TestCtlHelp(t *testing.T) {
	var ctlCmd = NewCommand(cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	var subs []string
	for _, c := range ctlCmd.Commands() {
		subs = append(subs, c.Name())
		if !strings.HasPrefix(c.Long, "Usage:\n  enforcerd ctl "+c.Name()) || !strings.Contains(c.Long, "Exit status:") {
			t.Errorf("ctl %s: help is not the hand-written usage text: %q", c.Name(), c.Long)
		}
		for _, args := range [][]string{{"ctl", c.Name(), "-h"}, {"ctl", c.Name(), "--help"}, {"ctl", c.Name(), "-help"},
			{"help", "ctl", c.Name()}, {"ctl", "--socket", "/x", c.Name(), "--help"}} {
			code, out, errs := cmdline(args...)
			if code != cli.ExitOK || out != c.Long || errs != "" {
				t.Errorf("%q: exit %d, stderr %q, stdout is the help: %v", args, code, errs, out == c.Long)
			}
		}
	}
	if strings.Join(subs, ",") != "denials,get,list,narrow,ready,register,status,surface,unregister" {
		t.Errorf("ctl subcommands %v", subs)
	}
	for _, args := range [][]string{{"ctl", "--help"}, {"help", "ctl"}, {"ctl", "-h"}} {
		if code, out, errs := cmdline(args...); code != cli.ExitOK || out != ctlHelp || errs != "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errs)
		}
	}
	if code, _, errs := cmdline("help", "ctl", "bogus"); code != cli.ExitUsage || !strings.HasPrefix(errs, `enforcerd help: unknown command "ctl bogus"`) {
		t.Errorf("help ctl bogus: exit %d, stderr %q", code, errs)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCtlUnreachableCauses: a daemon that does not answer in --timeout,
// and a socket the user may not connect to.
func TestCtlUnreachableCauses(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mute.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	code, out, errs := cmdline("ctl", "--socket", sock, "--timeout", "200ms", "list")
	want := "enforcerd ctl list: cannot reach the enforcerd daemon at " + sock +
		" (no answer within --timeout 200ms): is the daemon running? (systemctl status enforcerd.socket enforcerd.service)\n"
	if code != cli.ExitFailure || out != "" || errs != want {
		t.Errorf("mute daemon: exit %d, stdout %q, stderr %q; want %q", code, out, errs, want)
	}

	// Root may connect to any socket; the message for EACCES is checked
	// on the error the client returns for it.
	var b bytes.Buffer
	o := &ctlOptions{socket: "/run/x.sock", timeout: time.Second}
	c := NewCommand(cli.Streams{Out: &b, Err: &b})
	eacces := fmt.Errorf("%w: %s: %w", api.ErrUnreachable, o.socket, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)})
	// c has no parent here: its path is "ctl".
	if err := ctlFail(cli.Streams{Out: &b, Err: &b}, c, o, eacces); err != cli.ExitCode(cli.ExitFailure) ||
		b.String() != "ctl: cannot reach the enforcerd daemon at /run/x.sock (connect: permission denied): the API socket is root-only: run enforcerd ctl as root\n" {
		t.Errorf("EACCES: %v, %q", err, b.String())
	}
}

// TestCtlRegisterProxyAllow: --proxy-allow sends proxy_allow (a list, or
// none: an empty list); without the flag none is sent. --allow-connect
// sends allow_connect.
func TestCtlRegisterProxyAllow(t *testing.T) {
	ts := ctlServer(t)
	mustCtl(t, ts, "register", "--id", "one", "--cgroup", "/c/one", "--proxy-allow", "a.example.com,*.b.example.org")
	mustCtl(t, ts, "register", "--id", "two", "--cgroup", "/c/two", "--proxy-allow", "none")
	mustCtl(t, ts, "register", "--id", "three", "--cgroup", "/c/three", "--ceiling", "network=false",
		"--allow-connect", "tcp:10.0.0.1:443", "--allow-connect", "udp:[::1]:53")
	if c, err := ts.Reg.Get("three"); err != nil || fmt.Sprint(c.AllowConnect) == "[]" || len(c.AllowConnect) != 2 {
		t.Errorf("three: allow_connect %v, %v; want the two endpoints", c.AllowConnect, err)
	}
	for id, want := range map[string]string{"one": "[a.example.com *.b.example.org]", "two": "[]", "three": "<nil>"} {
		c, err := ts.Reg.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		got := "<nil>"
		if c.ProxyAllow != nil {
			got = fmt.Sprint(*c.ProxyAllow)
		}
		if got != want {
			t.Errorf("%s: proxy_allow %s, want %s", id, got, want)
		}
	}
}

// TestCtlRegisterExecAllow: --exec-allow (repeatable) sends exec_allow,
// ctl get prints the list; a relative path is a usage error, sent
// nowhere.
func TestCtlRegisterExecAllow(t *testing.T) {
	ts := ctlServer(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("not a shell\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The daemon refuses an exec_allow file whose inode changed since just
	// before it vetted it (recheckExecAllow): the files must be older.
	time.Sleep(50 * time.Millisecond)
	if code, _, errs := ctl(ts, "register", "--id", "one", "--cgroup", "/c/one", "--ceiling", "shell=none", "--exec-allow", "rel/a"); code != cli.ExitUsage || !strings.Contains(errs, "--exec-allow") {
		t.Fatalf("relative --exec-allow: exit %d, %q", code, errs)
	}
	if len(ts.Reg.List()) != 0 {
		t.Fatal("registered after a usage error")
	}
	mustCtl(t, ts, "register", "--id", "one", "--cgroup", "/c/one", "--ceiling", "shell=none", "--exec-allow", a, "--exec-allow", b)
	c, err := ts.Reg.Get("one")
	if err != nil || len(c.ExecAllow) != 2 || c.ExecAllow[0].Path != a || c.ExecAllow[1].Path != b {
		t.Fatalf("exec_allow %+v, %v; want [%s %s]", c.ExecAllow, err, a, b)
	}
	contains(t, "get", mustCtl(t, ts, "get", "one"), "exec allow:\t"+a+" "+b)
	mustCtl(t, ts, "register", "--id", "two", "--cgroup", "/c/two", "--ceiling", "shell=none")
	contains(t, "get", mustCtl(t, ts, "get", "two"), "exec allow:\t-")
	if out := mustCtl(t, ts, "get", "one", "--json"); !strings.Contains(out, `"exec_allow": [`) || !strings.Contains(out, `"`+b+`"`) {
		t.Errorf("--json: %s", out)
	}
}

// TestCtlRegisterWriteRoot: --write-root sends write_roots (a relative
// path is a usage error sent nowhere), and get prints the roots and the
// allowed endpoints of a restricted field, "-" when there are none.
func TestCtlRegisterWriteRoot(t *testing.T) {
	ts := ctlServer(t)
	dir := t.TempDir()
	if code, _, errs := ctl(ts, "register", "--id", "w", "--cgroup", "/c/w", "--ceiling", "write=false", "--write-root", "rel"); code != cli.ExitUsage || !strings.Contains(errs, "--write-root") {
		t.Fatalf("relative --write-root: exit %d, %q", code, errs)
	}
	if len(ts.Reg.List()) != 0 {
		t.Fatal("registered after a usage error")
	}
	mustCtl(t, ts, "register", "--id", "w", "--cgroup", "/c/three", "--ceiling", "write=false,network=false", "--write-root", dir)
	out := mustCtl(t, ts, "get", "w")
	contains(t, "get", out, "write roots:\t"+dir, "allow connect:\t-", "role:\tgeneral (none given)")
}

// TestCtlReady: ctl ready exits 0 printing "ready" when the daemon is
// ready, 1 naming every missing part when it is not (and the same in
// --json), and 1 naming the socket when no daemon answers.
func TestCtlReady(t *testing.T) {
	ts := ctlServer(t)
	if out := mustCtl(t, ts, "ready"); out != "ready\n" {
		t.Errorf("ready: %q", out)
	}
	ts.SetReady(api.Readiness{Missing: []string{"state: reconcile running", "api: not serving yet"}})
	code, out, _ := ctl(ts, "ready")
	if code != cli.ExitFailure || out != "not ready: state: reconcile running; api: not serving yet\n" {
		t.Errorf("not ready: exit %d, %q", code, out)
	}
	code, out, _ = ctl(ts, "ready", "--json")
	var r api.Readiness
	if err := json.Unmarshal([]byte(out), &r); code != cli.ExitFailure || err != nil || r.Ready || len(r.Missing) != 2 {
		t.Errorf("not ready --json: exit %d, %q (%v)", code, out, err)
	}
	none := filepath.Join(t.TempDir(), "none.sock")
	code, _, errs := cmdline("ctl", "--socket", none, "ready")
	if code != cli.ExitFailure || !strings.Contains(errs, none) {
		t.Errorf("no daemon: exit %d, stderr %q", code, errs)
	}
}
