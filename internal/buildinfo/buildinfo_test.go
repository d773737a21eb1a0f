package buildinfo_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/internal/buildinfo"
)

// TestMakefileLinkTimeValues: `make build` links the values it is given
// into prometheus/common/version, and `enforcerd version --json` prints
// exactly them (so enforcerd_build_info, which reads the same variables,
// carries them too).
func TestMakefileLinkTimeValues(t *testing.T) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "enforcerd")
	want := buildinfo.Info{Version: "v0.0.0-test", Revision: "0123456789abcdef", Branch: "release",
		BuildDate: "2026-01-02T03:04:05Z"}
	mk := exec.Command("make", "-s", "-C", strings.TrimSpace(string(root)), "build", "BIN="+bin,
		"VERSION="+want.Version, "REVISION="+want.Revision, "BRANCH="+want.Branch, "BUILD_DATE="+want.BuildDate)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got buildinfo.Info
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	want.GoVersion, want.Platform = got.GoVersion, got.Platform
	if got != want || got.GoVersion == "" || got.Platform == "" {
		t.Errorf("enforcerd version --json = %+v, want %+v", got, want)
	}
}

func TestString(t *testing.T) {
	i := buildinfo.Info{Version: "v1.2.3", GoVersion: "go1.24.2", Platform: "linux/amd64"}
	if got, want := i.String(), "v1.2.3 (revision unknown, built unknown, go1.24.2 linux/amd64)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
