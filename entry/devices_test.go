package entry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCheckDevices: too long lists and device number 0 are refused with
// ErrBadDevices; the maximum is accepted.
func TestCheckDevices(t *testing.T) {
	devs := make([]Device, MaxAllowDevices+1)
	for i := range devs {
		devs[i] = Device{Dev: 1<<20 | uint32(i+20)}
	}
	terms := make([]Terminal, MaxTerminals+1)
	for i := range terms {
		terms[i] = Terminal{Dev: 4<<20 | uint32(i+1)}
	}
	for _, c := range []struct {
		en Entry
		ok bool
	}{
		{Entry{AllowDevices: devs[:MaxAllowDevices], Terminals: terms[:MaxTerminals]}, true},
		{Entry{AllowDevices: devs}, false},
		{Entry{Terminals: terms}, false},
		{Entry{AllowDevices: []Device{{}}}, false},
		{Entry{Terminals: []Terminal{{PtsDev: 3}}}, false},
	} {
		err := CheckDevices(c.en)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBadDevices)) {
			t.Errorf("CheckDevices(%d devices, %d terminals): %v, want ok=%v", len(c.en.AllowDevices), len(c.en.Terminals), err, c.ok)
		}
	}
}

// TestDeviceOf: a character device is found with its kernel number, a
// regular file is refused.
func TestDeviceOf(t *testing.T) {
	d, err := DeviceOf("/dev/null")
	if err != nil || d != (Device{Dev: 1<<20 | 3}) {
		t.Errorf("DeviceOf(/dev/null) = %v, %v; want c 1:3", d, err)
	}
	regular := filepath.Join(t.TempDir(), "regular")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := DeviceOf(regular); !errors.Is(err, ErrBadDevices) {
		t.Errorf("DeviceOf(a regular file): %v, want ErrBadDevices", err)
	}
}

// TestTerminalOf: a pty slave is named with its devpts instance; a pipe
// is no terminal.
func TestTerminalOf(t *testing.T) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	defer m.Close()
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(s.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	got, err := TerminalOf(s)
	want := Terminal{Dev: kernelDev(st.Rdev), PtsDev: kernelDev(st.Dev)}
	if err != nil || got != want || got.Dev>>20 < 136 {
		t.Errorf("TerminalOf(pty slave) = %+v, %v; want %+v", got, err, want)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := TerminalOf(r); !errors.Is(err, ErrBadDevices) {
		t.Errorf("TerminalOf(pipe): %v, want ErrBadDevices", err)
	}
}
