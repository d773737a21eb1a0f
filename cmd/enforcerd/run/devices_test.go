package run

// run --allow-device and --deny-console-egress: parsing, resolution and
// the usage errors (exit 2, nothing run); the daemon's answer checked
// for devices and terminals.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/devallow"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
	"github.com/enforcerd/enforcerd/entry"
)

func TestRunAllowDeviceParses(t *testing.T) {
	o, _, err := parseRunArgs(t, []string{"--allow-device", "c 226:128", "--allow-device=/dev/null", "--allow-device", "b 7:0", "--", "true"})
	if err != nil {
		t.Fatal(err)
	}
	want := []devallow.Device{{Major: 226, Minor: 128}, {Major: 1, Minor: 3, Path: "/dev/null"}, {Block: true, Major: 7}}
	if fmt.Sprint(o.allowDevices) != fmt.Sprint(want) {
		t.Errorf("allowDevices = %v, want %v", o.allowDevices, want)
	}
	if got := entryDevices(o.allowDevices); fmt.Sprint(got) != fmt.Sprint([]entry.Device{{Dev: 226<<20 | 128}, {Dev: 1<<20 | 3}, {Block: true, Dev: 7 << 20}}) {
		t.Errorf("entry devices = %v", got)
	}
	if o.denyConsole {
		t.Error("--deny-console-egress is on by default")
	}
	o, _, err = parseRunArgs(t, []string{"--network=deny", "--deny-console-egress", "--", "true"})
	if err != nil || !o.denyConsole {
		t.Errorf("--deny-console-egress: %v, %v", o.denyConsole, err)
	}
}

func TestRunAllowDeviceBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := 0; i <= 16; i++ {
		many = append(many, "--allow-device", fmt.Sprintf("c 10:%d", i))
	}
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"wildcard", []string{"--allow-device", "c 195:*", "--", "true"}, "wildcards"},
		{"no type", []string{"--allow-device", "226:128", "--", "true"}, `"226:128"`},
		{"relative", []string{"--allow-device", "dev/null", "--", "true"}, "must be absolute"},
		{"duplicate", []string{"--allow-device", "c 1:3", "--allow-device", "/dev/null", "--", "true"}, "listed twice"},
		{"missing path", []string{"--allow-device", filepath.Join(dir, "missing"), "--", "true"}, "no such file"},
		{"not a device", []string{"--allow-device", file, "--", "true"}, "not a device node"},
		{"too many", append(many, "--", "true"), "at most 16"},
		{"console egress with network", []string{"--deny-console-egress", "--", "true"}, "--deny-console-egress needs --network=deny"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := clitest.Run(t, nil, append([]string{"run"}, c.args...)...)
			if r.Code != cli.ExitUsage {
				t.Errorf("exit %d, want %d (stderr: %s)", r.Code, cli.ExitUsage, r.Stderr)
			}
			flag := "--allow-device"
			if strings.HasPrefix(c.name, "console") {
				flag = "--deny-console-egress"
			}
			if !strings.Contains(r.Stderr, c.says) || !strings.Contains(r.Stderr, flag) {
				t.Errorf("stderr %q, want it to name %s and %q", r.Stderr, flag, c.says)
			}
		})
	}
}

// TestCheckRunDevices: the daemon may drop devices and must not add any,
// and may declare only run's own terminals.
func TestCheckRunDevices(t *testing.T) {
	own := []entry.Terminal{{Dev: 136<<20 | 3, PtsDev: 25}}
	asked := []string{"c 226:128", "c 10:200"}
	for _, c := range []struct {
		ct api.Container
		ok bool
	}{
		{api.Container{AllowDevices: []string{"c 226:128"}, Terminals: []string{"c 136:3 (devpts 0:25)"}}, true},
		{api.Container{}, true},
		{api.Container{AllowDevices: []string{"c 226:129"}}, false},
		{api.Container{AllowDevices: []string{"c 10:200 (/dev/x)", "b 10:200"}}, false},
		{api.Container{Terminals: []string{"c 136:3 (devpts 0:26)"}}, false},
		{api.Container{Terminals: []string{"c 4:1"}}, false},
	} {
		if err := checkRunDevices(c.ct, asked, own); (err == nil) != c.ok {
			t.Errorf("%+v: %v, want ok=%t", c.ct, err, c.ok)
		}
	}
}
