// Package api is the daemon's HTTP+JSON API on a unix socket, and its Go
// client (used by `enforcerd hook` and `enforcerd ctl`, and by `enforcerd
// run` for the status).
//
// Endpoints (all JSON; errors are {"error": "...", "code": "..."} with a
// 4xx/5xx status; codes: bad_request, not_found, conflict, forbidden,
// cannot_enforce, partial_coverage, unsafe_program, entrypoint_required,
// ceiling_conflict, unavailable, error):
//
//	GET    /v1/status                    daemon and hook status (Status)
//	GET    /v1/ready                     readiness (Readiness): 200 ready,
//	                                     503 naming each part missing
//	POST   /v1/containers                register  (RegisterRequest) → 201 Container
//	                                     ("role" absent: general; a given role
//	                                     that is not a role name, empty
//	                                     included, is 400 listing the valid ones)
//	                                     ("ceiling_fields": {"network": "false",
//	                                     ...} gives fields one by one, merged
//	                                     with "ceiling"; a field both give
//	                                     with other values is 422
//	                                     "ceiling_conflict")
//	GET    /v1/containers                list      → ListBody {"containers": [...]}
//	GET    /v1/containers/{id}           one Container
//	DELETE /v1/containers/{id}           unregister → UnregisterBody {"unregistered": id}
//	GET    /v1/containers/{id}/surface   tool surface (policy.Surface)
//	POST   /v1/containers/{id}/narrow    NarrowRequest {"ceiling": TEXT} → Container
//	GET    /v1/denials[?FILTER]          follow: one audit record per line
//	GET    /v1/denials/recent[?FILTER]   the last records kept (audit.RecentRecords),
//	                                     oldest first → DenialsBody {"denials": [...]}
//	                                     FILTER: container=ID (404 unless registered)
//	                                     and/or cgroup_id=N (the record's cgroup_id or
//	                                     ceiling_cgroup_id); any other query key is 400
//
// Request bodies are strict (decodeStrict, strict.go): one JSON object,
// every key exactly a declared field's JSON name (case-sensitive) and
// given once, at every depth; anything else is 400 naming the key.
// encoding/json alone would match "ROLE" to "role" and let a repeated key
// override the first, so {"ceiling":"write=false","CEILING":""} would
// register with no ceiling.
//
// Registration under shell=none (the effective ceiling, after role, ceiling
// text and parent are met): a registration pending until the first exec
// ("activate": "exec") must name that program, "entrypoint": {"path":
// process.args[0], "root": host path of the directory the process sees as
// "/" (/proc/<init pid>/root/<rootfs>), "env_path": its PATH, "cwd"}. The
// daemon resolves it inside root (symlinks stay inside) and answers 422
// "unsafe_program" when it is a shell, a multi-call binary or the dynamic
// loader, a script (whose interpreter, not allowed, the kernel would deny;
// the answer names the interpreter), or a program whose ELF interpreter is
// not a dynamic loader, or when any file a PATH lookup could pick is one
// (package progcheck), and 422 "entrypoint_required" when there is none or
// it cannot be resolved or read. A ceiling in force at once is
// refused (422 "unsafe_program") when a process in the cgroup already runs
// such a program; so is narrowing to shell=none. "exec_allow" (absolute
// paths, at most 16, only under shell=none: else 400 "bad_request") names
// the files the cgroup may execute besides the entrypoint, resolved like
// "write_roots" and kept by identity; one of them that is such a program,
// or cannot be classified, is 422 "unsafe_program" (docs/api.md).
//
// Access: the socket is mode 0600 (root only) and the peer must have uid 0
// (SO_PEERCRED). A peer inside an enforced cgroup subtree (its cgroup or an
// ancestor has a ceiling) may only read its own container's surface and
// narrow its own container; everything else is 403. A peer whose identity
// cannot be established is refused (fail closed). Every 403 closes the
// connection after the answer.
//
// Bounds (Limits, limit.go): a request's header and body must arrive
// within Limits.ReadTimeout (10 s); callers inside an enforced cgroup
// subtree hold at most Limits.PerCgroup connections per enforced cgroup
// (16) and Limits.Confined together (256), and unconfined callers (hooks,
// NRI, operators) are refused only at Limits.Total (512); a connection
// over a limit is answered 503 "unavailable" and closed.
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
//
// Files: server.go (Server, Listen, routing and the access guard), peer.go
// (the caller's identity), limit.go (the connection limits), duration.go
// (each request's duration by endpoint, stage and result), handlers.go (one handler per endpoint), denials.go (the denial
// filter and the recent denials), body.go
// (request reading, error bodies and codes), strict.go (the strict JSON
// decoder of request bodies), wire.go (the JSON types and
// their conversions), client.go (Client).
//
// Layering (docs/design.md): layer 4; it may import policy/,
// internal/procid/, ownterm/, endpoint/, devallow/, progcheck/,
// cgroup/, entry/, coverage/, denial/, enforcer/, oci/, daemon/state/,
// daemon/audit/, daemon/metrics/ and daemon/registry/, and of other modules
// no cilium/ebpf.
package api

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/ownterm"
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
	// Status returns the body of GET /v1/status (default: Containers
	// only).
	Status func() Status
	// Ready returns the body of GET /v1/ready (default: ready, as the
	// socket is served).
	Ready func() Readiness
	// PeerGroup maps a peer pid to its cgroup group path (default
	// cgroup.PidGroup); tests substitute it.
	PeerGroup func(pid int) (string, error)
	// PeerTerminals reads a peer pid's own terminals for own_terminals
	// "client" (default ownterm.Of); tests substitute it.
	PeerTerminals func(pid int) ([]entry.Terminal, error)
	// MaxBody bounds request bodies (default 64 KiB).
	MaxBody int64
	// Limits bound the connections callers hold and the time a request
	// may take to arrive (zero fields: DefaultLimits).
	Limits Limits
	Log    *slog.Logger

	conns    connTable
	refusals refusalLog
	slots    sync.Map // net.Conn → *connSlot (its count and the peer's pidfd)
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

// IdleTimeout is how long the API keeps a keep-alive connection open with
// no request after a complete one (its slot counts against the Limits
// meanwhile). Client.IdleConnTimeout is shorter, so a client never sends
// on a connection the server is closing.
const IdleTimeout = 30 * time.Second

// clientIdleConnTimeout: see IdleTimeout.
const clientIdleConnTimeout = 20 * time.Second

// NewHTTPServer returns an http.Server for the handler that records peer
// credentials and counts connections against s.Limits, idle keep-alive
// connections closed after IdleTimeout; Serve it on a Listen listener.
func (s *Server) NewHTTPServer() *http.Server {
	h := s.handler()
	return &http.Server{
		Handler:           h,
		ConnContext:       s.connContext,
		ConnState:         s.connState,
		ReadHeaderTimeout: min(10*time.Second, s.Limits.ReadTimeout),
		ReadTimeout:       s.Limits.ReadTimeout,
		IdleTimeout:       IdleTimeout,
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
	if s.PeerTerminals == nil {
		s.PeerTerminals = ownterm.Of
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	s.Limits = s.Limits.orDefault()
	s.conns.lim = s.Limits
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.timed(metrics.EndpointStatus, s.guard(false, s.status)))
	mux.HandleFunc("GET /v1/ready", s.timed(metrics.EndpointReady, s.guard(false, s.ready)))
	mux.HandleFunc("POST /v1/containers", s.timed(metrics.EndpointRegister, s.guard(false, s.register)))
	mux.HandleFunc("GET /v1/containers", s.timed(metrics.EndpointList, s.guard(false, s.list)))
	mux.HandleFunc("GET /v1/containers/{id}", s.timed(metrics.EndpointGet, s.guard(false, s.get)))
	mux.HandleFunc("DELETE /v1/containers/{id}", s.timed(metrics.EndpointUnregister, s.guard(false, s.unregister)))
	mux.HandleFunc("GET /v1/containers/{id}/surface", s.timed(metrics.EndpointSurface, s.guard(true, s.surface)))
	mux.HandleFunc("POST /v1/containers/{id}/narrow", s.timed(metrics.EndpointNarrow, s.guard(true, s.narrow)))
	// A stream's duration is its follower's, not the daemon's: not timed.
	mux.HandleFunc("GET /v1/denials", s.guard(false, s.follow))
	mux.HandleFunc("GET /v1/denials/recent", s.timed(metrics.EndpointRecentDenials, s.guard(false, s.recentDenials)))
	mux.HandleFunc("/", s.timed(metrics.EndpointOther, func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
				fmt.Sprintf("%s %s: allowed methods: %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	}))
	return mux
}

// guard authenticates the peer. selfOK: a confined peer may call the
// endpoint for its own container ({id} = its container).
func (s *Server) guard(selfOK bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, _ := r.Context().Value(ctxKey{}).(peer)
		if !p.ok {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusForbidden, "forbidden", "peer credentials unavailable (SO_PEERCRED)")
			return
		}
		if p.uid != 0 {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("uid %d: the API is root-only", p.uid))
			return
		}
		group, err := s.peerGroup(p)
		if err != nil {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("cannot identify the caller's cgroup: %v", err))
			return
		}
		c := s.Reg.Identify(group)
		if c.Confined {
			id := r.PathValue("id")
			if !selfOK || c.Container == "" || id != c.Container {
				// Not another request on this connection: a sandbox
				// gets its answer and loses the connection.
				w.Header().Set("Connection", "close")
				writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf(
					"caller pid %d runs in an enforced cgroup (%s): it may only read its own surface and narrow itself", p.pid, group))
				return
			}
		}
		h(w, r)
	}
}

// allowedMethods lists the methods an endpoint of mux serves for r's path
// (none: the path is not an endpoint). The catch-all pattern "/" answers
// every request the method patterns do not match, so net/http's own 405
// is never reached; this gives the same answer with the API's error body.
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	return allow
}
