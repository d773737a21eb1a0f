// Package api is the daemon's HTTP+JSON API on a unix socket, and its Go
// client (used by `enforcerd hook`).
//
// Endpoints (all JSON; errors are {"error": "...", "code": "..."} with a
// 4xx/5xx status; codes: bad_request, not_found, conflict, forbidden,
// cannot_enforce, unsafe_program, entrypoint_required, error):
//
//	GET    /v1/status                    daemon and hook status (Status)
//	POST   /v1/containers                register  (RegisterRequest) → 201 Container
//	                                     ("role" absent: general; a given role
//	                                     that is not a role name, empty
//	                                     included, is 400 listing the valid ones)
//	GET    /v1/containers                list      → ListBody {"containers": [...]}
//	GET    /v1/containers/{id}           one Container
//	DELETE /v1/containers/{id}           unregister → UnregisterBody {"unregistered": id}
//	GET    /v1/containers/{id}/surface   tool surface (policy.Surface)
//	POST   /v1/containers/{id}/narrow    NarrowRequest {"ceiling": TEXT} → Container
//	GET    /v1/denials[?container=ID]    follow: one audit record per line
//
// Registration under shell=none (the effective ceiling, after role, ceiling
// text and parent are met): a registration pending until the first exec
// ("activate": "exec") must name that program, "entrypoint": {"path":
// process.args[0], "root": host path of the directory the process sees as
// "/" (/proc/<init pid>/root/<rootfs>), "env_path": its PATH, "cwd"}. The
// daemon resolves it inside root (symlinks stay inside) and answers 422
// "unsafe_program" when it is a shell, a multi-call binary or the dynamic
// loader (package progcheck), and 422 "entrypoint_required" when there is
// none or it cannot be resolved or read. A ceiling in force at once is
// refused (422 "unsafe_program") when a process in the cgroup already runs
// such a program; so is narrowing to shell=none.
//
// Access: the socket is mode 0600 (root only) and the peer must have uid 0
// (SO_PEERCRED). A peer inside an enforced cgroup subtree (its cgroup or an
// ancestor has a ceiling) may only read its own container's surface and
// narrow its own container; everything else is 403. A peer whose identity
// cannot be established is refused (fail closed).
//
// Caller identity: the peer is the process that connected. Its cgroup is
// read from /proc/PID/cgroup for each request, and the pid must still name
// that process when the read is done: on Linux 6.5+ the daemon holds a
// pidfd of the peer (SO_PEERPIDFD) and refuses the request when the peer has
// exited (its pid may have been reused, e.g. by a confined process); on
// older kernels it checks that the process at PID started no later than
// the connection was accepted and did not change during the read (start
// time, /proc/PID/stat), which leaves only a pid reused within the same
// clock tick (10 ms) as the accept undetected.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/internal/procid"
	"github.com/enforcerd/enforcerd/policy"
)

// DefaultSocket is the API socket path.
const DefaultSocket = "/run/enforcerd/enforcerd.sock"

// defaultMaxBody bounds request bodies.
const defaultMaxBody = 64 << 10

// Server serves the API.
type Server struct {
	Reg     *registry.Registry
	Hub     *audit.Hub
	Metrics *metrics.Metrics // optional
	// Status returns the body of GET /v1/status (default: the number of
	// containers only).
	Status func() Status
	// PeerGroup maps a peer pid to its cgroup group path (default
	// cgroup.PidGroup); tests substitute it.
	PeerGroup func(pid int) (string, error)
	MaxBody   int64
	Log       *slog.Logger

	pidfds sync.Map // net.Conn → *os.File (the peer's pidfd)
}

type ctxKey struct{}

// errPeerGone: the process that connected has exited (or its pid now names
// another process), so the caller cannot be identified.
var errPeerGone = errors.New("the connecting process is gone")

// peer is the identity of a connection's other end.
type peer struct {
	ok       bool
	pid, uid int // SO_PEERCRED
	// pidfd of the peer (SO_PEERPIDFD, Linux 6.5+); nil on older kernels.
	pidfd *os.File
	// accepted: CLOCK_BOOTTIME in clock ticks when the connection was
	// accepted (the fallback check without pidfd).
	accepted uint64
}

// peerOf reads the credentials of a unix connection.
func peerOf(c net.Conn) peer {
	p := peer{}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return p
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return p
	}
	now, nerr := procid.Now()
	_ = raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil || nerr != nil {
			return
		}
		p = peer{ok: true, pid: int(cred.Pid), uid: int(cred.Uid), accepted: now}
		if pfd, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil && pfd >= 0 {
			unix.CloseOnExec(pfd)
			p.pidfd = os.NewFile(uintptr(pfd), fmt.Sprintf("pidfd:%d", cred.Pid))
		}
	})
	return p
}

// connContext records the peer of each connection; connState closes its
// pidfd with the connection.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	p := peerOf(c)
	if p.pidfd != nil {
		s.pidfds.Store(c, p.pidfd)
	}
	return context.WithValue(ctx, ctxKey{}, p)
}

func (s *Server) connState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	if f, ok := s.pidfds.LoadAndDelete(c); ok {
		f.(*os.File).Close()
	}
}

// peerGroup returns the cgroup of the peer, read while the peer's pid
// provably names the process that connected. Errors: errPeerGone; the
// cgroup cannot be read.
func (s *Server) peerGroup(p peer) (string, error) {
	if p.pidfd != nil {
		group, err := s.PeerGroup(p.pid)
		if err != nil {
			return "", err
		}
		// Alive now: the pid was not reused while its cgroup was read.
		if err := unix.PidfdSendSignal(int(p.pidfd.Fd()), 0, nil, 0); err != nil {
			return "", fmt.Errorf("caller pid %d: %w (pidfd: %v)", p.pid, errPeerGone, err)
		}
		return group, nil
	}
	before, err := procid.StartTime(p.pid)
	if err != nil {
		return "", fmt.Errorf("caller pid %d: %w: %v", p.pid, errPeerGone, err)
	}
	if before > p.accepted {
		return "", fmt.Errorf("caller pid %d: %w: the process at that pid started after the connection was accepted", p.pid, errPeerGone)
	}
	group, err := s.PeerGroup(p.pid)
	if err != nil {
		return "", err
	}
	if after, err := procid.StartTime(p.pid); err != nil || after != before {
		return "", fmt.Errorf("caller pid %d: %w while its cgroup was read", p.pid, errPeerGone)
	}
	return group, nil
}

// Listen creates the unix socket at path, mode 0600, replacing a stale
// socket file (never another kind of file).
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("socket dir %s: %w", filepath.Dir(path), err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("socket %s: exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("socket %s: another daemon is serving it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("socket %s: remove stale: %w", path, err)
		}
	}
	old := syscall.Umask(0o177) // the socket is born 0600: no window
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return l, nil
}

// NewHTTPServer returns an http.Server for the handler that records peer
// credentials; Serve it on a Listen listener.
func (s *Server) NewHTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.handler(),
		ConnContext:       s.connContext,
		ConnState:         s.connState,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
	}
}

// handler routes the API; without the peer credentials NewHTTPServer
// records it refuses every request.
func (s *Server) handler() http.Handler {
	if s.MaxBody <= 0 {
		s.MaxBody = defaultMaxBody
	}
	if s.PeerGroup == nil {
		s.PeerGroup = cgroup.PidGroup
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.guard(false, s.status))
	mux.HandleFunc("POST /v1/containers", s.guard(false, s.register))
	mux.HandleFunc("GET /v1/containers", s.guard(false, s.list))
	mux.HandleFunc("GET /v1/containers/{id}", s.guard(false, s.get))
	mux.HandleFunc("DELETE /v1/containers/{id}", s.guard(false, s.unregister))
	mux.HandleFunc("GET /v1/containers/{id}/surface", s.guard(true, s.surface))
	mux.HandleFunc("POST /v1/containers/{id}/narrow", s.guard(true, s.narrow))
	mux.HandleFunc("GET /v1/denials", s.guard(false, s.follow))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// guard authenticates the peer. selfOK: a confined peer may call the
// endpoint for its own container ({id} = its container).
func (s *Server) guard(selfOK bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, _ := r.Context().Value(ctxKey{}).(peer)
		if !p.ok {
			writeError(w, http.StatusForbidden, "forbidden", "peer credentials unavailable (SO_PEERCRED)")
			return
		}
		if p.uid != 0 {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("uid %d: the API is root-only", p.uid))
			return
		}
		group, err := s.peerGroup(p)
		if err != nil {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("cannot identify the caller's cgroup: %v", err))
			return
		}
		c := s.Reg.Identify(group)
		if c.Confined {
			id := r.PathValue("id")
			if !selfOK || c.Container == "" || id != c.Container {
				writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf(
					"caller pid %d runs in an enforced cgroup (%s): it may only read its own surface and narrow itself", p.pid, group))
				return
			}
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
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

// decode reads exactly one JSON object of at most MaxBody bytes with no
// unknown fields.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, s.MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("%w: body larger than %d bytes", registry.ErrBadRequest, s.MaxBody)
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty body (want a JSON object)", registry.ErrBadRequest)
		}
		return fmt.Errorf("%w: body: %v", registry.ErrBadRequest, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("%w: body larger than %d bytes", registry.ErrBadRequest, s.MaxBody)
		}
		return fmt.Errorf("%w: body: trailing data after the JSON object", registry.ErrBadRequest)
	}
	return nil
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	v := Status{Containers: s.Reg.Len()}
	if s.Status != nil {
		v = s.Status()
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) count(result string) {
	if s.Metrics != nil {
		s.Metrics.Registrations.WithLabelValues(result).Inc()
	}
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RegisterRequest
		// Role shadows RegisterRequest.Role so that a "role" key with an empty
		// value is told apart from an absent key: only absence selects
		// the default role; a given name must be one policy.LookupRole
		// accepts.
		Role *string `json:"role"`
	}
	if err := s.decode(w, r, &body); err != nil {
		s.count(metrics.ResultBadRequest)
		s.fail(w, err)
		return
	}
	req := body.RegisterRequest.request()
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
	want := r.URL.Query().Get("container")
	if want != "" {
		if _, err := s.Reg.Get(want); err != nil {
			s.fail(w, err)
			return
		}
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "error", "streaming unsupported")
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
			if want != "" && rec.Container != want {
				continue
			}
			if err := enc.Encode(rec); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
