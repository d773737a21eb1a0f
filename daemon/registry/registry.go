// Package registry is the daemon's source of truth for registered
// containers: it derives each container's effective ceiling with the policy
// core, installs it through the enforcer, and persists it with package
// state. Every change is applied in the order map → state file → memory and
// rolled back in reverse on any error, under one lock, so the BPF map, the
// state file and List never disagree (nothing is half-applied).
//
// Fail direction: a request that cannot be enforced is refused; an unknown
// caller is treated as confined; reconcile never removes a live cgroup's
// ceiling and never touches pins.
//
// Nesting: a container is never wider than its parent (by id) nor than any
// registered cgroup above its own, at all times: Register takes the meet
// with both, and Narrow (or Register of an ancestor after its descendants)
// carries a new bound down to every descendant in the same transaction
// (nesting.go).
//
// Files: registry.go (Registry, Options, the errors), request.go (Request:
// its validation, with request_validate.go, the ceiling derivation, the
// cgroup it names),
// register.go (Register, Unregister), registration.go (the steps of
// Register: plan, kernelEntry and install, commit), narrow.go, nesting.go
// (the bound of ancestors by parent id and by cgroup, and its propagation
// to descendants), shellnone.go (vetting the programs a shell=none ceiling
// lets run), pending.go (activation at exec, the pending deadline) with
// pending_check.go (the decision for one container), reconcile.go
// (Reconcile, Sweep) with sweep.go (the steps of a sweep), query.go (Get,
// List, Identify, ...), events.go (Event), cgroups.go (Cgroups,
// SystemCgroups).
//
// Layering (docs/design.md): layer 4; it may import policy/,
// internal/failpoint/, internal/procid/, ownterm/, egress/,
// endpoint/, devallow/, progcheck/, cgroup/, entry/, coverage/, enforcer/,
// oci/ and daemon/state/, and of other modules no cilium/ebpf.
package registry

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/internal/procid"
	"github.com/enforcerd/enforcerd/ownterm"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// Errors callers (the API) map to status codes with errors.Is.
var (
	ErrBadRequest    = errors.New("bad request")
	ErrNotFound      = errors.New("container not registered")
	ErrConflict      = errors.New("conflict")
	ErrCannotEnforce = coverage.ErrCannotEnforce
	// ErrPartialCoverage also matches ErrCannotEnforce.
	ErrPartialCoverage = coverage.ErrPartial
	// ErrUnsafeProgram: under the effective ceiling shell=none, the
	// program the registration lets run (the entrypoint, or a program a
	// process in the cgroup already runs) is a shell, a multi-call binary
	// or the dynamic loader (package progcheck), or could not be
	// classified. The API answers 422 "unsafe_program".
	ErrUnsafeProgram = errors.New("unsafe program under shell=none")
	// ErrEntrypointRequired: a registration pending until the first exec
	// under the effective ceiling shell=none has no entrypoint the daemon
	// can resolve and read. That first exec is allowed from then on,
	// whatever it is, so the daemon must vet it beforehand. The API
	// answers 422 "entrypoint_required".
	ErrEntrypointRequired = errors.New("shell=none pending registration needs an entrypoint")
)

// Enforcer is the part of *enforcer.Enforcer the registry uses; tests pass a
// fake so the logic runs without BPF.
type Enforcer interface {
	Register(cgroup.Cgroup, entry.Entry) error
	Unregister(cgroupID uint64) error
	Lookup(cgroupID uint64) (entry.Entry, error)
	List() ([]enforcer.Registration, error)
	// Coverage says what the host enforces of a ceiling.
	Coverage(policy.KernelCeiling) coverage.Coverage
	// CoverageOf is Coverage of an entry's ceiling with what its allowed
	// endpoints add (coverage.GapNetworkEndpoints).
	CoverageOf(entry.Entry) coverage.Coverage
}

// Options configures New.
type Options struct {
	Enforcer  Enforcer
	Cgroups   Cgroups
	StatePath string
	// SelfGroup is the daemon's own cgroup: registering it or an ancestor
	// would enforce the daemon itself, so it is refused.
	SelfGroup string
	// Save persists the state (default state.Save); tests inject failures.
	Save func(path string, cs []state.Container) error
	Now  func() time.Time
	Log  *slog.Logger
	// PendingDeadline is how long a registration may stay pending (no
	// exec in its cgroup) before CheckPending freezes the cgroup
	// (default DefaultPendingDeadline).
	PendingDeadline time.Duration
	// GoneKept is how many removed containers Attribution remembers
	// (default DefaultGoneKept).
	GoneKept int
	// StartTime returns a process's start time in clock ticks after boot
	// (default procid.StartTime); tests substitute it.
	StartTime func(pid int) (uint64, error)
	// ProcExe returns the device and inode of the file a process runs
	// (default: stat of /proc/PID/exe) and ParentPID its parent's pid
	// (default procid.Parent): the pending check uses them to recognise
	// a registration's setup process (setup.go). Tests substitute them.
	ProcExe   func(pid int) (dev uint32, ino uint64, err error)
	ParentPID func(pid int) (int, error)
	// OnEvent, when set, is told of every activation and freeze decision
	// (the daemon writes them to the audit log and metrics). It is called
	// without the registry's lock held.
	OnEvent func(Event)
	// AllowPartial accepts registrations this host enforces only in part
	// (coverage.Coverage.Partial; the daemon's allow_partial setting).
	// They are refused with ErrPartialCoverage otherwise.
	AllowPartial bool
	// CheckEntrypoint resolves and classifies a shell=none registration's
	// entrypoint (default progcheck.Program.Check); CheckProcesses
	// classifies the programs processes already run (default
	// progcheck.CheckProcesses). Tests substitute them.
	CheckEntrypoint func(progcheck.Program) (progcheck.Vetted, error)
	CheckProcesses  func(pids []int) error
	// VetProcesses (default progcheck.VetProcesses) vets the programs
	// processes run and returns their program interpreters: at start,
	// for a shell=none container whose state comes from a build that did
	// not record them (recoverInterps).
	VetProcesses func(pids []int) ([]progcheck.FileRef, error)
	// OwnTerminals reads a process's own terminals (default ownterm.Of)
	// for Request.TerminalsOfInit; tests substitute it.
	OwnTerminals func(pid int) ([]entry.Terminal, error)
	// DenyConsoleEgress sets Entry.DenyConsoleEgress for every
	// registration (the daemon's deny_console_egress setting).
	DenyConsoleEgress bool
}

// DefaultPendingDeadline is Options.PendingDeadline's default.
const DefaultPendingDeadline = 30 * time.Second

// Registry holds the registered containers.
type Registry struct {
	mu       sync.Mutex
	o        Options
	byID     map[string]state.Container
	byCgroup map[uint64]string
	// gone keeps the containers removed last (at most o.GoneKept), by
	// cgroup id, for Attribution: a denial counted just before its
	// container was removed is summarized after.
	gone      map[uint64]state.Container
	goneOrder []uint64
	// adopted: per pending container id, the processes (pid → start
	// time) the pending check found to be its setup processes
	// (isSetupProcess). In memory only: after a restart the first
	// sighting decides again.
	adopted map[string]map[int]uint64
}

// DefaultGoneKept bounds the removed containers Attribution remembers:
// more removals than happen in a few summary intervals on a busy node.
const DefaultGoneKept = 4096

// New makes an empty registry; call Reconcile to load the state file.
func New(o Options) *Registry {
	if o.Save == nil {
		o.Save = state.Save
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.GoneKept <= 0 {
		o.GoneKept = DefaultGoneKept
	}
	if o.PendingDeadline <= 0 {
		o.PendingDeadline = DefaultPendingDeadline
	}
	if o.StartTime == nil {
		o.StartTime = procid.StartTime
	}
	if o.ProcExe == nil {
		o.ProcExe = procExe
	}
	if o.ParentPID == nil {
		o.ParentPID = procid.Parent
	}
	if o.CheckEntrypoint == nil {
		o.CheckEntrypoint = progcheck.Program.Vet
	}
	if o.VetProcesses == nil {
		o.VetProcesses = progcheck.VetProcesses
	}
	if o.CheckProcesses == nil {
		o.CheckProcesses = progcheck.CheckProcesses
	}
	if o.OwnTerminals == nil {
		o.OwnTerminals = ownterm.Of
	}
	return &Registry{o: o, byID: map[string]state.Container{}, byCgroup: map[uint64]string{}, gone: map[uint64]state.Container{}, adopted: map[string]map[int]uint64{}}
}

// snapshotWith is the current containers plus add (if its id is set) minus
// the container named drop.
func (r *Registry) snapshotWith(add state.Container, drop string) []state.Container {
	out := make([]state.Container, 0, len(r.byID)+1)
	for id, c := range r.byID {
		if id == drop || id == add.ID {
			continue
		}
		out = append(out, c)
	}
	if add.ID != "" {
		out = append(out, add)
	}
	return out
}
