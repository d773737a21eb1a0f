package enforcer

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
)

// Device nodes are host objects: under every ceiling, opening (any mode),
// reading, writing, ioctl and mmap of a character or block device is
// decided by an allow list (docs/threat-model.md, "Devices and
// terminals"): the null-like devices, the sandbox's own terminals
// (Entry.Terminals, and ptys it creates from /dev/ptmx) and the devices
// the operator lists for the container (Entry.AllowDevices).

// MaxAllowDevices is the most devices one registration may list in
// Entry.AllowDevices.
const MaxAllowDevices = 16

// MaxTerminals is the most own terminals one registration may declare in
// Entry.Terminals.
const MaxTerminals = 8

// Device names one device node by type and number, the way the kernel
// does (inode->i_rdev).
type Device struct {
	// Block: a block device (S_IFBLK); false: a character device (S_IFCHR).
	Block bool
	// Dev is the device number in the kernel's encoding, major<<20|minor.
	Dev uint32
}

// Terminal identifies one terminal the sandbox owns: declared at
// registration (the entrypoint's stdio and controlling terminal).
type Terminal struct {
	// Dev is the tty's device number in the kernel's encoding
	// (major<<20|minor): for a pty slave, 136–143 major and its index.
	Dev uint32
	// PtsDev is, for a pty slave, the device of the devpts instance
	// that holds it (its superblock's s_dev, kernel encoding): the same
	// pty number names another terminal in another devpts instance.
	// 0 for every other terminal.
	PtsDev uint32
}

// ErrBadDevices is wrapped when an entry's AllowDevices or Terminals
// cannot be registered as given (see checkDevices).
var ErrBadDevices = errors.New("bad device allow list")

// The kinds and flags of struct device_list (bpf/devices.h).
const (
	deviceChr              = uint32(bpf.SharedDeviceKindDEVICE_CHR)
	deviceBlk              = uint32(bpf.SharedDeviceKindDEVICE_BLK)
	devicesDenyConsoleEgrs = uint32(bpf.SharedDeviceFlagDEVICES_DENY_CONSOLE_EGRESS)
)

// checkDevices: at most MaxAllowDevices devices and MaxTerminals
// terminals, none of them device number 0 (no device).
func checkDevices(en Entry) error {
	if len(en.AllowDevices) > MaxAllowDevices {
		return fmt.Errorf("%w: %d devices, at most %d", ErrBadDevices, len(en.AllowDevices), MaxAllowDevices)
	}
	if len(en.Terminals) > MaxTerminals {
		return fmt.Errorf("%w: %d terminals, at most %d", ErrBadDevices, len(en.Terminals), MaxTerminals)
	}
	for _, d := range en.AllowDevices {
		if d.Dev == 0 {
			return fmt.Errorf("%w: device %s: no device number", ErrBadDevices, d)
		}
	}
	for _, t := range en.Terminals {
		if t.Dev == 0 {
			return fmt.Errorf("%w: terminal %d:%d: no device number", ErrBadDevices, t.Dev>>20, t.Dev&0xfffff)
		}
	}
	return nil
}

// String is "c 4:64" or "b 8:0" (type, major:minor).
func (d Device) String() string {
	t := "c"
	if d.Block {
		t = "b"
	}
	return fmt.Sprintf("%s %d:%d", t, d.Dev>>20, d.Dev&0xfffff)
}

// DeviceOf is the Device of the device node at path (followed if a
// symlink). Errors: stat fails, or path is not a character or block
// device.
func DeviceOf(path string) (Device, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Device{}, fmt.Errorf("device %s: %w", path, &os.PathError{Op: "stat", Path: path, Err: err})
	}
	var d Device
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
	case unix.S_IFBLK:
		d.Block = true
	default:
		return Device{}, fmt.Errorf("%w: %s is not a character or block device", ErrBadDevices, path)
	}
	d.Dev = kernelDev(st.Rdev)
	return d, nil
}

// kernelDev converts a user-space dev_t (stat's st_rdev) to the kernel's
// major<<20|minor.
func kernelDev(dev uint64) uint32 {
	return unix.Major(dev)<<20 | unix.Minor(dev)&0xfffff
}

// hasDeviceList: the entry needs a device_allow entry.
func hasDeviceList(en Entry) bool {
	return len(en.AllowDevices) > 0 || len(en.Terminals) > 0 || en.DenyConsoleEgress
}

// encodeDevices gives the kernel form (struct device_list).
func encodeDevices(en Entry) bpf.SharedDeviceList {
	var l bpf.SharedDeviceList
	for i, d := range en.AllowDevices {
		if i >= MaxAllowDevices {
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
		if i >= MaxTerminals {
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
func decodeDevices(l bpf.SharedDeviceList, en *Entry) {
	for i := 0; i < int(l.Ndev) && i < MaxAllowDevices; i++ {
		en.AllowDevices = append(en.AllowDevices, Device{Dev: l.Dev[i].Dev, Block: l.Dev[i].Kind == deviceBlk})
	}
	for i := 0; i < int(l.Nterm) && i < MaxTerminals; i++ {
		en.Terminals = append(en.Terminals, Terminal{Dev: l.Term[i].Dev, PtsDev: l.Term[i].PtsDev})
	}
	en.DenyConsoleEgress = l.Flags&devicesDenyConsoleEgrs != 0
}

// devicesMap is the pinned device_allow map.
func (e *Enforcer) devicesMap() *ebpf.Map { return e.shared[bpf.SharedMapDeviceAllow] }

// setDevices writes the device list of a cgroup (none needed: removes it)
// and returns how to put back what was there. Register calls it before
// the ceiling is written.
func (e *Enforcer) setDevices(cgroupID uint64, en Entry) (undo func(), err error) {
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
func (e *Enforcer) lookupDevices(cgroupID uint64, en *Entry) {
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

// TerminalOf is the Terminal f reaches, for Entry.Terminals: a pty slave
// by its number and devpts instance, any other tty by its number. A
// descriptor of /dev/tty, /dev/console or /dev/tty0 is resolved to the tty
// it reached (TIOCGDEV). Errors: f is not a terminal, or it reached a pty
// through /dev/tty or /dev/console (its devpts instance cannot be named
// from there: declare the pty's own descriptor).
func TerminalOf(f *os.File) (Terminal, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return Terminal{}, fmt.Errorf("terminal %s: %w", f.Name(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return Terminal{}, fmt.Errorf("%w: %s is not a terminal", ErrBadDevices, f.Name())
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return Terminal{}, fmt.Errorf("%w: %s is not a terminal: %v", ErrBadDevices, f.Name(), err)
	}
	dev := kernelDev(st.Rdev)
	switch maj := dev >> 20; {
	case maj >= 136 && maj <= 143:
		return Terminal{Dev: dev, PtsDev: kernelDev(st.Dev)}, nil
	case dev == 5<<20 || dev == 5<<20|1 || dev == 4<<20:
		real, err := unix.IoctlGetUint32(int(f.Fd()), unix.TIOCGDEV)
		if err != nil {
			return Terminal{}, fmt.Errorf("terminal %s: TIOCGDEV: %w", f.Name(), err)
		}
		dev = kernelDev(uint64(real))
		if maj := dev >> 20; maj >= 136 && maj <= 143 {
			return Terminal{}, fmt.Errorf("%w: %s reaches a pty: declare the pty's own descriptor", ErrBadDevices, f.Name())
		}
	}
	return Terminal{Dev: dev}, nil
}
