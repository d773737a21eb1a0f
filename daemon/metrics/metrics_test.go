package metrics_test

import (
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/internal/buildinfo"
)

// TestBuildInfo: enforcerd_build_info carries the values `enforcerd
// version` prints (internal/buildinfo), with client_golang's version
// collector label names.
func TestBuildInfo(t *testing.T) {
	m := metrics.New(metrics.Sources{Registered: func() int { return 0 },
		LostRecords: func() (uint64, error) { return 0, nil },
		Hooks:       func() []coverage.HookStatus { return nil }})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	var line string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "enforcerd_build_info{") {
			line = l
		}
	}
	b := buildinfo.Get()
	for _, want := range []string{`version="` + b.Version + `"`, `revision="` + b.Revision + `"`,
		`goversion="` + runtime.Version() + `"`, `goos="` + runtime.GOOS + `"`, `goarch="` + runtime.GOARCH + `"`} {
		if !strings.Contains(line, want) {
			t.Errorf("enforcerd_build_info %q lacks %s", line, want)
		}
	}
	if !strings.HasSuffix(line, "} 1") {
		t.Errorf("enforcerd_build_info %q is not 1", line)
	}
}
