package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
	"golang.org/x/time/rate"

	"github.com/enforcerd/enforcerd/daemon/audit"
)

// JournalConfig: denial records sent to the systemd journal as structured
// entries (besides the audit log, which always has every record).
type JournalConfig struct {
	// Denials: send each record to the journal when journald runs
	// (default true; false is the off switch).
	Denials bool `yaml:"denials"`
	// RatePerSecond bounds the entries per second (burst: twice that);
	// records over the limit are counted and a summary entry says how
	// many the journal missed. Must be positive.
	RatePerSecond float64 `yaml:"rate_per_second"`
}

// journalSend is journal.Send (replaced in tests).
type journalSend func(message string, priority journal.Priority, vars map[string]string) error

// denialJournal sends denial records to the journal with a rate limit.
type denialJournal struct {
	send    journalSend
	limit   *rate.Limiter
	mu      sync.Mutex
	missed  uint64
	lastSum time.Time
	now     func() time.Time
}

func newDenialJournal(cfg JournalConfig, send journalSend) *denialJournal {
	return &denialJournal{send: send, limit: rate.NewLimiter(rate.Limit(cfg.RatePerSecond), int(2*cfg.RatePerSecond)+1), now: time.Now}
}

// Record sends r as one journal entry: MESSAGE is a one-line summary and
// every audit field is its own journal field (ENFORCERD_CONTAINER,
// ENFORCERD_HOOK, ...; docs/audit.md), so `journalctl
// ENFORCERD_CONTAINER=web` selects a container. Over the rate limit the
// record is counted; the first entry after a second or more of misses is a
// summary with the count (ENFORCERD_MISSED).
func (j *denialJournal) Record(r audit.Record) error {
	if !j.limit.Allow() {
		j.mu.Lock()
		j.missed++
		j.mu.Unlock()
		return nil
	}
	j.mu.Lock()
	missed := j.missed
	if missed > 0 && j.now().Sub(j.lastSum) >= time.Second {
		j.missed, j.lastSum = 0, j.now()
	} else {
		missed = 0
	}
	j.mu.Unlock()
	if missed > 0 {
		if err := j.send(fmt.Sprintf("enforcerd: %d denial records were not sent to the journal (rate limit); the audit log has every record", missed),
			journal.PriWarning, map[string]string{"SYSLOG_IDENTIFIER": "enforcerd", "ENFORCERD_MISSED": strconv.FormatUint(missed, 10)}); err != nil {
			return err
		}
	}
	pri := journal.PriWarning
	if r.Decision != "denied" {
		pri = journal.PriNotice
	}
	msg := fmt.Sprintf("enforcerd: %s %s %s (%s, rule %s) container=%s pid=%d comm=%s", r.Decision, r.Operation, r.Object, r.Hook, r.Rule, r.Container, r.PID, r.Comm)
	if r.Type == audit.TypeSummary {
		msg = fmt.Sprintf("enforcerd: %s %s %s (%s, rule %s) container=%s: %d more times since %s", r.Decision, r.Operation, r.Object, r.Hook, r.Rule, r.Container, r.Count, r.Since)
	}
	vars := map[string]string{
		"SYSLOG_IDENTIFIER":           "enforcerd",
		"ENFORCERD_TYPE":              r.Type,
		"ENFORCERD_CONTAINER":         r.Container,
		"ENFORCERD_CGROUP_ID":         strconv.FormatUint(r.CgroupID, 10),
		"ENFORCERD_CEILING_CGROUP_ID": strconv.FormatUint(r.CeilingCgroupID, 10),
		"ENFORCERD_PID":               strconv.FormatUint(uint64(r.PID), 10),
		"ENFORCERD_COMM":              r.Comm,
		"ENFORCERD_UID":               strconv.FormatUint(uint64(r.UID), 10),
		"ENFORCERD_HOOK":              r.Hook,
		"ENFORCERD_OPERATION":         r.Operation,
		"ENFORCERD_OBJECT":            r.Object,
		"ENFORCERD_FIELD":             r.Field,
		"ENFORCERD_DECISION":          r.Decision,
		"ENFORCERD_ERRNO":             strconv.Itoa(r.Errno),
		"ENFORCERD_ERROR":             r.Error,
		"ENFORCERD_FINGERPRINT":       r.Fingerprint,
		"ENFORCERD_FINGERPRINT_ID":    r.FingerprintID,
		"ENFORCERD_SINCE":             r.Since,
		"ENFORCERD_HOST":              r.Host,
		"ENFORCERD_RULE":              r.Rule,
		"ENFORCERD_EXE":               r.Exe,
		"ENFORCERD_SCHEMA_VERSION":    strconv.Itoa(r.SchemaVersion),
	}
	if r.Count > 0 {
		vars["ENFORCERD_COUNT"] = strconv.FormatUint(r.Count, 10)
	}
	if r.PPID != nil {
		vars["ENFORCERD_PPID"] = strconv.FormatUint(uint64(*r.PPID), 10)
	}
	if err := objectVars(vars, r.ObjectFields); err != nil {
		return err
	}
	for k, v := range vars {
		if v == "" {
			delete(vars, k)
		}
	}
	return j.send(msg, pri, vars)
}

// objectVars adds the structured object fields as ENFORCERD_OBJECT_<FIELD>
// (ENFORCERD_OBJECT_PATH, ENFORCERD_OBJECT_PORT, ...): the JSON keys of
// audit.ObjectFields, upper-cased, with their values as text.
func objectVars(vars map[string]string, f *audit.ObjectFields) error {
	if f == nil {
		return nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("journal: object fields: %w", err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // 64-bit inode and cgroup numbers stay exact
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("journal: object fields: %w", err)
	}
	for k, v := range m {
		s := fmt.Sprint(v) // strings and json.Number
		vars["ENFORCERD_OBJECT_"+strings.ToUpper(k)] = s
	}
	return nil
}
