package daemon

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon"
)

// snapshot lists every path under root with its mode and size: what
// --check-config must leave unchanged.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%v %d %v", fi.Mode(), fi.Size(), fi.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkConfigRoot is a temporary root and a configuration whose every
// path (socket, state, pins, audit log, the proxy's socket and log) lies
// under it, each absent, followed by extra.
func checkConfigRoot(t *testing.T, extra string) (root, file string) {
	root = t.TempDir()
	body := "socket: " + root + "/run/enforcerd.sock\n" +
		"state: " + root + "/lib/state.json\n" +
		"pin_dir: " + root + "/bpf/enforcerd\n" +
		"audit:\n  path: " + root + "/log/audit.jsonl\n" +
		"proxy:\n  socket: " + root + "/run/proxy.sock\n  audit: " + root + "/log/proxy.jsonl\n" + extra
	file = filepath.Join(root, "config.yaml")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, file
}

// TestCheckConfigGood: a valid file exits 0 and prints the effective
// configuration (the file's values, the defaults elsewhere) as YAML that
// reads back to the same configuration; nothing under the root it names
// is created (no socket, no pin directory, no state file, no audit log).
func TestCheckConfigGood(t *testing.T) {
	root, file := checkConfigRoot(t, "sweep_interval: 5s\njournal:\n  rate_per_second: 7\n")
	before := snapshot(t, root)
	code, out, errOut := cmdline("daemon", "--check-config", "--config", file)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !reflect.DeepEqual(snapshot(t, root), before) {
		t.Errorf("--check-config changed %s: before %v, after %v", root, before, snapshot(t, root))
	}
	for _, want := range []string{"# enforcerd daemon: the effective configuration (from " + file, "\nsweep_interval: 5s\n",
		"\n  rate_per_second: 7\n", "\n  max_size_mb: 64\n", "\n  deadline: 30s\n", "\nsocket: " + root + "/run/enforcerd.sock\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, errOut := cmdline("daemon", "--check-config", "--quiet", "--config", file); code != 0 || out != "" || errOut != "" {
		t.Errorf("--quiet: exit %d, stdout %q, stderr %q; want 0 and nothing", code, out, errOut)
	}
	if code, _, errOut := cmdline("daemon", "--quiet", "--config", file); code != 2 || !strings.Contains(errOut, "--quiet needs --check-config") {
		t.Errorf("--quiet alone: exit %d, stderr %q", code, errOut)
	}
	saved := filepath.Join(t.TempDir(), "saved.yaml")
	if err := os.WriteFile(saved, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := daemon.LoadConfig(file, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := daemon.LoadConfig(saved, true)
	if err != nil {
		t.Fatalf("the printed configuration does not load back: %v", err)
	}
	wb, _ := want.Effective()
	gb, _ := got.Effective()
	if string(wb) != string(gb) {
		t.Errorf("saved and reloaded:\n%s\nwant\n%s", gb, wb)
	}
}

// TestCheckConfigBad: each kind of bad file (an unknown key, a value of
// the wrong form for each kind of field, an invalid value, the refused
// YAML forms, an absent named file) exits 2 with an error naming the line
// and key, prints no configuration, and creates nothing.
func TestCheckConfigBad(t *testing.T) {
	for name, c := range map[string]struct{ extra, want string }{
		"unknown key":        {"sweep_intervall: 5s\n", "line 9: sweep_intervall: unknown key (the top level takes allow_partial,"},
		"unknown nested key": {"pending:\n  dedline: 5s\n", "line 10: pending.dedline: unknown key (pending takes check_interval, deadline)"},
		"duration":           {"sweep_interval: 30\n", "line 9: sweep_interval: want a duration such as 30s, 1m30s or 100ms, got 30"},
		"bool":               {"allow_partial: maybe\n", "line 9: allow_partial: want true or false, got maybe"},
		"bool yes":           {"allow_partial: yes\n", `line 9: allow_partial: "yes" is not a boolean: write true or false`},
		"whole number":       {"api:\n  max_conns: 1.5\n", "line 10: api.max_conns: want a whole number such as 64, got 1.5"},
		"number":             {"journal:\n  rate_per_second: fast\n", "line 10: journal.rate_per_second: want a number such as 50 or 0.5, got fast"},
		"string":             {"cgroup_mount: [a]\n", `line 9: cgroup_mount: want a string (quote it: "..."), got a list`},
		"list":               {"nri:\n  runtime_handlers: runc\n", `line 10: nri.runtime_handlers: want a list such as [a, b] or one "- item" per line, got runc`},
		"list element":       {"nri:\n  runtime_handlers: [[runc]]\n", `line 10: nri.runtime_handlers[0]: want a string`},
		"mapping":            {"metrics: 127.0.0.1:9464\n", `line 9: metrics: want a mapping ("key: value" lines indented under it), got 127.0.0.1:9464`},
		"empty value":        {"pending:\n  deadline:\n", "line 10: pending.deadline: want a duration such as 30s, 1m30s or 100ms, got an empty value"},
		"empty string":       {"metrics:\n  listen:\n", `line 10: metrics.listen: want a string, got an empty value (write "" for an empty string`},
		"invalid value":      {"pending:\n  deadline: 0s\n", "pending.deadline: 0s must be positive"},
		"invalid address":    {"metrics:\n  listen: example.com:9464\n", `metrics.listen: "example.com:9464": host "example.com" is not an IP address`},
		"merge key":          {"api:\n  <<: {max_conns: 600}\n", "line 10: api: merge key <<: merge keys are not accepted"},
		"anchor":             {"sweep_interval: &s 5s\n", "line 9: sweep_interval: anchor &s: anchors and aliases are not accepted"},
		"alias":              {"journal:\n  denials: &d true\nallow_partial: *d\n", "anchor &d"},
		"key twice":          {"sweep_interval: 5s\nsweep_interval: 6s\n", `mapping key "sweep_interval" already defined`},
		"two documents":      {"---\nallow_partial: true\n", "several YAML documents"},
		"syntax":             {"state: [\n", "config "},
	} {
		t.Run(name, func(t *testing.T) {
			root, file := checkConfigRoot(t, c.extra)
			before := snapshot(t, root)
			code, out, errOut := cmdline("daemon", "--check-config", "--config", file)
			if code != 2 || out != "" || !strings.Contains(errOut, c.want) || !strings.HasPrefix(errOut, "enforcerd daemon: config "+file+": ") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, %q", code, out, errOut, c.want)
			}
			if !reflect.DeepEqual(snapshot(t, root), before) {
				t.Errorf("--check-config changed %s", root)
			}
		})
	}
	root := t.TempDir()
	before := snapshot(t, root)
	code, out, errOut := cmdline("daemon", "--check-config", "--config", filepath.Join(root, "absent.yaml"))
	if code != 2 || out != "" || !strings.Contains(errOut, "no such file") || !reflect.DeepEqual(snapshot(t, root), before) {
		t.Errorf("absent --config file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
