package surface

import (
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

func TestMain(m *testing.M) {
	clitest.Main(m)
}

// execute runs a command line of surface in this process.
func execute(args []string, s cli.Streams) int {
	return cli.ExecuteCommands(args, s, NewCommand(s))
}

// cmdline runs a command line of surface in this process, stdin empty, and
// returns its exit status and output.
func cmdline(args ...string) (code int, stdout, stderr string) {
	return clitest.Cmdline(execute, args...)
}
