package ctl

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// TestCtlCompletionCandidates: ctl completes the ids of a running
// daemon's containers.
func TestCtlCompletionCandidates(t *testing.T) {
	ts := ctlServer(t)
	mustCtl(t, ts, "register", "--id", "alpha", "--cgroup", "/c/one")
	mustCtl(t, ts, "register", "--id", "beta", "--cgroup", "/c/two")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ctl", "--socket", ts.Socket, "get", ""}, "alpha,beta"},
		{[]string{"ctl", "get", "--socket", ts.Socket, "b"}, "beta"},
		{[]string{"ctl", "--socket", ts.Socket, "narrow", "alpha", ""}, ""},
		{[]string{"ctl", "--socket", ts.Socket, "denials", "--container", ""}, "alpha,beta"},
		// No daemon: nothing, and no error.
		{[]string{"ctl", "--socket", filepath.Join(t.TempDir(), "none"), "get", ""}, ""},
	} {
		if got := strings.Join(clitest.Candidates(t, execute, c.args...), ","); got != c.want {
			t.Errorf("__complete %q: %q, want %q", c.args, got, c.want)
		}
	}
}
