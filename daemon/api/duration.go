package api

import (
	"net/http"
	"slices"
	"time"

	"github.com/enforcerd/enforcerd/daemon/metrics"
)

// StageHeader names the caller's stage on a request (Client.Stage): the
// OCI hook sends its stage (createRuntime, prestart, poststop), so the
// daemon's request durations tell a container start's cost from the
// rest. The daemon labels a duration with it only when it is one of
// metrics.APIStages, else "other"; absent, "none".
const StageHeader = "Enforcerd-Stage"

// stageLabel is the stage label of r: bounded by metrics.APIStages.
func stageLabel(r *http.Request) string {
	st := r.Header.Get(StageHeader)
	switch {
	case st == "":
		return metrics.StageNone
	case slices.Contains(metrics.APIStages, st):
		return st
	}
	return metrics.StageOther
}

// codeWriter remembers the status and the API error code of the answer
// (writeError tells it the code).
type codeWriter struct {
	http.ResponseWriter
	status int
	code   string
}

func (w *codeWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *codeWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap is the ResponseWriter under it (http.ResponseController).
func (w *codeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// result is the result label: "ok" for a 2xx answer, else the error
// code writeError sent when it is one of metrics.APIResults, else
// "error".
func (w *codeWriter) result() string {
	switch {
	case w.status == 0 || (w.status >= 200 && w.status < 300):
		return metrics.ResultOK
	case slices.Contains(metrics.APIResults, w.code):
		return w.code
	}
	return metrics.ResultError
}

// unwrapped is the ResponseWriter net/http gave the handler (the one
// http.MaxBytesReader closes the connection through).
func unwrapped(w http.ResponseWriter) http.ResponseWriter {
	if cw, ok := w.(*codeWriter); ok {
		return cw.ResponseWriter
	}
	return w
}

// timed records h's duration, from the request's headers read to its
// answer written, in enforcerd_api_request_duration_seconds with
// endpoint (one of metrics.APIEndpoints), the caller's stage and the
// result; without Metrics it is h.
func (s *Server) timed(endpoint string, h http.HandlerFunc) http.HandlerFunc {
	if s.Metrics == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		cw := &codeWriter{ResponseWriter: w}
		h(cw, r)
		s.Metrics.APIDuration.WithLabelValues(endpoint, stageLabel(r), cw.result()).Observe(time.Since(start).Seconds())
	}
}
