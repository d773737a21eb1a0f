package enforcer

import (
	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/entry"
)

// Device nodes are host objects: under every ceiling, opening (any mode),
// reading, writing, ioctl and mmap of a character or block device is
// decided by an allow list (docs/threat-model.md, "Devices and
// terminals"): the null-like devices, the sandbox's own terminals
// (Entry.Terminals, and ptys it creates from /dev/ptmx) and the devices
// the operator lists for the container (Entry.AllowDevices).

// The kinds and flags of struct device_list (bpf/devices.h).
const (
	deviceChr              = uint32(bpf.SharedDeviceKindDEVICE_CHR)
	deviceBlk              = uint32(bpf.SharedDeviceKindDEVICE_BLK)
	devicesDenyConsoleEgrs = uint32(bpf.SharedDeviceFlagDEVICES_DENY_CONSOLE_EGRESS)
)

// hasDeviceList: the entry needs a device_allow entry.
func hasDeviceList(en entry.Entry) bool {
	return len(en.AllowDevices) > 0 || len(en.Terminals) > 0 || en.DenyConsoleEgress
}

// encodeDevices gives the kernel form (struct device_list).
func encodeDevices(en entry.Entry) bpf.SharedDeviceList {
	var l bpf.SharedDeviceList
	for i, d := range en.AllowDevices {
		if i >= entry.MaxAllowDevices {
			break
		}
		l.Dev[i].Dev = d.Dev
		l.Dev[i].Kind = deviceChr
		if d.Block {
			l.Dev[i].Kind = deviceBlk
		}
		l.Ndev++
	}
	for i, t := range en.Terminals {
		if i >= entry.MaxTerminals {
			break
		}
		l.Term[i].Dev = t.Dev
		l.Term[i].PtsDev = t.PtsDev
		l.Nterm++
	}
	if en.DenyConsoleEgress {
		l.Flags |= devicesDenyConsoleEgrs
	}
	return l
}

// decodeDevices puts a list read back into en.
func decodeDevices(l bpf.SharedDeviceList, en *entry.Entry) {
	for i := 0; i < int(l.Ndev) && i < entry.MaxAllowDevices; i++ {
		en.AllowDevices = append(en.AllowDevices, entry.Device{Dev: l.Dev[i].Dev, Block: l.Dev[i].Kind == deviceBlk})
	}
	for i := 0; i < int(l.Nterm) && i < entry.MaxTerminals; i++ {
		en.Terminals = append(en.Terminals, entry.Terminal{Dev: l.Term[i].Dev, PtsDev: l.Term[i].PtsDev})
	}
	en.DenyConsoleEgress = l.Flags&devicesDenyConsoleEgrs != 0
}

// devicesMap is the pinned device_allow map.
func (e *Enforcer) devicesMap() *ebpf.Map { return e.shared[bpf.SharedMapDeviceAllow] }

// setDevices writes the device list of a cgroup (none needed: removes it)
// and returns how to put back what was there. Register calls it before
// the ceiling is written.
func (e *Enforcer) setDevices(cgroupID uint64, en entry.Entry) (undo func(), err error) {
	var v *bpf.SharedDeviceList
	if hasDeviceList(en) {
		l := encodeDevices(en)
		v = &l
	}
	return replaceCgroupValue(e.devicesMap(), cgroupID, v, "device allow list", "device_allow")
}

// dropDevices removes the device list of a cgroup.
func (e *Enforcer) dropDevices(cgroupID uint64) {
	if m := e.devicesMap(); m != nil {
		_ = m.Delete(cgroupID)
	}
}

// lookupDevices reads the device list of a cgroup into en (none: nothing).
func (e *Enforcer) lookupDevices(cgroupID uint64, en *entry.Entry) {
	m := e.devicesMap()
	if m == nil {
		return
	}
	var l bpf.SharedDeviceList
	if err := m.Lookup(cgroupID, &l); err != nil {
		return
	}
	decodeDevices(l, en)
}
