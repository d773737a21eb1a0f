package bench

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
)

// kernelState is what of the benchmark's is in the guest kernel while a
// group of phases runs.
type kernelState int

const (
	// stateUnloaded: nothing of enforcerd's or the floor's: every program
	// and link closed and unpinned, the number of loaded BPF programs back
	// at what it was before the first load ((a), (a0), (e1), (e0)).
	stateUnloaded kernelState = iota
	// stateFloor: the floor's allow-only twins of every program enforcerd
	// attaches, on the same hooks; enforcerd unloaded ((f)).
	stateFloor
	// stateLoaded: enforcerd loaded, attached and pinned, the (c) cgroup
	// registered with the all-allow ceiling ((b), (c), (c2), (d)).
	stateLoaded
)

func (s kernelState) String() string {
	switch s {
	case stateUnloaded:
		return "unloaded"
	case stateFloor:
		return "floor"
	case stateLoaded:
		return "loaded"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// vmKernel moves the guest kernel between the states. Unloaded is not
// "detached": on 6.12, BPF LSM programs that are loaded but detached keep
// file operations several per cent dearer than never loaded, while
// unloaded programs cost nothing, so (a) is measured with everything
// unloaded.
type vmKernel struct {
	r        *run
	pin      string
	mount    string
	baseline int                   // BPF programs loaded before the first load
	hooks    []coverage.HookStatus // what the first load attached: the floor mirrors it
	loads    int
	state    kernelState
	enf      *enforcer.Enforcer // stateLoaded
	floor    *floorSet          // stateFloor
	onLoad   func(*enforcer.Enforcer) error
	// onUnload runs before enforcerd is unloaded (the background
	// sandbox's unregistration).
	onUnload func(*enforcer.Enforcer) error
	// settle is how long enter idles after a change of state: the kernel's
	// deferred work of a load or unload (RCU callbacks freeing programs
	// and trampolines, run in softirq and charged to whichever process is
	// on the CPU) finishes before a phase measures, not inside it.
	settle time.Duration
}

// unloadTimeout bounds how long leaving a state waits for the kernel's
// program count to return to the baseline.
var unloadTimeout = 30 * time.Second

// enter brings the kernel to state s (leaving the current one first), then
// idles k.settle. Loader figures are recorded from the first load only.
// Errors: a load, attach or registration failure, the BPF LSM layer not in
// force, programs left loaded after leaving a state (unloadTimeout).
func (k *vmKernel) enter(s kernelState) error {
	if k.state == s {
		return nil
	}
	if err := k.change(s); err != nil {
		return err
	}
	time.Sleep(k.settle)
	return nil
}

func (k *vmKernel) change(s kernelState) error {
	if err := k.leave(); err != nil {
		return err
	}
	switch s {
	case stateLoaded:
		if err := k.r.load(k.pin, k.mount, k.loads == 0); err != nil {
			return err
		}
		k.loads++
		enf, err := enforcer.Open(enforcer.Options{PinDir: k.pin, CgroupMount: k.mount})
		if err != nil {
			return err
		}
		k.enf, k.state = enf, stateLoaded
		if err := enf.LayerError(coverage.LayerLSM); err != nil {
			return fmt.Errorf("BPF LSM layer not in force: %w", err)
		}
		if k.hooks == nil {
			k.hooks = enf.Hooks()
		}
		if k.onLoad != nil {
			return k.onLoad(enf)
		}
	case stateFloor:
		if k.hooks == nil {
			return errors.New("floor: enforcerd was never loaded: no hooks to mirror")
		}
		f, err := attachFloorHooks(k.hooks, k.mount)
		if err != nil {
			return err
		}
		k.floor, k.state = f, stateFloor
	}
	return nil
}

// leave unloads whatever the current state loaded (enforcerd: Uninstall
// removes every pin and closes every handle; the floor: links and programs
// closed) and waits until the kernel's program count is back at the
// baseline.
func (k *vmKernel) leave() error {
	switch k.state {
	case stateUnloaded:
		return nil
	case stateLoaded:
		var err error
		if k.onUnload != nil {
			err = k.onUnload(k.enf)
		}
		err = errors.Join(err, k.enf.Uninstall())
		k.enf = nil
		if err != nil {
			return err
		}
	case stateFloor:
		k.floor.close()
		k.floor = nil
	}
	from := k.state
	k.state = stateUnloaded
	return k.waitBaseline(from)
}

// waitBaseline polls the kernel's program list until no more programs are
// loaded than before the first load. Errors: still more after
// unloadTimeout (another holder: the unloaded phases would not be
// "nothing loaded"), the program list unreadable.
func (k *vmKernel) waitBaseline(from kernelState) error {
	deadline := time.Now().Add(unloadTimeout)
	for {
		runtime.GC() // handles dropped without Close are released by finalizers
		n, err := countPrograms(nil)
		if err != nil {
			return fmt.Errorf("unload (%s): %w", from, err)
		}
		if n <= k.baseline {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("unload (%s): %d BPF programs still loaded %v after unloading, %d before the first load (another holder?): the unloaded phases would not run with nothing loaded", from, n, unloadTimeout, k.baseline)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countPrograms counts the BPF programs loaded in the kernel (any holder),
// by id: every one when keep is nil, else those keep accepts (a program
// gone between listing and opening is not counted). Errors: the kernel
// refuses to list program ids (other than at the end of the list).
func countPrograms(keep func(*ebpf.Program) bool) (int, error) {
	n := 0
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) { // ENOENT: past the last id
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("list BPF programs: %w", err)
		}
		id = next
		if keep == nil {
			n++
			continue
		}
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		if keep(p) {
			n++
		}
		p.Close()
	}
}
