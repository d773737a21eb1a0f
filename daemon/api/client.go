package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/policy"
)

// ErrUnreachable: the daemon's socket could not be reached.
var ErrUnreachable = errors.New("enforcerd daemon unreachable")

// Error is a 4xx/5xx answer of the daemon.
type Error struct {
	Status  int
	Code    string
	Message string
	body    []byte // the answer's body, as read
}

func (e *Error) Error() string {
	return fmt.Sprintf("daemon: %s (HTTP %d %s)", e.Message, e.Status, e.Code)
}

// Client talks to the daemon over its unix socket.
type Client struct {
	Socket string
	// WaitForDaemon: while the socket is missing or refuses connections
	// (the daemon is restarting), keep dialling until the request's
	// context or the client's timeout ends, instead of failing at once.
	// Only the connection is retried, never a request that was sent, so
	// no request is applied twice. Under systemd socket activation the
	// socket stays and connections queue, so this matters only without it.
	WaitForDaemon bool
	// Stage, when set, is sent in StageHeader with every request: the
	// OCI hook's stage, which labels the daemon's request durations.
	Stage string
	http  *http.Client
}

// DefaultHookTimeout is `enforcerd hook --timeout`'s default: the limit
// for the daemon's answer, waiting for a restarting daemon included. It
// stays below the runtime's hook timeout in deploy/hooks.d (10 s), so the
// hook's own message, not the runtime's kill, says what happened.
const DefaultHookTimeout = 8 * time.Second

// dialRetryMax bounds the pause between two dials while waiting.
const dialRetryMax = 500 * time.Millisecond

func (c *Client) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	pause := 25 * time.Millisecond
	for {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", c.Socket)
		if err == nil || !c.WaitForDaemon || !(errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (waited for the daemon until the deadline)", err)
		case <-time.After(pause):
		}
		pause = min(2*pause, dialRetryMax)
	}
}

// NewClient returns a client; timeout bounds each request except Follow.
func NewClient(socket string, timeout time.Duration) *Client {
	c := &Client{Socket: socket}
	tr := &http.Transport{DialContext: c.dial, DisableCompression: true, IdleConnTimeout: clientIdleConnTimeout}
	c.http = &http.Client{Transport: tr, Timeout: timeout}
	return c
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://enforcerd"+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Stage != "" {
		req.Header.Set(StageHeader, c.Stage)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, c.Socket, err)
	}
	defer resp.Body.Close()
	return decodeResponse(resp, out)
}

func decodeResponse(resp *http.Response, out any) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("daemon response: %w", err)
	}
	if resp.StatusCode >= 300 {
		var eb ErrorBody
		if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
			eb.Error = string(bytes.TrimSpace(b))
		}
		return &Error{Status: resp.StatusCode, Code: eb.Code, Message: eb.Error, body: b}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("daemon response: %w", err)
	}
	return nil
}

// Register registers a container.
func (c *Client) Register(ctx context.Context, req RegisterRequest) (Container, error) {
	var out Container
	err := c.do(ctx, http.MethodPost, "/v1/containers", req, &out)
	return out, err
}

// Unregister removes a container.
func (c *Client) Unregister(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/containers/"+url.PathEscape(id), nil, nil)
}

// List returns every container.
func (c *Client) List(ctx context.Context) ([]Container, error) {
	var out ListBody
	err := c.do(ctx, http.MethodGet, "/v1/containers", nil, &out)
	return out.Containers, err
}

// Get returns one container.
func (c *Client) Get(ctx context.Context, id string) (Container, error) {
	var out Container
	err := c.do(ctx, http.MethodGet, "/v1/containers/"+url.PathEscape(id), nil, &out)
	return out, err
}

// Surface returns a container's tool surface.
func (c *Client) Surface(ctx context.Context, id string) (policy.Surface, error) {
	var out policy.Surface
	err := c.do(ctx, http.MethodGet, "/v1/containers/"+url.PathEscape(id)+"/surface", nil, &out)
	return out, err
}

// Narrow clamps a container's ceiling with ceiling text.
func (c *Client) Narrow(ctx context.Context, id, ceiling string) (Container, error) {
	var out Container
	err := c.do(ctx, http.MethodPost, "/v1/containers/"+url.PathEscape(id)+"/narrow", NarrowRequest{Ceiling: ceiling}, &out)
	return out, err
}

// Status returns GET /v1/status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var out Status
	err := c.do(ctx, http.MethodGet, "/v1/status", nil, &out)
	return out, err
}

// Ready returns GET /v1/ready: the daemon's readiness, whether it is
// ready (200) or not (503, Missing naming what is not); any other answer
// is an *Error, no answer ErrUnreachable.
func (c *Client) Ready(ctx context.Context) (Readiness, error) {
	var out Readiness
	err := c.do(ctx, http.MethodGet, "/v1/ready", nil, &out)
	var ae *Error
	if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable && ae.body != nil {
		if json.Unmarshal(ae.body, &out) == nil && !out.Ready && len(out.Missing) > 0 {
			return out, nil
		}
	}
	return out, err
}

// RegisterJSON registers a container with body, a RegisterRequest as JSON
// sent verbatim: the daemon's strict decoding judges every key (a key the
// request does not have is 400, never dropped on the way). body must be
// valid JSON.
func (c *Client) RegisterJSON(ctx context.Context, body []byte) (Container, error) {
	if !json.Valid(body) {
		return Container{}, errors.New("register: the request is not valid JSON")
	}
	var out Container
	err := c.do(ctx, http.MethodPost, "/v1/containers", json.RawMessage(body), &out)
	return out, err
}

// RecentDenials returns the denial records the daemon kept (GET
// /v1/denials/recent), oldest first, that f selects.
func (c *Client) RecentDenials(ctx context.Context, f DenialFilter) ([]audit.Record, error) {
	var out DenialsBody
	err := c.do(ctx, http.MethodGet, "/v1/denials/recent"+f.query(), nil, &out)
	return out.Denials, err
}

// Follow streams denial records (of one container, or all when container
// is "") to fn until ctx ends, fn returns an error, or the daemon goes away.
func (c *Client) Follow(ctx context.Context, container string, fn func(audit.Record) error) error {
	return c.FollowDenials(ctx, DenialFilter{Container: container}, fn)
}

// FollowDenials streams the denial records f selects to fn as the daemon
// publishes them, until ctx ends (ctx.Err()), fn returns an error (that
// error), or the daemon goes away (nil at the end of the stream).
func (c *Client) FollowDenials(ctx context.Context, f DenialFilter, fn func(audit.Record) error) error {
	return c.FollowDenialsSubscribed(ctx, f, nil, fn)
}

// FollowDenialsSubscribed is FollowDenials that calls subscribed (when not
// nil) once the daemon has subscribed the stream: every record the daemon
// publishes from then on reaches fn. A caller that must not miss the
// records of something it starts waits for it first.
func (c *Client) FollowDenialsSubscribed(ctx context.Context, f DenialFilter, subscribed func(), fn func(audit.Record) error) error {
	path := "/v1/denials" + f.query()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://enforcerd"+path, nil)
	if err != nil {
		return err
	}
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, c.Socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeResponse(resp, nil)
	}
	if subscribed != nil {
		subscribed() // the daemon subscribes before it sends the headers
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var rec audit.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("denial stream: %w", err)
		}
		if !f.Match(rec) { // a daemon that ignored the filter
			continue
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("denial stream: %w", err)
	}
	return ctx.Err()
}
