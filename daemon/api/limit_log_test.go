package api

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuf is a log sink safe to read while a timer writes to it.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRefusalLogRateLimited: a caller refused in a loop gets one log line
// at once and then one summary per period with the count of the refusals
// in between, instead of one line per connection; another scope gets its
// own first line.
func TestRefusalLogRateLimited(t *testing.T) {
	var buf lockedBuf
	log := slog.New(slog.NewTextHandler(&buf, nil))
	r := &refusalLog{every: 50 * time.Millisecond}
	a := refusalScope{confined: true, scope: 7}
	for i := 0; i < 1000; i++ {
		r.refused(log, a, peer{pid: 42}, "callers confined by cgroup id 7 hold 16 connections, their limit")
	}
	r.refused(log, refusalScope{confined: true, scope: 8}, peer{pid: 43}, "x")
	if got := strings.Count(buf.String(), "\n"); got != 2 {
		t.Fatalf("%d lines for 1001 refusals in two scopes, want 2 (one each):\n%s", got, buf.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), "refused=999") {
		if time.Now().After(deadline) {
			t.Fatalf("no summary of the 999 further refusals:\n%s", buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 || !strings.Contains(buf.String(), "cgroup_id=7") {
		t.Errorf("after the summary: %d lines, want 3:\n%s", n, buf.String())
	}
}

// TestIdleTimeout: a keep-alive connection idle after a complete request
// is closed within 30 s, and the client gives up its idle connections
// first (so it never sends a request on one the server is closing).
func TestIdleTimeout(t *testing.T) {
	hs := (&Server{}).NewHTTPServer()
	if hs.IdleTimeout <= 0 || hs.IdleTimeout > 30*time.Second {
		t.Errorf("IdleTimeout %s, want in (0, 30s]", hs.IdleTimeout)
	}
	c := NewClient("/nonexistent.sock", time.Second)
	tr, ok := c.http.Transport.(*http.Transport)
	if !ok || tr.IdleConnTimeout <= 0 || tr.IdleConnTimeout >= hs.IdleTimeout {
		t.Errorf("client IdleConnTimeout %v, want below the server's %s", tr, hs.IdleTimeout)
	}
}
