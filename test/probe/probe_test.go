package probe_test

import (
	"bufio"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/test/probe"
)

func TestMain(m *testing.M) {
	probe.Main()
	os.Exit(m.Run())
}

func init() {
	probe.RegisterAll(map[string]probe.Op{
		"test-echo": func(r *probe.Result, a []string) {
			r.Out = strings.Join(a, " ") + " " + os.Getenv("PROBE_TEST_EXTRA")
			r.Effect = true
		},
		"test-errno":   func(r *probe.Result, a []string) { r.Check(syscall.EPERM, "op") },
		"test-setup":   func(r *probe.Result, a []string) { r.Require(syscall.ENOENT, "prepare") },
		"test-setupf":  func(r *probe.Result, a []string) { r.Check(probe.Setupf("no %s", "fixture"), "op") },
		"test-nothing": func(r *probe.Result, a []string) { os.Exit(3) },
		"test-sync": func(r *probe.Result, a []string) {
			probe.Sync()
			_, err := os.Stat(a[0])
			r.Check(err, "stat")
		},
		"test-inherited": func(r *probe.Result, a []string) {
			b := make([]byte, 16)
			n, err := syscall.Read(probe.InheritedFD, b)
			r.Check(err, "read fd 3")
			r.Out = string(b[:max(n, 0)])
		},
		"test-stream": func(r *probe.Result, a []string) {
			sc := bufio.NewScanner(os.Stdin)
			for sc.Scan() {
				os.Stdout.WriteString("got " + sc.Text() + "\n")
			}
			r.Out = "done"
		},
		"test-env": func(r *probe.Result, a []string) { r.Out = os.Getenv("HOME") },
	})
}

// TestRunReportsTheOutcome: the three outcomes of an operation stay apart
// (success, its errno, could not attempt), with the fields ops fill.
func TestRunReportsTheOutcome(t *testing.T) {
	r := probe.Run(t, nil, probe.Cmd{Op: "test-echo", Args: []string{"a", "b"}, Env: []string{"PROBE_TEST_EXTRA=x"}})
	if r.Op != "test-echo" || r.Errno != 0 || r.Setup != "" || r.Out != "a b x" || !r.Effect || r.Exit != -1 {
		t.Errorf("test-echo: %+v", r)
	}
	if r := probe.Run(t, nil, probe.Cmd{Op: "test-errno"}); !r.Denied() || r.Errno != syscall.EPERM {
		t.Errorf("test-errno: %v, want EPERM", r)
	}
	for _, op := range []string{"test-setup", "test-setupf", "no-such-op"} {
		if r := probe.Run(t, nil, probe.Cmd{Op: op}); r.Setup == "" || r.Denied() {
			t.Errorf("%s: %v, want could not attempt", op, r)
		}
	}
}

// TestProbeEnvironmentIsItsOwn: nothing of the test's environment reaches
// a probe but what the Cmd adds.
func TestProbeEnvironmentIsItsOwn(t *testing.T) {
	t.Setenv("HOME", "/leaked")
	if r := probe.Run(t, nil, probe.Cmd{Op: "test-env"}); r.Out != "" {
		t.Errorf("HOME reached the probe: %q", r.Out)
	}
}

// TestExecWithoutResultFails: a probe that prints no result is an error,
// never a result.
func TestExecWithoutResultFails(t *testing.T) {
	if r, err := probe.Exec(nil, probe.Cmd{Op: "test-nothing"}); err == nil {
		t.Errorf("no result printed, got %v and no error", r)
	}
}

// TestRunBetweenSync: Between runs while the probe waits at Sync.
func TestRunBetweenSync(t *testing.T) {
	f := t.TempDir() + "/made-between"
	r := probe.Run(t, nil, probe.Cmd{Op: "test-sync", Args: []string{f}, Between: func() {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Error(err)
		}
	}})
	if r.Errno != 0 || r.Setup != "" {
		t.Errorf("test-sync: %v: the file made between the steps was not there", r)
	}
	if _, err := probe.Exec(nil, probe.Cmd{Op: "test-echo", Between: func() {}}); err == nil {
		t.Error("a probe that never reached its sync point: no error")
	}
}

// TestRunPassesFiles: Cmd.Files are the probe's fd 3, ... and closed in the
// parent once it started.
func TestRunPassesFiles(t *testing.T) {
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Close()
	wr.WriteString("inherited")
	r := probe.Run(t, nil, probe.Cmd{Op: "test-inherited", Files: []*os.File{rd}})
	if r.Out != "inherited" || r.Errno != 0 {
		t.Errorf("test-inherited: %v", r)
	}
	if _, err := rd.Stat(); err == nil {
		t.Error("the parent's copy of the inherited file is still open")
	}
}

// TestStartStreams: a started probe reads stdin, its lines arrive while it
// runs, and its result is not one of them.
func TestStartStreams(t *testing.T) {
	p, err := probe.Start(nil, probe.Cmd{Op: "test-stream"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(p.Lines()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no line from the running probe")
		}
	}
	p.CloseStdin()
	r, err := p.Wait()
	if err != nil || r.Out != "done" {
		t.Fatalf("result %v, %v", r, err)
	}
	if l := p.Lines(); strings.Join(l, "|") != "got one" {
		t.Errorf("lines %q, want only the op's own", l)
	}
}

func TestParseResultTakesTheLastLine(t *testing.T) {
	r, err := probe.ParseResult([]byte("noise\n{\"Op\":\"x\",\"Errno\":1,\"Exit\":-1}\n"))
	if err != nil || r.Op != "x" || r.Errno != 1 {
		t.Errorf("ParseResult: %+v, %v", r, err)
	}
	if _, err := probe.ParseResult([]byte(`{"t":1}`)); err == nil {
		t.Error("a JSON line without Op parsed as a result")
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	probe.Register("test-echo", func(*probe.Result, []string) {})
}
