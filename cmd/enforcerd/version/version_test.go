package version

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/internal/buildinfo"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// TestVersion: `enforcerd version`, `enforcerd --version` and `version
// --json` print the same build, and extra arguments are usage errors.
func TestVersion(t *testing.T) {
	want := "enforcerd " + buildinfo.Get().String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := cmdline(args...)
		if code != cli.ExitOK || errs != "" || out != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", args, code, out, errs, want)
		}
	}
	if !strings.Contains(want, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+")") {
		t.Errorf("version line %q lacks the toolchain and platform", want)
	}
	code, out, _ := cmdline("version", "--json")
	var got buildinfo.Info
	if err := json.Unmarshal([]byte(out), &got); code != cli.ExitOK || err != nil || got != buildinfo.Get() {
		t.Errorf("version --json: exit %d, %q (%v); want %+v", code, out, err, buildinfo.Get())
	}
	for _, args := range [][]string{{"version", "x"}, {"--version", "x"}, {"version", "--bogus"}} {
		if code, out, errs := cmdline(args...); code != cli.ExitUsage || out != "" || !strings.Contains(errs, "--help' for usage") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a usage error", args, code, out, errs)
		}
	}
}
