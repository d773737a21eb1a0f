package uninstall

import (
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

func TestMain(m *testing.M) {
	clitest.Main(m)
}
