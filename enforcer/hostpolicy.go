package enforcer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
)

// HostPolicyPin is the name, in the pin directory, of the array map that
// records the host policy (HostPolicy: entry 0 flags, entry 1 the daemon's
// pid). No program reads it.
const HostPolicyPin = "host_policy"

// Bits of the host policy map's value.
const (
	hostPolicyRecorded     = 1 << 0
	hostPolicyAllowPartial = 1 << 1
)

// HostPolicy is what the host's operator decided for every enforcerd that
// uses this pin directory. The daemon records its configuration here when
// it starts (SetHostPolicy), so that `enforcerd run` and any other caller
// of the same pins honour it whatever socket they were given.
type HostPolicy struct {
	// AllowPartial: ceilings this host enforces only in part may be
	// registered (the daemon's allow_partial).
	AllowPartial bool
	// DaemonPID is the daemon that reads these pins' denial records (0:
	// none; it clears it when it stops). A reader of the records checks
	// that the process is alive before leaving the records to it.
	DaemonPID int
}

func (e *Enforcer) hostPolicyPath() string { return filepath.Join(e.opts.PinDir, HostPolicyPin) }

// SetHostPolicy records p in the pin directory, creating the map on first
// use. Errors: the map cannot be created, pinned or written.
func (e *Enforcer) SetHostPolicy(p HostPolicy) error {
	m, err := ebpf.LoadPinnedMap(e.hostPolicyPath(), nil)
	if err == nil && m.MaxEntries() < 2 {
		// An older layout: replace it.
		m.Close()
		if err = os.Remove(e.hostPolicyPath()); err == nil {
			err = os.ErrNotExist
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		m, err = ebpf.NewMap(&ebpf.MapSpec{Name: HostPolicyPin, Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 2})
		if err == nil {
			if perr := m.Pin(e.hostPolicyPath()); perr != nil {
				m.Close()
				return fmt.Errorf("host policy: pin %s: %w", e.hostPolicyPath(), perr)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("host policy %s: %w", e.hostPolicyPath(), err)
	}
	defer m.Close()
	v := uint32(hostPolicyRecorded)
	if p.AllowPartial {
		v |= hostPolicyAllowPartial
	}
	// The pid first: a reader that sees the flags sees the pid.
	if err := m.Update(uint32(1), uint32(p.DaemonPID), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("host policy %s: %w", e.hostPolicyPath(), err)
	}
	if err := m.Update(uint32(0), v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("host policy %s: %w", e.hostPolicyPath(), err)
	}
	return nil
}

// HostPolicy reads the recorded host policy. recorded is false when no
// daemon ever recorded one in this pin directory. Errors: the map exists
// but cannot be read (callers treat that as the narrowest policy).
func (e *Enforcer) HostPolicy() (p HostPolicy, recorded bool, err error) {
	return readHostPolicy(e.hostPolicyPath())
}

func readHostPolicy(path string) (p HostPolicy, recorded bool, err error) {
	m, err := ebpf.LoadPinnedMap(path, nil)
	if errors.Is(err, os.ErrNotExist) {
		return HostPolicy{}, false, nil
	}
	if err != nil {
		return HostPolicy{}, true, fmt.Errorf("host policy %s: %w", path, err)
	}
	defer m.Close()
	var v, pid uint32
	if err := m.Lookup(uint32(0), &v); err != nil {
		return HostPolicy{}, true, fmt.Errorf("host policy %s: %w", path, err)
	}
	if err := m.Lookup(uint32(1), &pid); err != nil {
		return HostPolicy{}, true, fmt.Errorf("host policy %s: %w", path, err)
	}
	return HostPolicy{AllowPartial: v&hostPolicyAllowPartial != 0, DaemonPID: int(pid)}, v&hostPolicyRecorded != 0, nil
}
