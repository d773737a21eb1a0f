// Package uninstall is "enforcerd uninstall": every program and map
// unpinned, enforcerd's cgroups and state removed, never while a registered
// cgroup could run with no ceiling. It imports the library packages and
// cmd/enforcerd/cli, no other command's package.
package uninstall

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/sandbox"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

const uninstallHelp = `Usage: enforcerd uninstall [--force [--kill]] [--config FILE] [--pin-dir DIR]
                           [--socket PATH] [--state FILE]

Remove what enforcerd keeps in the kernel and on the host: every pinned
program and map under the pin directory (the programs detach, and every
ceiling they enforce is lifted), the cgroups that killed "enforcerd run"
processes left behind (empty enforcerd-run-<pid> cgroups), and the daemon's
state file. Run it after stopping the daemon (systemctl disable --now
enforcerd.socket enforcerd.service); it refuses while a daemon runs on these
pins, since the daemon holds the programs attached.

While containers or runs are registered, uninstall refuses and lists them:
removing the pins would let them go on running with no ceiling. With
--force each registered cgroup that still exists is frozen first (it stays
frozen: thawing it would run it with no ceiling, so kill or remove it),
or with --force --kill its processes are killed.

It leaves, and names: the audit log (/var/log/enforcerd, your records),
the configuration (/etc/enforcerd), the systemd units, hooks.d files and the
binary, which your package manager or install script removes.

With --config, the pin directory, socket, state file and audit log are
the ones the daemon's configuration names (enforcerd daemon --help), each
default filled in as the daemon fills it; --pin-dir, --socket and --state
given beside it win. An invalid configuration is a usage error, and
nothing is removed.

Flags:
  --force          freeze every registered cgroup, then remove everything
  --kill           with --force: kill the registered cgroups' processes
                   instead of freezing them
  --config FILE    take the paths below, and the audit log's, from the
                   daemon's configuration FILE
  --pin-dir DIR    bpffs directory of the pins (default /sys/fs/bpf/enforcerd)
  --socket PATH    the daemon's API socket, to refuse while a daemon
                   answers there for this pin directory (default
                   /run/enforcerd/enforcerd.sock)
  --state FILE     the daemon's state file to remove (default
                   /var/lib/enforcerd/state.json with the default pin
                   directory; with another --pin-dir and no --config,
                   none unless given: the default daemon's state file
                   belongs to the default pins)
  -h, --help       this help

Exit status:
  0  everything under the pin directory is removed and its programs are
     detached (also when nothing was installed)
  1  refused (a daemon runs, or containers are registered without
     --force), or something could not be removed (named on stderr)
  2  usage error
`

func NewCommand(s cli.Streams) *cobra.Command {
	var o uninstallOptions
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:    "uninstall",
		Summary: "detach and unpin every program and map, remove enforcerd's cgroups and state",
		Help:    uninstallHelp,
		Run: func(c *cobra.Command, _ []string) error {
			if o.kill && !o.force {
				return cli.UsageErrorf("--kill needs --force")
			}
			if c.Flags().Changed("config") {
				cfg, err := daemon.LoadConfig(o.config, true)
				if err != nil {
					fmt.Fprintf(s.Err, "enforcerd uninstall: %v\n", err)
					return cli.ExitCode(cli.ExitUsage)
				}
				o = o.fromConfig(cfg, c.Flags().Changed)
			} else {
				o = o.withoutGuessedState(c.Flags().Changed)
			}
			if err := cli.NeedsRoot("detaching eBPF programs and removing their pins"); err != nil {
				return err
			}
			return uninstall(s, o)
		},
	})
	c.Flags().BoolVar(&o.force, "force", false, "freeze (or --kill) registered cgroups, then remove")
	c.Flags().BoolVar(&o.kill, "kill", false, "with --force: kill instead of freezing")
	c.Flags().StringVar(&o.config, "config", daemon.DefaultConfigPath, "the daemon's configuration, naming the paths")
	c.Flags().StringVar(&o.pinDir, "pin-dir", cli.DefaultPinDir, "bpffs directory of the pins")
	c.Flags().StringVar(&o.socket, "socket", api.DefaultSocket, "the daemon's API socket")
	c.Flags().StringVar(&o.state, "state", state.DefaultPath, "the daemon's state file")
	return c
}

type uninstallOptions struct {
	force, kill           bool
	pinDir, socket, state string
	// config is --config; auditPath the audit log left in place, as the
	// configuration names it ("": none) when fromConfig is set.
	config, auditPath string
	fromFile          bool
}

// defaultAuditDir is where the audit log is without --config.
const defaultAuditDir = "/var/log/enforcerd"

// fromConfig is o with the paths the daemon's configuration cfg names,
// except those whose flag was given (changed reports it by flag name).
func (o uninstallOptions) fromConfig(cfg daemon.Config, changed func(string) bool) uninstallOptions {
	for _, f := range []struct {
		flag     string
		dst      *string
		fromFile string
	}{{"pin-dir", &o.pinDir, cfg.PinDir}, {"socket", &o.socket, cfg.Socket}, {"state", &o.state, cfg.State}} {
		if !changed(f.flag) {
			*f.dst = f.fromFile
		}
	}
	o.auditPath, o.fromFile = cfg.Audit.Path, true
	return o
}

// withoutGuessedState is o without the default state file when the pin
// directory is not the default one and --state was not given (changed
// reports a flag by name): the default state file is the default daemon's,
// and removing it beside another installation's pins (the demo's, a
// test's) would delete a daemon's state that uninstall never looked at.
func (o uninstallOptions) withoutGuessedState(changed func(string) bool) uninstallOptions {
	if !changed("state") && filepath.Clean(o.pinDir) != filepath.Clean(cli.DefaultPinDir) {
		o.state = ""
	}
	return o
}

// configNote names the configuration left in place: the file --config
// named, else the default configuration directory.
func (o uninstallOptions) configNote() string {
	if o.fromFile {
		return "the configuration (" + o.config + ")"
	}
	return "the configuration (" + filepath.Dir(daemon.DefaultConfigPath) + ")"
}

// auditNote names the audit log left in place.
func (o uninstallOptions) auditNote() string {
	switch {
	case !o.fromFile:
		return "the audit log (" + defaultAuditDir + ")"
	case o.auditPath == "":
		return "no audit log (" + o.config + " names none)"
	}
	return "the audit log (" + o.auditPath + ", its rotated files beside it)"
}

// uninstall removes what enforcerd left on the host, in steps: refuse
// while a daemon uses the pins; refuse, freeze or kill the registered
// cgroups still running (nothing is unpinned while one could run with no
// ceiling); remove the pins, the cgroups killed runs left and the state
// file. It prints each removal on s.out.
func uninstall(s cli.Streams, o uninstallOptions) error {
	in, err := enforcer.ReadInstallation(o.pinDir)
	if err != nil {
		return err
	}
	if err := refuseWhileDaemonRuns(in, o); err != nil {
		return err
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		return err
	}
	groups, err := cgroup.Groups(mount)
	if err != nil {
		return err
	}
	if err := stopRegistered(s, o, mount, groups, liveRegistrations(in, groups)); err != nil {
		return err
	}
	if err := removePins(s, o, in); err != nil {
		return err
	}
	removeLeftovers(s, mount, groups)
	removeState(s, o)
	outf(s, "left in place: %s, %s, the systemd units, hooks.d files and this binary", o.auditNote(), o.configNote())
	return nil
}

// outf prints one line of uninstall's report on s.out.
func outf(s cli.Streams, format string, a ...any) { fmt.Fprintf(s.Out, format+"\n", a...) }

// refuseWhileDaemonRuns refuses when the daemon named in the pins still
// runs, or a daemon answers on o.socket: it holds the programs attached.
func refuseWhileDaemonRuns(in enforcer.Installation, o uninstallOptions) error {
	if pid := in.HostPolicy.DaemonPID; pid > 0 && sandbox.ProcessExists(pid) {
		return fmt.Errorf("refusing: the enforcerd daemon (pid %d) uses %s and holds its programs attached; stop it first (systemctl disable --now enforcerd.socket enforcerd.service)", pid, o.pinDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	st, serr := api.NewClient(o.socket, 2*time.Second).Status(ctx)
	cancel()
	if serr == nil && daemonUsesPins(st, o.pinDir) {
		return fmt.Errorf("refusing: an enforcerd daemon answers on %s for %s; stop it first (systemctl disable --now enforcerd.socket enforcerd.service)", o.socket, o.pinDir)
	}
	return nil
}

// daemonUsesPins reports whether the daemon whose status is st may hold
// the programs pinned in pinDir attached: its pin directory is pinDir, or
// it does not say which it is (then it may).
func daemonUsesPins(st api.Status, pinDir string) bool {
	return st.PinDir == "" || filepath.Clean(st.PinDir) == filepath.Clean(pinDir)
}

// liveRegistrations are the registrations of in whose cgroup still
// exists (in groups, by cgroup id).
func liveRegistrations(in enforcer.Installation, groups map[uint64]string) []enforcer.Registration {
	var live []enforcer.Registration
	for _, r := range in.Registrations {
		if _, ok := groups[r.CgroupID]; ok {
			live = append(live, r)
		}
	}
	return live
}

// stopRegistered freezes (or, with --kill, kills) the live registered
// cgroups. Without --force it lists them and refuses (exit 1). Errors:
// one could not be frozen or killed (then nothing may be unpinned).
func stopRegistered(s cli.Streams, o uninstallOptions, mount string, groups map[uint64]string, live []enforcer.Registration) error {
	if len(live) > 0 && !o.force {
		fmt.Fprintf(s.Err, "enforcerd uninstall: %d cgroup(s) registered in %s still exist:\n", len(live), o.pinDir)
		for _, r := range live {
			fmt.Fprintf(s.Err, "  %s (cgroup id %d): %s\n", groups[r.CgroupID], r.CgroupID, r.Entry.Ceiling)
		}
		fmt.Fprintf(s.Err, "enforcerd uninstall: refusing: removing the pins would let them run with no ceiling; stop them, or use --force (freeze them) or --force --kill\n")
		return cli.ExitCode(cli.ExitFailure)
	}
	var failed []string
	for _, r := range live {
		if err := stopCgroup(s, o, mount, groups[r.CgroupID]); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		// Nothing is unpinned while a registered cgroup could not be
		// frozen or killed: it would run with no ceiling.
		return fmt.Errorf("refusing to remove the pins: %s", strings.Join(failed, "; "))
	}
	return nil
}

// stopCgroup kills (--kill) or freezes the processes of the cgroup group,
// for good: thawing it would run it with no ceiling.
func stopCgroup(s cli.Streams, o uninstallOptions, mount, group string) error {
	cg, err := cgroup.Open(mount, group)
	if err != nil {
		return err
	}
	if o.kill {
		if err := cg.Kill(); err != nil {
			return err
		}
		outf(s, "killed: the processes of %s (cgroup id %d)", cg.Group, cg.ID)
		return nil
	}
	if err := cg.Freeze(5 * time.Second); err != nil {
		return err
	}
	outf(s, "frozen: %s (cgroup id %d); it stays frozen: thawing it would run it with no ceiling, so kill it (echo 1 > %s/cgroup.kill) or remove it", cg.Group, cg.ID, cg.Path())
	return nil
}

// removePins removes the pins of in (detaching its programs).
func removePins(s cli.Streams, o uninstallOptions, in enforcer.Installation) error {
	if !in.Present {
		outf(s, "nothing pinned under %s", o.pinDir)
		return nil
	}
	if err := in.RemovePins(cli.LinkReleaseWait); err != nil {
		return err
	}
	outf(s, "removed: %d pins under %s (%d programs detached, %d registrations dropped)", in.Pins, o.pinDir, len(in.LinkIDs), len(in.Registrations))
	return nil
}

// removeLeftovers removes the cgroups killed runs left; one it cannot
// remove is reported on s.err.
func removeLeftovers(s cli.Streams, mount string, groups map[uint64]string) {
	for _, g := range runLeftovers(mount, groups) {
		cg, err := cgroup.Open(mount, g)
		if err == nil {
			err = cg.Remove(time.Second)
		}
		if err != nil {
			fmt.Fprintf(s.Err, "enforcerd uninstall: cgroup %s left by a killed run: %v\n", g, err)
			continue
		}
		outf(s, "removed: cgroup %s (left by a killed enforcerd run)", g)
	}
}

// removeState removes the daemon's state file and its lock; a failure
// other than absence is reported on s.err. With no state file named
// (withoutGuessedState) it removes nothing and says so.
func removeState(s cli.Streams, o uninstallOptions) {
	if o.state == "" {
		outf(s, "state file: none removed (the pin directory is not the default one: name its daemon's state file with --state or --config)")
		return
	}
	for _, f := range []string{o.state, o.state + ".lock"} {
		if err := os.Remove(f); err == nil {
			outf(s, "removed: %s", f)
		} else if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(s.Err, "enforcerd uninstall: %v\n", err)
		}
	}
}

// runLeftovers lists the cgroups killed runs left over the whole
// hierarchy (sandbox.LeftByKilledRun).
func runLeftovers(mount string, groups map[uint64]string) []string {
	var out []string
	for _, g := range groups {
		if _, ok := sandbox.LeftByKilledRun(mount, g); ok {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}
