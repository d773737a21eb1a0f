package daemon

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
)

// TestPumpSummariesInEverySink: a denial met once is one record and no
// summary, a flood is its first record and a summary of the rest, in the
// audit log, the followers' recent records, the journal and the Linux
// audit trail alike; the
// metric counts every denial; records plus summary counts add up.
func TestPumpSummariesInEverySink(t *testing.T) {
	dir := t.TempDir()
	alog, err := audit.Open(filepath.Join(dir, "audit.jsonl"), 1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer alog.Close()
	var journaled []string
	var avc []string // the Linux audit trail's messages, in order (one sender)
	la := audit.NewLinuxAudit(func(typ uint16, text string) error {
		if typ != 1107 {
			t.Errorf("audit message type %d, want AUDIT_USER_AVC (1107)", typ)
		}
		avc = append(avc, text)
		return nil
	}, 1000, nil, nil)
	p := &auditPump{la: la, tally: &enforcer.Tally{}, hub: audit.NewHub(), alog: alog, m: metrics.New(metrics.Sources{}),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		reg: registry.New(registry.Options{Enforcer: registrytest.NewEnforcer(true), Cgroups: registrytest.NewCgroups(), StatePath: filepath.Join(dir, "s.json")}),
		jr: newDenialJournal(JournalConfig{Denials: true, RatePerSecond: 1000}, func(m string, _ journal.Priority, _ map[string]string) error {
			journaled = append(journaled, m)
			return nil
		})}
	p.init()
	den := func(obj uint64) denial.Denial {
		return denial.Denial{Time: time.Unix(1, 0), CeilingCgroupID: 5, Hook: denial.HookSocketCreate, Errno: 1, Field: "network", Rule: denial.RuleNetwork,
			Object: denial.Object{Kind: denial.ObjectSocket}, Key: denial.Key{CeilingCgroupId: 5, ObjectId: obj, Hook: uint16(denial.HookSocketCreate)}}
	}
	sum := func(d denial.Denial, n uint64) denial.Summary {
		return denial.Summary{Key: d.Key, CeilingCgroupID: 5, Hook: d.Hook, Errno: 1, Field: "network", Rule: denial.RuleNetwork, Object: d.Object,
			Count: n, Since: time.Unix(1, 0), Until: time.Unix(2, 0)}
	}
	once, flood := den(1), den(2)
	p.record(once)
	p.record(flood)
	p.writeSummaries([]denial.Summary{sum(once, 1), sum(flood, 100)})
	la.Close(5 * time.Second)

	var logged []audit.Record
	f, err := os.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		logged = append(logged, r)
	}
	for sink, recs := range map[string][]audit.Record{"audit log": logged, "followers": p.hub.Recent()} {
		var types []string
		var total uint64
		for _, r := range recs {
			types = append(types, r.Type)
			if r.Type == audit.TypeSummary {
				total += r.Count
			} else {
				total++
			}
		}
		if strings.Join(types, ",") != "denial,denial,summary" || recs[2].Count != 99 || total != 101 {
			t.Errorf("%s: %v, summary %+v, %d denials in all; want denial,denial,summary of 99, 101", sink, types, recs[len(recs)-1], total)
		}
	}
	if len(journaled) != 3 || !strings.Contains(journaled[2], ": 99 more times since ") {
		t.Errorf("journal: %q", journaled)
	}
	if len(avc) != 3 || !strings.HasPrefix(avc[0], `record="denial" `) || !strings.HasPrefix(avc[2], `record="summary" `) ||
		!strings.Contains(avc[2], " count=99 ") {
		t.Errorf("linux audit trail: %q, want two denial records and a summary of 99", avc)
	}
	if n := testutil.ToFloat64(p.m.Denials); n != 101 {
		t.Errorf("enforcerd_denials_total = %v, want 101", n)
	}
}
