package api_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/metrics"
)

// TestAPIRequestDurations: each request is observed once in
// enforcerd_api_request_duration_seconds with its endpoint, the stage the
// client sent (one of the hook's, else "other"; none sent: "none") and
// its result (ok or the API's error code); a path no endpoint serves is
// "other"; the denial stream is not observed. The labels' values come
// from fixed sets whatever the caller sends.
func TestAPIRequestDurations(t *testing.T) {
	ts, _, cgs := fakeServer(t)
	cgs.Add("/c/one")
	ctx := context.Background()
	hook := api.NewClient(ts.socket, 0)
	hook.Stage = "createRuntime"
	if _, err := hook.Register(ctx, api.RegisterRequest{ID: "one", Cgroup: "/c/one", Role: "test", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Register(ctx, api.RegisterRequest{ID: "one", Cgroup: "/c/one", Role: "test"}); err == nil {
		t.Fatal("second registration of one accepted")
	}
	hook.Stage = "poststop"
	if err := hook.Unregister(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	hook.Stage = "bogus-" + strings.Repeat("x", 40) // not a stage: "other"
	if _, err := hook.Get(ctx, "nobody"); err == nil {
		t.Fatal("get of an unknown container succeeded")
	}
	if _, err := ts.client.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _ := ts.raw(t, "GET", "/v2/nothing", nil); code != 404 {
		t.Fatalf("GET /v2/nothing: %d", code)
	}
	want := map[[3]string]int{
		{metrics.EndpointRegister, "createRuntime", metrics.ResultOK}:       1,
		{metrics.EndpointRegister, "createRuntime", metrics.ResultConflict}: 1,
		{metrics.EndpointUnregister, "poststop", metrics.ResultOK}:          1,
		{metrics.EndpointGet, metrics.StageOther, metrics.ResultNotFound}:   1,
		{metrics.EndpointStatus, metrics.StageNone, metrics.ResultOK}:       1,
		{metrics.EndpointOther, metrics.StageNone, metrics.ResultNotFound}:  1,
	}
	if n := testutil.CollectAndCount(ts.metrics.APIDuration); n != len(want) {
		t.Errorf("%d series, want %d", n, len(want))
	}
	rec := httptest.NewRecorder()
	ts.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for l, n := range want {
		line := `enforcerd_api_request_duration_seconds_count{endpoint="` + l[0] + `",result="` + l[2] + `",stage="` + l[1] + `"} 1`
		if n != 1 || !strings.Contains(string(body), line) {
			t.Errorf("no %s in the scrape", line)
		}
	}
}
