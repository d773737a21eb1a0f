package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Defaults of Limits (the daemon's configuration keys api.read_timeout,
// api.max_conns_per_cgroup, api.max_confined_conns, api.max_conns).
const (
	DefaultReadTimeout        = 10 * time.Second
	DefaultMaxConnsPerCgroup  = 16
	DefaultMaxConfinedConns   = 256
	DefaultMaxConns           = 512
	refusedConnWriteTimeout   = 50 * time.Millisecond
	refusedConnStatus         = http.StatusServiceUnavailable
	refusedConnCode           = "unavailable"
	unidentifiedScopeCgroupID = 0
)

// Limits bound what the API's callers can hold of the daemon. A caller
// inside an enforced cgroup subtree (confined: a sandbox that can reach the
// socket, e.g. one with network allowed, or any on a host without BPF LSM)
// must not starve the callers that start and stop containers (OCI hooks,
// the NRI plugin's runtime, operators), so its connections are counted
// from the moment they are accepted: per confined scope (the nearest
// cgroup with a ceiling, registry.Registry.Scope) at most PerCgroup, all
// confined callers together at most Confined; an unconfined caller is
// refused only when Total connections are open, so Total-Confined
// connections are always left to it. A refused connection gets a 503
// ("unavailable") and is closed at once. A caller whose identity cannot be
// established (no SO_PEERCRED, a uid other than 0, a cgroup that cannot be
// read) counts as confined, in one shared scope.
//
// ReadTimeout bounds the time from a request's first byte to its last
// (header and body): a caller that declares a body and never sends it
// loses the connection, answered or not. The denial stream
// (GET /v1/denials) lifts it once its request is read.
type Limits struct {
	ReadTimeout time.Duration
	PerCgroup   int
	Confined    int
	Total       int
}

// DefaultLimits are the limits of a daemon whose configuration sets none.
func DefaultLimits() Limits {
	return Limits{ReadTimeout: DefaultReadTimeout, PerCgroup: DefaultMaxConnsPerCgroup,
		Confined: DefaultMaxConfinedConns, Total: DefaultMaxConns}
}

// orDefault is l with every zero field at its default.
func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.ReadTimeout == 0 {
		l.ReadTimeout = d.ReadTimeout
	}
	if l.PerCgroup == 0 {
		l.PerCgroup = d.PerCgroup
	}
	if l.Confined == 0 {
		l.Confined = d.Confined
	}
	if l.Total == 0 {
		l.Total = d.Total
	}
	return l
}

// Validate checks that every limit is positive and that they nest:
// PerCgroup ≤ Confined < Total (unconfined callers keep a reserve).
// Errors name the configuration key.
func (l Limits) Validate() error {
	switch {
	case l.ReadTimeout <= 0:
		return fmt.Errorf("api.read_timeout: %s must be positive", l.ReadTimeout)
	case l.PerCgroup <= 0:
		return fmt.Errorf("api.max_conns_per_cgroup: %d must be positive", l.PerCgroup)
	case l.Confined < l.PerCgroup:
		return fmt.Errorf("api.max_confined_conns: %d is below api.max_conns_per_cgroup (%d)", l.Confined, l.PerCgroup)
	case l.Total <= l.Confined:
		return fmt.Errorf("api.max_conns: %d must exceed api.max_confined_conns (%d): the rest is the reserve of unconfined callers (hooks, NRI, operators)", l.Total, l.Confined)
	}
	return nil
}

// connTable counts the open connections of Limits.
type connTable struct {
	lim Limits

	mu       sync.Mutex
	total    int
	confined int
	perScope map[uint64]int
}

// connSlot is what an admitted connection holds (released when it closes).
type connSlot struct {
	pidfd    *os.File
	confined bool
	scope    uint64
}

// The limits a refused connection reached (label "limit" of
// enforcerd_api_connections_refused_total).
const (
	ConnLimitTotal     = "total"
	ConnLimitPerCgroup = "per_cgroup"
	ConnLimitConfined  = "confined"
)

// admit counts a new connection, or says which limit refuses it and why.
func (t *connTable) admit(confined bool, scope uint64) (limit, refused string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.perScope == nil {
		t.perScope = map[uint64]int{}
	}
	switch {
	case t.total >= t.lim.Total:
		return ConnLimitTotal, fmt.Sprintf("the API holds %d connections, its limit", t.total)
	case confined && t.perScope[scope] >= t.lim.PerCgroup:
		return ConnLimitPerCgroup, fmt.Sprintf("callers confined by cgroup id %d hold %d connections, their limit", scope, t.perScope[scope])
	case confined && t.confined >= t.lim.Confined:
		return ConnLimitConfined, fmt.Sprintf("confined callers hold %d connections, their limit", t.confined)
	}
	t.total++
	if confined {
		t.confined++
		t.perScope[scope]++
	}
	return "", ""
}

// release uncounts a connection admit counted.
func (t *connTable) release(sl *connSlot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total--
	if sl.confined {
		t.confined--
		if t.perScope[sl.scope]--; t.perScope[sl.scope] <= 0 {
			delete(t.perScope, sl.scope)
		}
	}
}

// callerScope classifies a connection's peer for the connection limits:
// confined (as Registry.Scope says, or unidentifiable) and its scope.
func (s *Server) callerScope(p peer) (confined bool, scope uint64) {
	if !p.ok || p.uid != 0 {
		return true, unidentifiedScopeCgroupID
	}
	group, err := s.peerGroup(p)
	if err != nil {
		return true, unidentifiedScopeCgroupID
	}
	return s.Reg.Scope(group)
}

// connContext records the peer of each connection and counts it against
// the Limits; a connection over them is answered 503 and closed here, and
// its requests (none can follow) would find no peer. connState releases
// the count and the peer's pidfd when the connection closes.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	p := peerOf(c)
	confined, scope := s.callerScope(p)
	if limit, why := s.conns.admit(confined, scope); why != "" {
		if p.pidfd != nil {
			p.pidfd.Close()
		}
		if s.Metrics != nil {
			s.Metrics.ConnsRefused.WithLabelValues(limit).Inc()
		}
		s.refusals.refused(s.Log, refusalScope{confined: confined, scope: scope}, p, why)
		refuseConn(c, why)
		return context.WithValue(ctx, ctxKey{}, peer{})
	}
	s.slots.Store(c, &connSlot{pidfd: p.pidfd, confined: confined, scope: scope})
	return context.WithValue(ctx, ctxKey{}, p)
}

func (s *Server) connState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	if v, ok := s.slots.LoadAndDelete(c); ok {
		sl := v.(*connSlot)
		if sl.pidfd != nil {
			sl.pidfd.Close()
		}
		s.conns.release(sl)
	}
}

// refuseConn answers a connection over the limits with a 503 and closes
// it. The write is bounded: a fresh connection's buffer takes it at once.
func refuseConn(c net.Conn, why string) {
	b, _ := json.Marshal(ErrorBody{Error: "too many connections: " + why, Code: refusedConnCode})
	body := string(b) + "\n"
	resp := "HTTP/1.1 " + strconv.Itoa(refusedConnStatus) + " " + http.StatusText(refusedConnStatus) + "\r\n" +
		"Content-Type: application/json\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	_ = c.SetWriteDeadline(time.Now().Add(refusedConnWriteTimeout))
	_, _ = c.Write([]byte(resp))
	_ = c.Close()
}

// refusalLogEvery is how often refusalLog logs a scope's refusals after
// its first: at most one summary line per scope per period.
const refusalLogEvery = 10 * time.Second

// refusalLogMaxScopes bounds the scopes refusalLog remembers; quiet ones
// are forgotten first (a forgotten scope's next refusal is logged again).
const refusalLogMaxScopes = 4096

// refusalScope is whom a refused connection is counted for: its confined
// scope's cgroup id, or the unconfined callers together.
type refusalScope struct {
	confined bool
	scope    uint64
}

// refusalLog rate-limits the log of refused API connections, so that a
// sandbox that opens connections in a loop cannot flood the daemon's log:
// per scope the first refusal is logged at once (WARN "api connection
// refused"), the following ones are counted and logged as one WARN "api
// connections refused" line with their count (refused) once the period
// (every, default refusalLogEvery) since the last line has passed. Every
// refusal is still counted in enforcerd_api_connections_refused_total.
type refusalLog struct {
	every time.Duration

	mu     sync.Mutex
	scopes map[refusalScope]*refusalWindow
}

// refusalWindow is one scope's period: when it ends, how many refusals
// it has not logged yet (and the last one's reason), and the timer that
// logs them.
type refusalWindow struct {
	until      time.Time
	suppressed int
	last       string
	timer      *time.Timer
}

// refused logs or counts one refused connection of scope sc from peer p.
func (r *refusalLog) refused(log *slog.Logger, sc refusalScope, p peer, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	every := r.every
	if every <= 0 {
		every = refusalLogEvery
	}
	now := time.Now()
	w := r.scopes[sc]
	if w == nil || (w.timer == nil && !now.Before(w.until)) {
		r.forgetQuiet(now)
		if r.scopes == nil {
			r.scopes = map[refusalScope]*refusalWindow{}
		}
		r.scopes[sc] = &refusalWindow{until: now.Add(every)}
		log.Warn("api connection refused", "pid", p.pid, "uid", p.uid, "confined", sc.confined, "cgroup_id", sc.scope, "reason", why,
			"note", fmt.Sprintf("further refusals for this caller are summarised every %s", every))
		return
	}
	w.suppressed++
	w.last = why
	if w.timer == nil {
		w.timer = time.AfterFunc(w.until.Sub(now), func() { r.flush(log, sc, every) })
	}
}

// flush logs the refusals of scope sc counted since its last line.
func (r *refusalLog) flush(log *slog.Logger, sc refusalScope, every time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.scopes[sc]
	if w == nil {
		return
	}
	log.Warn("api connections refused", "confined", sc.confined, "cgroup_id", sc.scope, "refused", w.suppressed,
		"period", every.String(), "reason", w.last)
	w.suppressed, w.timer, w.until = 0, nil, time.Now().Add(every)
}

// forgetQuiet drops quiet scopes (period over, nothing pending) once
// refusalLogMaxScopes are remembered.
func (r *refusalLog) forgetQuiet(now time.Time) {
	if len(r.scopes) < refusalLogMaxScopes {
		return
	}
	for sc, w := range r.scopes {
		if w.timer == nil && !now.Before(w.until) {
			delete(r.scopes, sc)
		}
	}
}
