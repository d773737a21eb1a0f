//go:build !failpoint

package failpoint_test

import (
	"testing"

	"github.com/enforcerd/enforcerd/internal/failpoint"
)

// TestProductBuildHasNoFailpoints: without the failpoint tag (every
// product build) failpoints are off and Hit returns, whatever the name;
// Arm does not exist in such a build (off.go), so nothing can arm one.
func TestProductBuildHasNoFailpoints(t *testing.T) {
	if failpoint.Enabled {
		t.Fatal("failpoints enabled without the failpoint build tag")
	}
	for _, name := range []string{"register.map", "apply.map", "unregister.map", "reconcile.map",
		"state.create", "state.write", "state.fsync", "state.rename", "intent.write", "intent.rename"} {
		failpoint.Hit(name) // returns: nothing kills the process
	}
}
