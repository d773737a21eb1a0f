package daemon

import (
	"errors"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/sandbox/fallback"
)

// seccompTrail turns the kernel's AUDIT_SECCOMP records of the process
// layer's seccomp filter (`enforcerd run` without BPF LSM, which loads it
// with SECCOMP_FILTER_FLAG_LOG) into denial records, read from the audit
// multicast group. A record is ours when its process (the record's pid,
// while it lives and still has the record's comm) is in a cgroup whose
// nearest registered ancestor (itself included) was registered directly
// (by `enforcerd run`, not a container of this daemon), the filter's
// action is EPERM, and the filter SeccompFor that registration's ceiling
// denies the call (fallback.Classify), and the action is
// SECCOMP_RET_ERRNO (the record does not carry the errno); every other record (other
// programs' logged filters, a systemd unit's) is counted as not_ours and
// never reported. Like the kernel's records, only the first denial of
// each distinct denial (ceiling cgroup, hook, rule) per summary interval
// is a denial record; the others are counted in a summary record at the
// interval's end.
type seccompTrail struct {
	rl    *audit.AuditReadlog
	mount string
	// lookup is the kernel entry of a registered cgroup
	// (enforcer.Lookup); attribution the daemon's container of one
	// (registry.Attribution).
	lookup      func(cgroupID uint64) (entry.Entry, error)
	attribution func(cgroupID uint64) (state.Container, bool)
	m           *metrics.Metrics
	log         *slog.Logger
	// write sends a record to the audit log, the followers and the
	// journal (not the Linux audit trail: the kernel's own record is
	// there already).
	write func(audit.Record)

	mu     sync.Mutex
	since  time.Time
	counts map[seccompKey]*seccompCount
}

// seccompKey is a distinct seccomp denial.
type seccompKey struct {
	ceiling uint64
	hook    string
	rule    string
}

// seccompCount is the first record of a distinct denial in the interval
// and the denials after it.
type seccompCount struct {
	first audit.Record
	more  uint64
}

// openSeccompTrail opens the audit multicast group when the process
// layer can run on this host (no BPF LSM): nil when it is not needed.
// What keeps the records from arriving (no CAP_AUDIT_READ, no audit in
// the kernel, audit=0 on the kernel command line) is logged once and
// counted (result unavailable), never fatal. Audit disabled at run time
// (auditctl -e 0, the default without auditd) does not stop them: the
// kernel writes AUDIT_SECCOMP records whatever audit_enabled says.
func (n *node) openSeccompTrail(write func(audit.Record)) *seccompTrail {
	if n.enf.LayerError(coverage.LayerLSM) == nil {
		return nil
	}
	unavailable := func(msg string, err error) {
		n.m.SeccompRecords.WithLabelValues("unavailable").Inc()
		n.log.Warn(msg+"; counted in enforcerd_seccomp_records_total{result=\"unavailable\"}", "err", err)
	}
	rl, err := audit.DialAuditReadlog()
	if err != nil {
		unavailable("seccomp denials of enforcerd run (no BPF LSM) are not recorded: the audit multicast group cannot be read", err)
		return nil
	}
	if kernelArg("audit=0") || kernelArg("audit=off") {
		unavailable("seccomp denials of enforcerd run (no BPF LSM) are not recorded: audit=0 on the kernel command line", errors.New("audit=0"))
	}
	n.log.Info("seccomp denials of enforcerd run (no BPF LSM) are read from the audit multicast group")
	return &seccompTrail{rl: rl, mount: n.mount, lookup: n.enf.Lookup, attribution: n.reg.Attribution, m: n.m, log: n.log,
		write: write, since: time.Now(), counts: map[seccompKey]*seccompCount{}}
}

// kernelArg reports whether /proc/cmdline has arg as one of its words.
func kernelArg(arg string) bool {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return false
	}
	for _, w := range strings.Fields(string(b)) {
		if w == arg {
			return true
		}
	}
	return false
}

// start reads records until stop, and writes the summaries each
// interval; stop writes the last ones.
func (s *seccompTrail) start() (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run()
	}()
	stopTicker := everyInterval(summaryInterval, func() { s.summarize(time.Now()) })
	return func() {
		stopTicker()
		s.rl.Close()
		<-done
		s.rl.Release()
		s.summarize(time.Now())
	}
}

// run reads the multicast group until it is closed.
func (s *seccompTrail) run() {
	reported := false
	for {
		msgs, err := s.rl.Read()
		if errors.Is(err, audit.ErrReadlogClosed) {
			return
		}
		if errors.Is(err, audit.ErrReadlogOverrun) {
			s.m.SeccompRecords.WithLabelValues("lost").Inc()
			continue
		}
		if err != nil {
			if !reported {
				s.log.Warn("audit multicast group: read failed; further failures are not logged", "err", err)
				reported = true
			}
			s.m.SeccompRecords.WithLabelValues("lost").Inc()
			time.Sleep(readRetry)
			continue
		}
		for _, m := range msgs {
			if m.Type == unix.AUDIT_SECCOMP {
				s.handle(m.Text)
			}
		}
	}
}

// readRetry is the pause after a failed read of the multicast group.
const readRetry = 100 * time.Millisecond

// handle counts one AUDIT_SECCOMP record's result and records it when it
// is ours.
func (s *seccompTrail) handle(text []byte) {
	r, err := audit.ParseSeccomp(text)
	if err != nil {
		s.m.SeccompRecords.WithLabelValues("malformed").Inc()
		return
	}
	rec, result := s.attribute(r)
	if result != "" {
		s.m.SeccompRecords.WithLabelValues(result).Inc()
		return
	}
	s.m.Denials.WithLabelValues(rec.Container, rec.Hook, rec.Operation, rec.Decision).Inc()
	if s.count(rec) {
		s.m.SeccompRecords.WithLabelValues("reported").Inc()
		s.write(rec)
	} else {
		s.m.SeccompRecords.WithLabelValues("summarized").Inc()
	}
}

// attribute is the denial record of r, or the result it is counted as
// when it is not ours (not_ours, unattributed).
func (s *seccompTrail) attribute(r audit.SeccompRecord) (audit.Record, string) {
	if r.Code&unix.SECCOMP_RET_ACTION_FULL != fallback.DeniedAction {
		return audit.Record{}, "not_ours"
	}
	group, err := cgroup.PidGroup(int(r.PID))
	if err != nil || !sameComm(r.PID, r.Comm) {
		return audit.Record{}, "unattributed"
	}
	own, ceiling, en, ok := s.registeredAncestor(group)
	if !ok {
		return audit.Record{}, "not_ours"
	}
	if ct, known := s.attribution(ceiling); known && ct.ID != "" {
		return audit.Record{}, "not_ours" // a container: no filter of ours
	}
	c := en.Ceiling
	if en.AuditOnly || (c.Network && c.Write && c.Shell == policy.ShellFull) {
		return audit.Record{}, "not_ours" // run loads no filter for these (sandbox.processLayer)
	}
	call, ours := fallback.Classify(fallback.SeccompFor(c, false), r.Arch, r.Syscall)
	if !ours {
		return audit.Record{}, "not_ours"
	}
	obj, fields := audit.SeccompObject(call.Syscall, r.Arch, r.Syscall)
	rec := audit.Record{
		SchemaVersion: audit.SchemaVersion, Type: audit.TypeDenial, Time: r.Time.Format(time.RFC3339Nano), Host: audit.Host,
		CgroupID: own, CeilingCgroupID: ceiling, PID: r.PID, Comm: r.Comm, UID: r.UID,
		Hook: call.Hook(r.Arch), Rule: string(call.Rule), Operation: call.Operation, Object: obj, ObjectFields: fields,
		Field: call.Field, Errno: int(unix.EPERM), Error: unix.ErrnoName(syscall.EPERM), Decision: "denied",
	}
	if r.Exe != "" && r.Exe != "(null)" {
		rec.Exe = r.Exe
	}
	if ppid, ok := parentOf(r.PID); ok {
		rec.PPID = &ppid
	}
	return rec, ""
}

// registeredAncestor walks from group up to the root: the process's own
// cgroup id, and the nearest registered cgroup's id and entry.
func (s *seccompTrail) registeredAncestor(group string) (own, ceiling uint64, en entry.Entry, ok bool) {
	for g := group; ; g = path.Dir(g) {
		c, err := cgroup.Open(s.mount, g)
		if err != nil {
			return 0, 0, entry.Entry{}, false
		}
		if g == group {
			own = c.ID
		}
		if e, err := s.lookup(c.ID); err == nil {
			return own, c.ID, e, true
		}
		if g == "/" || g == "." {
			return 0, 0, entry.Entry{}, false
		}
	}
}

// sameComm reports whether a thread of pid still has the command name
// comm (the record names the thread group, the name is the thread's): it
// did not exec another program, the pid was not reused.
func sameComm(pid uint32, comm string) bool {
	dir := "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/comm")
		if err == nil && strings.TrimSuffix(string(b), "\n") == comm {
			return true
		}
	}
	return false
}

// parentOf is pid's parent's thread group id (/proc/PID/stat).
func parentOf(pid uint32) (uint32, bool) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/stat")
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	p, err := strconv.ParseUint(f[1], 10, 32)
	return uint32(p), err == nil
}

// count notes rec in its distinct denial: true when it is the first of
// the interval (to be written), false when it is counted for the
// summary.
func (s *seccompTrail) count(rec audit.Record) bool {
	k := seccompKey{rec.CeilingCgroupID, rec.Hook, rec.Rule}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.counts[k]; ok {
		c.more++
		return false
	}
	s.counts[k] = &seccompCount{first: rec}
	return true
}

// summarize ends the interval at now: a summary record for each distinct
// denial with denials its first record does not stand for.
func (s *seccompTrail) summarize(now time.Time) {
	s.mu.Lock()
	counts, since := s.counts, s.since
	s.counts, s.since = map[seccompKey]*seccompCount{}, now
	s.mu.Unlock()
	for _, c := range counts {
		if c.more == 0 {
			continue
		}
		r := c.first
		r.Type, r.Count = audit.TypeSummary, c.more
		r.Since, r.Time = since.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano)
		r.CgroupID, r.PID, r.PPID, r.Exe, r.Comm, r.UID = 0, 0, nil, "", "", 0
		s.write(r)
	}
}
