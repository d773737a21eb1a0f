// Command enforcerd makes an AI agent container's permission ceiling true in
// the kernel with eBPF LSM and cgroup-BPF programs. main only dispatches to
// subcommands; each lives in its own file of this package and the logic
// lives in the library packages (policy, enforcer, cgroup).
package main

import (
	"fmt"
	"io"
	"os"
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

type subcommand struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// subcommands is filled by each subcommand file's init.
var subcommands []subcommand

func register(c subcommand) { subcommands = append(subcommands, c) }

func usage(w io.Writer) {
	fmt.Fprintf(w, `enforcerd - kernel enforcement of AI-agent permission ceilings

Usage:
  enforcerd <command> [flags] [args]

Commands:
`)
	for _, c := range subcommands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
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
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage(stdout)
		return exitOK
	}
	for _, c := range subcommands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "enforcerd: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}
