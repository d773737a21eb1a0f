package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/nri"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
)

// DefaultConfigPath is read when --config is not given.
const DefaultConfigPath = "/etc/enforcerd/config.yaml"

// Config is the daemon's YAML configuration. Every key is optional; unknown
// keys are errors (a typo must not silently keep a default).
type Config struct {
	// Socket is the API unix socket (mode 0600).
	Socket string `yaml:"socket"`
	// State is the state file.
	State string `yaml:"state"`
	// PinDir is the bpffs directory of the pinned programs and maps.
	PinDir string `yaml:"pin_dir"`
	// CgroupMount is the cgroup2 mount point ("" = from mountinfo).
	CgroupMount string `yaml:"cgroup_mount"`
	// SweepInterval: how often containers whose cgroup vanished without a
	// poststop hook are dropped ("0s" disables).
	SweepInterval time.Duration `yaml:"sweep_interval"`
	// AllowPartial accepts registrations this host can enforce only in
	// part (without BPF LSM, network=false covers only the inet sockets a
	// workload creates, and nothing stops a privileged workload from
	// leaving its cgroup). Default false: such registrations are refused
	// (HTTP 422, code "partial_coverage"). It also caps `enforcerd run
	// --allow-partial` while the daemon runs.
	AllowPartial bool `yaml:"allow_partial"`
	// DenyConsoleEgress: under network=false, a registration's own
	// terminal that leaves the machine (the system console, a serial
	// line: on a cloud VM the provider's serial log, a hypervisor
	// console) is refused like a network, for every registration
	// (entry.Entry.DenyConsoleEgress). Default false: an operator
	// logged in on a serial line keeps the terminal it runs from.
	DenyConsoleEgress bool          `yaml:"deny_console_egress"`
	Pending           PendingConfig `yaml:"pending"`
	Audit             AuditConfig   `yaml:"audit"`
	Journal           JournalConfig `yaml:"journal"`
	Metrics           MetricsConfig `yaml:"metrics"`
	Proxy             ProxyConfig   `yaml:"proxy"`
	// API bounds the API's connections (api.Limits).
	API APIConfig `yaml:"api"`
	// NRI is the Kubernetes plugin (daemon/nri; docs/kubernetes.md).
	NRI nri.Config `yaml:"nri"`
}

// PendingConfig bounds registrations that activate at exec.
type PendingConfig struct {
	// Deadline: a registration still pending (no exec in its cgroup) this
	// long after it was made has its cgroup frozen (killed when freezing
	// fails). Must be positive.
	Deadline time.Duration `yaml:"deadline"`
	// CheckInterval: how often pending cgroups are checked for an exec,
	// for processes that entered without exec (activated at once) and for
	// a passed deadline. Must be positive.
	CheckInterval time.Duration `yaml:"check_interval"`
}

// AuditConfig configures the audit log.
type AuditConfig struct {
	// Path of the JSON-lines audit log ("" disables the file; the
	// journal and followers still get every record).
	Path string `yaml:"path"`
	// MaxSizeMB rotates the file when it would grow past this size.
	MaxSizeMB int `yaml:"max_size_mb"`
	// MaxBackups rotated files are kept (PATH.1 ... PATH.N).
	MaxBackups int `yaml:"max_backups"`
	// LinuxAudit also sends each denial record and each summary record
	// to the Linux audit trail (auditd, ausearch -m USER_AVC) as an
	// AUDIT_USER_AVC message over NETLINK_AUDIT (audit.AVCText; needs
	// CAP_AUDIT_WRITE). Default false. When the kernel refuses (no
	// capability, another user namespace, no audit support) the daemon
	// says so once and counts each record in
	// enforcerd_linux_audit_records_total{result="failed"}.
	LinuxAudit bool `yaml:"linux_audit"`
	// LinuxAuditRequired: with linux_audit, refuse to start when the
	// kernel would not take the messages (checked at start without
	// writing any). Default false: the daemon starts and counts.
	LinuxAuditRequired bool `yaml:"linux_audit_required"`
	// LinuxAuditRatePerSecond bounds the messages a second (burst: twice
	// that); records over it are counted (result "rate_limited"). Must
	// be positive.
	LinuxAuditRatePerSecond float64 `yaml:"linux_audit_rate_per_second"`
}

// APIConfig bounds what callers of the API socket can hold (api.Limits):
// a sandbox that can reach the socket must not starve the OCI hooks, the
// NRI plugin's runtime and the operators.
type APIConfig struct {
	// ReadTimeout: a request's header and body must arrive within it.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// MaxConnsPerCgroup: connections open at once from the callers
	// confined by one enforced cgroup.
	MaxConnsPerCgroup int `yaml:"max_conns_per_cgroup"`
	// MaxConfinedConns: connections open at once from all confined
	// callers together.
	MaxConfinedConns int `yaml:"max_confined_conns"`
	// MaxConns: connections open at once; unconfined callers are refused
	// only at this many (MaxConns-MaxConfinedConns is their reserve).
	MaxConns int `yaml:"max_conns"`
}

// Limits is c as the API's limits.
func (c APIConfig) Limits() api.Limits {
	return api.Limits{ReadTimeout: c.ReadTimeout, PerCgroup: c.MaxConnsPerCgroup, Confined: c.MaxConfinedConns, Total: c.MaxConns}
}

// MetricsConfig configures the Prometheus endpoint.
type MetricsConfig struct {
	// Listen is the TCP address of /metrics ("" disables it).
	Listen string `yaml:"listen"`
}

// DefaultConfig is the configuration with no file.
func DefaultConfig() Config {
	return Config{
		Socket:        api.DefaultSocket,
		State:         state.DefaultPath,
		PinDir:        enforcer.DefaultPinDir,
		SweepInterval: 30 * time.Second,
		Pending:       PendingConfig{Deadline: registry.DefaultPendingDeadline, CheckInterval: 100 * time.Millisecond},
		Audit:         AuditConfig{Path: "/var/log/enforcerd/audit.jsonl", MaxSizeMB: 64, MaxBackups: 5, LinuxAuditRatePerSecond: 50},
		Metrics:       MetricsConfig{Listen: "127.0.0.1:9464"},
		Journal:       JournalConfig{Denials: true, RatePerSecond: 50},
		Proxy:         DefaultProxyConfig(),
		API: APIConfig{ReadTimeout: api.DefaultReadTimeout, MaxConnsPerCgroup: api.DefaultMaxConnsPerCgroup,
			MaxConfinedConns: api.DefaultMaxConfinedConns, MaxConns: api.DefaultMaxConns},
		NRI: nri.DefaultConfig(),
	}
}

// LoadConfig reads path over the defaults. A missing file yields the
// defaults unless required (the operator named it with --config).
func LoadConfig(path string, required bool) (Config, error) {
	c := DefaultConfig()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !required {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if err := parseConfig(b, &c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// unknownKey matches yaml.v3's message for a key no field declares.
var unknownKey = regexp.MustCompile(`field (\S+) not found in type \S+`)

// parseConfig decodes YAML onto c (keys absent keep c's values) and
// validates the result. Ambiguous input is an error, never resolved: a
// key given twice in one mapping (yaml.v3: "mapping key ... already
// defined"), a second YAML document ("---"), which a reader could take
// for the one in force, and the forms checkConfigForms refuses (merge
// keys, anchors and aliases, booleans other than true and false).
func parseConfig(b []byte, c *Config) error {
	if err := checkConfigForms(b, reflect.TypeFor[Config]()); err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		// yaml.v3 names Go types ("field x not found in type
		// daemon.Config"); say it in the configuration's terms.
		return errors.New(unknownKey.ReplaceAllString(err.Error(), "unknown key $1"))
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return fmt.Errorf("after the first YAML document: %w", err)
		}
		return fmt.Errorf("several YAML documents (a second one at line %d): the configuration is one document", more.Line)
	}
	return c.Validate()
}

// Validate checks paths, addresses, sizes and intervals; the first error
// names the key ("audit.max_size_mb: 0 must be positive").
func (c Config) Validate() error {
	for _, check := range []func() error{c.validatePaths, c.Audit.validate, c.validateIntervals, c.validateListeners} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validatePaths: socket, state, pin_dir absolute (the socket within a unix
// socket path's 107 bytes); cgroup_mount absolute when set.
func (c Config) validatePaths() error {
	for name, p := range map[string]string{"socket": c.Socket, "state": c.State, "pin_dir": c.PinDir} {
		if p == "" || !filepath.IsAbs(p) {
			return fmt.Errorf("%s: %q is not an absolute path", name, p)
		}
	}
	if len(c.Socket) > 107 {
		return fmt.Errorf("socket: %q is longer than a unix socket path may be (107 bytes)", c.Socket)
	}
	if c.CgroupMount != "" && !filepath.IsAbs(c.CgroupMount) {
		return fmt.Errorf("cgroup_mount: %q is not an absolute path", c.CgroupMount)
	}
	return nil
}

// validate checks the audit section: an absolute path when set, a positive
// size, backups and rate, and linux_audit_required only with linux_audit.
func (a AuditConfig) validate() error {
	if a.Path != "" && !filepath.IsAbs(a.Path) {
		return fmt.Errorf("audit.path: %q is not an absolute path", a.Path)
	}
	if a.MaxSizeMB <= 0 {
		return fmt.Errorf("audit.max_size_mb: %d must be positive", a.MaxSizeMB)
	}
	if a.MaxBackups < 0 {
		return fmt.Errorf("audit.max_backups: %d must not be negative", a.MaxBackups)
	}
	if a.LinuxAuditRatePerSecond <= 0 {
		return fmt.Errorf("audit.linux_audit_rate_per_second: %v must be positive", a.LinuxAuditRatePerSecond)
	}
	if a.LinuxAuditRequired && !a.LinuxAudit {
		return errors.New("audit.linux_audit_required: true needs audit.linux_audit: true")
	}
	return nil
}

// validateIntervals: the sweep interval not negative, the pending
// deadline and check interval and the journal's rate positive.
func (c Config) validateIntervals() error {
	if c.SweepInterval < 0 {
		return fmt.Errorf("sweep_interval: %s must not be negative", c.SweepInterval)
	}
	if c.Pending.Deadline <= 0 {
		return fmt.Errorf("pending.deadline: %s must be positive (a pending registration must not stay open forever)", c.Pending.Deadline)
	}
	if c.Pending.CheckInterval <= 0 {
		return fmt.Errorf("pending.check_interval: %s must be positive", c.Pending.CheckInterval)
	}
	if c.Journal.RatePerSecond <= 0 {
		return fmt.Errorf("journal.rate_per_second: %v must be positive", c.Journal.RatePerSecond)
	}
	return nil
}

// validateListeners: the metrics address, the API's limits, the NRI
// plugin's and the proxy's settings.
func (c Config) validateListeners() error {
	if c.Metrics.Listen != "" {
		if err := checkListenAddr(c.Metrics.Listen); err != nil {
			return fmt.Errorf("metrics.listen: %q: %w", c.Metrics.Listen, err)
		}
	}
	if err := c.API.Limits().Validate(); err != nil {
		return err
	}
	if err := c.NRI.Validate(); err != nil {
		return err
	}
	return c.Proxy.validate()
}

// checkListenAddr accepts HOST:PORT where HOST is an IP address, empty (every
// address) or "localhost", and PORT a number 0-65535: the address is known
// good before the daemon changes anything (no name lookups, no service
// names).
func checkListenAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return err
	}
	if host != "" && host != "localhost" && net.ParseIP(host) == nil {
		return fmt.Errorf("host %q is not an IP address (or localhost)", host)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (port != "0" && n == 0) {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// Effective is c as the configuration file's
// own YAML (every key, durations as "30s"), which LoadConfig reads back
// to the same configuration. `enforcerd daemon --check-config` prints it.
func (c Config) Effective() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
