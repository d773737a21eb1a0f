// Package daemon is "enforcerd daemon": the host service's flags, logging
// and socket activation around package daemon (the library, imported under
// the same name). It imports the library packages and cmd/enforcerd/cli, no
// other command's package.
package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	sd "github.com/coreos/go-systemd/v22/daemon"
	sdjournal "github.com/coreos/go-systemd/v22/journal"
	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/daemon"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

const daemonUsage = `Usage: enforcerd daemon [--config FILE] [--log-format text|json] [--log-level LEVEL]
       enforcerd daemon --check-config [--quiet] [--config FILE]

Run the enforcerd host service (systemd Type=notify). It loads the eBPF
programs or re-adopts the pinned ones, reconciles its state file with the
pinned ceiling map and the live cgroups, and then serves:

  * an HTTP+JSON API on a unix socket (mode 0600, root only) to register and
    unregister containers, list them, read a container's tool surface,
    narrow a container, and follow denials;
  * a JSON-lines audit log of every denial (size-rotated), also sent to the
    systemd journal as structured entries (journalctl ENFORCERD_CONTAINER=ID),
    rate-limited;
  * Prometheus metrics on a TCP address (metrics.listen: loopback by
    default; the Kubernetes manifest listens on all of the node's
    addresses so that the cluster's Prometheus can scrape it), with
    GET /healthz (200 "ok" while the process serves) and GET /readyz
    (200 "ready" once the pins are adopted, the state is reconciled and
    the API socket is served; else 503 "not ready: " naming each part
    missing, e.g. "state: reconcile running"), answered from the start.

Enforcement never depends on the daemon: a registered container stays
enforced while the daemon is stopped, crashed or restarting. After a crash
each container's ceiling in the kernel and in the state file take their
meet (the narrower of each field) at the next start, with a "reconciled"
audit record; nothing a crash interrupts ever widens a ceiling. One daemon
per pin directory: a second one refuses to start, naming the first's pid.

Flags:
  --config FILE   YAML configuration (default /etc/enforcerd/config.yaml;
                  when the default file is absent the defaults below apply,
                  a file named with --config must exist). Unknown keys are
                  errors.
  --check-config  read and check the configuration, print the effective
                  configuration (every key, defaults filled in, as YAML
                  that can be saved as the file) and exit: 0 when it is
                  valid, 2 when not (the error names the line and key).
                  It changes nothing: no socket, pin, directory, state
                  file or audit log is created or opened, and it needs
                  no root (the unit's ExecStartPre= runs it)
  --quiet         with --check-config: print nothing when the
                  configuration is valid (the error when it is not)
  --log-format F  text (default) or json: the daemon's own log on stderr
                  (under systemd, the journal; the time is then left to
                  the journal)
  --log-level L   debug, info (default), warn or error
  -h, --help      this help

systemd: Type=notify (READY=1 once the socket is served, STOPPING=1,
STATUS= lines with the number of containers). With WatchdogSec= the
main loop sends WATCHDOG=1 at half the interval. With socket activation
(deploy/enforcerd.socket, LISTEN_FDS) the API is served on the socket
systemd passes, which must be the configured socket: it then outlives
the daemon, so hooks queue on it through a restart instead of failing.

Configuration (every key optional; defaults shown; a key given twice, a
second YAML document, anchors, aliases and merge keys are errors, and so is
a value of the wrong form, named with the form wanted: "sweep_interval:
want a duration such as 30s, 1m30s or 100ms, got 30"):
  socket: /run/enforcerd/enforcerd.sock      # API unix socket
  state: /var/lib/enforcerd/state.json       # registered containers
  pin_dir: /sys/fs/bpf/enforcerd             # pinned programs and maps
  cgroup_mount: ""                           # cgroup2 mount; "" = from mountinfo
  sweep_interval: 30s                        # drop containers whose cgroup vanished
  allow_partial: false                       # accept ceilings this host enforces
                                             # only in part (see below)
  deny_console_egress: false                 # true: under network=false, a
                                             # container's own terminal that
                                             # leaves the machine (the system
                                             # console, a serial line: on a
                                             # cloud VM the provider's serial
                                             # log) is refused like a network,
                                             # for every registration
  pending:
    deadline: 30s                            # pending (activate=exec) with no exec by
                                             # then: the cgroup is frozen (killed if
                                             # freezing fails); must be positive
    check_interval: 100ms                    # how often pending cgroups are checked
  audit:
    path: /var/log/enforcerd/audit.jsonl     # "" = no file (journal and followers only)
    max_size_mb: 64                          # rotate at this size
    max_backups: 5                           # keep PATH.1 ... PATH.5
    linux_audit: false                       # true: each denial and summary record also
                                             # to the Linux audit trail (auditd:
                                             # ausearch -m USER_AVC) as AUDIT_USER_AVC
                                             # over NETLINK_AUDIT; needs CAP_AUDIT_WRITE.
                                             # Refused by the kernel: said once, counted
                                             # (enforcerd_linux_audit_records_total)
    linux_audit_required: false              # true: refuse to start when the kernel
                                             # would not take them (checked at start,
                                             # nothing written)
    linux_audit_rate_per_second: 50          # past it (burst twice that) records are
                                             # counted, not sent; must be positive
  journal:
    denials: true                            # each denial also as a journal entry with
                                             # ENFORCERD_* fields (when journald runs)
    rate_per_second: 50                      # past it (burst twice that) denials are
                                             # counted and a summary entry gives the
                                             # count; the audit log has every record
  metrics:
    listen: 127.0.0.1:9464                   # GET /metrics; "" = off
  api:                                       # bounds on the API socket's callers
    read_timeout: 10s                        # a request's header and body arrive within it
    max_conns_per_cgroup: 16                 # callers confined by one enforced cgroup
    max_confined_conns: 256                  # all confined callers together
    max_conns: 512                           # unconfined callers (hooks, NRI, operators)
                                             # are refused only at this many; a caller over
                                             # a limit gets 503 and its connection closed
  proxy:                                     # the egress proxy (enforcerd proxy --help)
    enabled: false                           # run it inside the daemon
    allow_domains: []                        # required when enabled
    allow_ports: [443]
    allow_private: []
    resolve: []
    socket: /run/enforcerd/proxy.sock
    socket_mode: "0666"
    socket_group: ""
    listen_tcp: ""
    audit: /var/log/enforcerd/proxy.jsonl
    dial_timeout: 10s
  Inside the daemon the proxy places each client in the registry: a
  container's "proxy_allow" (below) narrows the proxy's allow_domains for
  every client in its cgroup subtree, and a client whose cgroup cannot be
  read is refused.

API (its client: enforcerd ctl; or curl --unix-socket
/run/enforcerd/enforcerd.sock http://x/v1/...):
  GET    /v1/status                   hooks attached, network coverage,
                                      allow_partial, counts
  GET    /v1/ready                    {"ready", "missing"}: 200 ready, 503
                                      not (enforcerd ctl ready)
  POST   /v1/containers               register {"id", "cgroup" or "pid", "role",
                                      "ceiling", "parent", "audit_only",
                                      "ceiling_fields", "tool_groups",
                                      "proxy_allow", "allow_connect",
                                      "write_roots", "exec_allow",
                                      "activate": "now"|"exec",
                                      "init_pid", "entrypoint",
                                      "setup_program", "container_spec",
                                      "allow_devices", "own_terminals":
                                      "client"|"init"|"none",
                                      "deny_console_egress"}
                                      (docs/api.md gives each key)
  GET    /v1/containers               list
  GET    /v1/containers/{id}          one container
  DELETE /v1/containers/{id}          unregister
  GET    /v1/containers/{id}/surface  tool surface (as enforcerd surface --json)
  POST   /v1/containers/{id}/narrow   {"ceiling": "network=false"}: narrow only,
                                      with every descendant (see below)
  GET    /v1/denials[?FILTER]         follow denials, one JSON record per line
  GET    /v1/denials/recent[?FILTER]  the last 1024 records kept since the
                                      start, oldest first: {"denials": [...]}
                                      FILTER: container=ID (404 unless
                                      registered), cgroup_id=N (the record's
                                      cgroup_id or ceiling_cgroup_id); another
                                      query key is 400
  A caller running inside an enforced cgroup may only read its own surface
  and narrow itself. Request bodies are strict: one JSON object whose keys
  are exactly the names above (case-sensitive; "ROLE" is not "role"), each
  given once, also inside "entrypoint"; anything else is 400 naming the
  key. Errors are {"error", "code"} with HTTP 400 (malformed),
  403, 404 (unknown id), 409 (already registered), 422 (cannot enforce;
  codes "cannot_enforce", "partial_coverage" when only part of the ceiling
  could be enforced and allow_partial is false, "unsafe_program",
  "entrypoint_required").

proxy_allow: comma-separated domain patterns ("api.example.com",
"*.example.org") or "none": the egress proxy allows this container (and
every client in its cgroup subtree, and every container below it by
cgroup or parent id) only names that are in the proxy's allow_domains and
in this list and in the list of every container enclosing it. Absent: no
narrowing. The OCI annotation enforcerd.io/proxy-allow carries the same.

shell=none (the effective ceiling): the programs a registration lets run
must not run every other program without exec (a shell, a multi-call
binary such as BusyBox, the dynamic loader; recognised by content). A
pending ("activate": "exec") registration allows its first exec, so it
must name it: "entrypoint": {"path": as the container names it, "root":
host path of the directory the process sees as "/" (for an OCI container
at createRuntime: /proc/INIT/root/ROOTFS), "env_path": its PATH, "cwd"}.
The daemon resolves it inside root (symlinks stay inside) and answers 422
"unsafe_program" for such a program, 422 "entrypoint_required" without an
entrypoint or when it cannot be resolved or read. A ceiling in force at
once, and a narrowing to shell=none, are refused (422 "unsafe_program")
when a process in the cgroup already runs such a program.

Activation: "activate": "exec" registers the ceiling pending, in force from
the first exec in the cgroup subtree (the entrypoint), so a runtime's init
can finish setting up. "init_pid" names that init (the OCI hook passes the
state's pid); it must be in the cgroup. If the cgroup holds any other
process (without init_pid: any process), the ceiling is in force at once
and the response says "activation": "immediate" with "activation_reason";
otherwise "activation": "at-exec". While pending, the daemon checks the
cgroup every pending.check_interval: a process that entered without exec
(clone3 CLONE_INTO_CGROUP, a write to cgroup.procs) makes the ceiling active
at once; it may run unenforced until that check, as the kernel gives no
event for it (closing that needs an in-kernel hook). Past pending.deadline
the cgroup is frozen and kept frozen, or killed when freezing fails; it is
never activated mid-setup. "state" of a container: "pending", "active",
"frozen: pending deadline passed" or "killed: pending deadline passed";
"pending_deadline" while pending. Each decision is an audit record (hook
"enforcerd") and counts in enforcerd_pending_outcomes_total. Unregistering
a frozen container leaves its cgroup frozen (thawing it would run it with no
ceiling): kill or remove it.

Callers: the API identifies a caller by the process that connected, through
a pidfd (SO_PEERPIDFD, Linux 6.5+) so that a pid reused after the caller
exited is never mistaken for it; older kernels fall back to the
SO_PEERCRED pid checked against the process's start time.

Effective ceiling of a container: the session is the parent's effective
ceiling (default network=true,write=true,shell=full,tools=true,depth=1),
met with the ceiling of every registered cgroup above the container's
(registered through the daemon: its effective ceiling; by anything else,
e.g. enforcerd run: its network, write and shell), clamped by "ceiling";
the role's requested ceiling is clamped to it. So the answer (response,
list, surface) is what the kernel enforces: it holds a cgroup to the meet
of every registered ancestor cgroup. A container is never wider than an
ancestor (its parent by id, transitively, or a registered cgroup above it)
at any time: narrowing a container narrows every descendant of either kind,
and registering a container above (or under the parent id of) existing
ones clamps them, each in one transaction (all containers or none; a
descendant that cannot take the new ceiling, e.g. one that runs a shell
under a new shell=none, refuses the whole request) with one "narrowed"
audit record per container changed, and always one for the container a
narrow request names (a record of the request, also when it changed
nothing). Unregistering an ancestor widens
nothing. A "role" that is given must be a role name, legacy alias or
org-chart title (enforcerd surface --help): any other value, "" included,
is 400 with the valid names; without "role" the role is general. A ceiling
this host cannot enforce is refused unless audit_only is set.

Partial coverage (fail closed by default): without BPF LSM, network=false
is enforced only for the AF_INET/AF_INET6 sockets a workload creates (gap
"network-non-inet") and nothing stops a privileged workload from leaving
its cgroup (gap "tamper"). Such a registration (or narrowing) is refused
with 422 "partial_coverage" naming the gaps, unless allow_partial: true.
Then it is registered and its gaps are named in the response and list
("unenforced": [{"code", "field", "detail"}]), in its audit record (hook
"enforcerd", operation "registration", decision "registered" or
"narrowed", "unenforced": [codes]) and in the gauge
enforcerd_unenforced_containers{gap}. The daemon records allow_partial in
the pin directory (map host_policy) when it starts: it also caps
"enforcerd run --allow-partial" of every run using those pins.

Signals: SIGTERM/SIGINT stop the daemon (pins stay, enforcement continues).
SIGHUP reopens the audit log (after logrotate renamed it; ExecReload= in the
unit) and changes nothing else.

Exit status:
  0  stopped by a signal
  1  could not start (e.g. another daemon holds the pin directory), or a
     server failed (systemd restarts it)
  2  usage or configuration error (with --check-config: the
     configuration is invalid)
`

func NewCommand(s cli.Streams) *cobra.Command {
	var cfgPath, logFormat, logLevel string
	var checkOnly, quiet bool
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:    "daemon",
		Summary: "host service: container registration API, audit log, metrics",
		Help:    daemonUsage,
		Run: func(c *cobra.Command, _ []string) error {
			if quiet && !checkOnly {
				return cli.UsageErrorf("--quiet needs --check-config")
			}
			log, err := daemonLogger(s.Err, logFormat, logLevel)
			if err != nil {
				return cli.UsageError{Err: err}
			}
			cfg, err := daemon.LoadConfig(cfgPath, c.Flags().Changed("config"))
			if err != nil {
				fmt.Fprintf(s.Err, "enforcerd daemon: %v\n", err)
				return cli.ExitCode(cli.ExitUsage)
			}
			if checkOnly {
				if quiet {
					return nil
				}
				return printEffective(s, cfg, cfgPath)
			}
			if err := cli.NeedsRoot("loading, pinning and attaching eBPF programs"); err != nil {
				return err
			}
			ln, err := activatedListener(cfg.Socket)
			if err != nil {
				fmt.Fprintf(s.Err, "enforcerd daemon: %v\n", err)
				return cli.ExitCode(cli.ExitUsage)
			}
			return cli.ExitCode(runDaemon(cfg, log, ln, s.Err))
		},
	})
	c.Flags().StringVar(&cfgPath, "config", daemon.DefaultConfigPath, "YAML configuration file")
	c.Flags().BoolVar(&checkOnly, "check-config", false, "check the configuration, print it with the defaults filled in, and exit")
	c.Flags().BoolVar(&quiet, "quiet", false, "with --check-config: print nothing when valid")
	c.Flags().StringVar(&logFormat, "log-format", "text", "text or json")
	c.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return c
}

// printEffective prints cfg, read from path (or the defaults where path
// is absent), as the configuration file's YAML on s.Out: what
// --check-config shows once the file is known valid.
func printEffective(s cli.Streams, cfg daemon.Config, path string) error {
	b, err := cfg.Effective()
	if err != nil {
		return err
	}
	source := "from " + path + ", defaults filled in"
	if _, err := os.Stat(path); err != nil {
		source = path + " is absent: the defaults"
	}
	fmt.Fprintf(s.Out, "# enforcerd daemon: the effective configuration (%s)\n%s", source, b)
	return nil
}

// daemonLogger is the daemon's slog logger on w. Under systemd (stderr is
// the journal stream) the time is left out: the journal stamps each line.
// Errors: an unknown format or level.
func daemonLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	hopts := &slog.HandlerOptions{Level: lv}
	if journal, _ := sdjournal.StderrIsJournalStream(); journal {
		hopts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// activatedListener returns the API socket systemd passed (socket
// activation, LISTEN_FDS; deploy/enforcerd.socket), or nil when none was
// passed. Errors: systemd passed something other than exactly one unix
// stream socket at the configured path (a unit and a configuration that
// disagree would leave hooks talking to a socket nobody serves).
func activatedListener(socket string) (net.Listener, error) {
	ls, err := activation.Listeners()
	if err != nil {
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	var got []net.Listener
	for _, l := range ls {
		if l != nil {
			got = append(got, l)
		}
	}
	if len(got) == 0 {
		if len(ls) > 0 {
			return nil, fmt.Errorf("socket activation: systemd passed %d descriptors, none a listening socket", len(ls))
		}
		return nil, nil
	}
	if len(got) > 1 {
		return nil, fmt.Errorf("socket activation: systemd passed %d sockets, want one (ListenStream=%s)", len(got), socket)
	}
	if a := got[0].Addr(); a.Network() != "unix" || filepath.Clean(a.String()) != filepath.Clean(socket) {
		got[0].Close()
		return nil, fmt.Errorf("socket activation: systemd passed %s %s but the configured socket is %s: make ListenStream= and socket: agree", a.Network(), a, socket)
	}
	return got[0], nil
}

// runDaemon runs the daemon until SIGTERM or SIGINT and returns its exit
// status. SIGHUP reopens the audit log. ln is the socket-activated API
// socket, or nil.
func runDaemon(cfg daemon.Config, log *slog.Logger, ln net.Listener, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default: // one pending reload covers several signals
			}
		}
	}()
	var watchdog time.Duration
	if d, err := sd.SdWatchdogEnabled(false); err != nil {
		log.Warn("watchdog: WATCHDOG_USEC unusable, not sending keep-alives", "err", err)
	} else if d > 0 {
		watchdog = d / 2
	}
	err := daemon.Run(ctx, cfg, daemon.Options{
		Log:         log,
		VerifierLog: cli.VerifierLog(stderr),
		Listener:    ln,
		Reload:      reload,
		Watchdog:    watchdog,
		Notify: func(state string) {
			if _, err := sd.SdNotify(false, state); err != nil {
				log.Warn("sd_notify", "state", state, "err", err)
			}
		},
	})
	if err != nil {
		log.Error("enforcerd daemon failed", "err", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}
