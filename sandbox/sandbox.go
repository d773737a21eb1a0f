// Package sandbox runs one command tree under a kernel ceiling: the
// lifecycle behind `enforcerd run`. It creates a transient cgroup, decides
// whether this host can enforce the ceiling, registers the cgroup with the
// enforcer, starts the command directly inside it and, when the command is
// done, kills what is left and only then lifts the ceiling.
//
// The stages, in the order a caller goes through them:
//
//	sb, err := sandbox.Open(cfg)  // checks only: nothing is created yet
//	defer sb.Close()              // kill everything left, then unregister
//	sb.Coverage()                 // what this host enforces of cfg.Ceiling
//	err = sb.Register()           // cgroup, RLIMIT_CORE, registration
//	stop, err := sb.WatchDenials(fn)
//	err = sb.Run(cmd, signals...) // CMD inside the cgroup, signals forwarded
//	lost := stop()
//
// Fail direction: closed. Every error of Open and Register means the
// command must not run (`enforcerd run` exits 125), and Run refuses to start
// anything in a sandbox whose registration did not succeed. A ceiling this
// host enforces only in part is refused unless Config.AllowPartial; one it
// cannot enforce at all is always refused (unless Config.AuditOnly, which
// denies nothing). Close never lifts the ceiling while a process of the
// sandbox may still run.
//
// The package prints nothing: the caller words every message (the CLI) and
// receives denials through a callback.
//
// Layering (docs/design.md): layer 3; it may import policy/, endpoint/,
// progcheck/, cgroup/, entry/, coverage/, denial/, enforcer/ and
// sandbox/fallback/, and of other modules no cilium/ebpf.
package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
	"github.com/enforcerd/enforcerd/sandbox/fallback"
)

// RemoveTimeout bounds how long Close waits for the killed processes of
// the sandbox to exit.
const RemoveTimeout = 5 * time.Second

// ErrStaysRegistered is wrapped by Close's error when processes of the
// sandbox could not be killed: the ceiling is left registered so that they
// stay held by it (the cgroup too stays).
var ErrStaysRegistered = errors.New("the ceiling stays registered")

// ErrNotRegistered: Run or WatchDenials was called on a sandbox whose
// Register did not succeed.
var ErrNotRegistered = errors.New("sandbox not registered")

// Config describes one sandbox.
type Config struct {
	// Ceiling is the kernel ceiling of the command tree.
	Ceiling policy.KernelCeiling
	// AuditOnly records would-be denials and denies nothing.
	AuditOnly bool
	// AllowPartial accepts a ceiling this host enforces only in part
	// (coverage.Coverage.Partial). Without it such a ceiling is refused.
	AllowPartial bool
	// Entrypoint is the file the command's exec runs (a path to an
	// existing file, as exec.LookPath returns it). Under shell=none it
	// must not be a shell, a multi-call binary or the dynamic loader.
	Entrypoint string
	// ExecAllow: with shell=none, the other files the command tree may
	// exec (matched by device and inode at Register). Only with
	// shell=none; the same program check as Entrypoint applies.
	ExecAllow []string
	// AllowConnect: with network=false, the endpoints the command tree
	// may still reach (entry.Entry.AllowConnect; unix endpoints
	// resolved, endpoint.Resolve).
	AllowConnect []endpoint.Endpoint
	// WriteRoots: with write=false, the directories (by identity,
	// entry.WriteRootOf) beneath which writes stay allowed.
	WriteRoots []entry.FileID
	// AllowDevices: the device nodes the command tree may use besides the
	// null-like devices and its own terminals, under every ceiling
	// (entry.Entry.AllowDevices; at most entry.MaxAllowDevices).
	AllowDevices []entry.Device
	// Terminals: the command tree's own terminals, those it inherits
	// (ownterm; entry.Entry.Terminals). Every other terminal
	// is a host device.
	Terminals []entry.Terminal
	// DenyConsoleEgress: under network=false, an own terminal that
	// leaves the machine is refused (entry.Entry.DenyConsoleEgress).
	DenyConsoleEgress bool
	// CgroupParent is the cgroup v2 group ("/a/b", below the cgroup2
	// mount) the transient cgroup is created under. "": the calling
	// process's own cgroup.
	CgroupParent string
	// CgroupName is the transient cgroup's name. "": enforcerd-run-<pid>
	// of the calling process.
	CgroupName string
	// WriteRootPaths are the paths of WriteRoots, in the same order (the
	// process layer's Landlock rules name paths; their identities are
	// checked again when the rules are added).
	WriteRootPaths []string
	// Helper is the enforcerd binary that applies the process layer
	// (sandbox/fallback.Main behind fallback.HelperArg) on a host without
	// BPF LSM. "": no process layer (coverage as for a container).
	Helper string
	// PinDir and VerifierLog are passed to enforcer.Open.
	PinDir      string
	VerifierLog io.Writer
}

// Sandbox is one transient cgroup, its registration and the command run
// in it. Its methods are not safe for concurrent use, except that the
// WatchDenials callback runs on its own goroutine.
type Sandbox struct {
	cfg    Config
	enf    *enforcer.Enforcer
	mount  string
	parent string
	cov    coverage.Coverage
	// proc and spec: the process layer, when the BPF LSM layer is
	// missing and cfg.Helper is set (nil otherwise).
	proc *coverage.ProcessLayer
	spec *fallback.Spec
	// interps: under shell=none, the program interpreters vetted for
	// the entrypoint and the ExecAllow files (Entry.ExecInterp).
	interps []entry.FileID
	// entryID: under shell=none, the identity of the entrypoint as it
	// was vetted (through one descriptor): the only file the
	// registration's first exec may name (Entry.Entrypoints), or the
	// listed entrypoint when the entry is in force at once, so a file
	// swapped in at CMD's path after the vetting is refused.
	entryID *entry.FileID
	// allowIDs: the ExecAllow files' identities as they were vetted.
	allowIDs []entry.FileID
	// shmDir: the caller's POSIX shared memory directory
	// (entry.ShmDirOf), zero when it has none the rule can name.
	shmDir entry.FileID

	reg Registrar // nil until Register: pinRegistrar then

	cg         cgroup.Cgroup
	created    bool // cg exists: Close removes it
	registered bool // cg is registered: Close unregisters it
	// deferred: the registration is Run's (an InitRegistrar): initEntry
	// is installed with the exec gate's pid; restoreCore puts
	// RLIMIT_CORE back when that fails.
	deferred    bool
	initEntry   entry.Entry
	restoreCore func() error
	outer       []Outer
	orphans     []Orphan
	stopWatch   func() uint64
	closed      bool
}

// Open checks that cfg can be enforced on this host, creating nothing:
// the exec allow list needs shell=none; under shell=none no allowed
// program (Entrypoint, ExecAllow) may run other programs without an exec
// (progcheck.CheckHost); the cgroup2 mount and the parent cgroup
// must exist; the enforcer is opened (loading or re-adopting the pinned
// programs) and the ceiling's coverage decided (coverage.Coverage.Err with
// AuditOnly and AllowPartial; AllowPartial is capped by the host policy a
// daemon recorded in the pins, enforcer.HostPolicy). Errors: any of these;
// a partial-coverage
// refusal wraps coverage.ErrPartial and coverage.ErrCannotEnforce,
// a missing mechanism coverage.ErrCannotEnforce, an unsafe program
// *progcheck.UnsafeError. On error nothing is left open.
func Open(cfg Config) (*Sandbox, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	ids, err := vetPrograms(cfg)
	if err != nil {
		return nil, err
	}
	mount, parent, err := parentCgroup(cfg)
	if err != nil {
		return nil, err
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: cfg.PinDir, CgroupMount: mount, VerifierLog: cfg.VerifierLog})
	if err != nil {
		return nil, err
	}
	proc := processLayer(cfg, enf)
	cov := enf.CoverageOf(entry.Entry{Ceiling: cfg.Ceiling, AllowConnect: cfg.AllowConnect, Process: proc})
	spec, err := planProcessLayer(cfg, cov, proc)
	if err == nil {
		err = checkHostPolicy(cfg, cov, enf)
	}
	if err != nil {
		enf.Close()
		return nil, err
	}
	return &Sandbox{cfg: cfg, enf: enf, mount: mount, parent: parent, cov: cov, proc: proc, spec: spec,
		interps: ids.interps, entryID: ids.entry, allowIDs: ids.allow}, nil
}

// checkConfig checks cfg by itself: the exec allow list needs
// shell=none, allowed endpoints network=false, devices and terminals
// within the kernel's limits, and an entrypoint.
func checkConfig(cfg Config) error {
	if len(cfg.ExecAllow) > 0 && cfg.Ceiling.Shell != policy.ShellNone {
		return fmt.Errorf("an exec allow list needs shell=none (the ceiling's shell is %s)", cfg.Ceiling.Shell)
	}
	if len(cfg.AllowConnect) > 0 && cfg.Ceiling.Network {
		return errors.New("allowed endpoints need network=false (network is allowed)")
	}
	if len(cfg.AllowDevices) > entry.MaxAllowDevices || len(cfg.Terminals) > entry.MaxTerminals {
		return fmt.Errorf("%d allowed devices and %d own terminals: at most %d and %d", len(cfg.AllowDevices), len(cfg.Terminals), entry.MaxAllowDevices, entry.MaxTerminals)
	}
	if cfg.Entrypoint == "" {
		return errors.New("no entrypoint")
	}
	return nil
}

// vettedIDs are the identities of the files a shell=none vetting read:
// the entrypoint, the exec allow list, their interpreters.
type vettedIDs struct {
	entry          *entry.FileID
	allow, interps []entry.FileID
}

// vetPrograms vets the entrypoint and the exec allow list under
// shell=none (progcheck.VetHost), before anything is set up: an allowed
// program that runs every other one without exec would empty the
// ceiling. Each file is vetted through one descriptor, whose identity
// the registration keeps. Other shells: nothing to vet, no identities.
func vetPrograms(cfg Config) (vettedIDs, error) {
	var ids vettedIDs
	if cfg.Ceiling.Shell != policy.ShellNone {
		return ids, nil
	}
	vetted, err := progcheck.VetHost(append([]string{cfg.Entrypoint}, cfg.ExecAllow...)...)
	if err != nil {
		return ids, fmt.Errorf("shell=none: %w", err)
	}
	id := fileIDOf(vetted.Files[0])
	ids.entry = &id
	for _, a := range vetted.Files[1:] {
		ids.allow = append(ids.allow, fileIDOf(a))
	}
	for _, in := range vetted.Interps {
		ids.interps = append(ids.interps, fileIDOf(in))
	}
	return ids, nil
}

// parentCgroup returns the cgroup2 mount and the parent cgroup of the
// sandbox's: cfg.CgroupParent, which must exist, or this process's own.
func parentCgroup(cfg Config) (mount, parent string, err error) {
	if mount, err = cgroup.Mountpoint(); err != nil {
		return "", "", err
	}
	parent = cfg.CgroupParent
	if parent == "" {
		if parent, err = cgroup.PidGroup(os.Getpid()); err != nil {
			return "", "", err
		}
	} else if _, err := cgroup.Open(mount, parent); err != nil {
		return "", "", fmt.Errorf("cgroup parent: %w", err)
	}
	return mount, parent, nil
}

// planProcessLayer decides whether cov can be enforced (Coverage.Err with
// AuditOnly and AllowPartial) and plans the process layer proc, if any,
// with Landlock or seccomp (fallback.Plan; nil when there is none).
func planProcessLayer(cfg Config, cov coverage.Coverage, proc *coverage.ProcessLayer) (*fallback.Spec, error) {
	if err := cov.Err(cfg.AuditOnly, cfg.AllowPartial); err != nil {
		return nil, err
	}
	if proc == nil || !(proc.Host.Landlock() || proc.Host.Seccomp()) {
		return nil, nil
	}
	var exe []string
	if cfg.Ceiling.Shell == policy.ShellNone {
		exe = append([]string{cfg.Entrypoint}, cfg.ExecAllow...)
	}
	sp, err := fallback.Plan(fallback.Config{Ceiling: cfg.Ceiling, Host: proc.Host, WriteRoots: cfg.WriteRootPaths,
		Exec: exe, AllowConnect: cfg.AllowConnect})
	if err != nil {
		return nil, fmt.Errorf("%w: process layer: %v", coverage.ErrCannotEnforce, err)
	}
	return &sp, nil
}

// checkHostPolicy refuses partial coverage the operator's choice,
// recorded by the daemon in the pins, does not allow: it caps
// AllowPartial (unreadable: the narrowest choice). Errors wrap
// coverage.PartialRefused.
func checkHostPolicy(cfg Config, cov coverage.Coverage, enf *enforcer.Enforcer) error {
	if len(cov.Partial) == 0 || cfg.AuditOnly {
		return nil
	}
	hp, recorded, err := enf.HostPolicy()
	if !recorded || (err == nil && hp.AllowPartial) {
		return nil
	}
	why := "allow_partial is false in the enforcerd daemon's configuration"
	if err != nil {
		why = err.Error()
	}
	return fmt.Errorf("%w: partial coverage is not allowed on this host: %s (recorded in %s)", coverage.PartialRefused, why, enforcer.HostPolicyPin)
}

// processLayer is the process layer Open uses: only without the BPF LSM
// layer, for a restricting ceiling that denies (not audit-only), when a
// helper can apply it.
func processLayer(cfg Config, enf *enforcer.Enforcer) *coverage.ProcessLayer {
	c := cfg.Ceiling
	if cfg.Helper == "" || cfg.AuditOnly || enf.LayerError(coverage.LayerLSM) == nil || (c.Network && c.Write && c.Shell == policy.ShellFull) {
		return nil
	}
	if len(cfg.WriteRootPaths) != len(cfg.WriteRoots) {
		return nil // no paths for the Landlock rules: write stays missing
	}
	return &coverage.ProcessLayer{Host: coverage.ProbeHost()}
}

// ProcessLayer is the process layer applied to the command (nil: none):
// what the host offers, for messages.
func (s *Sandbox) ProcessLayer() *coverage.ProcessLayer {
	if s.spec == nil {
		return nil
	}
	return s.proc
}

// DaemonReadsRecords reports whether a live enforcerd daemon reads the
// denial records of these pins (enforcer.HostPolicy.DaemonPID names a
// running process called enforcerd): the records then belong to its audit
// log, and a second reader would take some of them away from it.
func (s *Sandbox) DaemonReadsRecords() bool {
	hp, recorded, err := s.enf.HostPolicy()
	if !recorded || err != nil || hp.DaemonPID <= 0 {
		return false
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", hp.DaemonPID))
	return err == nil && strings.TrimSpace(string(comm)) == "enforcerd"
}

// Coverage is what this host enforces of the ceiling (decided by Open).
func (s *Sandbox) Coverage() coverage.Coverage { return s.cov }

// PartialAccepted lists the gaps Open accepted because of AllowPartial:
// what is not enforced although the ceiling denies it. Empty when the
// ceiling is enforced in full, and for an audit-only sandbox (which denies
// nothing; see Coverage).
func (s *Sandbox) PartialAccepted() []coverage.Gap {
	if s.cfg.AuditOnly {
		return nil
	}
	return s.cov.Partial
}

// Cgroup is the transient cgroup (after Register).
func (s *Sandbox) Cgroup() cgroup.Cgroup { return s.cg }

// Orphans lists what Register removed of killed runs (CleanOrphans).
func (s *Sandbox) Orphans() []Orphan { return s.orphans }

// Outer lists the registered cgroups at and above the parent, nearest
// first (after Register): their ceilings apply to the sandbox too.
func (s *Sandbox) Outer() []Outer { return s.outer }

// Register creates the transient cgroup under the parent, reads the outer
// ceilings, sets this process's RLIMIT_CORE to 1/1 (LimitCore: the command
// inherits it at fork, since Go cannot set a limit between fork and exec)
// and registers the ceiling. The entry is pending (in force from the
// command's exec, before its first instruction, which also puts the
// entrypoint on a shell=none allow list) when the lifecycle program is
// attached; otherwise it is in force at once and the entrypoint is added
// to the allow list by identity. The registration goes through the
// Registrar (SetRegistrar; default: the pinned maps); with an
// InitRegistrar it is left to Run, which names the exec gate's pid.
// Errors: any step; the RLIMIT_CORE change is put back when the
// registration fails, and Close removes the cgroup.
func (s *Sandbox) Register() error {
	if s.closed || s.created {
		return errors.New("sandbox: Register called twice or after Close")
	}
	if s.reg == nil {
		s.reg = pinRegistrar{s.enf}
	}
	name := s.cfg.CgroupName
	if name == "" {
		name = fmt.Sprintf("%s%d", runCgroupPrefix, os.Getpid())
		// Best effort: what killed runs left here goes first.
		s.orphans, _ = s.CleanOrphans()
	}
	cg, err := cgroup.Create(s.mount, path.Join(s.parent, name))
	if err != nil {
		return err
	}
	s.cg, s.created = cg, true
	if s.outer, err = outerCeilings(s.enf, s.mount, s.parent); err != nil {
		return err
	}
	for i := range s.outer {
		if !s.outer[i].Entry.AuditOnly {
			s.outer[i].Unenforced = s.enf.Coverage(s.outer[i].Entry.Ceiling).Gaps()
		}
	}
	// The command shares this process's mounts: its /dev/shm is ours.
	// None the rule can name: its files are written like any other.
	s.shmDir, _ = entry.ShmDirOf("/", "/proc/self/mountinfo")
	en := s.entry(s.enf.CanActivateAtExec())
	restore, err := LimitCore(0)
	if err != nil {
		return err
	}
	if _, ok := s.reg.(InitRegistrar); ok {
		s.deferred, s.initEntry, s.restoreCore = true, en, restore
		return nil
	}
	if err := s.reg.Register(cg, en); err != nil {
		if rerr := restore(); rerr != nil {
			return fmt.Errorf("%w; %v", err, rerr)
		}
		return err
	}
	s.registered = true
	return nil
}

// entry is the registration of the sandbox's ceiling: pending or not,
// with the exec allow list, the entrypoint and their interpreters by the
// identities Open vetted.
func (s *Sandbox) entry(pending bool) entry.Entry {
	e := entry.Entry{Ceiling: s.cfg.Ceiling, AuditOnly: s.cfg.AuditOnly, Pending: pending,
		AllowPartial: len(s.cov.Partial) > 0, AllowConnect: s.cfg.AllowConnect, WriteRoots: s.cfg.WriteRoots, Process: s.proc,
		AllowDevices: s.cfg.AllowDevices, Terminals: s.cfg.Terminals, DenyConsoleEgress: s.cfg.DenyConsoleEgress,
		ShmDir: s.shmDir}
	if s.cfg.Ceiling.Shell == policy.ShellNone {
		e.ExecInterp = s.interps
		// The files as they were vetted, not their paths again.
		e.ExecAllow = append(e.ExecAllow, s.allowIDs...)
	}
	if s.entryID != nil {
		// The vetted file: the only one the first exec may name, or,
		// without activation at exec, listed.
		if pending {
			e.Entrypoints = []entry.FileID{*s.entryID}
		} else {
			e.ExecAllow = append(e.ExecAllow, *s.entryID)
		}
	}
	return e
}

// Close stops a denial watch still running, kills every process left in
// the cgroup subtree (daemonized children included), removes the cgroup
// and only then unregisters the ceiling: the other order would leave
// stragglers unenforced in between. If they cannot be killed the ceiling
// stays registered and the error wraps ErrStaysRegistered. It closes the
// enforcer (the programs stay pinned) and may be called more than once.
func (s *Sandbox) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.stopWatch != nil {
		s.stopWatch()
	}
	var err error
	if s.created {
		if rerr := s.cg.Remove(RemoveTimeout); rerr != nil {
			if s.registered {
				err = fmt.Errorf("%w (%w)", rerr, ErrStaysRegistered)
			} else {
				err = rerr
			}
		} else if s.registered {
			err = s.reg.Unregister(s.cg)
		}
	}
	s.enf.Close()
	return err
}

// fileIDOf is the identity of a vetted file (stat's st_dev in the
// kernel's dev_t encoding, entry.FileIDOfStat).
func fileIDOf(r progcheck.FileRef) entry.FileID {
	return entry.FileIDOfStat(&unix.Stat_t{Dev: r.Dev, Ino: r.Ino})
}
