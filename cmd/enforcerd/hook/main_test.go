package hook

import (
	"os"
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

func TestMain(m *testing.M) {
	if sock := os.Getenv(floodEnv); sock != "" {
		os.Exit(floodMain(sock)) // a sandbox flooding the API (flood_test.go)
	}
	clitest.Main(m)
}

// execute runs a command line of hook in this process.
func execute(args []string, s cli.Streams) int {
	return cli.ExecuteCommands(args, s, NewCommand(s))
}
