package main

// What run puts around CMD in the kernel besides the network: write=deny,
// and RLIMIT_CORE.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/internal/testing/vmtest"
)

// TestNoBPFLSMRunWriteDenyFailsClosed: without BPF LSM (the second vmtest
// boot, and these hosts, where LSM programs cannot load) `run --write=deny`
// exits 125 and the command never runs (threat model E5). With BPF LSM (the
// first vmtest boot) the command runs and its write is denied.
func TestNoBPFLSMRunWriteDenyFailsClosed(t *testing.T) {
	vmtest.RequireRoot(t)
	x := filepath.Join(t.TempDir(), "X")
	r := enforcerd(t, nil, "run", "--pin-dir", testPinDir, "--write=deny", "--", "touch", x)
	if _, err := os.Lstat(x); err == nil {
		t.Errorf("BYPASS: %s exists: touch ran unconfined (exit %d, stderr: %s)", x, r.code, r.stderr)
	}
	switch {
	case vmtest.NoBPFLSM():
		if r.code != exitCannotEnforce {
			t.Errorf("exit %d, want %d (stderr: %s)", r.code, exitCannotEnforce, r.stderr)
		}
	case vmtest.InVM():
		if r.code == 0 || r.code == exitCannotEnforce {
			t.Errorf("with BPF LSM: exit %d, want touch's own failure (stderr: %s)", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "enforcerd: denied") {
			t.Errorf("no denial printed on stderr: %s", r.stderr)
		}
		return
	case r.code != exitCannotEnforce:
		// A host where BPF LSM works: the write must have been denied.
		if r.code == 0 {
			t.Errorf("exit 0: touch succeeded under --write=deny (stderr: %s)", r.stderr)
		}
		return
	}
	if !strings.Contains(r.stderr, "write") {
		t.Errorf("exit 125 without saying that write cannot be enforced: %s", r.stderr)
	}
	t.Logf("stderr: %s", r.stderr)
}

// TestRunLimitsCore: the command enforcerd run starts has RLIMIT_CORE 1/1.
func TestRunLimitsCore(t *testing.T) {
	vmtest.RequireRoot(t)
	r := enforcerd(t, nil, "run", "--pin-dir", testPinDir, "--", "cat", "/proc/self/limits")
	if r.code == exitCannotEnforce {
		vmtest.Skip(t, "enforcerd run cannot enforce here: "+r.stderr)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "Max core file size") {
			if f := strings.Fields(l); len(f) < 6 || f[4] != "1" || f[5] != "1" {
				t.Errorf("enforcerd run: %q, want RLIMIT_CORE 1 1", l)
			}
			return
		}
	}
	t.Errorf("no core limit line (exit %d): %s %s", r.code, r.stdout, r.stderr)
}
