package hook

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// TestPoststopGivesUpWithoutDaemon: with the daemon unreachable (no
// socket file; a socket nobody accepts on; a socket that accepts and
// never answers) poststop exits 1 naming the sweep, well within 2 s,
// although --timeout is 8 s: no wait for a restarting daemon, no retry.
// The bound is generous: this checks the behaviour, not a speed.
func TestPoststopGivesUpWithoutDaemon(t *testing.T) {
	dir := t.TempDir()
	refusing := filepath.Join(dir, "refusing.sock")
	ln, err := net.Listen("unix", refusing)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody listens: ECONNREFUSED
	silent := filepath.Join(dir, "silent.sock")
	sl, err := net.Listen("unix", silent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sl.Close() })
	var held []net.Conn
	go func() {
		for {
			c, err := sl.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	const state = `{"ociVersion":"1.0.2-dev","id":"c1","status":"stopped"}`
	for _, tc := range []struct{ name, sock string }{
		{"socket absent", filepath.Join(dir, "absent.sock")},
		{"connection refused", refusing},
		{"no answer", silent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			var out, errb strings.Builder
			code := execute([]string{"hook", "--socket", tc.sock, "--timeout", "8s", "poststop"},
				cli.Streams{In: strings.NewReader(state), Out: &out, Err: &errb})
			d := time.Since(start)
			if code != cli.ExitFailure || !strings.Contains(errb.String(), "sweep drops the entry") {
				t.Errorf("exit %d, stderr %q: want 1 naming the sweep", code, errb.String())
			}
			if d > 2*time.Second {
				t.Errorf("poststop took %v with the daemon unreachable, want at most 2s", d)
			}
		})
	}
}

// TestCreateRuntimeWaitsForDaemon: createRuntime keeps its --timeout and
// its wait for a restarting daemon, and fails closed (125) once it ends.
func TestCreateRuntimeWaitsForDaemon(t *testing.T) {
	hookPidGroup = func(int) (string, error) { return "/runtime/ctr", nil }
	hookSelfGroup = func() (string, error) { return "/host", nil }
	t.Cleanup(func() {
		hookPidGroup = cgroup.PidGroup
		hookSelfGroup = func() (string, error) { return cgroup.PidGroup(os.Getpid()) }
	})
	sock := filepath.Join(t.TempDir(), "absent.sock")
	start := time.Now()
	var out, errb strings.Builder
	code := execute([]string{"hook", "--socket", sock, "--timeout", "1500ms", "createRuntime"},
		cli.Streams{In: strings.NewReader(stateJSON("c1", os.Getpid(), `"enforcerd.io/ceiling":"network=false"`)), Out: &out, Err: &errb})
	if code != cli.ExitCannotEnforce {
		t.Fatalf("exit %d (%s), want 125", code, errb.String())
	}
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Errorf("createRuntime gave up after %v, before its --timeout 1.5s", d)
	}
}
