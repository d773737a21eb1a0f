package registry

import (
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/entry"
)

// checkDeviceRequest is validate's check of allow_devices, the declared
// terminals and where they come from (ErrBadRequest).
func checkDeviceRequest(req Request) error {
	ds, err := devallow.ParseList(req.AllowDevices)
	if err != nil {
		return badf("container %s: allow_devices: %v", req.ID, err)
	}
	if req.Activate == ActivateExec && (req.Entrypoint == nil || req.Entrypoint.Root == "") {
		for _, d := range ds {
			if !d.Resolved() {
				// Before its runtime pivots, the init's /proc/PID/root
				// is not the container's "/": the path would be the
				// host's.
				return badf("container %s: allow_devices %s: a path of a container registered at exec needs entrypoint.root (the container's root directory); or give the device by number (c MAJOR:MINOR)", req.ID, d.Path)
			}
		}
	}
	if len(req.Terminals) > entry.MaxTerminals {
		return badf("container %s: %d own terminals, at most %d", req.ID, len(req.Terminals), entry.MaxTerminals)
	}
	if req.TerminalsOfInit {
		if req.InitPID <= 0 {
			return badf("container %s: own terminals of the init need init_pid (and activate=exec)", req.ID)
		}
		if len(req.Terminals) > 0 {
			return badf("container %s: own terminals are declared twice (given, and of the init): give one", req.ID)
		}
	}
	return nil
}

// allowDevices is the device allow list a new container c is registered
// with: req.AllowDevices parsed, paths resolved inside the registered
// process's root (Request.writeRootsDir), met with the parent's list and
// with the list of every registered cgroup above c.Cgroup: the devices
// every one of them lists (a registration that lists none leaves none).
// Every ceiling decides devices, so every outer registration bounds the
// list, whatever its fields. Errors (ErrBadRequest, naming allow_devices):
// a path that is missing or not a device node, a duplicate; an ancestor
// cgroup that cannot be read (fail closed).
func (r *Registry) allowDevices(req Request, c state.Container) ([]devallow.Device, error) {
	if len(req.AllowDevices) == 0 {
		return nil, nil
	}
	ds, err := devallow.ParseList(req.AllowDevices)
	if err != nil {
		return nil, badf("container %s: allow_devices: %v", req.ID, err)
	}
	dir := req.writeRootsDir()
	if ds, err = devallow.Resolve(ds, dir); err != nil {
		return nil, badf("container %s: allow_devices (in %s): %v", req.ID, dir, err)
	}
	if req.Parent != "" {
		if p, ok := r.byID[req.Parent]; ok {
			ds = devallow.Intersect(ds, p.AllowDevices)
		}
	}
	if c.Cgroup == "" {
		return ds, nil
	}
	err = r.eachOuter(c.Cgroup, func(_ string, a *state.Container, en *entry.Entry) {
		if a != nil {
			ds = devallow.Intersect(ds, a.AllowDevices)
		} else {
			ds = devallow.Intersect(ds, devicesOfEntry(en.AllowDevices))
		}
	})
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// denyConsoleEgress: the registration asks for it, the daemon sets it,
// or a registration c is nested in (its parent, a registered cgroup
// above) holds it: a nested registration never lets out what an outer
// one keeps in.
func (r *Registry) denyConsoleEgress(req Request, c state.Container) (bool, error) {
	deny := req.DenyConsoleEgress || r.o.DenyConsoleEgress
	if p, ok := r.byID[req.Parent]; ok && req.Parent != "" {
		deny = deny || p.DenyConsoleEgress
	}
	if deny || c.Cgroup == "" {
		return deny, nil
	}
	err := r.eachOuter(c.Cgroup, func(_ string, a *state.Container, en *entry.Entry) {
		if a != nil {
			deny = deny || a.DenyConsoleEgress
		} else {
			deny = deny || en.DenyConsoleEgress
		}
	})
	return deny, err
}

// ownTerminals is the terminals a new container declares: those the
// request gives, or its init's (TerminalsOfInit), read while the init's
// pid provably names it (its start time, c.InitStart, is the same before
// and after). Errors (ErrBadRequest): the init cannot be read or is gone.
func (r *Registry) ownTerminals(req Request, c state.Container) ([]state.Terminal, error) {
	ts := req.Terminals
	if req.TerminalsOfInit {
		var err error
		if ts, err = r.o.OwnTerminals(req.InitPID); err != nil {
			return nil, badf("container %s: own terminals of init_pid %d: %v", req.ID, req.InitPID, err)
		}
		if st, err := r.o.StartTime(req.InitPID); err != nil || st != c.InitStart {
			return nil, badf("container %s: init_pid %d exited while its terminals were read", req.ID, req.InitPID)
		}
	}
	if len(ts) > entry.MaxTerminals {
		return nil, badf("container %s: %d own terminals, at most %d", req.ID, len(ts), entry.MaxTerminals)
	}
	return stateTerminals(ts), nil
}

// setDeviceFields puts c's host objects on en: its device allow list, own
// terminals, console egress choice and POSIX shared memory directory.
// Every entry the daemon installs for c carries them from the state,
// whatever a Lookup of the map returned.
func setDeviceFields(en *entry.Entry, c state.Container) {
	en.AllowDevices = entryDevices(c.AllowDevices)
	en.Terminals = entryTerminals(c.Terminals)
	en.DenyConsoleEgress = c.DenyConsoleEgress
	en.ShmDir = entry.FileID{}
	if c.ShmDir != nil {
		en.ShmDir = entry.FileID{Dev: c.ShmDir.Dev, Ino: c.ShmDir.Ino}
	}
}

// entryDevices is the kernel form of a device allow list.
func entryDevices(ds []devallow.Device) []entry.Device {
	if len(ds) == 0 {
		return nil
	}
	out := make([]entry.Device, len(ds))
	for i, d := range ds {
		out[i] = entry.Device{Block: d.Block, Dev: d.Dev()}
	}
	return out
}

// devicesOfEntry is a map entry's list as devallow devices (no paths).
func devicesOfEntry(ds []entry.Device) []devallow.Device {
	out := make([]devallow.Device, len(ds))
	for i, d := range ds {
		out[i] = devallow.Device{Block: d.Block, Major: d.Dev >> 20, Minor: d.Dev & devallow.MaxMinor}
	}
	return out
}

func stateTerminals(ts []entry.Terminal) []state.Terminal {
	if len(ts) == 0 {
		return nil
	}
	out := make([]state.Terminal, len(ts))
	for i, t := range ts {
		out[i] = state.Terminal{Dev: t.Dev, PtsDev: t.PtsDev}
	}
	return out
}

func entryTerminals(ts []state.Terminal) []entry.Terminal {
	if len(ts) == 0 {
		return nil
	}
	out := make([]entry.Terminal, len(ts))
	for i, t := range ts {
		out[i] = entry.Terminal{Dev: t.Dev, PtsDev: t.PtsDev}
	}
	return out
}
