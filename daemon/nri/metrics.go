package nri

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the plugin's Prometheus collectors (register them with
// Collectors on the daemon's registry).
type Metrics struct {
	// Events: NRI events the plugin handled, by event (configure,
	// synchronize, create_container, start_container, remove_container,
	// shutdown) and result (ok, refused, error, skipped).
	Events *prometheus.CounterVec
	// Refusals: containers refused, by event and reason (annotation,
	// policy, runtime_handler, cannot_enforce, registration, timeout).
	Refusals *prometheus.CounterVec
	// Late: containers Synchronize found unregistered, by outcome
	// (pending: created, registered pending; active: running,
	// registered in force at once; degraded: running, registered in
	// force with the narrowest ceiling the host takes because the one
	// asked for could not be (registerLateFallback); failed).
	Late *prometheus.CounterVec
	// Connections: connection attempts to the runtime, by result (ok,
	// error), and the current connection state.
	Connections *prometheus.CounterVec
	Connected   prometheus.Gauge
}

// NewMetrics makes the collectors.
func NewMetrics() *Metrics {
	return &Metrics{
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enforcerd_nri_events_total",
			Help: "NRI events handled by the enforcerd plugin, by event and result (ok, refused, error, skipped).",
		}, []string{"event", "result"}),
		Refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enforcerd_nri_refusals_total",
			Help: "Containers the NRI plugin refused, by event and reason (annotation, policy, runtime_handler, cannot_enforce, registration, timeout).",
		}, []string{"event", "reason"}),
		Late: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enforcerd_nri_late_registrations_total",
			Help: "Annotated containers found unregistered at Synchronize (created or started while the plugin was not connected), by outcome: pending, active (in force from then on), degraded (in force without its allowed endpoints and write roots: narrower than asked), frozen (registrable only with a wider shell than asked: registered so, and frozen), failed.",
		}, []string{"outcome"}),
		Connections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enforcerd_nri_connections_total",
			Help: "Connection attempts of the NRI plugin to the runtime, by result (ok, error).",
		}, []string{"result"}),
		Connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "enforcerd_nri_connected",
			Help: "1 while the NRI plugin is registered with the runtime, else 0.",
		}),
	}
}

// Collectors lists every collector.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Events, m.Refusals, m.Late, m.Connections, m.Connected}
}
