// Package coverage decides what a host enforces of a ceiling: the gap
// codes (Gap), the per-field report (Field), and the one fail-closed rule
// (Of) that every registration path goes through, from the kernel
// programs' layers (Layers), a process layer `enforcerd run` applies itself
// (ProcessLayer, HostMechanisms) and a container's runtime spec
// (SpecLayer). The BPF loader (enforcer) reports its layers and refuses a
// registration by this rule; the daemon, the OCI hook and `enforcerd
// check` report it.
//
// It may import the standard library, golang.org/x/sys, go-landlock's
// syscall package (ProbeHost) and the vocabulary packages policy and
// endpoint; never cilium/ebpf, bpf or enforcer.
package coverage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/enforcerd/enforcerd/policy"
)

// ErrCannotEnforce: the ceiling needs a mechanism this host cannot run.
// The workload must be refused (fail closed) unless the operator opted
// into audit-only.
var ErrCannotEnforce = errors.New("ceiling cannot be enforced on this host")

// ErrPartial is wrapped (together with ErrCannotEnforce) by the
// error of a registration this host would enforce only in part, when the
// caller did not opt in with entry.Entry.AllowPartial.
var ErrPartial = errors.New("ceiling would be enforced only in part on this host")

// PartialRefused is the head of a refusal for partial coverage: its
// message is ErrPartial's alone ("ceiling would be enforced only
// in part on this host", not also "cannot be enforced"), and errors.Is
// matches both ErrPartial and ErrCannotEnforce, so callers that
// fail closed on ErrCannotEnforce refuse it too. Wrap it with %w.
var PartialRefused error = partialRefused{}

type partialRefused struct{}

func (partialRefused) Error() string { return ErrPartial.Error() }
func (partialRefused) Is(target error) bool {
	return target == ErrPartial || target == ErrCannotEnforce
}

// Gap codes: the stable names of what a host may fail to enforce of a
// ceiling. They appear in API responses, audit records and the
// enforcerd_unenforced_containers metric; a code is never renamed.
const (
	// GapNetwork: network=false has no mechanism at all (neither BPF LSM
	// nor cgroup-BPF programs are attached).
	GapNetwork = "network"
	// GapNetworkNonInet: network=false is enforced by the cgroup-BPF
	// socket hooks alone: AF_INET/AF_INET6 sockets the workload creates.
	// Other families (netlink, packet, vsock...), unix sockets whose peer
	// is outside (a proxy or broker), inet sockets inherited or passed in,
	// and tun/tap devices are not covered.
	GapNetworkNonInet = "network-non-inet"
	// GapWrite: write=false has no mechanism (it needs BPF LSM), writable
	// roots (entry.Entry.WriteRoots) included: the cgroup-BPF layer has no file
	// hooks.
	GapWrite = "write"
	// GapShell: a shell ceiling other than full has no mechanism (it needs
	// the BPF LSM exec hooks).
	GapShell = "shell"
	// GapTamper: nothing stops a privileged workload from leaving its
	// cgroup, detaching the programs or changing the maps (the tamper
	// protection is BPF LSM programs).
	GapTamper = "tamper"
)

// Gap is one part of a ceiling this host does not enforce.
type Gap struct {
	// Code is one of the Gap* codes.
	Code string `json:"code"`
	// Field is the ceiling field it weakens: network, write, shell, or
	// "all" for GapTamper.
	Field string `json:"field"`
	// Detail says what the kernel does not stop and which mechanism is
	// missing, with the reason it is missing.
	Detail string `json:"detail"`
}

func (g Gap) String() string { return g.Code + ": " + g.Detail }

// Coverage is what this host enforces of one kernel ceiling. A field the
// ceiling does not restrict never has a gap.
type Coverage struct {
	// Missing are restricted fields with no mechanism at all. A
	// registration with a missing field is refused (unless audit-only,
	// where nothing is denied anyway).
	Missing []Gap `json:"missing,omitempty"`
	// Partial are parts not enforced of fields that are otherwise
	// enforced. A registration with partial gaps is refused unless the
	// caller opts in (entry.Entry.AllowPartial).
	Partial []Gap `json:"partial,omitempty"`
	// Mechanisms names, per restricted field (network, write, shell; and
	// "tamper"), what enforces it: MechBPFLSM, MechCgroupBPF,
	// MechLandlock+"-abiN", MechSeccomp. Empty for a field with no
	// mechanism.
	Mechanisms map[string][]string `json:"mechanisms,omitempty"`
}

// Full reports whether every restricted field is enforced in full.
func (c Coverage) Full() bool { return len(c.Missing) == 0 && len(c.Partial) == 0 }

// Gaps is Missing followed by Partial.
func (c Coverage) Gaps() []Gap { return append(append([]Gap(nil), c.Missing...), c.Partial...) }

// Codes are the codes of Gaps, in the same order.
func (c Coverage) Codes() []string {
	var out []string
	for _, g := range c.Gaps() {
		out = append(out, g.Code)
	}
	return out
}

// Err is the refusal of a registration with this coverage: nil when it may
// be registered. A missing field wraps ErrCannotEnforce; partial gaps wrap
// ErrPartial and ErrCannotEnforce unless allowPartial. Audit-only
// registrations deny nothing and are never refused.
func (c Coverage) Err(auditOnly, allowPartial bool) error {
	if auditOnly {
		return nil
	}
	if len(c.Missing) > 0 {
		return fmt.Errorf("%w: %s", ErrCannotEnforce, joinGaps(c.Missing))
	}
	if len(c.Partial) > 0 && !allowPartial {
		return fmt.Errorf("%w: not enforced: %s; opt in to partial coverage to register it anyway (enforcerd run --allow-partial; the daemon's allow_partial: true)", PartialRefused, joinGaps(c.Partial))
	}
	return nil
}

func joinGaps(gs []Gap) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = g.String()
	}
	return strings.Join(s, "; ")
}

// Field coverage states (Field.State).
const (
	StateFull    = "full"    // every part of the field is enforced
	StatePartial = "partial" // enforced in part: Gaps says what is not
	StateNone    = "none"    // no mechanism: a registration restricting it is refused
)

// Field is how this host enforces one restricted ceiling field.
type Field struct {
	// Field is network, write or shell.
	Field string `json:"field"`
	// State is StateFull, StatePartial or StateNone.
	State string `json:"state"`
	// By names the mechanism that enforces it ("" for StateNone).
	By string `json:"by,omitempty"`
	// Mechanisms (ReportFor only): the Mech* names that enforce it.
	Mechanisms []string `json:"mechanisms,omitempty"`
	// Gaps: what is not enforced when the field alone is restricted
	// (network=false, write=false or shell=none), tamper included.
	Gaps []Gap `json:"gaps,omitempty"`
}

// Report is the coverage of each field restricted alone on a host with
// layers l, for a registration without a process layer: network=false,
// write=false, shell=none (read_only needs the same hooks), in that order.
// `enforcerd check` and the daemon's status show it.
func Report(l Layers) []Field {
	fields := []struct {
		name     string
		c        policy.KernelCeiling
		full, by string // mechanism when enforced in full / in part
	}{
		{"network", policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull},
			"bpf-lsm socket, unix peer, file and device hooks + cgroup-bpf socket hooks",
			"cgroup-bpf socket hooks (AF_INET/AF_INET6 sockets the workload creates)"},
		{"write", policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}, "bpf-lsm file and inode hooks", ""},
		{"shell", policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}, "bpf-lsm exec hooks", ""},
	}
	out := make([]Field, 0, len(fields))
	for _, f := range fields {
		cov := Of(Subject{Ceiling: f.c}, l)
		fc := Field{Field: f.name, Gaps: cov.Gaps()}
		switch {
		case len(cov.Missing) > 0:
			fc.State = StateNone
		case len(cov.Partial) > 0:
			fc.State, fc.By = StatePartial, f.by
		default:
			fc.State, fc.By = StateFull, f.full
		}
		out = append(out, fc)
	}
	return out
}

// Report fields of ReportFor, in order. "tamper" is what keeps every other
// field in force against a privileged workload.
var reportFields = []struct {
	name string
	c    policy.KernelCeiling
	key  string // Coverage.Mechanisms key
}{
	{"network", policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}, "network"},
	{"write", policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}, "write"},
	{"shell=none", policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}, "shell"},
	{"shell=read_only", policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellReadOnly}, "shell"},
	{"tamper", policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}, "tamper"},
}

// ReportFor is the coverage, on a host with layers l, of each field
// restricted alone (network=false, write=false, shell=none,
// shell=read_only) and of the tamper protection, in that order, for a
// registration with process layer p (nil: a container, or the daemon's
// API) and container spec layer s (nil: none; `enforcerd check`'s
// "containers-spec" passes a spec that gives every write and network
// rule, to show what a conforming container's runtime spec adds on this
// host: nothing with BPF LSM). A field's Gaps leave out GapTamper, which
// is the "tamper" row's. The decision is Of's.
func ReportFor(l Layers, p *ProcessLayer, s *SpecLayer) []Field {
	out := make([]Field, 0, len(reportFields))
	for _, f := range reportFields {
		cov := Of(Subject{Ceiling: f.c, Process: p, Spec: s}, l)
		fc := Field{Field: f.name, Mechanisms: cov.Mechanisms[f.key]}
		var missing, partial bool
		for _, g := range cov.Gaps() {
			if (g.Code == GapTamper) != (f.name == "tamper") {
				continue
			}
			fc.Gaps = append(fc.Gaps, g)
			if f.name != "tamper" && containsGap(cov.Missing, g.Code) {
				missing = true
			} else {
				partial = true
			}
		}
		switch {
		case missing:
			fc.State, fc.Mechanisms = StateNone, nil
		case partial:
			fc.State = StatePartial
		default:
			fc.State = StateFull
		}
		out = append(out, fc)
	}
	return out
}

func containsGap(gs []Gap, code string) bool {
	for _, g := range gs {
		if g.Code == code {
			return true
		}
	}
	return false
}
