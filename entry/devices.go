package entry

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
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
// cannot be registered as given (see CheckDevices).
var ErrBadDevices = errors.New("bad device allow list")

// CheckDevices: at most MaxAllowDevices devices and MaxTerminals
// terminals, none of them device number 0 (no device).
func CheckDevices(en Entry) error {
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
