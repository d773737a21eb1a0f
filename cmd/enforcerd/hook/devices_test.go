package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/ownterm"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/entry"
)

// TestHookAllowDevices: enforcerd.io/allow-devices reaches the entry
// (numbers as given, a path resolved inside the container's root, never
// the host's); a malformed list fails the hook as a usage error, a path
// the daemon cannot resolve as a failure, and neither registers
// anything. The init's (the state's pid's) own terminals are declared.
func TestHookAllowDevices(t *testing.T) {
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	if err := os.MkdirAll(filepath.Join(rootfs, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A node inside the container's root only (root may mknod here).
	node := unix.Mknod(filepath.Join(rootfs, "dev", "gpu"), unix.S_IFCHR|0o600, int(unix.Mkdev(226, 128))) == nil
	cfg := `{"ociVersion":"1.0.2","process":{"args":["/bin/agent"],"cwd":"/"},"root":{"path":"rootfs"}}`
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	enf := registrytest.NewEnforcer(true)
	sock, _ := hookDaemonOf(t, enf, false)

	state := func(id, devices string) string {
		return `{"ociVersion":"1.0.2-dev","id":"` + id + `","status":"created","pid":` + itoa(os.Getpid()) + `,"bundle":"` + bundle + `","annotations":{"enforcerd.io/ceiling":"network=false","enforcerd.io/allow-devices":"` + devices + `"}}`
	}
	for _, c := range []struct {
		name, devices string
		want          int
	}{
		{"wildcard", "c 195:*", cli.ExitUsage},
		{"duplicate", "c 1:3,c 1:3", cli.ExitUsage},
		{"relative", "dev/null", cli.ExitUsage},
		// /dev/null exists on the host, not in the container's root.
		{"the host's node", "/dev/null", cli.ExitFailure},
	} {
		code, msg := runHookWith(sock, "createRuntime", state("bad", c.devices))
		if code != c.want || !strings.Contains(msg, "allow") || !strings.Contains(msg, "devices") {
			t.Errorf("%s: exit %d (%s), want %d naming the device list", c.name, code, msg, c.want)
		}
		if enf.Len() != 0 {
			t.Fatalf("%s: registered", c.name)
		}
	}
	devices, want := "c 10:200", []entry.Device{{Dev: 10<<20 | 200}}
	if node {
		devices += ",/dev/gpu"
		want = append(want, entry.Device{Dev: 226<<20 | 128})
	}
	code, msg := runHookWith(sock, "createRuntime", state("ok", devices))
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, msg)
	}
	mine, err := ownterm.Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range enf.M {
		if fmt.Sprint(en.AllowDevices) != fmt.Sprint(want) {
			t.Errorf("entry devices %v, want %v", en.AllowDevices, want)
		}
		if fmt.Sprint(en.Terminals) != fmt.Sprint(mine) {
			t.Errorf("entry terminals %v, want the init's %v", en.Terminals, mine)
		}
	}
}
