package run

// What run puts around CMD in the kernel besides the network: write=deny,
// and RLIMIT_CORE.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// TestNoBPFLSMRunWriteDenyFailsClosed: without BPF LSM (the second vmtest
// boot, and these hosts, where LSM programs cannot load) `run --write=deny`
// exits 125 and the command never runs (threat model E5). With BPF LSM (the
// first vmtest boot) the command runs and its write is denied.
func TestNoBPFLSMRunWriteDenyFailsClosed(t *testing.T) {
	vmtest.RequireRoot(t)
	x := filepath.Join(t.TempDir(), "X")
	r := clitest.Run(t, nil, "run", "--pin-dir", testPinDir, "--write=deny", "--", "touch", x)
	if _, err := os.Lstat(x); err == nil {
		t.Errorf("BYPASS: %s exists: touch ran unconfined (exit %d, stderr: %s)", x, r.Code, r.Stderr)
	}
	switch {
	case vmtest.NoBPFLSM():
		if r.Code != cli.ExitCannotEnforce {
			t.Errorf("exit %d, want %d (stderr: %s)", r.Code, cli.ExitCannotEnforce, r.Stderr)
		}
	case vmtest.InVM():
		if r.Code == 0 || r.Code == cli.ExitCannotEnforce {
			t.Errorf("with BPF LSM: exit %d, want touch's own failure (stderr: %s)", r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "enforcerd: denied") {
			t.Errorf("no denial printed on stderr: %s", r.Stderr)
		}
		return
	case r.Code != cli.ExitCannotEnforce:
		// A host where BPF LSM works: the write must have been denied.
		if r.Code == 0 {
			t.Errorf("exit 0: touch succeeded under --write=deny (stderr: %s)", r.Stderr)
		}
		return
	}
	if !strings.Contains(r.Stderr, "write") {
		t.Errorf("exit 125 without saying that write cannot be enforced: %s", r.Stderr)
	}
	t.Logf("stderr: %s", r.Stderr)
}

// TestRunLimitsCore: the command enforcerd run starts has RLIMIT_CORE 1/1.
func TestRunLimitsCore(t *testing.T) {
	vmtest.RequireRoot(t)
	r := clitest.Run(t, nil, "run", "--pin-dir", testPinDir, "--", "cat", "/proc/self/limits")
	if r.Code == cli.ExitCannotEnforce {
		vmtest.Skip(t, "enforcerd run cannot enforce here: "+r.Stderr)
	}
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(l, "Max core file size") {
			if f := strings.Fields(l); len(f) < 6 || f[4] != "1" || f[5] != "1" {
				t.Errorf("enforcerd run: %q, want RLIMIT_CORE 1 1", l)
			}
			return
		}
	}
	t.Errorf("no core limit line (exit %d): %s %s", r.Code, r.Stdout, r.Stderr)
}
