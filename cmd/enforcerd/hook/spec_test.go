package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// readOnlySpec is a config.json that gives every write=false rule of
// oci/speccheck.
func readOnlySpec() *specs.Spec {
	minus := int64(136)
	return &specs.Spec{
		Version: "1.0.2",
		Root:    &specs.Root{Path: "rootfs", Readonly: true},
		Process: &specs.Process{Args: []string{"/bin/agent"}, Cwd: "/", Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN"}}},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"ro"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts"},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.MountNamespace}, {Type: specs.NetworkNamespace}},
			Resources: &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{
				{Allow: false, Access: "rwm"}, {Allow: true, Type: "c", Major: &minus, Access: "rwm"},
			}},
		},
	}
}

// TestHookContainerSpec: on a host without BPF LSM (the fake enforcer
// cannot enforce write=false) whose daemon allows partial coverage, the
// hook registers a write=false container whose config.json is read-only
// (write credited to the spec: partial, descriptors handed in), and
// refuses (125) one with a read-write mount, naming the mount; nothing is
// registered then. A config.json that cannot be read credits nothing and
// says so.
func TestHookContainerSpec(t *testing.T) {
	bundle := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bundle, "rootfs", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeSpec := func(s *specs.Spec) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	enf := registrytest.NewEnforcer(false)
	sock, _ := hookDaemonOf(t, enf, true)
	state := func(id string) string {
		return `{"ociVersion":"1.0.2-dev","id":"` + id + `","status":"created","pid":` + itoa(os.Getpid()) + `,"bundle":"` + bundle + `","annotations":{"enforcerd.io/ceiling":"write=false"}}`
	}

	rw := readOnlySpec()
	rw.Mounts = append(rw.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: bundle, Options: []string{"rbind", "rw"}})
	writeSpec(rw)
	code, msg := runHookWith(sock, "createRuntime", state("rw"))
	if code != cli.ExitCannotEnforce || !strings.Contains(msg, "mount /data") || !strings.Contains(msg, "not read-only") {
		t.Fatalf("read-write mount: exit %d (%s), want %d naming mount /data", code, msg, cli.ExitCannotEnforce)
	}
	if enf.Len() != 0 {
		t.Fatal("read-write mount: registered")
	}

	if err := os.Remove(filepath.Join(bundle, "config.json")); err != nil {
		t.Fatal(err)
	}
	code, msg = runHookWith(sock, "createRuntime", state("gone"))
	if code != cli.ExitCannotEnforce || !strings.Contains(msg, "config.json") {
		t.Fatalf("no config.json: exit %d (%s), want %d naming config.json", code, msg, cli.ExitCannotEnforce)
	}

	writeSpec(readOnlySpec())
	code, msg = runHookWith(sock, "createRuntime", state("ro"))
	if code != cli.ExitOK {
		t.Fatalf("read-only spec: exit %d: %s", code, msg)
	}
	if enf.Len() != 1 || !strings.Contains(msg, "write-inherited-fds") {
		t.Fatalf("read-only spec: registered %d, output %s; want one registration with the descriptors gap", enf.Len(), msg)
	}
}

// TestHookSpecLayerRefusesAmbiguousSpec: a config.json whose root says
// "readonly":false and "Readonly":true is read-only for runc (encoding/json
// folds keys, last wins) but writable for crun and youki (exact match);
// the hook credits nothing from it and names the key, while the same spec
// spelled once is credited.
func TestHookSpecLayerRefusesAmbiguousSpec(t *testing.T) {
	bundle := t.TempDir()
	b, err := json.Marshal(readOnlySpec())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(bundle, "config.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	st := specs.State{ID: "c1", Pid: 1, Bundle: bundle}
	if l := hookSpecLayer(st, nil); !l.Write {
		t.Fatalf("read-only spec not credited: %+v", l)
	}
	amb := strings.Replace(string(b), `"readonly":true`, `"readonly":false,"Readonly":true`, 1)
	if amb == string(b) {
		t.Fatal("fixture has no root.readonly")
	}
	if err := os.WriteFile(cfg, []byte(amb), 0o644); err != nil {
		t.Fatal(err)
	}
	l := hookSpecLayer(st, nil)
	if l.Write || l.Network || !strings.Contains(l.WriteMissing, "root.Readonly") {
		t.Errorf("ambiguous spec: %+v, want nothing credited and root.Readonly named", l)
	}
}
