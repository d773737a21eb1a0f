package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
)

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	v := Status{Containers: s.Reg.Len()}
	if s.Status != nil {
		v = s.Status()
	}
	writeJSON(w, http.StatusOK, v)
}

// ready answers GET /v1/ready: 200 and the Readiness when ready, 503 and
// the Readiness (not an error body) naming what is missing when not.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	v := Readiness{Ready: true, Missing: []string{}}
	if s.Ready != nil {
		v = s.Ready()
	}
	status := http.StatusOK
	if !v.Ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, v)
}

func (s *Server) count(result string) {
	if s.Metrics != nil {
		s.Metrics.Registrations.WithLabelValues(result).Inc()
	}
}

// registerBody is the body of POST /v1/containers as decoded.
type registerBody struct {
	RegisterRequest
	// Role shadows RegisterRequest.Role so that a "role" key with an empty
	// value is told apart from an absent key: only absence (or null)
	// selects the default role; a given name must be one
	// policy.LookupRole accepts.
	Role *string `json:"role"`
}

// codeCeilingConflict: the ceiling text and a field given on its own
// disagree (oci.ErrCeilingConflict).
const codeCeilingConflict = "ceiling_conflict"

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var body registerBody
	if err := s.decode(w, r, &body); err != nil {
		s.count(metrics.ResultBadRequest)
		s.fail(w, err)
		return
	}
	req := body.RegisterRequest.request()
	if fields := body.CeilingFields.Map(); fields != nil {
		merged, err := oci.MergeCeiling(req.Ceiling, fields)
		if errors.Is(err, oci.ErrCeilingConflict) {
			s.count(metrics.ResultBadRequest)
			writeError(w, http.StatusUnprocessableEntity, codeCeilingConflict, fmt.Sprintf("ceiling and ceiling_fields: %v", err))
			return
		}
		if err != nil {
			s.count(metrics.ResultBadRequest)
			s.fail(w, fmt.Errorf("%w: ceiling_fields: %w", registry.ErrBadRequest, err))
			return
		}
		req.Ceiling = merged
	}
	if err := s.ownTerminals(r, body.OwnTerminals, &req); err != nil {
		s.count(metrics.ResultBadRequest)
		s.fail(w, err)
		return
	}
	if body.Role != nil {
		if _, err := policy.LookupRole(*body.Role); err != nil {
			s.count(metrics.ResultBadRequest)
			s.fail(w, fmt.Errorf("%w: role: %w", registry.ErrBadRequest, err))
			return
		}
		req.Role = *body.Role
	}
	c, err := s.Reg.Register(req)
	if err != nil {
		_, result := classify(err)
		s.count(result)
		s.fail(w, err)
		return
	}
	s.count(metrics.ResultOK)
	s.Log.Info("registered", "container", c.ID, "cgroup", c.Cgroup, "cgroup_id", c.CgroupID,
		"kernel", c.Kernel.String(), "audit_only", c.AuditOnly, "activate", req.Activate, "activation", c.Activation,
		"activation_reason", c.ActivationReason, "fingerprint", c.Fingerprint, "unenforced", len(c.Unenforced))
	writeJSON(w, http.StatusCreated, containerFrom(c))
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, ListBody{Containers: containersFrom(s.Reg.List())})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	c, err := s.Reg.Get(r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, containerFrom(c))
}

func (s *Server) unregister(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.Reg.Unregister(id); err != nil {
		s.fail(w, err)
		return
	}
	if s.Metrics != nil {
		s.Metrics.Forget(id)
	}
	s.Log.Info("unregistered", "container", id)
	writeJSON(w, http.StatusOK, UnregisterBody{Unregistered: id})
}

func (s *Server) surface(w http.ResponseWriter, r *http.Request) {
	sf, err := s.Reg.Surface(r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sf)
}

func (s *Server) narrow(w http.ResponseWriter, r *http.Request) {
	var req NarrowRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	c, err := s.Reg.Narrow(r.PathValue("id"), req.Ceiling)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.Log.Info("narrowed", "container", c.ID, "kernel", c.Kernel.String(), "fingerprint", c.Fingerprint)
	writeJSON(w, http.StatusOK, containerFrom(c))
}

func (s *Server) follow(w http.ResponseWriter, r *http.Request) {
	if s.Hub == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "no denial stream")
		return
	}
	want, ok := s.denialFilter(w, r)
	if !ok {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "error", "streaming unsupported")
		return
	}
	// The request is read: the stream may outlive Limits.ReadTimeout
	// (which would otherwise end it).
	if err := http.NewResponseController(w).SetReadDeadline(time.Time{}); err != nil {
		writeError(w, http.StatusInternalServerError, "error", fmt.Sprintf("denial stream: %v", err))
		return
	}
	ch, cancel := s.Hub.Subscribe(1024)
	defer cancel()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case rec, ok := <-ch:
			if !ok {
				return
			}
			if !want.Match(rec) {
				continue
			}
			if err := enc.Encode(rec); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
