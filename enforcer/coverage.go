package enforcer

import (
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// Layers are this host's kernel layers as the coverage rule weighs them:
// the BPF LSM and cgroup-BPF layers' errors (nil: attached).
func (e *Enforcer) Layers() coverage.Layers {
	return coverage.Layers{LSM: e.LayerError(coverage.LayerLSM), Cgroup: e.LayerError(coverage.LayerCgroup)}
}

// Coverage reports what this host enforces of c, from the layers that are
// attached, for a registration without a process layer (a container, the
// daemon's API): CoverageOf with an Entry of c alone. See coverage.Of for
// the rule.
func (e *Enforcer) Coverage(c policy.KernelCeiling) coverage.Coverage {
	return coverage.Of(coverage.Subject{Ceiling: c}, e.Layers())
}

// CoverageOf is what this host enforces of the entry: its ceiling, its
// allowed endpoints and, for `enforcerd run` on a host without BPF LSM, the
// process layer it applies (Entry.Process). Register refuses an entry by
// it (Coverage.Err); `enforcerd check` reports it per field.
func (e *Enforcer) CoverageOf(en entry.Entry) coverage.Coverage {
	return coverage.Of(en.Subject(), e.Layers())
}

// Report is coverage.Report for this host's layers: the coverage of each
// field restricted alone. `enforcerd check` and the daemon's status show
// it.
func (e *Enforcer) Report() []coverage.Field { return coverage.Report(e.Layers()) }

// ReportFor is coverage.ReportFor for this host's layers and process layer
// p (nil: a container, or the daemon's API), without a spec layer.
func (e *Enforcer) ReportFor(p *coverage.ProcessLayer) []coverage.Field {
	return e.ReportForSpec(p, nil)
}

// ReportForSpec is coverage.ReportFor for this host's layers, process
// layer p and container spec layer s (nil: none).
func (e *Enforcer) ReportForSpec(p *coverage.ProcessLayer, s *coverage.SpecLayer) []coverage.Field {
	return coverage.ReportFor(e.Layers(), p, s)
}
