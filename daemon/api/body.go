package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/registry"
)

// writeJSON sends v as the body of a response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError sends an ErrorBody (and tells a codeWriter its code).
func writeError(w http.ResponseWriter, status int, code, msg string) {
	if cw, ok := w.(*codeWriter); ok {
		cw.code = code
	}
	writeJSON(w, status, ErrorBody{Error: msg, Code: code})
}

// classify maps a registry error to a status, an error code and the
// registration-result label.
func classify(err error) (int, string) {
	switch {
	case errors.Is(err, registry.ErrUnsafeProgram):
		return http.StatusUnprocessableEntity, metrics.ResultUnsafeProgram
	case errors.Is(err, registry.ErrEntrypointRequired):
		return http.StatusUnprocessableEntity, metrics.ResultEntrypointRequired
	case errors.Is(err, registry.ErrBadRequest):
		return http.StatusBadRequest, metrics.ResultBadRequest
	case errors.Is(err, registry.ErrNotFound):
		return http.StatusNotFound, metrics.ResultNotFound
	case errors.Is(err, registry.ErrConflict):
		return http.StatusConflict, metrics.ResultConflict
	case errors.Is(err, registry.ErrPartialCoverage):
		return http.StatusUnprocessableEntity, metrics.ResultPartialCoverage
	case errors.Is(err, registry.ErrCannotEnforce):
		return http.StatusUnprocessableEntity, metrics.ResultCannotEnforce
	}
	return http.StatusInternalServerError, metrics.ResultError
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	status, code := classify(err)
	if status >= 500 {
		s.Log.Error("api", "err", err)
	}
	writeError(w, status, code, err.Error())
}

// decode reads exactly one JSON object of at most MaxBody bytes into v
// (a pointer to a request struct) with decodeStrict: every key exactly a
// declared field's JSON name (case-sensitive) and given once, at every
// depth, nothing after the object. Every request body is read through it.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := io.ReadAll(http.MaxBytesReader(unwrapped(w), r.Body, s.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("%w: body larger than %d bytes", registry.ErrBadRequest, s.MaxBody)
		}
		return fmt.Errorf("%w: body: %v", registry.ErrBadRequest, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%w: empty body (want a JSON object)", registry.ErrBadRequest)
	}
	if err := decodeStrict(data, v); err != nil {
		return fmt.Errorf("%w: body: %v", registry.ErrBadRequest, err)
	}
	return nil
}
