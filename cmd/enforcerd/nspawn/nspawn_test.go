package nspawn

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// nspawnFixture: a daemon with a fake enforcer on a socket, enforcerd in
// the cgroup /m.scope of a fake cgroup2 mount (a temp dir), a fake
// systemd-nspawn binary, and the exec of nspawn recorded (it fails, as a
// missing binary would).
type nspawnFixture struct {
	sock, mount, nspawn string
	enf                 *registrytest.Enforcer
	reg                 *registry.Registry
	execArgv            []string
}

func newNspawnFixture(t *testing.T) *nspawnFixture {
	t.Helper()
	f := &nspawnFixture{mount: t.TempDir(), nspawn: filepath.Join(t.TempDir(), "systemd-nspawn")}
	if err := os.WriteFile(f.nspawn, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	oldSelf, oldMount, oldExec := nspawnSelfGroup, nspawnCgroupMount, nspawnExec
	nspawnSelfGroup = func() (string, error) { return "/m.scope/supervisor", nil }
	nspawnCgroupMount = func() (string, error) { return f.mount, nil }
	nspawnExec = func(argv0 string, argv, env []string) error {
		f.execArgv = append([]string{argv0}, argv...)
		return errors.New("injected exec failure")
	}
	t.Cleanup(func() { nspawnSelfGroup, nspawnCgroupMount, nspawnExec = oldSelf, oldMount, oldExec })
	if err := os.MkdirAll(filepath.Join(f.mount, "m.scope"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.enf = registrytest.NewEnforcer(true)
	f.enf.CanShell = true
	cgs := registrytest.NewCgroups()
	cgs.Add("/m.scope")
	cgs.Add("/m.scope/payload")
	cgs.Add("/host")
	f.reg = registry.New(registry.Options{Enforcer: f.enf, Cgroups: cgs, StatePath: filepath.Join(t.TempDir(), "state.json")})
	f.sock = clitest.ServeAPI(t, f.reg, "/host")
	return f
}

func (f *nspawnFixture) run(args ...string) (int, string) {
	var out, errb bytes.Buffer
	code := execute(append([]string{"nspawn", "--socket", f.sock, "--timeout", "2s", "--nspawn", f.nspawn}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, errb.String()
}

// TestNspawnOneOff: the one-off mode registers <machine>/payload pending
// with the nspawn binary as its setup program and the machine's command
// as its entrypoint, then execs systemd-nspawn --keep-unit with the
// arguments; when that exec fails the registration is taken back.
func TestNspawnOneOff(t *testing.T) {
	f := newNspawnFixture(t)
	var seen api.Container
	nspawnExec = func(argv0 string, argv, env []string) error {
		f.execArgv = append([]string{argv0}, argv...)
		cs := f.reg.List()
		if len(cs) != 1 {
			t.Fatalf("at the exec: %d registrations", len(cs))
		}
		seen = api.Container{ID: cs[0].ID, Cgroup: cs[0].Cgroup, State: cs[0].State}
		if cs[0].SetupProgram == nil || cs[0].SetupProgram.Path != f.nspawn || cs[0].Entrypoint == nil || cs[0].Entrypoint.Path != "/bin/agent" || cs[0].Entrypoint.Root != "/srv/m1" {
			t.Errorf("registration %+v", cs[0])
		}
		return errors.New("injected exec failure")
	}
	code, msg := f.run("--ceiling", "network=false", "--", "--register=no", "-D", "/srv/m1", "/bin/agent", "x")
	if code != cli.ExitCannotEnforce || !strings.Contains(msg, "injected exec failure") {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if seen.ID != "nspawn-m1" || seen.Cgroup != "/m.scope/payload" || seen.State != "pending" {
		t.Fatalf("at the exec: %+v", seen)
	}
	if want := []string{f.nspawn, "systemd-nspawn", "--keep-unit", "--register=no", "-D", "/srv/m1", "/bin/agent", "x"}; !slices.Equal(f.execArgv, want) {
		t.Fatalf("exec %q, want %q", f.execArgv, want)
	}
	if len(f.reg.List()) != 0 || len(f.enf.M) != 0 {
		t.Fatalf("after the failed exec: %d registrations, map %v", len(f.reg.List()), f.enf.M)
	}
}

// TestNspawnRefusals: nothing is exec'd, and a payload cgroup the call
// created is removed, when the daemon refuses or cannot be reached, or
// the command line boots.
func TestNspawnRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		sock string
		code int
		msg  string
	}{
		{"bad ceiling", []string{"--ceiling", "network=maybe", "--", "-D", "/srv/m1", "/bin/agent"}, "", cli.ExitFailure, "refusing to start it"},
		{"daemon down", []string{"--ceiling", "network=false", "--", "-D", "/srv/m1", "/bin/agent"}, "/nonexistent/s.sock", cli.ExitCannotEnforce, "refusing to start it"},
		{"boot", []string{"--ceiling", "network=false", "--", "-b", "-D", "/srv/m1"}, "", cli.ExitUsage, "-b is refused"},
		{"oci bundle", []string{"--", "--oci-bundle=/b", "-D", "/srv/m1", "agent"}, "", cli.ExitUsage, "--oci-bundle is refused"},
		{"no dash", []string{"-D", "/srv/m1"}, "", cli.ExitUsage, ""},
		{"prestart with args", []string{"--prestart", "m1", "--", "-D", "/x", "a"}, "", cli.ExitUsage, "--prestart takes no"},
		{"empty ceiling", []string{"--ceiling", "", "--", "-D", "/srv/m1", "/bin/agent"}, "", cli.ExitUsage, "--ceiling is empty"},
		{"empty ceiling, prestart", []string{"--prestart", "m1", "--ceiling", " "}, "", cli.ExitUsage, "--ceiling is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newNspawnFixture(t)
			if tc.sock != "" {
				f.sock = tc.sock
			}
			code, msg := f.run(tc.args...)
			if code != tc.code || !strings.Contains(msg, tc.msg) {
				t.Fatalf("exit %d (want %d, %q): %s", code, tc.code, tc.msg, msg)
			}
			if f.execArgv != nil {
				t.Fatalf("nspawn exec'd: %q", f.execArgv)
			}
			if _, err := os.Stat(filepath.Join(f.mount, "m.scope", "payload")); err == nil {
				t.Fatal("the payload cgroup the call created is left behind")
			}
		})
	}
}

// TestNspawnPrestart: --prestart registers the unit's payload (below
// <unit>, /.control and /supervisor stripped) and exits 0 without an
// exec; the root cgroup is refused.
func TestNspawnPrestart(t *testing.T) {
	f := newNspawnFixture(t)
	etc := t.TempDir()
	old := nspawnSettingsDirs
	nspawnSettingsDirs = []string{etc}
	t.Cleanup(func() { nspawnSettingsDirs = old })
	if err := os.WriteFile(filepath.Join(etc, "m1.nspawn"), []byte("[Exec]\nBoot=no\nParameters=/bin/agent --x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nspawnSelfGroup = func() (string, error) { return "/m.scope/.control", nil }
	code, msg := f.run("--prestart", "m1", "--ceiling", "network=false")
	if code != cli.ExitOK || f.execArgv != nil {
		t.Fatalf("exit %d, exec %q: %s", code, f.execArgv, msg)
	}
	cs := f.reg.List()
	if len(cs) != 1 || cs[0].ID != "nspawn-m1" || cs[0].Cgroup != "/m.scope/payload" || cs[0].State != "pending" ||
		cs[0].Entrypoint == nil || cs[0].Entrypoint.Root != "/var/lib/machines/m1" || cs[0].Entrypoint.Path != "/bin/agent" {
		t.Fatalf("registrations %+v", cs)
	}
	nspawnSelfGroup = func() (string, error) { return "/", nil }
	if code, msg := f.run("--prestart", "m1", "--id", "other", "--ceiling", "network=false"); code != cli.ExitCannotEnforce || !strings.Contains(msg, "root cgroup") {
		t.Fatalf("in the root cgroup: exit %d: %s", code, msg)
	}
}

// TestNspawnEnvUnifiedHierarchy: the one-off mode runs systemd-nspawn with
// SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 unless the operator set it.
func TestNspawnEnvUnifiedHierarchy(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"PATH=/bin"}, []string{"PATH=/bin", "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1"}},
		{[]string{"SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0", "PATH=/bin"}, []string{"SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0", "PATH=/bin"}},
		{nil, []string{"SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1"}},
	} {
		if got := nspawnEnv(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("nspawnEnv(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
