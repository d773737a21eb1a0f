package run

import (
	"os"
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

var testPinDir, testPinShared = vmtest.PinDir("runtest")

func TestMain(m *testing.M) {
	clitest.Main(m, func() {
		if !testPinShared {
			os.RemoveAll(testPinDir)
		}
	})
}

// execute runs a command line of run in this process.
func execute(args []string, s cli.Streams) int {
	return cli.ExecuteCommands(args, s, NewCommand(s, RunSandboxed))
}

// cmdline runs a command line of run in this process, stdin empty, and
// returns its exit status and output.
func cmdline(args ...string) (code int, stdout, stderr string) {
	return clitest.Cmdline(execute, args...)
}
