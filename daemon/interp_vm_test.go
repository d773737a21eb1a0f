package daemon_test

// The program interpreter under shell=none, end to end (docs/threat-model.md
// X7): `enforcerd run` vets the entrypoint and the --exec-allow files, and
// the program interpreters it vetted are listed with the registration by
// identity, directly (no daemon) and through the daemon. An allowed
// dynamic program starts through its vetted loader (also as the
// entrypoint, whose loader is opened before the pending registration is
// activated); a sandbox that renames a symlink to BusyBox over that
// loader and execs the allowed program gets EPERM, and BusyBox never runs.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/testelf"
)

func TestVMRunProgramInterpreterSwap(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name   string
		daemon bool
	}{{"direct", false}, {"through the daemon", true}} {
		t.Run(mode.name, func(t *testing.T) {
			e := newVMEnv(t, "127.0.0.1:19497")
			if mode.daemon {
				e.startDaemon()
				defer e.stopDaemon(t.Failed())
			}
			result := func(r runResult) probe.Result {
				t.Helper()
				res, err := probe.ParseResult([]byte(r.stdout))
				if err != nil || r.code != 0 || res.Setup != "" {
					t.Fatalf("run: exit %d, result %v, %v\nstdout: %s\nstderr: %s", r.code, res, err, r.stdout, r.stderr)
				}
				return res
			}
			// The dynamic program as the entrypoint runs under
			// shell=none: its vetted loader is listed.
			f := testelf.TestInterpFixture(t)
			if r := e.enforcerdRun(nil, []string{"--shell=none"}, f.Prog, "--version"); r.code != 0 || !strings.Contains(r.stdout, "runc") {
				t.Fatalf("--shell=none -- %s --version: exit %d\nstdout: %s\nstderr: %s", f.Prog, r.code, r.stdout, r.stderr)
			}
			// (a) control: without shell=none the swapped loader runs
			// BusyBox's sh.
			mark := filepath.Join(f.Dir, "mark")
			if res := result(e.enforcerdRun(probe.Env("interp-swap-exec", f.Prog, f.LD, "/bin/busybox", mark), nil, self)); res.Errno != 0 || res.Exit != 0 || !pathExists(mark) {
				t.Fatalf("control: the swapped interpreter: %v, mark %v; want BusyBox to run", res, pathExists(mark))
			}
			// The allowed program runs under shell=none with its vetted
			// loader, as often as it is exec'd.
			f = testelf.TestInterpFixture(t)
			flags := []string{"--shell=none", "--exec-allow", f.Prog}
			if res := result(e.enforcerdRun(probe.Env("exec-as", f.Prog, "prog", "--version"), flags, self)); res.Errno != 0 || res.Exit != 0 {
				t.Fatalf("--exec-allow %s: exec of it: %v, want it to run", f.Prog, res)
			}
			// (b) swapped: EPERM; (c) BusyBox never ran.
			mark = filepath.Join(f.Dir, "mark")
			res := result(e.enforcerdRun(probe.Env("interp-swap-exec", f.Prog, f.LD, "/bin/busybox", mark), flags, self))
			if res.Errno != syscall.EPERM {
				t.Errorf("BYPASS: exec of an allowed program whose interpreter was swapped for BusyBox: %v, want EPERM", res)
			}
			if pathExists(mark) {
				t.Errorf("BYPASS: BusyBox's sh ran as the program interpreter of an allowed program (%s exists)", mark)
			}
		})
	}
}

func pathExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
