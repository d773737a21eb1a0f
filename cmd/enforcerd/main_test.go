package main

import (
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

func TestMain(m *testing.M) {
	clitest.Main(m)
}

// cmdline runs a command line in this process, stdin empty, and returns
// its exit status and output.
func cmdline(args ...string) (code int, stdout, stderr string) {
	return clitest.Cmdline(execute, args...)
}
