package daemon

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
)

// The parts of the daemon's readiness, in the order Run's steps make them
// ready: pins (openEnforcer: the programs and maps opened or re-adopted,
// the host policy set), state (reconcile: the state file loaded into the
// registry, live entries checked), api (serve: the API socket served).
const (
	partPins  = "pins"
	partState = "state"
	partAPI   = "api"
)

// readinessParts lists the parts in order.
var readinessParts = []string{partPins, partState, partAPI}

// readiness is what Run's steps have made ready so far: each part not
// ready has a reason ("not adopted yet", "reconcile running", ...). The
// daemon is ready when no part is missing. Safe for concurrent use.
type readiness struct {
	mu      sync.Mutex
	missing map[string]string // part → why it is not ready
}

// newReadiness: nothing is ready yet.
func newReadiness() *readiness {
	return &readiness{missing: map[string]string{
		partPins:  "not adopted yet",
		partState: "not reconciled yet",
		partAPI:   "not serving yet",
	}}
}

// set marks part not ready, for reason.
func (r *readiness) set(part, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.missing[part] = reason
}

// done marks part ready.
func (r *readiness) done(part string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.missing, part)
}

// get is the readiness as the API's GET /v1/ready and /readyz serve it:
// Missing is "PART: reason" for each part not ready, in readinessParts
// order.
func (r *readiness) get() api.Readiness {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := api.Readiness{Missing: []string{}}
	for _, p := range readinessParts {
		if why, ok := r.missing[p]; ok {
			v.Missing = append(v.Missing, p+": "+why)
		}
	}
	v.Ready = len(v.Missing) == 0
	return v
}

// healthMux serves the metrics listener: GET /healthz (200 "ok": the
// process serves), GET /readyz (200 "ready", or 503 "not ready: " and
// the parts missing, "; "-separated) and GET /metrics (metrics's handler
// once it is set; 503 before, while the daemon starts).
func healthMux(ready *readiness, metrics *atomic.Pointer[http.Handler]) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		v := ready.get()
		if v.Ready {
			fmt.Fprintln(w, "ready")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %s\n", strings.Join(v.Missing, "; "))
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if h := metrics.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "metrics not available yet: the daemon is starting", http.StatusServiceUnavailable)
	})
	return mux
}

// serveMetricsListener serves healthMux on n.ml from claim on, so that
// /healthz and /readyz answer while the later steps run.
func (n *node) serveMetricsListener() {
	ms := &http.Server{Handler: healthMux(n.ready, &n.metricsHandler), ReadHeaderTimeout: 10 * time.Second}
	go func() { n.errc <- fmt.Errorf("metrics %s: %w", n.cfg.Metrics.Listen, ms.Serve(n.ml)) }()
	n.atStop(func() { ms.Close() })
}
