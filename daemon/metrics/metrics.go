// Package metrics defines enforcerd's Prometheus metrics (client_golang,
// Prometheus naming: enforcerd_ prefix, _total for counters, base units).
//
// Layering (docs/design.md): layer 4; it may import denial/, coverage/ and
// internal/buildinfo/, and of other modules no cilium/ebpf, not even
// through its imports.
package metrics

import (
	_ "github.com/enforcerd/enforcerd/internal/buildinfo" // fills prometheus/common/version
	"github.com/prometheus/client_golang/prometheus/collectors/version"

	"time"

	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/enforcerd/enforcerd/coverage"
)

// Registration results (label "result" of enforcerd_registrations_total).
const (
	ResultOK            = "ok"
	ResultBadRequest    = "bad_request"
	ResultConflict      = "conflict"
	ResultNotFound      = "not_found"
	ResultCannotEnforce = "cannot_enforce"
	// ResultPartialCoverage: the host would enforce the ceiling only in
	// part and the daemon's configuration does not allow that.
	ResultPartialCoverage = "partial_coverage"
	ResultError           = "error"
)

// Registration results of the shell=none program check
// (registry.ErrUnsafeProgram, registry.ErrEntrypointRequired).
const (
	ResultUnsafeProgram      = "unsafe_program"
	ResultEntrypointRequired = "entrypoint_required"
)

// The endpoint label of enforcerd_api_request_duration_seconds: one per
// API endpoint (GET /v1/denials, a stream, is not timed), EndpointOther
// for a request no endpoint serves (404, 405).
const (
	EndpointStatus        = "status"
	EndpointReady         = "ready"
	EndpointRegister      = "register"
	EndpointList          = "list"
	EndpointGet           = "get"
	EndpointUnregister    = "unregister"
	EndpointSurface       = "surface"
	EndpointNarrow        = "narrow"
	EndpointRecentDenials = "recent_denials"
	EndpointOther         = "other"
)

// The stage label of enforcerd_api_request_duration_seconds beside
// APIStages: StageNone when the caller named none (ctl, run, nspawn,
// curl), StageOther when it named one not in APIStages.
const (
	StageNone  = "none"
	StageOther = "other"
)

// APIStages are the callers' stages the stage label takes as sent (the
// OCI hook's stages); any other value is StageOther, so the label's
// values stay a fixed set.
var APIStages = []string{"createRuntime", "prestart", "poststop"}

// APIResults are the error codes the result label takes beside ResultOK
// (a 2xx answer): the API's error codes. Any other code is ResultError.
var APIResults = []string{ResultBadRequest, ResultConflict, ResultNotFound, ResultCannotEnforce,
	ResultPartialCoverage, ResultUnsafeProgram, ResultEntrypointRequired, ResultError,
	"forbidden", "ceiling_conflict", "unavailable", "method_not_allowed"}

// apiDurationBuckets (seconds) span a map update (about a millisecond)
// to the hook's default timeout (8 s).
var apiDurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Sources are the live values the metrics read at scrape time.
type Sources struct {
	Registered  func() int
	LostRecords func() (uint64, error)
	// Unattributed: denials the kernel counted for no container (its
	// tally maps full); nil: the metric is not exported.
	Unattributed func() (uint64, error)
	Hooks        func() []coverage.HookStatus
	Dropped      func() uint64 // follow-stream records dropped
	// Unenforced counts the registered containers by coverage gap code
	// (coverage.Gap.Code); nil: the metric is not exported.
	Unenforced func() map[string]int
	// RenamesInProgress: the kernel's count of renames in progress that
	// keeps the writable roots' decision cache off while not 0
	// (enforcer.RenamesInProgress); nil: the metric is not exported.
	RenamesInProgress func() (uint64, error)
}

// Metrics holds the collectors the daemon updates.
type Metrics struct {
	reg           *prometheus.Registry
	Denials       *prometheus.CounterVec
	Registrations *prometheus.CounterVec
	// Pending counts activation and freeze decisions about registrations
	// made with activation at exec, by outcome (registry.Event kinds).
	Pending     *prometheus.CounterVec
	AuditErrors prometheus.Counter
	// LinuxAudit counts the records given to the Linux audit trail
	// (audit.linux_audit) by outcome (audit.LinuxAuditSent, ...RateLimited,
	// ...QueueFull, ...Failed).
	LinuxAudit *prometheus.CounterVec
	// SeccompRecords counts the kernel's AUDIT_SECCOMP records the
	// daemon read without BPF LSM, by result (SeccompRecordResults).
	SeccompRecords *prometheus.CounterVec
	// ConnsRefused counts API connections refused over the connection
	// limits, by the limit reached (api.ConnLimit*: "per_cgroup",
	// "confined", "total").
	ConnsRefused *prometheus.CounterVec
	// APIDuration observes each API request from its headers read to
	// its answer written, by endpoint (Endpoint*), stage (APIStages,
	// StageNone, StageOther) and result (ResultOK or APIResults).
	APIDuration *prometheus.HistogramVec
}

// New registers every metric on a fresh registry: the daemon's own
// counters and histogram, the ones read from src at scrape time, and the
// build, Go and process collectors.
func New(src Sources) *Metrics {
	m := newOwnMetrics()
	reg := m.reg
	reg.MustRegister(m.Denials, m.Registrations, m.Pending, m.AuditErrors, m.LinuxAudit, m.SeccompRecords, m.ConnsRefused, m.APIDuration)
	registerSources(reg, src)
	// enforcerd_build_info{version,revision,branch,goversion,goos,goarch,
	// tags}: the values `enforcerd version` prints (internal/buildinfo
	// completes them at init).
	reg.MustRegister(version.NewCollector("enforcerd"), collectors.NewBuildInfoCollector(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// newOwnMetrics makes the metrics the daemon updates itself, on a fresh
// registry (not yet registered).
func newOwnMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		Denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enforcerd_denials_total",
			Help: "Operations denied (or, audit-only, that would have been) by a container's ceiling, by container, LSM/cgroup hook, operation and decision.",
		}, []string{"container", "hook", "operation", "decision"}),
		Registrations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enforcerd_registrations_total",
			Help: "Container registration requests, by result.",
		}, []string{"result"}),
		Pending: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enforcerd_pending_outcomes_total",
			Help: "Registrations made pending (activation at exec) by outcome: activated_at_exec, activated_immediately (a process other than the runtime init was in the cgroup), frozen or killed (the pending deadline passed), refrozen.",
		}, []string{"outcome"}),
		AuditErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "enforcerd_audit_write_errors_total",
			Help: "Audit records that could not be written to the audit log.",
		}),
	}
	m.LinuxAudit = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enforcerd_linux_audit_records_total",
		Help: "Denial and summary records given to the Linux audit trail (audit.linux_audit: AUDIT_USER_AVC over NETLINK_AUDIT), by result: sent, rate_limited, queue_full, failed (the kernel refused it or no audit socket; the first failure is logged). The audit log has every record.",
	}, []string{"result"})
	m.ConnsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enforcerd_api_connections_refused_total",
		Help: "API connections refused (503) because their caller was over a connection limit, by limit: per_cgroup (api.max_conns_per_cgroup), confined (api.max_confined_conns), total (api.max_conns).",
	}, []string{"limit"})
	m.APIDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "enforcerd_api_request_duration_seconds",
		Help:    "API requests from their headers read to their answer written, by endpoint (register, unregister, status, ready, ...; the denial stream is not timed), the caller's stage (createRuntime, prestart, poststop from the OCI hook; none; other) and result (ok or the API's error code).",
		Buckets: apiDurationBuckets,
	}, []string{"endpoint", "stage", "result"})
	m.SeccompRecords = newSeccompRecords()
	return m
}

// registerSources registers the metrics read from src at scrape time; an
// optional source (nil) has no metric.
func registerSources(reg *prometheus.Registry, src Sources) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "enforcerd_registered_containers",
		Help: "Containers currently registered with the daemon.",
	}, func() float64 { return float64(src.Registered()) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "enforcerd_ringbuf_lost_records_total",
		Help: "Denial records dropped because the kernel ring buffer was full (the denials were still enforced and counted in enforcerd_denials_total).",
	}, kernelCount(src.LostRecords)))
	if src.Unattributed != nil {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "enforcerd_denials_unattributed_total",
			Help: "Denials the kernel counted for no container because its tally maps were full (exact; with enforcerd_denials_total every denial).",
		}, kernelCount(src.Unattributed)))
	}
	if src.Dropped != nil {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "enforcerd_follow_dropped_records_total",
			Help: "Denial records API followers missed because they did not keep up.",
		}, func() float64 { return float64(src.Dropped()) }))
	}
	if src.RenamesInProgress != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "enforcerd_renames_in_progress",
			Help: "Renames on the host between their security check and their end, as the kernel counts them for the writable roots' decision cache, which is off while this is not 0. A value that stays above 0 while nothing renames is a rename whose end the kernel did not report: every write under writable roots then climbs its directories (slower, never wrong) until the pinned maps are made anew.",
		}, kernelCount(src.RenamesInProgress)))
	}
	if src.Unenforced != nil {
		reg.MustRegister(&gapCollector{gaps: src.Unenforced, desc: prometheus.NewDesc(
			"enforcerd_unenforced_containers",
			"Registered containers whose ceiling this host enforces only in part (registered because partial coverage is allowed), by what is not enforced (gap: network-non-inet, tamper, ...).",
			[]string{"gap"}, nil)})
	}
	reg.MustRegister(&hookCollector{hooks: src.Hooks, desc: prometheus.NewDesc(
		"enforcerd_programs_attached",
		"1 when the eBPF program of the hook is attached (loaded or re-adopted from its pin), else 0.",
		[]string{"hook", "layer"}, nil)})
}

// kernelCount reads a count from the kernel's maps at scrape time; a
// count that cannot be read is exported as 0, never as a stale value.
func kernelCount(read func() (uint64, error)) func() float64 {
	return func() float64 {
		n, err := read()
		if err != nil {
			return 0
		}
		return float64(n)
	}
}

// forgetAfter is how long a container's series outlive its unregistration,
// so that the denials of a short-lived container are still scraped (several
// scrape intervals) before the series go away to bound cardinality.
var forgetAfter = 10 * time.Minute

// Forget removes a container's per-container series forgetAfter after
// unregister.
func (m *Metrics) Forget(container string) {
	time.AfterFunc(forgetAfter, func() {
		m.Denials.DeletePartialMatch(prometheus.Labels{"container": container})
	})
}

// Register adds collectors of other parts of the daemon (the NRI
// plugin's) to the registry /metrics serves.
func (m *Metrics) Register(cs ...prometheus.Collector) { m.reg.MustRegister(cs...) }

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

type gapCollector struct {
	gaps func() map[string]int
	desc *prometheus.Desc
}

func (c *gapCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *gapCollector) Collect(ch chan<- prometheus.Metric) {
	for gap, n := range c.gaps() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), gap)
	}
}

type hookCollector struct {
	hooks func() []coverage.HookStatus
	desc  *prometheus.Desc
}

func (c *hookCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *hookCollector) Collect(ch chan<- prometheus.Metric) {
	seen := map[string]bool{}
	for _, h := range c.hooks() {
		key := h.Name + "\x00" + string(h.Layer)
		if seen[key] {
			continue
		}
		seen[key] = true
		v := 0.0
		if h.Attached {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, h.Name, string(h.Layer))
	}
}

// SeccompRecordResults are the values of SeccompRecords' result label:
// reported (a denial record written), summarized (counted in a summary
// record), not_ours (another program's seccomp filter, or a call the
// sandbox's filter does not deny), unattributed (the process was gone, or
// no longer the one that acted, when the record was read), malformed,
// lost (a receive buffer overrun: records of unknown number lost), and
// unavailable (the records cannot be read or are not written: no
// CAP_AUDIT_READ, no audit in the kernel, audit=0; counted once).
var SeccompRecordResults = []string{"reported", "summarized", "not_ours", "unattributed", "malformed", "lost", "unavailable"}

func newSeccompRecords() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enforcerd_seccomp_records_total",
		Help: "Without BPF LSM: the kernel's AUDIT_SECCOMP records read from the audit multicast group, by result: reported, summarized, not_ours, unattributed, malformed, lost, unavailable (docs/audit.md).",
	}, []string{"result"})
}
