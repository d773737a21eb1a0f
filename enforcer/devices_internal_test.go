package enforcer

import (
	"errors"
	"reflect"
	"testing"
)

// TestDevicesRoundTrip: what encodeDevices writes, decodeDevices reads
// back unchanged, so a looked-up entry registers identically.
func TestDevicesRoundTrip(t *testing.T) {
	for _, en := range []Entry{
		{},
		{DenyConsoleEgress: true},
		{AllowDevices: []Device{{Dev: 226<<20 | 128}, {Block: true, Dev: 8 << 20}}},
		{Terminals: []Terminal{{Dev: 136<<20 | 3, PtsDev: 25}, {Dev: 4<<20 | 64}}, DenyConsoleEgress: true},
	} {
		var got Entry
		decodeDevices(encodeDevices(en), &got)
		if !reflect.DeepEqual(got, en) {
			t.Errorf("round trip of %+v: %+v", en, got)
		}
	}
}

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
		err := checkDevices(c.en)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBadDevices)) {
			t.Errorf("checkDevices(%d devices, %d terminals): %v, want ok=%v", len(c.en.AllowDevices), len(c.en.Terminals), err, c.ok)
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
	if _, err := DeviceOf("/etc/hostname"); !errors.Is(err, ErrBadDevices) {
		t.Errorf("DeviceOf(/etc/hostname): %v, want ErrBadDevices", err)
	}
}
