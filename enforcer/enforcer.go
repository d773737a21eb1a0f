// Package enforcer loads, attaches and pins enforcerd's eBPF programs, keeps
// the ceiling map, and reads denial records. It is the only package that
// touches BPF objects; callers get a small typed API (Open, Register,
// Unregister, Lookup, List, NewReader, Close).
//
// Persistence: maps and links are pinned under Options.PinDir (the layout is
// in pins.go: MapPinPath, LinkPinPath), so enforcement stays in force when
// the process that loaded it exits or crashes. Open adopts the pins of its
// own build as they are: a restart changes nothing in the kernel. Pins of
// another build (an upgrade or a downgrade, told apart by the pinned build
// id) are replaced link by link: this build's program is attached and its
// link pinned over the old pin before the old link is released, so no hook
// is ever without a program. Maps are always adopted, never replaced, so
// registrations survive both. Open removes no map pin; Uninstall removes
// every pin.
//
// The package reads no environment variables and no configuration of its
// own: everything comes through Options.
//
// Layering (docs/design.md): layer 2; it may import bpf/, cgroup/, policy/,
// endpoint/, entry/, coverage/ and denial/, and of other modules any
// (cilium/ebpf included).
package enforcer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
)

// Errors callers test with errors.Is.
var (
	// ErrNotRegistered: no ceiling is registered for the cgroup.
	ErrNotRegistered = errors.New("cgroup not registered")

	// errLayerUnsupported marks a layer this host cannot run at all (as
	// opposed to one that failed to load).
	errLayerUnsupported = errors.New("not supported on this host")
)

// layers lists every layer, in the order Open reports them.
var layers = []coverage.Layer{coverage.LayerLSM, coverage.LayerCgroup, coverage.LayerLifecycle}

// Options configures Open.
type Options struct {
	// PinDir holds the pinned maps and links (default DefaultPinDir). It
	// must be on a bpf filesystem; Open mounts bpffs at /sys/fs/bpf if
	// nothing is mounted there.
	PinDir string
	// CgroupMount is the cgroup2 mount point (default: from mountinfo).
	CgroupMount string
	// CgroupAttach is the cgroup directory, on the cgroup2 mount, the
	// cgroup-BPF programs attach at (default: CgroupMount, the root, so
	// that they hold every cgroup). Below another cgroup they hold only
	// processes in its subtree: tests attach below a cgroup they own, so
	// that nothing outside it is touched. Links adopted from pins stay
	// where they were attached.
	CgroupAttach string
	// VerifierLog, when set, receives the kernel verifier's log of every
	// program the kernel rejects, after a line naming the layer. nil: the
	// log is dropped (the error still says which object failed).
	VerifierLog io.Writer
}

// Enforcer holds the loaded or adopted programs and the shared maps.
type Enforcer struct {
	opts Options
	// shared holds every map of bpf/shared.bpf.c by name, as pinned; nil
	// entries could not be created (see execMapsErr).
	shared map[string]*ebpf.Map
	// The shared maps Go reads or writes itself.
	ceilings *ebpf.Map
	events   *ebpf.Map
	stats    *ebpf.Map
	config   *ebpf.Map // generation of the ceilings map (bpf/maps.h)
	// The tally slots and their inner maps' specs (bpf/tally.h, Tally).
	tallySlot, tallyOvfSlot *ebpf.Map
	tallySpec, tallyOvfSpec *ebpf.MapSpec
	// Shell ceiling state (bpf/exec.h); nil when the kernel cannot create
	// task/inode storage maps (then the LSM layer is unavailable too).
	execAllow   *ebpf.Map
	since       *ebpf.Map // registration times (bpf/exec.h ceiling_since)
	execMapsErr error
	// buildID holds the bpf.BuildID of the programs the pinned links run;
	// stale is true when that is not this build's (the links are replaced).
	buildID  *ebpf.Map
	stale    bool
	links    map[string]link.Link
	replaced []link.Link     // links of another build whose pins were taken over
	pinNames map[string]bool // link pin names of every program of this build
	hooks    []coverage.HookStatus
	layerErr map[coverage.Layer]error
	// specs: Entry.Spec of each registered cgroup id (keepSpec).
	specs sync.Map
}

// Open loads the programs (or re-adopts pinned ones) and attaches what is
// missing. It succeeds when at least the maps exist; which layers are in
// force is reported by Hooks and checked per ceiling by Coverage, so a
// caller can refuse exactly the fields this host cannot enforce. Errors:
// no cgroup2 mount, no bpf filesystem at the pin dir, a shared map that
// cannot be created or is pinned by an incompatible build, or the caches'
// new generation that cannot be written (every Open gives one, after
// attaching: see the end of Open).
func Open(opts Options) (*Enforcer, error) {
	if opts.PinDir == "" {
		opts.PinDir = DefaultPinDir
	}
	if opts.CgroupMount == "" {
		m, err := cgroup.Mountpoint()
		if err != nil {
			return nil, err
		}
		opts.CgroupMount = m
	}
	if opts.CgroupAttach == "" {
		opts.CgroupAttach = opts.CgroupMount
	}
	if err := ensureBPFFS(opts.PinDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(LinkPinDir(opts.PinDir), 0o700); err != nil {
		return nil, fmt.Errorf("pin dir %s: %w", opts.PinDir, err)
	}
	e := &Enforcer{opts: opts, links: map[string]link.Link{}, layerErr: map[coverage.Layer]error{}, pinNames: map[string]bool{}}
	if err := e.openMaps(); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.setRenameTracking(false); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.openObjects(); err != nil {
		e.Close()
		return nil, err // the embedded objects are broken: a build error
	}
	sort.SliceStable(e.hooks, func(i, j int) bool { return e.hooks[i].Layer < e.hooks[j].Layer })
	if err := e.setRenameTracking(e.links[bpf.FileProgVfsRename] != nil); err != nil {
		e.Close()
		return nil, err
	}
	e.finishUpgrade()
	// A new generation once this build's programs are attached: answers
	// that an earlier build's programs kept in the caches (bpf/walk.h)
	// are not taken for this build's, whose walk may decide otherwise.
	if err := e.invalidate(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// openObjects loads and attaches every object's programs (adopting pins of
// this build), recording per layer why one could not be (LayerError) and
// per program what is attached (Hooks). Errors: only an embedded object
// that cannot be read (a build error); a layer the kernel cannot run is
// recorded, not returned.
func (e *Enforcer) openObjects() error {
	kernel, kerr := btf.LoadKernelSpec()
	lsmErr := lsmUsable()
	if lsmErr != nil {
		lsmErr = fmt.Errorf("%w: %w", errLayerUnsupported, lsmErr)
	}
	for _, obj := range objects {
		progs, all, err := obj.programs(kernel)
		if err != nil {
			return err
		}
		for _, name := range all { // every variant, for finishUpgrade
			e.pinNames[filepath.Base(LinkPinPath(e.opts.PinDir, obj.layer, name))] = true
		}
		switch {
		case obj.layer == coverage.LayerLSM && lsmErr != nil:
			err = lsmErr
		case kerr != nil && obj.layer != coverage.LayerCgroup:
			err = fmt.Errorf("kernel BTF: %w", kerr)
		default:
			err = e.openObject(obj, progs, kernel)
		}
		if err == nil {
			continue
		}
		if e.layerErr[obj.layer] == nil {
			e.layerErr[obj.layer] = err
		}
		for _, p := range progs {
			if !e.hasProgram(p.name) {
				e.hooks = append(e.hooks, coverage.HookStatus{Program: p.name, Name: p.hook, Layer: obj.layer, Optional: p.optional, Err: err.Error()})
			}
		}
	}
	return nil
}

func (e *Enforcer) hasProgram(name string) bool {
	for _, h := range e.hooks {
		if h.Program == name {
			return true
		}
	}
	return false
}

// Hooks reports every program: attached, adopted, or why not.
func (e *Enforcer) Hooks() []coverage.HookStatus {
	return append([]coverage.HookStatus(nil), e.hooks...)
}

// LayerError is nil when every required hook of the layer is attached, else
// the reason.
func (e *Enforcer) LayerError(l coverage.Layer) error {
	if err := e.layerErr[l]; err != nil {
		return err
	}
	for _, h := range e.hooks {
		if h.Layer == l && !h.Attached && !h.Optional {
			return fmt.Errorf("hook %s not attached: %s", h.Name, h.Err)
		}
	}
	return nil
}

// CanActivateAtExec reports whether pending registrations are activated at
// the first exec (the lifecycle program is attached).
func (e *Enforcer) CanActivateAtExec() bool { return e.LayerError(coverage.LayerLifecycle) == nil }

// LostRecords is the number of denial records dropped because the ring
// buffer was full (the denials themselves were enforced).
func (e *Enforcer) LostRecords() (uint64, error) {
	return e.stat(bpf.SharedStatIndexSTAT_LOST)
}

// stat sums one counter of the per-CPU stats map over the CPUs.
func (e *Enforcer) stat(i bpf.SharedStatIndex) (uint64, error) {
	var per []uint64
	if err := e.stats.Lookup(uint32(i), &per); err != nil {
		return 0, fmt.Errorf("read stats: %w", err)
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n, nil
}

// Close releases this process's handles. Pinned maps and links stay: the
// kernel keeps enforcing.
func (e *Enforcer) Close() error {
	for _, l := range e.links {
		l.Close()
	}
	for _, l := range e.replaced {
		l.Close()
	}
	for _, m := range e.shared {
		if m != nil {
			m.Close()
		}
	}
	if e.buildID != nil {
		e.buildID.Close()
	}
	return nil
}

// Uninstall removes every pin under the pin dir (maps, links, build id) and
// closes e: once no other process holds them, the programs detach and every
// ceiling is lifted. Tests and the benchmark driver call it; operators use
// `enforcerd uninstall` (ReadInstallation, Installation.RemovePins), which
// checks first that nothing registered would be left unconfined. Errors: a
// pin that cannot be removed.
func (e *Enforcer) Uninstall() error {
	err := os.RemoveAll(e.opts.PinDir)
	e.Close()
	if err != nil {
		return fmt.Errorf("remove pins %s: %w", e.opts.PinDir, err)
	}
	return nil
}
