package proxy

import (
	"context"
	"log/slog"
	"net/netip"
	"time"
)

// record is one request's audit line. Its fields are written by
// (*Proxy).audit as one slog JSON line with message "proxy":
//
//	time, decision ("allowed"|"denied"), reason (AllReasons), detail,
//	method, domain (the target host: a name or an IP literal), port,
//	ip (the address dialled, "" if none), bytes_up (client to
//	destination: the CONNECT tunnel's bytes or the forwarded request
//	body), bytes_down (back), duration_ms, listener ("unix"|"tcp"),
//	client_pid, cgroup_id, cgroup, container ("" when none or unknown).
type record struct {
	reason, detail string
	method, domain string
	port           uint16
	ip             netip.Addr
	up, down       int64
	start          time.Time
	client         Client
	container      string
}

func (p *Proxy) audit(r *record) {
	decision := "denied"
	lvl := slog.LevelWarn
	if r.reason == ReasonAllowed {
		decision, lvl = "allowed", slog.LevelInfo
	}
	ip := ""
	if r.ip.IsValid() {
		ip = r.ip.String()
	}
	p.auditLog.LogAttrs(context.Background(), lvl, "proxy",
		slog.String("decision", decision),
		slog.String("reason", r.reason),
		slog.String("detail", r.detail),
		slog.String("method", r.method),
		slog.String("domain", r.domain),
		slog.Int("port", int(r.port)),
		slog.String("ip", ip),
		slog.Int64("bytes_up", r.up),
		slog.Int64("bytes_down", r.down),
		slog.Float64("duration_ms", float64(time.Since(r.start).Microseconds())/1000),
		slog.String("listener", r.client.Listener),
		slog.Int("client_pid", r.client.PID),
		slog.Uint64("cgroup_id", r.client.CgroupID),
		slog.String("cgroup", r.client.Group),
		slog.String("container", r.container),
	)
}
