package audit

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/time/rate"
)

// LinuxAudit sends denial and summary records to the Linux audit trail as
// AUDIT_USER_AVC messages (AVCText), off the caller's goroutine: Record
// never blocks (the kernel may hold a sender while its audit backlog is
// full), records over the rate limit or with the queue full are counted
// and dropped, and a failed send is counted and reported once (OnFailure).
// Enforcement never depends on it: the audit log and the other sinks have
// every record.
type LinuxAudit struct {
	send  func(typ uint16, text string) error
	limit *rate.Limiter
	q     chan Record
	// Count is called with each record's outcome (LinuxAuditSent,
	// LinuxAuditRateLimited, LinuxAuditQueueFull, LinuxAuditFailed).
	count func(result string)
	// failed is called once, with the first send error.
	failed   func(error)
	failOnce sync.Once
	done     chan struct{}
	stopOnce sync.Once
}

// Outcomes of a record given to LinuxAudit.Record (the count callback's
// result, the metric's label).
const (
	LinuxAuditSent        = "sent"
	LinuxAuditRateLimited = "rate_limited"
	LinuxAuditQueueFull   = "queue_full"
	LinuxAuditFailed      = "failed"
)

// linuxAuditQueue is how many records wait for the sender at most.
const linuxAuditQueue = 1024

// NewLinuxAudit starts a sender of records through send (an
// AuditNetlink's SendUser), at most ratePerSecond a second (burst: twice
// that). count receives each record's outcome, failed the first send
// error (both may be nil).
func NewLinuxAudit(send func(typ uint16, text string) error, ratePerSecond float64, count func(result string), failed func(error)) *LinuxAudit {
	if count == nil {
		count = func(string) {}
	}
	if failed == nil {
		failed = func(error) {}
	}
	l := &LinuxAudit{
		send: send, limit: rate.NewLimiter(rate.Limit(ratePerSecond), int(2*ratePerSecond)+1),
		q: make(chan Record, linuxAuditQueue), count: count, failed: failed, done: make(chan struct{}),
	}
	go l.run()
	return l
}

// Record queues r for the audit trail when it is a denial or a summary
// (other records are not access decisions) and within the rate limit;
// it never blocks.
func (l *LinuxAudit) Record(r Record) {
	if r.Type != TypeDenial && r.Type != TypeSummary {
		return
	}
	if !l.limit.Allow() {
		l.count(LinuxAuditRateLimited)
		return
	}
	select {
	case l.q <- r:
	default:
		l.count(LinuxAuditQueueFull)
	}
}

// run sends the queued records until Close.
func (l *LinuxAudit) run() {
	defer close(l.done)
	for r := range l.q {
		if err := l.send(unix.AUDIT_USER_AVC, AVCText(r)); err != nil {
			l.count(LinuxAuditFailed)
			l.failOnce.Do(func() { l.failed(err) })
			continue
		}
		l.count(LinuxAuditSent)
	}
}

// Close stops taking records and waits up to wait for the queued ones to
// be sent. Record must not be called after Close.
func (l *LinuxAudit) Close(wait time.Duration) {
	l.stopOnce.Do(func() { close(l.q) })
	select {
	case <-l.done:
	case <-time.After(wait):
	}
}
