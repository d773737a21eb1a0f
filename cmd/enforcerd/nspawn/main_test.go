package nspawn

import (
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

func TestMain(m *testing.M) {
	clitest.Main(m)
}

// execute runs a command line of nspawn in this process.
func execute(args []string, s cli.Streams) int {
	return cli.ExecuteCommands(args, s, NewCommand(s))
}
