package enforcer

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// MaxCgroupLevel bounds the in-kernel ancestor walk (MAX_CGROUP_LEVEL in
// bpf/maps.h). Register refuses cgroups at this level or deeper, so every
// enforced cgroup is seen by the walk.
const MaxCgroupLevel = int(bpf.SharedLimitsMAX_CGROUP_LEVEL)

// The bits of struct ceiling (bpf/maps.h) as Go writes and reads them.
const (
	denyNetwork    = uint32(bpf.SharedDenyBitDENY_NETWORK)
	denyWrite      = uint32(bpf.SharedDenyBitDENY_WRITE)
	denyShell      = uint32(bpf.SharedDenyBitDENY_SHELL)
	denyShellWrite = uint32(bpf.SharedDenyBitDENY_SHELL_WRITE)
	denyTamper     = uint32(bpf.SharedDenyBitDENY_TAMPER)
	flagAuditOnly  = uint32(bpf.SharedCeilingFlagCEILING_AUDIT_ONLY)
	flagPending    = uint32(bpf.SharedCeilingFlagCEILING_PENDING)
	flagPartialOK  = uint32(bpf.SharedCeilingFlagCEILING_PARTIAL_OK)
)

// Registration is one row of List.
type Registration struct {
	CgroupID uint64
	Entry    entry.Entry
}

// Register installs the ceiling for a cgroup and its whole subtree. An
// existing registration of the same cgroup is replaced. Errors: the cgroup is
// too deep for the in-kernel walk; ErrCannotEnforce when Coverage refuses
// the entry (Coverage.Err: a field without mechanism, or partial coverage
// without AllowPartial; never for AuditOnly); a pending entry on a host that
// cannot activate it at exec; ErrBadEndpoints for an AllowConnect list
// checkEndpoints refuses (with network allowed, too long, unresolved);
// ErrBadDevices for AllowDevices or Terminals checkDevices refuses (too
// long, a device number 0).
// The entry's Spec is kept in memory beside the maps (registerSpec).
func (e *Enforcer) Register(cg cgroup.Cgroup, en entry.Entry) error {
	if err := e.register(cg, en); err != nil {
		return err
	}
	e.keepSpec(cg.ID, en.Spec)
	return nil
}

// register writes en for cg in steps: validate it; settle whether it may
// stay pending; write its exec rules, then its lists (endpoints, devices,
// writable roots), then the ceiling that points at them; re-check a
// pending entry an exec may have activated meanwhile; invalidate the
// cached results. A failing step undoes what the steps before it wrote.
// Every error is prefixed "register cgroup <group>: ".
func (e *Enforcer) register(cg cgroup.Cgroup, en entry.Entry) error {
	if err := e.registerSteps(cg, en); err != nil {
		return fmt.Errorf("register cgroup %s: %w", cg.Group, err)
	}
	return nil
}

func (e *Enforcer) registerSteps(cg cgroup.Cgroup, en entry.Entry) error {
	if err := e.validate(cg, en); err != nil {
		return err
	}
	watch, err := e.settlePending(cg.ID, &en)
	if err != nil {
		return err
	}
	if err := e.writeExecRules(cg.ID, en); err != nil {
		return err
	}
	undo, err := e.writeLists(cg.ID, en)
	if err != nil {
		return err
	}
	if err := e.ceilings.Update(cg.ID, encode(en), ebpf.UpdateAny); err != nil {
		undo()
		return err
	}
	if err := e.confirmPending(cg.ID, en, watch); err != nil {
		return err
	}
	if err := e.invalidate(); err != nil {
		// The entry is in the map but cached results may not see it:
		// undo, so nothing is half-applied.
		e.dropRegistration(cg.ID)
		return err
	}
	return nil
}

// validate refuses what no kernel state may be changed for: a cgroup
// without id or too deep for the in-kernel walk, an entry the coverage
// rule refuses (coverage.Coverage.Err), lists entry.Check refuses.
func (e *Enforcer) validate(cg cgroup.Cgroup, en entry.Entry) error {
	if cg.ID == 0 {
		return errors.New("no cgroup id")
	}
	if cg.Level >= MaxCgroupLevel {
		return fmt.Errorf("level %d is deeper than the supported %d", cg.Level, MaxCgroupLevel-1)
	}
	if err := e.CoverageOf(en).Err(en.AuditOnly, en.AllowPartial); err != nil {
		return err
	}
	return entry.Check(en)
}

// pendingWatch is what confirmPending needs to tell whether an exec
// activated the old pending entry during the registration.
type pendingWatch struct {
	rePending bool   // a pending entry replaces a pending one
	activated uint64 // its activation count before the replacement
}

// settlePending never turns an active registration back into a pending
// one: that would lift the ceiling until the next exec (fail open); en
// is written active then. An exec may activate the old entry between this
// Lookup and the ceiling's update: its activation count (bpf/maps.h
// activations), read now and after the update (confirmPending), says so.
// The count is read before the Lookup, so an activation after it is seen
// whichever entry it cleared. Errors: the counter; a pending entry on a
// host that cannot activate it at exec (coverage.ErrCannotEnforce).
func (e *Enforcer) settlePending(cgroupID uint64, en *entry.Entry) (pendingWatch, error) {
	var w pendingWatch
	if en.Pending {
		n, err := e.activations(cgroupID)
		if err != nil {
			return w, err
		}
		w.activated = n
		if old, err := e.Lookup(cgroupID); err == nil {
			if !old.Pending {
				en.Pending = false
			} else {
				w.rePending = true
			}
		}
	}
	if en.Pending && !e.CanActivateAtExec() {
		return w, fmt.Errorf("%w: activation at exec needs tp_btf/sched_process_exec: %v", coverage.ErrCannotEnforce, e.LayerError(coverage.LayerLifecycle))
	}
	return w, nil
}

// writeExecRules lists the entry's exec allow list (programs,
// interpreters, entrypoints: shell=none only) and records the
// registration time (setSince). With a process layer and no BPF LSM
// layer, the exec rules are the process layer's (Landlock): the exec
// maps, which need BPF LSM (inode storage), are neither needed nor always
// creatable. On failure the allow list is dropped.
func (e *Enforcer) writeExecRules(cgroupID uint64, en entry.Entry) error {
	bpfExec := en.Process == nil || e.LayerError(coverage.LayerLSM) == nil
	if len(en.ExecAllow) > 0 || len(en.ExecInterp) > 0 || len(en.Entrypoints) > 0 {
		if en.Ceiling.Shell != policy.ShellNone {
			return fmt.Errorf("an exec allow list needs shell=none (have %s)", en.Ceiling.Shell)
		}
		if e.execAllow == nil && bpfExec {
			return fmt.Errorf("%w: exec allow list: %v", coverage.ErrCannotEnforce, e.execMapsErr)
		}
		if e.execAllow != nil {
			if err := e.addExecAllow(cgroupID, en.ExecAllow, en.ExecInterp, en.Entrypoints); err != nil {
				e.dropExecAllow(cgroupID)
				return fmt.Errorf("exec allow list: %w", err)
			}
		}
	}
	if err := e.setSince(cgroupID, en.Ceiling.Shell != policy.ShellFull && bpfExec); err != nil {
		e.dropExecAllow(cgroupID)
		return err
	}
	return nil
}

// writeLists writes the entry's allowed endpoints, devices and writable
// roots: all before the ceiling that points at them. It returns how to
// undo them and the exec allow list (the previous registration's lists,
// if any, put back) should the ceiling's update fail; on its own failure
// it has undone them already.
func (e *Enforcer) writeLists(cgroupID uint64, en entry.Entry) (undo func(), err error) {
	undoEndpoints, err := e.setEndpoints(cgroupID, en.AllowConnect)
	if err != nil {
		e.dropExecAllow(cgroupID)
		return nil, err
	}
	undoDevices, err := e.setDevices(cgroupID, en)
	if err != nil {
		undoEndpoints()
		e.dropExecAllow(cgroupID)
		return nil, err
	}
	old, oldErr := e.Lookup(cgroupID)
	undo = func() {
		undoEndpoints()
		undoDevices()
		e.dropExecAllow(cgroupID)
		if oldErr == nil {
			_ = e.setWriteRoots(cgroupID, old.WriteRoots)
			_ = e.setShmDir(cgroupID, old.ShmDir)
		} else {
			e.dropWriteRoots(cgroupID)
			e.dropShmDir(cgroupID)
		}
	}
	if err := e.setWriteRoots(cgroupID, en.WriteRoots); err != nil {
		undo()
		return nil, err
	}
	if err := e.setShmDir(cgroupID, en.ShmDir); err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}

// confirmPending writes a pending entry that replaced a pending one again
// as active when an exec activated the old one during the registration,
// or when that cannot be told (fail closed).
func (e *Enforcer) confirmPending(cgroupID uint64, en entry.Entry, w pendingWatch) error {
	if !w.rePending {
		return nil
	}
	n, err := e.activations(cgroupID)
	if err == nil && n == w.activated {
		return nil
	}
	en.Pending = false
	if err := e.ceilings.Update(cgroupID, encode(en), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("activated during the registration, and writing it active failed: %w", err)
	}
	return nil
}

// dropRegistration removes everything a registration wrote for a cgroup
// (its ceiling, lists and exec allow list) and invalidates the cached
// results once more.
func (e *Enforcer) dropRegistration(cgroupID uint64) {
	_ = e.ceilings.Delete(cgroupID)
	e.dropEndpoints(cgroupID)
	e.dropDevices(cgroupID)
	e.dropExecAllow(cgroupID)
	e.dropWriteRoots(cgroupID)
	e.dropShmDir(cgroupID)
	_ = e.invalidate()
}

// invalidate gives the ceilings map a new generation, so that every cached
// resolve() result (bpf/maps.h, struct enforcerd_config) is recomputed.
// The value is random rather than incremented: two processes changing the
// map at once must never both write the same generation.
func (e *Enforcer) invalidate() error {
	gen, err := newGeneration()
	if err != nil {
		return err
	}
	if err := e.config.Update(uint32(0), gen, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("invalidate cached ceilings: %w", err)
	}
	return nil
}

// The bits of an exec_allow value (bpf/exec.h enum exec_allow_bit), and
// the key of the marker that says a cgroup's entrypoints are listed.
const (
	execAsProgram    = uint8(bpf.SharedExecAllowBitEXEC_AS_PROGRAM)
	execAsInterp     = uint8(bpf.SharedExecAllowBitEXEC_AS_INTERP)
	execAsEntrypoint = uint8(bpf.SharedExecAllowBitEXEC_AS_ENTRYPOINT)
)

// entrypointsListed is the FileID of the marker entry that says a
// cgroup lists its entrypoints (bpf/exec.h enum exec_allow_marker).
var entrypointsListed = entry.FileID{Dev: uint32(bpf.SharedExecAllowMarkerEXEC_MARKER_ENTRYPOINTS_LISTED)}

// addExecAllow lists programs, interpreters and entrypoints for a cgroup,
// keeping the bits its entries already have (the entrypoint the kernel
// took, an earlier registration's files): a file may be several.
func (e *Enforcer) addExecAllow(cgroupID uint64, programs, interps, entrypoints []entry.FileID) error {
	bits := map[entry.FileID]uint8{}
	for _, f := range programs {
		bits[f] |= execAsProgram
	}
	for _, f := range interps {
		bits[f] |= execAsInterp
	}
	for _, f := range entrypoints {
		bits[f] |= execAsEntrypoint
	}
	if len(entrypoints) > 0 {
		bits[entrypointsListed] |= execAsEntrypoint
	}
	for f, b := range bits {
		k := bpf.SharedExecKey{CgroupId: cgroupID, Ino: f.Ino, Dev: f.Dev}
		var old uint8
		if err := e.execAllow.Lookup(k, &old); err == nil {
			b |= old
		}
		if err := e.execAllow.Update(k, b, ebpf.UpdateAny); err != nil {
			return err
		}
	}
	return nil
}

// dropExecAllow removes every allow-list entry of a cgroup.
func (e *Enforcer) dropExecAllow(cgroupID uint64) {
	if e.execAllow == nil {
		return
	}
	var (
		k    bpf.SharedExecKey
		v    uint8
		keys []bpf.SharedExecKey
	)
	it := e.execAllow.Iterate()
	for it.Next(&k, &v) {
		if k.CgroupId == cgroupID {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		_ = e.execAllow.Delete(k)
	}
}

// setSince records when the cgroup was registered (bpf/exec.h
// ceiling_since): under shell=none/read_only, files whose inode changed at
// or after that time count as written by the sandbox. The time comes from
// CLOCK_REALTIME_COARSE, the clock that stamps inode times, after waiting
// for its next tick (at most one jiffy): every change made after Register
// returns carries a ctime at or after it, and nothing changed before
// Register began does. A re-registration keeps the earlier time (the
// narrower choice). Errors: the clock or the map; ErrCannotEnforce when
// needed (a restricted shell) and the shell layer's maps are missing.
func (e *Enforcer) setSince(cgroupID uint64, needed bool) error {
	if e.since == nil {
		if needed {
			return fmt.Errorf("%w: registration time: %v", coverage.ErrCannotEnforce, e.execMapsErr)
		}
		return nil
	}
	var old uint64
	if err := e.since.Lookup(cgroupID, &old); err == nil && old != 0 {
		return nil
	}
	now, err := coarseTick()
	if err != nil {
		return err
	}
	if err := e.since.Update(cgroupID, now, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("registration time: %w", err)
	}
	return nil
}

// coarseTick waits until CLOCK_REALTIME_COARSE moves on and returns its new
// value in nanoseconds since the epoch.
func coarseTick() (uint64, error) {
	var t0 unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &t0); err != nil {
		return 0, fmt.Errorf("clock_gettime(CLOCK_REALTIME_COARSE): %w", err)
	}
	for i := 0; ; i++ {
		var t unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &t); err != nil {
			return 0, fmt.Errorf("clock_gettime(CLOCK_REALTIME_COARSE): %w", err)
		}
		if t != t0 {
			return uint64(t.Nano()), nil
		}
		if i > 10000 {
			return 0, errors.New("CLOCK_REALTIME_COARSE did not advance in 1 s")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// Unregister removes the ceiling of a cgroup. Errors: ErrNotRegistered.
func (e *Enforcer) Unregister(cgroupID uint64) error {
	defer e.keepSpec(cgroupID, nil)
	defer e.dropExecAllow(cgroupID)
	defer e.dropEndpoints(cgroupID)
	defer e.dropDevices(cgroupID)
	defer e.dropWriteRoots(cgroupID)
	defer e.dropShmDir(cgroupID)
	if e.since != nil {
		defer func() { _ = e.since.Delete(cgroupID) }()
	}
	if m := e.shared[bpf.SharedMapActivations]; m != nil {
		defer func() { _ = m.Delete(cgroupID) }()
	}
	if err := e.ceilings.Delete(cgroupID); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("unregister cgroup id %d: %w", cgroupID, ErrNotRegistered)
		}
		return fmt.Errorf("unregister cgroup id %d: %w", cgroupID, err)
	}
	if err := e.invalidate(); err != nil {
		return fmt.Errorf("unregister cgroup id %d: %w", cgroupID, err)
	}
	return nil
}

// activations returns how many times the kernel activated cgroupID's
// pending entry at exec (bpf/maps.h activations), creating its counter at
// 0 when it has none yet. Errors: the map refuses the counter (full).
func (e *Enforcer) activations(cgroupID uint64) (uint64, error) {
	m := e.shared[bpf.SharedMapActivations]
	if m == nil {
		return 0, errors.New("activation counters: map missing")
	}
	var n uint64
	err := m.Lookup(cgroupID, &n)
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, ebpf.ErrKeyNotExist) {
		return 0, fmt.Errorf("activation counter: %w", err)
	}
	if err := m.Update(cgroupID, uint64(0), ebpf.UpdateNoExist); err != nil && !errors.Is(err, ebpf.ErrKeyExist) {
		return 0, fmt.Errorf("activation counter: %w", err)
	}
	if err := m.Lookup(cgroupID, &n); err != nil {
		return 0, fmt.Errorf("activation counter: %w", err)
	}
	return n, nil
}

// Lookup returns the entry of a cgroup. Errors: ErrNotRegistered.
func (e *Enforcer) Lookup(cgroupID uint64) (entry.Entry, error) {
	var v bpf.SharedCeiling
	if err := e.ceilings.Lookup(cgroupID, &v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return entry.Entry{}, fmt.Errorf("cgroup id %d: %w", cgroupID, ErrNotRegistered)
		}
		return entry.Entry{}, err
	}
	en := decode(v)
	en.Spec = e.specOf(cgroupID)
	en.AllowConnect = e.lookupEndpoints(cgroupID)
	e.lookupDevices(cgroupID, &en)
	e.lookupShmDir(cgroupID, &en)
	if err := e.readWriteRoots(cgroupID, v.Flags, &en); err != nil {
		return entry.Entry{}, err
	}
	return en, nil
}

// List returns every registration, ordered by cgroup id.
func (e *Enforcer) List() ([]Registration, error) {
	var (
		id  uint64
		v   bpf.SharedCeiling
		out []Registration
	)
	it := e.ceilings.Iterate()
	for it.Next(&id, &v) {
		en := decode(v)
		en.AllowConnect = e.lookupEndpoints(id)
		e.lookupDevices(id, &en)
		e.lookupShmDir(id, &en)
		en.WriteRoots = rootsFlag(v.Flags)
		out = append(out, Registration{CgroupID: id, Entry: en})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("list registrations: %w", err)
	}
	for i := range out {
		if out[i].Entry.WriteRoots == nil {
			continue
		}
		if err := e.readWriteRoots(out[i].CgroupID, flagWriteRoots, &out[i].Entry); err != nil {
			return nil, fmt.Errorf("list registrations: %w", err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CgroupID < out[j].CgroupID })
	return out, nil
}

func encode(en entry.Entry) bpf.SharedCeiling {
	var v bpf.SharedCeiling
	if !en.Ceiling.Network {
		v.Deny |= denyNetwork
	}
	if !en.Ceiling.Write {
		v.Deny |= denyWrite
	}
	switch en.Ceiling.Shell {
	case policy.ShellFull:
	case policy.ShellReadOnly:
		v.Deny |= denyShellWrite
	default: // none, and anything unknown: the narrowest
		// Allow-listed programs keep the container's write; the meet
		// with a read_only ancestor (OR of bits) adds denyShellWrite.
		v.Deny |= denyShell
	}
	if en.AuditOnly {
		v.Flags |= flagAuditOnly
	}
	if en.Pending {
		v.Flags |= flagPending
	}
	if en.AllowPartial {
		v.Flags |= flagPartialOK
	}
	if len(en.WriteRoots) > 0 && !en.Ceiling.Write {
		v.Flags |= flagWriteRoots
	}
	return v
}

func decode(v bpf.SharedCeiling) entry.Entry {
	return entry.Entry{
		Ceiling: policy.KernelCeiling{
			Network: v.Deny&denyNetwork == 0,
			Write:   v.Deny&denyWrite == 0,
			Shell:   decodeShell(v.Deny),
		},
		AuditOnly:    v.Flags&flagAuditOnly != 0,
		Pending:      v.Flags&flagPending != 0,
		AllowPartial: v.Flags&flagPartialOK != 0,
	}
}

func decodeShell(deny uint32) policy.Shell {
	switch {
	case deny&denyShell != 0:
		return policy.ShellNone
	case deny&denyShellWrite != 0:
		return policy.ShellReadOnly
	default:
		return policy.ShellFull
	}
}

// newGeneration is a fresh random 64-bit generation (the ceilings' and the
// renames': a value no earlier write can have used). Errors: no randomness.
func newGeneration() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("new generation: %w", err)
	}
	return binary.NativeEndian.Uint64(b[:]), nil
}
