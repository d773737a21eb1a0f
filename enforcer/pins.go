package enforcer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/coverage"
)

// The pin layout. Everything enforcerd keeps in the kernel is pinned under
// one directory on a bpf filesystem, Options.PinDir:
//
//	PinDir/<map>                    each shared map (bpf/shared.bpf.c), by its
//	                                name in the objects: ceilings, events, ...
//	PinDir/build_id                 array of one 32-byte value: the
//	                                bpf.BuildID of the programs the links run
//	PinDir/links/<layer><program>   one link per attached program: <layer> is
//	                                "lsm_", "cgroup_" or "tp_btf_" (its Layer),
//	                                <program> its name in the object
//
// The names are the contract between builds: a later enforcerd adopts or
// replaces exactly these pins (Open), so none is ever renamed. Tools that
// look at the pins (tests, tools/bench) derive paths from the functions
// below.
const (
	// DefaultPinDir is where enforcerd pins unless told otherwise.
	DefaultPinDir = "/sys/fs/bpf/enforcerd"
	// LinksDir is the directory of link pins under the pin dir.
	LinksDir = "links"
	// BuildIDPin is the name of the build id map's pin under the pin dir.
	BuildIDPin = "build_id"
)

// layerPinPrefix prefixes a program's name in its link pin name.
var layerPinPrefix = map[coverage.Layer]string{coverage.LayerLSM: "lsm_", coverage.LayerCgroup: "cgroup_", coverage.LayerLifecycle: "tp_btf_"}

// MapPinPath is where the shared map named name is pinned under pinDir.
func MapPinPath(pinDir, name string) string { return filepath.Join(pinDir, name) }

// LinkPinDir is the directory holding every link pin under pinDir.
func LinkPinDir(pinDir string) string { return filepath.Join(pinDir, LinksDir) }

// LinkPinPath is where the link of the program named program (its name in
// the object, e.g. "file_open") of layer l is pinned under pinDir.
func LinkPinPath(pinDir string, l coverage.Layer, program string) string {
	return filepath.Join(LinkPinDir(pinDir), layerPinPrefix[l]+program)
}

// openBuildID opens (or creates) the pinned build_id map and decides whether
// the pinned links are this build's. A pinned link with no build id, or
// another one, is stale.
func (e *Enforcer) openBuildID() error {
	pin := filepath.Join(e.opts.PinDir, BuildIDPin)
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if errors.Is(err, os.ErrNotExist) {
		m, err = ebpf.NewMap(&ebpf.MapSpec{Name: BuildIDPin, Type: ebpf.Array, KeySize: 4, ValueSize: 32, MaxEntries: 1})
		if err != nil {
			return fmt.Errorf("create map %s: %w", BuildIDPin, err)
		}
		if err := m.Pin(pin); err != nil {
			m.Close()
			return fmt.Errorf("pin map %s: %w", pin, err)
		}
	} else if err != nil {
		return fmt.Errorf("pinned map %s: %w", pin, err)
	}
	e.buildID = m
	var have [32]byte
	if err := m.Lookup(uint32(0), &have); err != nil {
		return fmt.Errorf("read %s: %w", pin, err)
	}
	e.stale = have != bpf.BuildID()
	return nil
}

// openObject adopts the pinned links of obj's programs and loads, attaches
// and pins the missing ones. A link pinned by another build is kept open
// (e.replaced) and replaced: its program keeps enforcing until this build's
// link is pinned over it.
func (e *Enforcer) openObject(obj object, progs []program, kernel *btf.Spec) error {
	missing := e.adoptLinks(obj, progs)
	if len(missing) == 0 {
		return nil
	}
	spec, err := obj.load()
	if err != nil {
		return fmt.Errorf("load %s object: %w", obj.layer, err)
	}
	if err := e.keepPrograms(obj, spec, missing, kernel); err != nil {
		return err
	}
	if len(spec.Programs) == 0 {
		return nil
	}
	coll, err := e.loadPrograms(obj, spec)
	if err != nil {
		return err
	}
	defer coll.Close() // links hold their own program references
	return e.attachMissing(obj, spec, coll, missing)
}

// adoptLinks adopts the pinned links of this build's programs of obj and
// returns the programs that have none (or whose pin is another build's,
// kept in e.replaced).
func (e *Enforcer) adoptLinks(obj object, progs []program) (missing []program) {
	for _, p := range progs {
		l, err := link.LoadPinnedLink(LinkPinPath(e.opts.PinDir, obj.layer, p.name), nil)
		if err == nil && !e.stale {
			e.links[p.name] = l
			e.hooks = append(e.hooks, coverage.HookStatus{Program: p.name, Name: p.hook, Layer: obj.layer, Attached: true, Adopted: true, Optional: p.optional})
			continue
		}
		if err == nil {
			e.replaced = append(e.replaced, l)
		}
		missing = append(missing, p)
	}
	return missing
}

// keepPrograms leaves in spec only the missing programs this kernel can
// attach: an optional LSM hook the kernel lacks is reported, not loaded.
// Errors: a required LSM hook the kernel lacks.
func (e *Enforcer) keepPrograms(obj object, spec *ebpf.CollectionSpec, missing []program, kernel *btf.Spec) error {
	want := map[string]bool{}
	for _, p := range missing {
		if obj.layer == coverage.LayerLSM && kernel != nil && !kernelHas(kernel, p) {
			if p.optional {
				e.hooks = append(e.hooks, coverage.HookStatus{Program: p.name, Name: p.hook, Layer: obj.layer, Optional: true, Err: coverage.ErrHookNotInKernel})
				continue
			}
			return fmt.Errorf("LSM hook %s not in this kernel", p.hook)
		}
		want[p.name] = true
	}
	for name := range spec.Programs {
		if !want[name] {
			delete(spec.Programs, name)
		}
	}
	return nil
}

// loadPrograms loads spec's programs with the shared maps in place of
// their own. A verifier refusal's log goes to Options.VerifierLog; a
// kernel that refuses BPF LSM programs outright (EPERM) makes the layer
// unsupported (errLayerUnsupported).
func (e *Enforcer) loadPrograms(obj object, spec *ebpf.CollectionSpec) (*ebpf.Collection, error) {
	repl, err := e.replacements(spec)
	if err != nil {
		return nil, fmt.Errorf("load %s programs: %w", obj.layer, err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		var ve *ebpf.VerifierError
		if e.opts.VerifierLog != nil && errors.As(err, &ve) {
			fmt.Fprintf(e.opts.VerifierLog, "enforcerd: verifier log for %s:\n%+v\n", obj.layer, ve)
		}
		if errors.Is(err, unix.EPERM) && obj.layer == coverage.LayerLSM {
			return nil, fmt.Errorf("%w: the kernel refuses to load BPF LSM programs (EPERM; e.g. a sandboxed host kernel without trampolines): %w", errLayerUnsupported, unix.EPERM)
		}
		return nil, fmt.Errorf("load %s programs: %w", obj.layer, err)
	}
	return coll, nil
}

// attachOrder is progs with the tracing programs first: fexit/vfs_rename
// must be attached before inode_rename starts counting renames in
// progress (bpf/roots.h), or a rename between the two would stay counted
// and keep the writable roots' decision cache off.
func attachOrder(progs []program) []program {
	out := make([]program, 0, len(progs))
	for _, p := range progs {
		if !p.isLSM() {
			out = append(out, p)
		}
	}
	for _, p := range progs {
		if p.isLSM() {
			out = append(out, p)
		}
	}
	return out
}

// attachMissing attaches the loaded missing programs and pins their links
// (over another build's pin: pinOver).
func (e *Enforcer) attachMissing(obj object, spec *ebpf.CollectionSpec, coll *ebpf.Collection, missing []program) error {
	for _, p := range attachOrder(missing) {
		prog := coll.Programs[p.name]
		if prog == nil {
			continue
		}
		l, err := e.attach(spec.Programs[p.name], prog)
		if err != nil {
			return fmt.Errorf("attach %s: %w", p.hook, err)
		}
		if err := pinOver(l, LinkPinPath(e.opts.PinDir, obj.layer, p.name)); err != nil {
			l.Close()
			return fmt.Errorf("pin link %s: %w", p.hook, err)
		}
		e.links[p.name] = l
		e.hooks = append(e.hooks, coverage.HookStatus{Program: p.name, Name: p.hook, Layer: obj.layer, Attached: true, Optional: p.optional})
	}
	return nil
}

// attach attaches prog the way its ELF section says (ps, from the object's
// spec): an LSM hook, a tracing target (fentry, tp_btf), or for cgroup-BPF
// Options.CgroupAttach (the cgroup2 root by default) with the section's
// attach type.
func (e *Enforcer) attach(ps *ebpf.ProgramSpec, prog *ebpf.Program) (link.Link, error) {
	switch ps.Type {
	case ebpf.LSM:
		return link.AttachLSM(link.LSMOptions{Program: prog})
	case ebpf.Tracing:
		return link.AttachTracing(link.TracingOptions{Program: prog})
	case ebpf.CGroupSock, ebpf.CGroupSockAddr:
		return link.AttachCgroup(link.CgroupOptions{Path: e.opts.CgroupAttach, Attach: ps.AttachType, Program: prog})
	}
	return nil, fmt.Errorf("program type %s: no attach method", ps.Type)
}

// pinOver pins l at pin, replacing any pin there in one rename: the hook is
// never without a program, and a link of another build pinned there is
// released only once nothing else holds it.
func pinOver(l link.Link, pin string) error {
	if err := l.Pin(pin + "_new"); err != nil {
		return err
	}
	if err := os.Rename(pin+"_new", pin); err != nil {
		_ = l.Unpin()
		return err
	}
	return nil
}

// finishUpgrade completes the replacement of another build's pinned links:
// it drops the handles on the replaced links (they detach: their pins now
// name this build's links), removes pins of programs this build no longer
// has, and records this build's id. It does nothing unless every layer this
// host supports came up; a failed upgrade leaves the old programs pinned and
// enforcing, and the next Open tries again.
func (e *Enforcer) finishUpgrade() {
	if !e.stale {
		return
	}
	for _, l := range e.replaced {
		l.Close()
	}
	e.replaced = nil
	for _, l := range layers {
		if err := e.layerErr[l]; err != nil && !errors.Is(err, errLayerUnsupported) {
			return
		}
	}
	dir := LinkPinDir(e.opts.PinDir)
	entries, _ := os.ReadDir(dir)
	for _, ent := range entries {
		if !e.pinNames[ent.Name()] {
			_ = os.Remove(filepath.Join(dir, ent.Name()))
		}
	}
	if err := e.buildID.Update(uint32(0), bpf.BuildID(), ebpf.UpdateAny); err == nil {
		e.stale = false
	}
}
