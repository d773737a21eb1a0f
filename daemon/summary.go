package daemon

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
)

// summaryInterval is how often the daemon turns the kernel's denial counts
// (enforcer.Tally) into summary records.
const summaryInterval = time.Second

// maxPaths bounds the paths of first records kept for their summaries.
const maxPaths = 16384

// auditPump reads denial records and the kernel's denial counts and writes
// audit records (log, followers, journal, Linux audit trail) and the denial metric. The kernel
// sends only the first denial of each kind per interval as a record and
// counts every denial (bpf/tally.h); each tick swaps the counts out
// (Tally.Rotate), reads the ring buffer to its end (so the first records
// come before their summaries), then writes one summary record per distinct
// denial that had denials no record stands for, with their number
// (emittedRecords): the records and the summaries' counts add up to every
// denial, and a denial sent as a record is never repeated by a summary, in
// every sink (log, followers, journal, Linux audit trail). The denial metric counts from the
// kernel's counts, never records; without a tally (nil) it counts
// records, one denial each.
type auditPump struct {
	rd    *enforcer.Reader
	tally *enforcer.Tally
	reg   *registry.Registry
	alog  *audit.Log
	hub   *audit.Hub
	m     *metrics.Metrics
	log   *slog.Logger
	jr    *denialJournal
	// la sends to the Linux audit trail (nil: audit.linux_audit off).
	la *audit.LinuxAudit
	// paths of first records by key, until their summary is written.
	paths map[denial.Key]string
	// emitted are the records read that no summary covered yet.
	emitted *emittedRecords
	// summarized receives after each summary pass (non-blocking).
	summarized chan struct{}
	// wmu orders the writes of the pump and of the seccomp trail.
	wmu sync.Mutex
}

// run reads records until the reader is closed.
func (p *auditPump) run() {
	for {
		d, err := p.rd.Read()
		if errors.Is(err, enforcer.ErrClosed) {
			return
		}
		if errors.Is(err, enforcer.ErrFlushed) {
			p.summarize()
			continue
		}
		if err != nil {
			p.log.Error("denial record", "err", err)
			continue
		}
		p.record(d)
	}
}

// record writes denial record d and remembers it for its summary.
func (p *auditPump) record(d denial.Denial) {
	c, _ := p.reg.Attribution(d.CeilingCgroupID)
	rec := audit.FromDenial(d, c.ID, c.Fingerprint)
	if p.tally == nil {
		p.m.Denials.WithLabelValues(rec.Container, rec.Hook, rec.Operation, rec.Decision).Inc()
	} else {
		p.emitted.add(d)
		if d.Object.Path != "" && len(p.paths) < maxPaths {
			p.paths[d.Key] = d.Object.Path
		}
	}
	p.write(rec)
}

// summarize writes the summaries the last Rotate read.
func (p *auditPump) summarize() {
	if p.tally != nil {
		p.writeSummaries(p.tally.Collect())
	}
	select {
	case p.summarized <- struct{}{}:
	default:
	}
}

// writeSummaries writes one pass's summaries: the metric counts every
// denial, a summary record only the denials no record stands for, when
// there are any, in every sink (write).
func (p *auditPump) writeSummaries(sums []denial.Summary) {
	for _, s := range sums {
		// The container may have ended since its denials were
		// counted: Attribution remembers it.
		c, _ := p.reg.Attribution(s.CeilingCgroupID)
		rec := audit.FromSummary(s, c.ID, c.Fingerprint, p.paths[s.Key])
		delete(p.paths, s.Key)
		p.m.Denials.WithLabelValues(rec.Container, rec.Hook, rec.Operation, rec.Decision).Add(float64(s.Count))
		if rec.Count = p.emitted.unemitted(s); rec.Count > 0 {
			p.write(rec)
		}
	}
	p.emitted.endPass()
}

// write sends rec to every sink: the audit log, the followers (and the
// recent records), the journal, the Linux audit trail.
func (p *auditPump) write(rec audit.Record) {
	p.writeLocal(rec)
	if p.la != nil {
		p.la.Record(rec)
	}
}

// writeLocal sends rec to the audit log, the followers (and the recent
// records) and the journal: every sink but the Linux audit trail.
func (p *auditPump) writeLocal(rec audit.Record) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.alog != nil {
		if err := p.alog.Write(rec); err != nil {
			p.m.AuditErrors.Inc()
			p.log.Error("audit log", "err", err)
		}
	}
	p.hub.Publish(rec)
	if p.jr != nil {
		if err := p.jr.Record(rec); err != nil {
			p.log.Warn("journal", "err", err)
		}
	}
}

// init makes the pump's memory of records read.
func (p *auditPump) init() {
	p.paths = map[denial.Key]string{}
	p.emitted = newEmittedRecords()
}

// tick swaps the counts out and makes the reader return what the ring
// buffer holds, then summarize (ErrFlushed).
func (p *auditPump) tick() {
	if p.tally != nil {
		if err := p.tally.Rotate(); err != nil {
			p.log.Error("denial counts", "err", err)
		}
	}
	if err := p.rd.Flush(); err != nil {
		p.log.Error("denial records", "err", err)
	}
}

// start runs the pump and its ticker; the returned stop writes the last
// summaries (waiting up to a second for them) and closes the reader.
func (p *auditPump) start() (stop func()) {
	p.init()
	p.summarized = make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run()
	}()
	stopTicker := everyInterval(summaryInterval, p.tick)
	return func() {
		stopTicker()
		select { // a summary pass of the ticker not yet taken
		case <-p.summarized:
		default:
		}
		p.tick()
		select {
		case <-p.summarized:
		case <-time.After(time.Second):
		}
		p.rd.Close()
		<-done
	}
}

// everyInterval calls f every d on a goroutine of its own until the
// returned stop, which returns once f is no longer running (no call of f
// begins after it).
func everyInterval(d time.Duration, f func()) (stop func()) {
	quit := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() {
		close(quit)
		<-stopped
	}
}
