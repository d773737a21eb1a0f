package check

import (
	"os"
	"testing"

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
