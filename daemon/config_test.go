package daemon

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadConfig(filepath.Join(dir, "absent.yaml"), false)
	if err != nil || !reflect.DeepEqual(c, DefaultConfig()) {
		t.Fatalf("absent default file: %+v, %v", c, err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "absent.yaml"), true); err == nil {
		t.Fatal("absent file named with --config accepted")
	}
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte("socket: /tmp/x.sock\naudit:\n  max_size_mb: 1\nsweep_interval: 5s\nmetrics:\n  listen: \"\"\npending:\n  deadline: 2m\n"), 0o600)
	c, err = LoadConfig(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Socket != "/tmp/x.sock" || c.Audit.MaxSizeMB != 1 || c.Audit.Path != DefaultConfig().Audit.Path ||
		c.SweepInterval != 5*time.Second || c.Metrics.Listen != "" ||
		c.Pending.Deadline != 2*time.Minute || c.Pending.CheckInterval != DefaultConfig().Pending.CheckInterval {
		t.Fatalf("config = %+v", c)
	}
	for _, bad := range []string{
		"sockett: /x\n", "audit:\n  size: 3\n", "socket: relative\n", "audit:\n  max_size_mb: 0\n", "audit:\n  linux_audit_rate_per_second: 0\n", "audit:\n  linux_audit_required: true\n",
		"metrics:\n  listen: nohostport\n", "socket: /" + strings.Repeat("a", 120) + "\n", "state: [\n",
		"pending:\n  deadline: 0s\n", "allow_partial: maybe\n", "deny_console_egress: maybe\n", "deny-console-egress: true\n", "allow-partial: true\n", "pending:\n  check_interval: -1s\n", "pending:\n  deadlin: 3s\n",
		"metrics:\n  listen: 127.0.0.1:http\n", "metrics:\n  listen: 127.0.0.1:70000\n", "metrics:\n  listen: example.com:9464\n",
		"metrics:\n  listen: 127.0.0.1:-1\n", "journal:\n  rate_per_second: 0\n", "journal:\n  denial: false\n", "metrics:\n  listen: \"[::1]:\"\n",
		// Ambiguity: a key given twice, several documents.
		"socket: /a.sock\nsocket: /b.sock\n", "pending:\n  deadline: 2m\n  deadline: 1s\n",
		"allow_partial: false\n---\nallow_partial: true\n", "---\nsocket: /a.sock\n---\n",
		"api:\n  read_timeout: 0s\n", "api:\n  max_conns: 256\n", "api:\n  max_conns_per_cgroup: 0\n",
		"api:\n  max_confined_conns: 8\n  max_conns_per_cgroup: 9\n",
	} {
		c := DefaultConfig()
		if err := parseConfig([]byte(bad), &c); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if DefaultConfig().DenyConsoleEgress {
		t.Error("deny_console_egress is on by default")
	}
	c = DefaultConfig()
	if err := parseConfig([]byte("deny_console_egress: true\n"), &c); err != nil || !c.DenyConsoleEgress {
		t.Errorf("deny_console_egress: true: %v, %v", c.DenyConsoleEgress, err)
	}
	for _, good := range []string{"127.0.0.1:9464", "[::1]:9464", ":9464", "localhost:0"} {
		c := DefaultConfig()
		if err := parseConfig([]byte("metrics:\n  listen: \""+good+"\"\n"), &c); err != nil || c.Metrics.Listen != good {
			t.Errorf("metrics.listen %q refused: %v", good, err)
		}
	}
}

// TestConfigRefusesAmbiguity: a duplicate key or a second document is an
// error naming it, never resolved to the first or the last.
func TestConfigRefusesAmbiguity(t *testing.T) {
	for in, want := range map[string]string{
		"allow_partial: false\nallow_partial: true\n":      `mapping key "allow_partial" already defined`,
		"allow_partial: false\n---\nallow_partial: true\n": "several YAML documents (a second one at line 2)",
		"socket: /a.sock\n---\n":                           "several YAML documents",
		"---\nsocket: /a.sock\n":                           "",
		// Merge keys settle conflicts by rules a reader need not know
		// (first merged map wins; a key beside the merge overrides it).
		"<<: [{allow_partial: true}, {allow_partial: false}]\n": "line 1: the top level: merge key <<",
		"allow_partial: false\n<<: {allow_partial: true}\n":     "merge key <<",
		"api:\n  <<: {max_conns: 600}\n":                        "line 2: api: merge key <<",
		"socket: &s /run/a.sock\nstate: *s\n":                   "line 1: socket: anchor &s",
		"audit: {path: &p /var/log/a}\n":                        "anchor &p",
		// yaml.v3 decodes YAML 1.1 booleans into a bool field.
		"allow_partial: yes\n":                              `allow_partial: "yes" is not a boolean: write true or false`,
		"allow_partial: on\n":                               `"on" is not a boolean`,
		"allow_partial: y\n":                                `"y" is not a boolean`,
		"allow_partial: Off\n":                              `"Off" is not a boolean`,
		"allow_partial: TRUE\n":                             `"TRUE" is not a boolean`,
		"allow_partial: true\ndeny_console_egress: false\n": "",
		"audit: {path: /var/log/yes}\n":                     "",
	} {
		c := DefaultConfig()
		err := parseConfig([]byte(in), &c)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", in, err, want)
		}
	}
}

// FuzzParseConfig: never panics; a configuration parseConfig accepts
// validates.
func FuzzParseConfig(f *testing.F) {
	f.Add("allow_partial: true\n")
	f.Add("<<: {allow_partial: true}\n")
	f.Add("socket: &s /a\nstate: *s\n")
	f.Add("api: {max_conns: 600}\nallow_partial: yes\n")
	f.Add("sweep_interval: 30\naudit:\n  max_size_mb: 1.5\n")
	f.Add("proxy:\n  enabled: true\n  allow_domains: [a.example]\n  allow_ports: [443, 8443]\nnri:\n  namespaces: {ns: {max_ceiling: network=false}}\n")
	f.Add("pending:\n  deadline:\nmetrics: []\n")
	f.Fuzz(func(t *testing.T, in string) {
		c := DefaultConfig()
		if parseConfig([]byte(in), &c) != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%q accepted, then: %v", in, err)
		}
		// What --check-config prints reads back to the same configuration.
		out, err := c.Effective()
		if err != nil {
			t.Fatalf("%q: Effective: %v", in, err)
		}
		back := DefaultConfig()
		if err := parseConfig(out, &back); err != nil {
			t.Fatalf("%q: the effective configuration does not read back: %v\n%s", in, err, out)
		}
		if again, _ := back.Effective(); string(again) != string(out) {
			t.Fatalf("%q: read back differs:\n%s\nwant\n%s", in, again, out)
		}
	})
}
