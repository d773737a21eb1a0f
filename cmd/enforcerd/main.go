// Command enforcerd makes an AI agent container's permission ceiling true in
// the kernel with eBPF LSM and cgroup-BPF programs. This package is the CLI:
// flags, messages and exit codes; the logic lives in the library packages
// (policy, enforcer, cgroup, internal/sandbox, daemon).
//
// Every subcommand is a github.com/spf13/cobra command with
// github.com/spf13/pflag flags, built by one helper (newCommand, cli.go)
// that holds the conventions: the hand-written, man-page style usage text
// is the command's Long text and its help output (-h, --help and -help print
// it to stdout, exit 0; cobra's help template is never used), a usage error
// exits 2 with "enforcerd CMD: ERROR" and a pointer to --help on stderr,
// flags are named "--flag" in every message, and the other exit codes are
// the command's own (exitCode). Cobra rather than our own flag handling:
// the operator work wants shell completions and generated man pages, which
// cobra derives from the command tree, and a well-kept library parses GNU
// style flags (--flag=value, --flag value, -q) better than a hand-rolled
// parser. Flags take two dashes; Go's flag package also accepted one
// (-role), which is now refused with a pointer to the two-dash spelling,
// except -help, kept as a spelling of --help.
//
// Cobra's default "completion" command is disabled
// (CompletionOptions.DisableDefaultCmd): the operator work adds a
// documented completion command together with man pages, and until then
// no undocumented command with cobra's generic help should exist. Cobra's
// hidden "__complete" command, the protocol its completion scripts call,
// is always present; it only prints completion candidates and runs no
// command.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes shared by every subcommand (documented in usage).
const (
	exitOK            = 0
	exitFailure       = 1
	exitUsage         = 2
	exitCannotEnforce = 125
	exitNotExecutable = 126
	exitNotFound      = 127
)

// commands builds the subcommands, in no particular order (the listing is
// sorted by name).
func commands(s streams) []*cobra.Command {
	return []*cobra.Command{newRunCmd(s, runSandboxed), newSurfaceCmd(s), newCheckCmd(s), newDaemonCmd(s), newHookCmd(s), newProxyCmd(s)}
}

// usage is the top-level help: the command list is every visible
// subcommand of root with its Short text.
func usage(w io.Writer, root *cobra.Command) {
	fmt.Fprintf(w, `enforcerd - kernel enforcement of AI-agent permission ceilings

Usage:
  enforcerd <command> [flags] [args]

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
func verifierLog(w io.Writer) io.Writer {
	if os.Getenv("ENFORCERD_VERIFIER_LOG") == "" {
		return nil
	}
	return w
}

func main() {
	os.Exit(execute(os.Args[1:], streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
}

// execute runs the command line args (without the program name) and
// returns the exit status.
func execute(args []string, s streams) int {
	return executeCommands(args, s, commands(s)...)
}
