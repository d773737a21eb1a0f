package enforcer

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/coverage"
)

// execStateMaps are the shared maps that need task or inode storage, which
// the kernel creates only while the BPF LSM is active: the shell ceiling's
// (bpf/exec.h), the creators of FIFOs, POSIX message queues and POSIX
// shm objects (bpf/fifo.h, bpf/mqueue.h, bpf/shm.h) and the writable
// roots' decision cache (bpf/roots.h), with the maps the shell ceiling
// keeps beside them. The cgroup layer needs none of them; when one cannot be created,
// none of them is used and only the objects that declare them (the LSM
// layer) are refused (execMapsErr).
var execStateMaps = []string{bpf.SharedMapTaskFlags, bpf.SharedMapWrittenInodes, bpf.SharedMapExecAllow, bpf.SharedMapCeilingSince,
	bpf.SharedMapFifoOwners, bpf.SharedMapFifoPending, bpf.SharedMapMqOwners, bpf.SharedMapShmOwners,
	bpf.SharedMapRootsCache}

// retiredMaps are shared maps of earlier builds that no object of this
// build declares; openMaps removes their pins. Each was a cache only
// (resolve_last: the one-slot ancestor of resolve_recent, bpf/walk.h), so
// the programs of an earlier build that are still attached during an
// upgrade keep theirs by reference and lose nothing but hits.
var retiredMaps = []string{"resolve_last"}

// openMaps adopts the pinned shared maps, creating and pinning those that
// are missing, and opens the build id. The shared maps are the maps of
// bpf/shared.bpf.c (MapPinPath); every object that declares one of them is
// handed the same map. Errors: a map that cannot be created or pinned
// (other than the shell ceiling's), or a pinned map of an incompatible
// layout.
func (e *Enforcer) openMaps() error {
	spec, err := bpf.LoadShared()
	if err != nil {
		return fmt.Errorf("load map specs: %w", err)
	}
	e.shared = map[string]*ebpf.Map{}
	execState := map[string]bool{}
	for _, name := range execStateMaps {
		execState[name] = true
	}
	names := make([]string, 0, len(spec.Maps))
	for name := range spec.Maps {
		if !strings.HasPrefix(name, ".") { // the object's own data sections
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if execState[name] {
			continue
		}
		if e.shared[name], err = e.openMap(spec.Maps[name]); err != nil {
			return err
		}
	}
	for _, name := range execStateMaps {
		m, err := e.openMap(spec.Maps[name])
		if err != nil {
			e.execMapsErr = err
			break
		}
		e.shared[name] = m
	}
	e.ceilings = e.shared[bpf.SharedMapCeilings]
	e.events = e.shared[bpf.SharedMapEvents]
	e.stats = e.shared[bpf.SharedMapStats]
	e.config = e.shared[bpf.SharedMapEnforcerdConfig]
	if e.execMapsErr == nil {
		e.execAllow = e.shared[bpf.SharedMapExecAllow]
		e.since = e.shared[bpf.SharedMapCeilingSince]
	}
	if err := e.openTally(spec); err != nil {
		return err
	}
	if err := e.removeRetiredPins(); err != nil {
		return err
	}
	return e.openBuildID()
}

// removeRetiredPins removes the pins of retiredMaps (a retired name is
// never declared again: TestRetiredMapsNotDeclared). Errors: a pin that
// exists and cannot be removed.
func (e *Enforcer) removeRetiredPins() error {
	for _, name := range retiredMaps {
		pin := MapPinPath(e.opts.PinDir, name)
		if err := os.Remove(pin); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the pin of retired map %s: %w", pin, err)
		}
	}
	return nil
}

// openMap adopts the pin of one shared map, or creates and pins it.
func (e *Enforcer) openMap(ms *ebpf.MapSpec) (*ebpf.Map, error) {
	if ms == nil {
		return nil, errors.New("map spec missing from bpf/shared.bpf.c")
	}
	pin := MapPinPath(e.opts.PinDir, ms.Name)
	if m, err := ebpf.LoadPinnedMap(pin, nil); err == nil {
		if err := ms.Compatible(m); err != nil {
			m.Close()
			return nil, fmt.Errorf("pinned map %s is from an incompatible enforcerd: %w (stop the daemon and every workload, then remove %s)", pin, err, e.opts.PinDir)
		}
		return m, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("pinned map %s: %w", pin, err)
	}
	m, err := ebpf.NewMap(ms)
	if err != nil {
		return nil, fmt.Errorf("create map %s: %w", ms.Name, err)
	}
	if err := m.Pin(pin); err != nil {
		m.Close()
		return nil, fmt.Errorf("pin map %s: %w", pin, err)
	}
	return m, nil
}

// replacements returns the shared maps an object's spec declares, to be
// used instead of creating its own. Errors: the object declares a shared
// map this host could not create (the shell ceiling's).
func (e *Enforcer) replacements(spec *ebpf.CollectionSpec) (map[string]*ebpf.Map, error) {
	out := map[string]*ebpf.Map{}
	for name := range spec.Maps {
		m, shared := e.shared[name]
		if !shared {
			if !isExecState(name) {
				continue // object-private (.bss, .rodata, crypto_taint, ...)
			}
			return nil, fmt.Errorf("map %s unavailable: %w", name, e.execMapsErr)
		}
		out[name] = m
	}
	return out, nil
}

func isExecState(name string) bool {
	for _, n := range execStateMaps {
		if n == name {
			return true
		}
	}
	return false
}

// replaceCgroupValue writes v as cgroupID's value in m (nil v: removes
// it) and returns how to put back what was there (undo ignores errors: it
// runs on a path that already failed). what names the list in errors,
// name the map. Errors: ErrCannotEnforce when m is missing and v is not
// nil; the map update or delete failed (nothing changed).
func replaceCgroupValue[V any](m *ebpf.Map, cgroupID uint64, v *V, what, name string) (undo func(), err error) {
	if m == nil {
		if v == nil {
			return func() {}, nil
		}
		return nil, fmt.Errorf("%w: %s: no %s map", coverage.ErrCannotEnforce, what, name)
	}
	var old V
	had := m.Lookup(cgroupID, &old) == nil
	undo = func() {
		if had {
			_ = m.Update(cgroupID, &old, ebpf.UpdateAny)
		} else {
			_ = m.Delete(cgroupID)
		}
	}
	if v == nil {
		if had {
			if err := m.Delete(cgroupID); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
		}
		return undo, nil
	}
	if err := m.Update(cgroupID, v, ebpf.UpdateAny); err != nil {
		undo()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return undo, nil
}
