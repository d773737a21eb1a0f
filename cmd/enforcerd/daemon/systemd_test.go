package daemon

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/test/probe"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// The probe activated-listener SOCKET plays a socket-activated daemon: it
// claims the LISTEN_FDS it inherited (LISTEN_PID is its own pid, as
// systemd sets it) and reports activatedListener's answer for SOCKET:
// Out is the listener's address, or "none", or the error.
func init() {
	probe.Register("activated-listener", func(r *probe.Result, a []string) {
		os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
		ln, err := activatedListener(a[0])
		switch {
		case err != nil:
			r.Out = "error: " + err.Error()
		case ln == nil:
			r.Out = "none"
		default:
			r.Out = ln.Addr().String()
		}
		r.Exit = 0
	})
}

// TestDaemonSocketActivation: the daemon serves the socket systemd passes
// (LISTEN_FDS=1, fd 3) when it is the configured socket; a different path
// or more than one socket is a configuration error; without LISTEN_FDS it
// creates its own.
func TestDaemonSocketActivation(t *testing.T) {
	dir := t.TempDir()
	listen := func(name string) *os.File {
		l, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := l.(*net.UnixListener).File()
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		return f
	}
	sock := filepath.Join(dir, "api.sock")
	for _, tc := range []struct {
		name  string
		files []*os.File
		want  string
	}{
		{"the configured socket", []*os.File{listen("api.sock")}, sock},
		{"another path", []*os.File{listen("other.sock")}, "error: socket activation: systemd passed unix " + filepath.Join(dir, "other.sock") + " but the configured socket is " + sock},
		{"two sockets", []*os.File{listen("a.sock"), listen("b.sock")}, "error: socket activation: systemd passed 2 sockets, want one"},
		{"none", nil, "none"},
	} {
		env := []string{"LISTEN_FDS=" + strconv.Itoa(len(tc.files))}
		if len(tc.files) == 0 {
			env = nil
		}
		r := probe.Run(t, nil, probe.Cmd{Op: "activated-listener", Args: []string{sock}, Files: tc.files, Env: env})
		if r.Setup != "" || !strings.HasPrefix(r.Out, tc.want) {
			t.Errorf("%s: %q (setup %q), want %q", tc.name, r.Out, r.Setup, tc.want)
		}
	}
}

// TestDaemonLogFlags: bad --log-format or --log-level values are usage
// errors naming the flag; json gives JSON lines.
func TestDaemonLogFlags(t *testing.T) {
	for _, args := range [][]string{{"daemon", "--log-format", "xml"}, {"daemon", "--log-level", "loud"}} {
		code, out, errs := cmdline(args...)
		if code != cli.ExitUsage || out != "" || !strings.Contains(errs, args[1]+" ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a usage error naming %s", args, code, out, errs, args[1])
		}
	}
	var b bytes.Buffer
	log, err := daemonLogger(&b, "json", "warn")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	if s := b.String(); strings.Contains(s, "hidden") || !strings.HasPrefix(s, "{") || !strings.Contains(s, `"msg":"shown","k":1`) {
		t.Errorf("json at warn: %q", s)
	}
}
