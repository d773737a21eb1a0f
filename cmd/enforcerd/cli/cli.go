// Package cli is what two or more of enforcerd's command packages share: the
// CLI's conventions (a command built by NewCommand, the root and its top-
// level usage, flag errors, exit codes), the flags several commands define,
// --version, the value completions, and the hook's daemon client
// (daemonclient.go). It imports the library packages, never a command's
// package.
package cli

// The one place of the CLI's conventions: how a command is built, how its
// flags are parsed and named in errors, how help and usage errors are
// printed, and how exit codes come out. Every subcommand goes through
// NewCommand; ExecuteCommands runs a command line.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/buildinfo"
	"github.com/enforcerd/enforcerd/policy"
)

const DefaultPinDir = enforcer.DefaultPinDir

// Exit codes shared by every subcommand (documented in usage).
const (
	ExitOK            = 0
	ExitFailure       = 1
	ExitUsage         = 2
	ExitCannotEnforce = 125
	ExitNotExecutable = 126
	ExitNotFound      = 127
)

// streams are a command's standard input, output and error.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// exitCode ends a command with this status; the command has printed its
// own message (or needs none).
type ExitCode int

func (c ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// usageError is a mistake in the command line: the message is printed as
// "enforcerd CMD: MSG" followed by a pointer to --help, and the status is
// exitUsage.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

func UsageErrorf(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// commandSpec describes one subcommand.
type CommandSpec struct {
	Name    string
	Summary string // one line, for the top-level listing
	Help    string // the man-page style usage text, printed verbatim
	// args checks the positional arguments (nil: none allowed).
	Args cobra.PositionalArgs
	// validArgs are the words completion offers as arguments.
	ValidArgs []string
	// run does the work. It returns nil (exit 0), an exitCode, a
	// usageError, or another error, printed as "enforcerd CMD: ERR" with
	// exit 1.
	Run func(c *cobra.Command, args []string) error
}

// newCommand builds a subcommand with the CLI's conventions. The caller
// defines its flags on the returned command's Flags().
func NewCommand(s Streams, spec CommandSpec) *cobra.Command {
	args := spec.Args
	if args == nil {
		args = noArgs
	}
	return &cobra.Command{
		Use:                   spec.Name,
		Short:                 spec.Summary,
		Long:                  spec.Help,
		Args:                  args,
		ValidArgs:             spec.ValidArgs,
		DisableFlagsInUseLine: true,
		RunE: func(c *cobra.Command, a []string) error {
			err := spec.Run(c, a)
			var code ExitCode
			var ue UsageError
			if err == nil || errors.As(err, &code) || errors.As(err, &ue) {
				return err
			}
			fmt.Fprintf(s.Err, "%s: %v\n", c.CommandPath(), err)
			return ExitCode(ExitFailure)
		},
	}
}

// noArgs refuses every positional argument.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return UsageErrorf("unexpected argument %q", args[0])
	}
	return nil
}

// newRoot builds the root command "enforcerd" holding cmds, with the
// CLI's help (usage), help command and flag errors; raw is the command
// line, to name a mistyped flag in full (flagError).
func NewRoot(s Streams, raw []string, cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           "enforcerd",
		Short:         "kernel enforcement of AI-agent permission ceilings",
		SilenceErrors: true,
		SilenceUsage:  true,
		// The root has no flags: "enforcerd --x" is an unknown command,
		// and -h/--help/-help are handled by run below.
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		CompletionOptions:  cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.AddCommand(cmds...)
	registerValueCompletions(root)
	root.RunE = func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			Usage(s.Err, root)
			return ExitCode(ExitUsage)
		}
		switch args[0] {
		case "-h", "--help", "-help":
			Usage(s.Out, root)
			return nil
		case "--version":
			if len(args) > 1 {
				return UsageErrorf("--version takes no arguments (got %q)", args[1])
			}
			return PrintVersion(s, false)
		}
		fmt.Fprintf(s.Err, "enforcerd: unknown command %q\n\n", args[0])
		Usage(s.Err, root)
		return ExitCode(ExitUsage)
	}
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			Usage(s.Out, root)
			return
		}
		fmt.Fprint(s.Out, c.Long)
	})
	root.SetHelpCommand(&cobra.Command{
		Use:    "help [COMMAND]",
		Short:  "print the help of enforcerd or of one command",
		Long:   "Usage: enforcerd help [COMMAND [SUBCOMMAND]]\n\nPrint the help of enforcerd, or of COMMAND (as enforcerd COMMAND --help),\nor of a command's SUBCOMMAND (enforcerd help ctl list).\n",
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				Usage(s.Out, root)
				return nil
			}
			c, rest, err := root.Find(args)
			if err != nil || c == root || len(rest) > 0 || c.Hidden {
				return UsageErrorf("unknown command %q", strings.Join(args, " "))
			}
			fmt.Fprint(s.Out, c.Long)
			return nil
		},
	})
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return flagError(c, raw, err) })
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	return root
}

// executeCommands runs args on a root command holding cmds and returns
// the exit status. The tree is built per call: cobra commands keep flag
// values between executions.
func ExecuteCommands(args []string, s Streams, cmds ...*cobra.Command) int {
	root := NewRoot(s, args, cmds...)
	args = helpSpelling(args)
	root.SetArgs(args)
	if c, _, err := root.Find(args); err == nil && c != root {
		if err := dashAsValue(c, args); err != nil {
			return printUsageError(s, c, err)
		}
	}

	c, err := root.ExecuteC()
	var code ExitCode
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &code):
		return int(code)
	}
	// Every other error comes from parsing the command line: flags
	// (flagError), positional arguments (commandSpec.args) or a
	// usageError of the command.
	if c == nil {
		c = root
	}
	return printUsageError(s, c, err)
}

// printUsageError prints a usage error of command c and returns exitUsage.
func printUsageError(s Streams, c *cobra.Command, err error) int {
	fmt.Fprintf(s.Err, "%s: %v\nRun '%s --help' for usage.\n", c.CommandPath(), err, c.CommandPath())
	return ExitUsage
}

// dashAsValue refuses a flag that needs a value right before the "--"
// that ends the flags ("run --role -- CMD"): pflag would take "--" as the
// value and CMD as an argument before it.
func dashAsValue(c *cobra.Command, args []string) error {
	for i, a := range args {
		if a != "--" {
			continue
		}
		if i == 0 {
			return nil
		}
		prev := args[i-1]
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(prev, "--") && !strings.Contains(prev, "="):
			f = c.Flags().Lookup(prev[2:])
		case len(prev) == 2 && prev[0] == '-' && prev[1] != '-':
			f = c.Flags().ShorthandLookup(prev[1:])
		}
		if f != nil && f.NoOptDefVal == "" {
			return UsageErrorf("flag needs an argument: %s", prev)
		}
		return nil
	}
	return nil
}

// helpSpelling turns -help, which Go's flag package accepted, into --help
// among the flags (before "--").
func helpSpelling(args []string) []string {
	out := append([]string{}, args...)
	for i, a := range out {
		if a == "--" {
			break
		}
		if a == "-help" {
			out[i] = "--help"
		}
	}
	return out
}

// flagError words a pflag parse error the way every message of the CLI
// names flags ("flag --network"), as a usageError. raw is the command line,
// to name a flag given with one dash (-role) in full.
func flagError(c *cobra.Command, raw []string, err error) error {
	var ne *pflag.NotExistError
	var vr *pflag.ValueRequiredError
	var iv *pflag.InvalidValueError
	switch {
	case errors.As(err, &ne):
		if sh := ne.GetSpecifiedShortnames(); sh != "" {
			if arg := shorthandArg(raw, sh); arg != "" {
				name, _, _ := strings.Cut(arg[1:], "=")
				if c.Flags().Lookup(name) != nil {
					return UsageErrorf("flag provided but not defined: -%s (flags take two dashes: --%s)", name, name)
				}
			}
			return UsageErrorf("flag provided but not defined: -%s", ne.GetSpecifiedName())
		}
		return UsageErrorf("flag provided but not defined: --%s", ne.GetSpecifiedName())
	case errors.As(err, &vr):
		if vr.GetSpecifiedShortnames() != "" {
			return UsageErrorf("flag needs an argument: -%s", vr.GetSpecifiedName())
		}
		return UsageErrorf("flag needs an argument: --%s", vr.GetFlag().Name)
	case errors.As(err, &iv):
		f := iv.GetFlag()
		if f.Value.Type() == "bool" {
			return UsageErrorf("invalid boolean value %q for flag --%s (want true or false)", iv.GetValue(), f.Name)
		}
		return UsageErrorf("invalid value %q for flag --%s: %w", iv.GetValue(), f.Name, errors.Unwrap(iv))
	}
	return UsageError{err}
}

// shorthandArg finds the single-dash argument among the flags of raw whose
// tail is the shorthand group sh that failed to parse.
func shorthandArg(raw []string, sh string) string {
	for _, a := range raw {
		if a == "--" {
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, sh) {
			return a
		}
	}
	return ""
}

// ceilingBool is a ceiling field flag: allow|deny, true|false, ASCII
// case-insensitive (policy.ParseBool). Whether it was given is
// Flags().Changed. Given more than once, the values clamp together (deny
// wins): a later flag never undoes an earlier restriction.
type CeilingBool struct{ Val, set bool }

func (b *CeilingBool) String() string { return fmt.Sprint(b.Val) }
func (b *CeilingBool) Type() string   { return "allow|deny" }

func (b *CeilingBool) Set(s string) error {
	v, err := policy.ParseBool(s)
	if err != nil {
		return err
	}
	if b.set {
		v = v && b.Val
	}
	b.Val, b.set = v, true
	return nil
}

// shellFlag is a shell ceiling flag: none|read_only|full (policy.ParseShell).
// Given more than once, the values clamp together (the narrowest wins).
type ShellFlag struct {
	Val policy.Shell
	set bool
}

func (s *ShellFlag) String() string { return string(s.Val) }
func (s *ShellFlag) Type() string   { return "none|read_only|full" }

func (s *ShellFlag) Set(v string) error {
	sh, err := policy.ParseShell(v)
	if err != nil {
		return err
	}
	if s.set {
		all := policy.KernelCeiling{Network: true, Write: true}
		a, b := all, all
		a.Shell, b.Shell = s.Val, sh
		sh = a.Clamp(b).Shell
	}
	s.Val, s.set = sh, true
	return nil
}

// onceString is a string flag that may be given once: a second value is a
// usage error rather than a silent replacement (for --role, where the
// last of two names would otherwise win).
type onceString struct {
	p   *string
	set bool
}

func (o *onceString) String() string { return *o.p }
func (o *onceString) Type() string   { return "string" }

func (o *onceString) Set(v string) error {
	if o.set {
		return fmt.Errorf("given more than once (%q, then %q)", *o.p, v)
	}
	*o.p, o.set = v, true
	return nil
}

// The flags several commands share, defined once.

func JsonFlag(fs *pflag.FlagSet, p *bool) {
	fs.BoolVar(p, "json", false, "print JSON instead of the readable report")
}

func PinDirFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "pin-dir", DefaultPinDir, "bpffs directory of the pinned programs and maps")
}

func SocketFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "socket", defaultSocket, "the enforcerd daemon's API socket")
}

// roleFlag is --role; a given value must be a role name
// (policy.LookupRole), which the command checks.
// It may be given once.
func RoleFlag(fs *pflag.FlagSet, p *string) {
	fs.Var(&onceString{p: p}, "role", "role name (general, explore, planner, reviewer, implement, test, advisor, custom, an alias or a title)")
}

// NeedsRoot is nil for root (euid 0), else the error a command prints
// instead of the permission error its first bpffs or cgroup write would
// give; what names why it needs root ("loading, pinning and attaching
// eBPF programs").
func NeedsRoot(what string) error {
	if euid := os.Geteuid(); euid != 0 {
		return fmt.Errorf("needs root (running as uid %d): %s takes CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN and CAP_NET_ADMIN; run it with sudo", euid, what)
	}
	return nil
}

// usage is the top-level help: the command list is every visible
// subcommand of root with its Short text.
func Usage(w io.Writer, root *cobra.Command) {
	fmt.Fprintf(w, `enforcerd - kernel enforcement of AI-agent permission ceilings

Usage:
  enforcerd <command> [flags] [args]
  enforcerd --version

Commands:
`)
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			fmt.Fprintf(w, "  %-10s %s\n", c.Name(), c.Short)
		}
	}
	fmt.Fprintf(w, `
Run "enforcerd <command> --help" for a command's flags.

Exit status:
  0    success (for run: the command's own status is returned)
  1    failure
  2    usage error (bad flag, bad ceiling text)
  125  enforcerd could not enforce the ceiling; the workload never ran
  126  command found but not executable (run)
  127  command not found (run)

Environment:
  ENFORCERD_VERIFIER_LOG   when set (to anything), a program the kernel
                           rejects has its verifier log printed to stderr
                           (run, check, daemon)
`)
}

// verifierLog is where enforcer writes the kernel verifier's log of a
// rejected program: w when ENFORCERD_VERIFIER_LOG is set, else nowhere.
func VerifierLog(w io.Writer) io.Writer {
	if os.Getenv("ENFORCERD_VERIFIER_LOG") == "" {
		return nil
	}
	return w
}

// printVersion prints the build of the running binary.
func PrintVersion(s Streams, asJSON bool) error {
	info := buildinfo.Get()
	if asJSON {
		b, err := json.Marshal(info)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(s.Out, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintf(s.Out, "enforcerd %s\n", info)
	return err
}

// flagValueCompletions are the fixed values completion offers for a flag
// name wherever a command defines it (run, surface, ctl register, daemon):
// the ceiling fields' values as run and ctl accept them, the canonical
// role names (policy.AllRoles; the aliases are accepted but not offered),
// the tool groups (policy.AllToolGroups) and the daemon's log settings.
func flagValueCompletions() map[string][]string {
	roles := make([]string, len(policy.AllRoles))
	for i, r := range policy.AllRoles {
		roles[i] = string(r)
	}
	groups := make([]string, len(policy.AllToolGroups))
	for i, g := range policy.AllToolGroups {
		groups[i] = string(g)
	}
	return map[string][]string{
		"role":        roles,
		"network":     {"allow", "deny"},
		"write":       {"allow", "deny"},
		"shell":       {"none", "read_only", "full"},
		"activate":    {"now", "exec"},
		"tool-groups": groups,
		"log-format":  {"text", "json"},
		"log-level":   {"debug", "info", "warn", "error"},
	}
}

// registerValueCompletions gives every command under c (c included) the
// fixed completions of flagValueCompletions for the flags it defines and
// has no completion for yet. Errors cannot happen for a defined flag
// without a completion, and a completion is only ever a convenience:
// they are ignored.
func registerValueCompletions(c *cobra.Command) {
	vals := flagValueCompletions()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for name, v := range vals {
			if c.Flags().Lookup(name) == nil {
				continue
			}
			if _, ok := c.GetFlagCompletionFunc(name); ok {
				continue
			}
			_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(v, cobra.ShellCompDirectiveNoFileComp))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(c)
}

// LinkReleaseWait bounds the wait for the kernel to release the links
// after their pins are gone (killed runs close their descriptors).
const LinkReleaseWait = 10 * time.Second

// OrDash is s, or "-" when s is empty (a table cell or report value).
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
