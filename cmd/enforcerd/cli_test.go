package main

// The CLI's conventions (cli/cli.go), for every command: help, usage errors,
// flag spelling in messages, the top-level listing.

import (
	"slices"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// commandNames are the subcommands, in the order of the top-level listing.
var commandNames = []string{"check", "completion", "ctl", "daemon", "hook", "nspawn", "proxy", "run", "surface", "uninstall", "version"}

func TestEveryCommandPrintsItsOwnHelp(t *testing.T) {
	cmds := commands(cli.Streams{})
	if len(cmds) != len(commandNames) {
		t.Fatalf("%d commands, want %v", len(cmds), commandNames)
	}
	for _, c := range cmds {
		if !slices.Contains(commandNames, c.Name()) {
			t.Errorf("command %s is not in commandNames", c.Name())
		}
		if !strings.HasPrefix(c.Long, "Usage:") || !strings.Contains(c.Long, "Exit status:") {
			t.Errorf("%s: help is not the hand-written usage text: %q", c.Name(), c.Long)
		}
		for _, args := range [][]string{{c.Name(), "-h"}, {c.Name(), "--help"}, {c.Name(), "-help"}, {"help", c.Name()}} {
			code, out, errs := cmdline(args...)
			if code != cli.ExitOK || out != c.Long || errs != "" {
				t.Errorf("%q: exit %d, stderr %q, stdout is the help: %v", args, code, errs, out == c.Long)
			}
		}
	}
	// Flags before the help flag are parsed, not run.
	if code, out, _ := cmdline("run", "--write=deny", "--help"); code != cli.ExitOK || !strings.HasPrefix(out, "Usage: enforcerd run") {
		t.Errorf("run --write=deny --help: exit %d, %q", code, out)
	}
}

func TestTopLevelUsage(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}} {
		code, out, errs := cmdline(args...)
		if code != cli.ExitOK || errs != "" || !strings.HasPrefix(out, "enforcerd - kernel enforcement") {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
		var listed []string
		_, list, _ := strings.Cut(out, "Commands:\n")
		list, _, _ = strings.Cut(list, "\n\n")
		for _, l := range strings.Split(list, "\n") {
			listed = append(listed, strings.Fields(l)[0])
		}
		if !slices.Equal(listed, commandNames) {
			t.Errorf("%q lists %v, want %v", args, listed, commandNames)
		}
		if !strings.Contains(out, "  run        run one command tree under a ceiling, enforced in the kernel\n") ||
			!strings.Contains(out, "125  enforcerd could not enforce the ceiling; the workload never ran") {
			t.Errorf("%q: listing or exit status missing:\n%s", args, out)
		}
	}
	code, out, errs := cmdline()
	if code != cli.ExitUsage || out != "" || !strings.HasPrefix(errs, "enforcerd - kernel enforcement") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// cobra's default completion command is disabled (main.go); ours
	// (package completion) is a command like the others.
	for _, cmd := range []string{"bogus", "--bogus", "-q"} {
		code, out, errs := cmdline(cmd)
		if code != cli.ExitUsage || out != "" || !strings.HasPrefix(errs, `enforcerd: unknown command "`+cmd+`"`+"\n\nenforcerd - kernel") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", cmd, code, out, errs)
		}
	}
	if code, _, errs := cmdline("help", "bogus"); code != cli.ExitUsage || !strings.HasPrefix(errs, `enforcerd help: unknown command "bogus"`) {
		t.Errorf("help bogus: exit %d, stderr %q", code, errs)
	}
}

// TestUsageErrors: a bad command line exits 2 with "enforcerd CMD: ERROR"
// and a pointer to the command's help on stderr, nothing on stdout, and
// names flags with two dashes.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"check", "--bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"daemon", "--bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"hook", "--bogus", "poststop"}, "flag provided but not defined: --bogus"},
		{[]string{"run", "--bogus", "--", "true"}, "flag provided but not defined: --bogus"},
		{[]string{"surface", "--bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"run", "-x", "--", "true"}, "flag provided but not defined: -x"},
		{[]string{"run", "-role", "reviewer", "--", "true"}, "flag provided but not defined: -role (flags take two dashes: --role)"},
		{[]string{"surface", "-json"}, "flag provided but not defined: -json (flags take two dashes: --json)"},
		{[]string{"check", "stray"}, `unexpected argument "stray"`},
		{[]string{"daemon", "stray"}, `unexpected argument "stray"`},
		{[]string{"surface", "stray"}, `unexpected argument "stray"`},
		{[]string{"surface", "--role"}, "flag needs an argument: --role"},
		{[]string{"daemon", "--config"}, "flag needs an argument: --config"},
		{[]string{"run", "--role", "--", "true"}, "flag needs an argument: --role"},
		{[]string{"run", "--cgroup-parent", "--", "true"}, "flag needs an argument: --cgroup-parent"},
		{[]string{"run", "--network", "--", "true"}, "flag needs an argument: --network"},
		{[]string{"run", "--network=maybe", "--", "true"}, `invalid value "maybe" for flag --network: bad ceiling: invalid value "maybe" (want true|false|allow|deny)`},
		{[]string{"run", "--shell=bash", "--", "true"}, `invalid value "bash" for flag --shell: `},
		{[]string{"run", "--quiet=maybe", "--", "true"}, `invalid boolean value "maybe" for flag --quiet`},
		{[]string{"check", "--json=maybe"}, `invalid boolean value "maybe" for flag --json`},
		{[]string{"check", "--json", "--verbose"}, "--json and --verbose together: --json always has every program; give one of them"},
		{[]string{"hook", "--timeout", "xyz", "poststop"}, `invalid value "xyz" for flag --timeout`},
		{[]string{"run", "--write=deny", "true"}, `unexpected argument "true" before --`},
		{[]string{"run", "stray", "--", "true"}, `unexpected argument "stray" before --`},
		{[]string{"run", "--write=deny"}, "missing -- before the command (enforcerd run [flags] -- CMD [ARG...])"},
		{[]string{"run", "--"}, "missing command after --"},
		{[]string{"run", "--exec-allow", "/bin/true", "--", "true"}, "--exec-allow needs --shell=none (the ceiling's shell is full)"},
		{[]string{"surface", "--session", "write=maybe"}, "--session: write: invalid value"},
		{[]string{"hook"}, "want one stage (createRuntime, prestart or poststop), got 0 arguments"},
		{[]string{"hook", "poststop", "x"}, "want one stage (createRuntime, prestart or poststop), got 2 arguments"},
		{[]string{"hook", "createContainer"}, `unknown stage "createContainer" (want createRuntime, prestart or poststop)`},
	} {
		code, out, errs := cmdline(c.args...)
		want := "enforcerd " + c.args[0] + ": " + c.msg
		hint := "\nRun 'enforcerd " + c.args[0] + " --help' for usage.\n"
		if code != cli.ExitUsage || out != "" || !strings.HasPrefix(errs, want) || !strings.HasSuffix(errs, hint) || strings.Count(errs, "\n") != 2 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q...%q", c.args, code, out, errs, want, hint)
		}
	}
}
