package enforcer

import (
	"reflect"
	"testing"

	"github.com/enforcerd/enforcerd/entry"
)

// TestDevicesRoundTrip: what encodeDevices writes, decodeDevices reads
// back unchanged, so a looked-up entry registers identically.
func TestDevicesRoundTrip(t *testing.T) {
	for _, en := range []entry.Entry{
		{},
		{DenyConsoleEgress: true},
		{AllowDevices: []entry.Device{{Dev: 226<<20 | 128}, {Block: true, Dev: 8 << 20}}},
		{Terminals: []entry.Terminal{{Dev: 136<<20 | 3, PtsDev: 25}, {Dev: 4<<20 | 64}}, DenyConsoleEgress: true},
	} {
		var got entry.Entry
		decodeDevices(encodeDevices(en), &got)
		if !reflect.DeepEqual(got, en) {
			t.Errorf("round trip of %+v: %+v", en, got)
		}
	}
}
