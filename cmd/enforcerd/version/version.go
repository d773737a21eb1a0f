// Package version is "enforcerd version". It imports cmd/enforcerd/cli only.
package version

import (
	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

const versionHelp = `Usage: enforcerd version [--json]
       enforcerd --version

Print the version of this enforcerd binary: its release or git describe
version, the VCS revision it was built from, the build date and the Go
toolchain and platform. The build date is the date of that revision's
commit, not the time of the build, so that one commit always builds the
same binary (reproducible builds); a "make build" from a work tree with
uncommitted changes, which no commit describes, records the time of the
build instead. The same values are the labels of the metric
enforcerd_build_info that the daemon exports.

A binary built with "make build" carries the values the Makefile sets at
link time; one built with plain "go build" or "go install" carries what the
Go toolchain recorded (the module version, "(devel)" for a work tree, and
the commit, with "-modified" for uncommitted changes). A value that is not
known prints as "unknown".

Flags:
  --json   print one JSON object: {"version", "revision", "branch",
           "build_date", "go_version", "platform"}

Exit status: 0.
`

func NewCommand(s cli.Streams) *cobra.Command {
	var asJSON bool
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:    "version",
		Summary: "print the version, revision and build of this binary",
		Help:    versionHelp,
		Run: func(*cobra.Command, []string) error {
			return cli.PrintVersion(s, asJSON)
		},
	})
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
