//go:build failpoint

package failpoint_test

import (
	"testing"

	"github.com/enforcerd/enforcerd/internal/failpoint"
)

func TestArmRefusesMalformedSpecs(t *testing.T) {
	for _, spec := range []string{"x@", "x@0", "x@-1", "x@y"} {
		if err := failpoint.Arm(spec); err == nil {
			t.Errorf("Arm(%q) accepted", spec)
		}
	}
	if err := failpoint.Arm("x@2"); err != nil {
		t.Fatal(err)
	}
	failpoint.Hit("y")
	failpoint.Hit("x") // the first hit of x: not armed for it
	if err := failpoint.Arm(""); err != nil {
		t.Fatal(err)
	}
	failpoint.Hit("x")
}
