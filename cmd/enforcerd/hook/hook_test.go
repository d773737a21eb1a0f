package hook

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// hookDaemon serves the API on a socket with a fake enforcer; the test
// process's own cgroup is the "container" cgroup.
func hookDaemon(t *testing.T) (string, *registrytest.Enforcer) {
	return hookDaemonWith(t, true)
}

// hookDaemonWith is hookDaemon with the daemon's allow_partial setting (the
// fake enforcer is a host without BPF LSM: network=false is partial).
func hookDaemonWith(t *testing.T, allowPartial bool) (string, *registrytest.Enforcer) {
	t.Helper()
	enf := registrytest.NewEnforcer(false)
	sock, _ := hookDaemonOf(t, enf, allowPartial)
	return sock, enf
}

// hookDaemonOf is the one prologue of the hook tests: it serves the API
// over a registry of enf (registrytest.NewEnforcer(true): every field
// enforced; false: a host without BPF LSM) and fake cgroups, with the
// daemon's allow_partial setting, the test process in the "container"
// cgroup /runtime/ctr (the hook's pid lookup is faked for it) and every
// API peer in /host; core limits are faked. It returns the socket and the
// registry.
func hookDaemonOf(t *testing.T, enf *registrytest.Enforcer, allowPartial bool) (string, *registry.Registry) {
	t.Helper()
	const self = "/runtime/ctr"
	hookPidGroup = func(pid int) (string, error) {
		if pid != os.Getpid() {
			return cgroup.PidGroup(pid)
		}
		return self, nil
	}
	t.Cleanup(func() { hookPidGroup = cgroup.PidGroup })
	fakeCoreLimits(t, nil)
	cgs := registrytest.NewCgroups()
	cgs.Add(self)
	cgs.Add("/host")
	cgs.SetPid(os.Getpid(), self)
	reg := registry.New(registry.Options{Enforcer: enf, Cgroups: cgs, StatePath: filepath.Join(t.TempDir(), "state.json"), AllowPartial: allowPartial})
	return clitest.ServeAPI(t, reg, "/host"), reg
}

func runHookWith(sock, stage, stdin string) (int, string) {
	var out, errb bytes.Buffer
	code := execute([]string{"hook", "--socket", sock, "--timeout", "5s", stage}, cli.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return code, errb.String()
}

func stateJSON(id string, pid int, ann string) string {
	return `{"ociVersion":"1.0.2-dev","id":"` + id + `","status":"created","pid":` + itoa(pid) + `,"bundle":"/b","annotations":{` + ann + `}}`
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestHookCreateRuntimeAndPoststop(t *testing.T) {
	sock, enf := hookDaemon(t)
	code, msg := runHookWith(sock, "createRuntime", stateJSON("c1", os.Getpid(), `"enforcerd.io/ceiling":"network=false"`))
	if code != cli.ExitOK {
		t.Fatalf("createRuntime exit %d: %s", code, msg)
	}
	if enf.Len() != 1 {
		t.Fatal("not registered")
	}
	for _, en := range enf.M {
		if !en.Pending || en.Ceiling.Network {
			t.Fatalf("entry %+v: want pending network=false", en)
		}
	}
	code, msg = runHookWith(sock, "poststop", `{"ociVersion":"1.0.2-dev","id":"c1","status":"stopped"}`)
	if code != cli.ExitOK || enf.Len() != 0 {
		t.Fatalf("poststop exit %d (%s), map %d", code, msg, enf.Len())
	}
	// Unknown container at poststop is not an error.
	if code, msg := runHookWith(sock, "poststop", `{"ociVersion":"1.0.2-dev","id":"c1","status":"stopped"}`); code != cli.ExitOK {
		t.Fatalf("poststop of unknown: %d %s", code, msg)
	}
}

func TestHookRefusesContainer(t *testing.T) {
	sock, enf := hookDaemonWith(t, false)
	pid := os.Getpid()
	cases := []struct {
		name, socket, stdin string
		want                int
	}{
		{"daemon down", filepath.Join(t.TempDir(), "none.sock"), stateJSON("a", pid, `"enforcerd.io/role":"test"`), cli.ExitCannotEnforce},
		{"malformed ceiling", sock, stateJSON("a", pid, `"enforcerd.io/ceiling":"network=maybe"`), cli.ExitUsage},
		{"unknown annotation", sock, stateJSON("a", pid, `"enforcerd.io/rolee":"test"`), cli.ExitUsage},
		{"no annotation", sock, stateJSON("a", pid, `"x":"y"`), cli.ExitUsage},
		{"mis-cased annotation prefix", sock, stateJSON("a", pid, `"enforcerd.io/role":"test","Enforcerd.io/ceiling":"network=false"`), cli.ExitUsage},
		{"mis-cased annotation prefix only", sock, stateJSON("a", pid, `"ENFORCERD.IO/ceiling":"network=false"`), cli.ExitUsage},
		{"mis-cased annotation key", sock, stateJSON("a", pid, `"enforcerd.io/role":"test","enforcerd.io/Ceiling":"network=false"`), cli.ExitUsage},
		{"malformed state", sock, `{"ociVersion":"1.0.2-dev","id":`, cli.ExitUsage},
		{"no pid", sock, `{"ociVersion":"1.0.2-dev","id":"a","annotations":{"enforcerd.io/role":"test"}}`, cli.ExitUsage},
		{"cannot enforce (no BPF LSM)", sock, stateJSON("a", pid, `"enforcerd.io/ceiling":"write=false"`), cli.ExitCannotEnforce},
		{"partial coverage not allowed", sock, stateJSON("a", pid, `"enforcerd.io/ceiling":"network=false"`), cli.ExitCannotEnforce},
		{"unknown parent (daemon-side refusal)", sock, stateJSON("a", pid, `"enforcerd.io/role":"test","enforcerd.io/parent":"nope"`), cli.ExitFailure},
		{"dead pid", sock, stateJSON("a", 999999999, `"enforcerd.io/role":"test"`), cli.ExitCannotEnforce},
	}
	for _, tc := range cases {
		code, msg := runHookWith(tc.socket, "createRuntime", tc.stdin)
		if code != tc.want {
			t.Errorf("%s: exit %d, want %d (%s)", tc.name, code, tc.want, msg)
		}
		if !strings.Contains(msg, "enforcerd hook createRuntime:") {
			t.Errorf("%s: message %q does not name the hook", tc.name, msg)
		}
	}
	if enf.Len() != 0 {
		t.Fatal("a refused container left a map entry")
	}
	if code, _ := runHookWith(sock, "createContainer", stateJSON("a", pid, `"enforcerd.io/role":"test"`)); code != cli.ExitUsage {
		t.Fatalf("unknown stage exit %d", code)
	}
}

// TestHookPartialCoverage: a ceiling the host enforces only in part is
// refused (125, the gaps named) unless the daemon allows partial coverage;
// then the hook says what is not enforced. A daemon-side conflict exits 1.
func TestHookPartialCoverage(t *testing.T) {
	st := stateJSON("p1", os.Getpid(), `"enforcerd.io/ceiling":"network=false"`)
	sock, enf := hookDaemonWith(t, false)
	code, msg := runHookWith(sock, "createRuntime", st)
	if code != cli.ExitCannotEnforce || !strings.Contains(msg, "network-non-inet") || !strings.Contains(msg, "tamper") {
		t.Fatalf("partial coverage, not allowed: exit %d, want %d naming the gaps: %s", code, cli.ExitCannotEnforce, msg)
	}
	if enf.Len() != 0 {
		t.Fatal("a refused container left a map entry")
	}
	sock, enf = hookDaemonWith(t, true)
	code, msg = runHookWith(sock, "createRuntime", st)
	if code != cli.ExitOK || !strings.Contains(msg, "NOT enforced: network-non-inet") {
		t.Fatalf("partial coverage, allowed: exit %d, want 0 and the gaps named: %s", code, msg)
	}
	for _, en := range enf.M {
		if !en.AllowPartial {
			t.Errorf("entry %+v: not marked as accepted with partial coverage", en)
		}
	}
	if code, msg := runHookWith(sock, "createRuntime", st); code != cli.ExitFailure {
		t.Fatalf("second registration of p1 (conflict): exit %d, want %d: %s", code, cli.ExitFailure, msg)
	}
}

// TestHookRefusesUnknownRole: an enforcerd.io/role that is not a role name,
// empty included, is a malformed annotation: exit 2 with the valid names,
// and the daemon never sees the container.
func TestHookRefusesUnknownRole(t *testing.T) {
	sock, enf := hookDaemon(t)
	for _, role := range []string{"hacker", "reviwer", "", "  "} {
		code, msg := runHookWith(sock, "createRuntime", stateJSON("a", os.Getpid(), `"enforcerd.io/role":"`+role+`","enforcerd.io/ceiling":"network=false"`))
		if code != cli.ExitUsage {
			t.Errorf("role %q: exit %d, want %d (%s)", role, code, cli.ExitUsage, msg)
		}
		if !strings.Contains(msg, "enforcerd hook createRuntime: container a: bad enforcerd annotation: enforcerd.io/role: ") ||
			!strings.Contains(msg, "valid names: roles advisor, custom, explore,") {
			t.Errorf("role %q: message %q", role, msg)
		}
	}
	if enf.Len() != 0 {
		t.Fatal("a refused role reached the daemon")
	}
}
