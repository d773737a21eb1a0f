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

// TestRenamesInProgress: enforcerd_renames_in_progress is the source's
// value, absent without a source, and 0 when the source fails (never a
// stale value).
func TestRenamesInProgress(t *testing.T) {
	scrape := func(src func() (uint64, error)) string {
		m := metrics.New(metrics.Sources{Registered: func() int { return 0 },
			LostRecords:       func() (uint64, error) { return 0, nil },
			Hooks:             func() []coverage.HookStatus { return nil },
			RenamesInProgress: src})
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "enforcerd_renames_in_progress ") {
				return l
			}
		}
		return ""
	}
	if got := scrape(func() (uint64, error) { return 3, nil }); got != "enforcerd_renames_in_progress 3" {
		t.Errorf("with 3 renames in progress: %q", got)
	}
	if got := scrape(func() (uint64, error) { return 7, io.ErrUnexpectedEOF }); got != "enforcerd_renames_in_progress 0" {
		t.Errorf("with a failing source: %q", got)
	}
	if got := scrape(nil); got != "" {
		t.Errorf("without a source: %q", got)
	}
}
