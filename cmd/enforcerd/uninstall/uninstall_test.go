package uninstall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/enforcerd/enforcerd/daemon"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/check"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// TestUninstall: with a run registered, uninstall refuses and names it,
// leaving every pin; --force --kill kills the run's command, removes every
// pin (the programs detach: their link ids are gone) and the state file;
// a second uninstall finds nothing and succeeds. It also refuses while a
// daemon answers on the socket, and --kill alone is a usage error.
func TestUninstall(t *testing.T) {
	vmtest.RequireRoot(t)
	pin := fmt.Sprintf("/sys/fs/bpf/enforcerd-uninstall-test-%d", os.Getpid())
	defer os.RemoveAll(pin)
	dir := t.TempDir()
	sock, stateFile := filepath.Join(dir, "none.sock"), filepath.Join(dir, "state.json")
	if err := os.WriteFile(stateFile, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(extra ...string) []string {
		return append([]string{"uninstall", "--pin-dir", pin, "--socket", sock, "--state", stateFile}, extra...)
	}

	run := exec.Command(clitest.Bin(t), "run", "--pin-dir", pin, "-q", "--", "/bin/sleep", "600")
	var runErr bytes.Buffer
	run.Stderr = &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	defer func() {
		run.Process.Kill()
		<-exited
	}()
	// Loading the programs for a fresh pin directory takes minutes in an
	// emulated guest on a loaded host: wait for the registration or the
	// run's end, whichever comes first.
	var in enforcer.Installation
	for deadline := time.Now().Add(420 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if in, err = enforcer.ReadInstallation(pin); err == nil && len(in.Registrations) > 0 {
			break
		}
		select {
		case werr := <-exited:
			exited <- werr
			t.Fatalf("the run ended (%v) before it registered: stderr %q", werr, runErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never registered: %+v, %v; its stderr so far %q", in, err, runErr.String())
		}
	}
	if len(in.LinkIDs) == 0 {
		t.Fatalf("no link pinned under %s: %+v", pin, in)
	}
	group := fmt.Sprintf("enforcerd-run-%d", run.Process.Pid)

	if r := clitest.Run(t, nil, args("--kill")...); r.Code != cli.ExitUsage || !strings.Contains(r.Stderr, "--kill needs --force") {
		t.Errorf("--kill alone: exit %d, %q", r.Code, r.Stderr)
	}
	r := clitest.Run(t, nil, args()...)
	if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, group) || !strings.Contains(r.Stderr, "refusing") {
		t.Errorf("uninstall with a run registered: exit %d, stderr %q; want a refusal naming %s", r.Code, r.Stderr, group)
	}
	if after, err := enforcer.ReadInstallation(pin); err != nil || after.Pins != in.Pins || len(after.Registrations) != len(in.Registrations) {
		t.Errorf("refused uninstall changed the pins: %+v (%v), before %+v", after, err, in)
	}

	// A daemon answering on the socket: refused.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"version":"x","pid":1}`))
	}))
	if r := clitest.Run(t, nil, args("--force", "--kill")...); r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "daemon answers") {
		t.Errorf("uninstall with a daemon answering: exit %d, %q", r.Code, r.Stderr)
	}
	ln.Close()
	os.Remove(sock)

	r = clitest.Run(t, nil, args("--force", "--kill")...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "killed: the processes of ") || !strings.Contains(r.Stdout, "removed: "+stateFile) {
		t.Fatalf("uninstall --force --kill: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	select {
	case werr := <-exited:
		exited <- werr
	case <-time.After(30 * time.Second):
		t.Error("the run's command was not killed")
	}
	if _, err := os.Stat(pin); !os.IsNotExist(err) {
		t.Errorf("pin dir %s still there: %v", pin, err)
	}
	for _, id := range in.LinkIDs {
		if l, err := link.NewFromID(id); err == nil {
			l.Close()
			t.Errorf("link id %d still attached after uninstall", id)
		}
	}
	if _, err := os.Stat(stateFile); !os.IsNotExist(err) {
		t.Errorf("state file %s still there: %v", stateFile, err)
	}
	if r := clitest.Run(t, nil, args()...); r.Code != 0 || !strings.Contains(r.Stdout, "nothing pinned under "+pin) {
		t.Errorf("second uninstall: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}

	// A daemon answering for other pins does not hold these: not refused;
	// one answering for these pins is.
	for _, c := range []struct {
		pinDir  string
		refused bool
	}{{"/sys/fs/bpf/elsewhere", false}, {pin + "/", true}} {
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"version":"x","pid":1,"pin_dir":%q}`, c.pinDir)
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}))
		r := clitest.Run(t, nil, args()...)
		if refused := r.Code == cli.ExitFailure && strings.Contains(r.Stderr, "daemon answers"); refused != c.refused || (!c.refused && r.Code != 0) {
			t.Errorf("a daemon answering for %s: exit %d, stderr %q; want refused %v", c.pinDir, r.Code, r.Stderr, c.refused)
		}
		ln.Close()
		os.Remove(sock)
	}
}

// TestUninstallStateBelongsToPins: the default state file goes with the
// default pin directory; beside another --pin-dir (the demo's) uninstall
// removes no state file unless --state names one, and says so.
func TestUninstallStateBelongsToPins(t *testing.T) {
	given := func(names ...string) func(string) bool {
		return func(f string) bool {
			for _, n := range names {
				if n == f {
					return true
				}
			}
			return false
		}
	}
	for _, c := range []struct {
		pinDir, state string
		changed       []string
		want          string
	}{
		{cli.DefaultPinDir, "/var/lib/enforcerd/state.json", nil, "/var/lib/enforcerd/state.json"},
		{cli.DefaultPinDir + "/", "/var/lib/enforcerd/state.json", []string{"pin-dir"}, "/var/lib/enforcerd/state.json"},
		{"/sys/fs/bpf/enforcerd-demo", "/var/lib/enforcerd/state.json", []string{"pin-dir"}, ""},
		{"/sys/fs/bpf/enforcerd-demo", "/srv/demo/state.json", []string{"pin-dir", "state"}, "/srv/demo/state.json"},
	} {
		o := uninstallOptions{pinDir: c.pinDir, state: c.state}.withoutGuessedState(given(c.changed...))
		if o.state != c.want {
			t.Errorf("--pin-dir %s, flags given %v: state %q, want %q", c.pinDir, c.changed, o.state, c.want)
		}
	}
	var out, errOut bytes.Buffer
	removeState(cli.Streams{Out: &out, Err: &errOut}, uninstallOptions{})
	if !strings.Contains(out.String(), "state file: none removed") || errOut.Len() != 0 {
		t.Errorf("no state file named: stdout %q, stderr %q", out.String(), errOut.String())
	}
}

// TestDaemonUsesPins: a daemon answering on the socket holds the pins of
// its own pin directory, and any when its status names none.
func TestDaemonUsesPins(t *testing.T) {
	for _, c := range []struct {
		daemon, pins string
		want         bool
	}{
		{"/sys/fs/bpf/enforcerd", "/sys/fs/bpf/enforcerd", true},
		{"/sys/fs/bpf/enforcerd/", "/sys/fs/bpf/enforcerd", true},
		{"", "/sys/fs/bpf/enforcerd-demo", true},
		{"/sys/fs/bpf/enforcerd", "/sys/fs/bpf/enforcerd-demo", false},
	} {
		if got := daemonUsesPins(api.Status{PinDir: c.daemon}, c.pins); got != c.want {
			t.Errorf("daemon on %q, pins %q: %v, want %v", c.daemon, c.pins, got, c.want)
		}
	}
}

// TestCheckLeavesNothingItDidNotFind: check on a pin directory that does
// not exist removes the pins it created ("left_behind": nothing); on pins
// that exist it leaves them as found.
func TestCheckLeavesNothingItDidNotFind(t *testing.T) {
	vmtest.RequireRoot(t)
	pin := fmt.Sprintf("/sys/fs/bpf/enforcerd-check-test-%d", os.Getpid())
	defer os.RemoveAll(pin)
	leftBehind := func() string {
		r := clitest.Run(t, nil, "check", "--json", "--pin-dir", pin)
		var rep check.CheckReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("check --json: exit %d, %q: %v (stderr %q)", r.Code, r.Stdout, err, r.Stderr)
		}
		return rep.LeftBehind
	}
	if lb := leftBehind(); !strings.HasPrefix(lb, "nothing") {
		t.Errorf("check on no pins: left_behind %q", lb)
	}
	if _, err := os.Stat(pin); !os.IsNotExist(err) {
		t.Errorf("check left %s behind: %v", pin, err)
	}
	if r := clitest.Run(t, nil, "run", "--pin-dir", pin, "--", "/bin/true"); r.Code != 0 {
		t.Fatalf("run: exit %d, %s", r.Code, r.Stderr)
	}
	if lb := leftBehind(); !strings.Contains(lb, "as found") {
		t.Errorf("check on existing pins: left_behind %q", lb)
	}
	if _, err := os.Stat(pin); err != nil {
		t.Errorf("check removed pins it found: %v", err)
	}
}

// TestUninstallConfig: --config takes the pin directory, socket, state
// file and audit log from the daemon's configuration (defaults filled in
// as the daemon fills them), a flag given beside it wins, and an invalid
// or absent configuration is a usage error (exit 2) before anything else.
func TestUninstallConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte("pin_dir: /sys/fs/bpf/other\nstate: /srv/e/state.json\naudit:\n  path: /srv/e/audit.jsonl\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := daemon.LoadConfig(file, true)
	if err != nil {
		t.Fatal(err)
	}
	given := map[string]bool{"state": true}
	o := uninstallOptions{config: file, state: "/flag/state.json"}.fromConfig(cfg, func(f string) bool { return given[f] })
	if o.pinDir != "/sys/fs/bpf/other" || o.socket != "/run/enforcerd/enforcerd.sock" || o.state != "/flag/state.json" {
		t.Errorf("options from %s: %+v", file, o)
	}
	if got := o.auditNote(); got != "the audit log (/srv/e/audit.jsonl, its rotated files beside it)" {
		t.Errorf("audit note %q", got)
	}
	cfg.Audit.Path = ""
	if got := (uninstallOptions{config: file}).fromConfig(cfg, func(string) bool { return false }).auditNote(); !strings.Contains(got, "no audit log") {
		t.Errorf("no audit log: note %q", got)
	}
	if got := (uninstallOptions{}).auditNote(); got != "the audit log (/var/log/enforcerd)" {
		t.Errorf("without --config: note %q", got)
	}
	if got := o.configNote(); got != "the configuration ("+file+")" {
		t.Errorf("--config %s: configuration note %q", file, got)
	}
	if got := (uninstallOptions{}).configNote(); got != "the configuration (/etc/enforcerd)" {
		t.Errorf("without --config: configuration note %q", got)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("sweep_interval: 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	execute := func(args []string, s cli.Streams) int { return cli.ExecuteCommands(args, s, NewCommand(s)) }
	for f, want := range map[string]string{bad: "line 1: sweep_interval: want a duration such as 30s", filepath.Join(dir, "absent.yaml"): "no such file"} {
		code, out, errOut := clitest.Cmdline(execute, "uninstall", "--config", f)
		if code != 2 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("--config %s: exit %d, stdout %q, stderr %q; want 2 and %q", f, code, out, errOut, want)
		}
	}
}
