package enforcer

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/denial"
)

func TestJoinNames(t *testing.T) {
	var n [4][64]int8
	set := func(i int, s string) {
		for j := range n[i] {
			n[i][j] = 0
		}
		for j, c := range []byte(s) {
			n[i][j] = int8(c)
		}
	}
	set(0, "passwd")
	set(1, "etc")
	set(2, "/")
	if got := joinNames(n); got != "/etc/passwd" {
		t.Errorf("joinNames = %q, want /etc/passwd", got)
	}
	set(2, "a")
	set(3, "b")
	if got := joinNames(n); got != ".../b/a/etc/passwd" {
		t.Errorf("joinNames = %q, want .../b/a/etc/passwd", got)
	}
}

// Records come from the kernel, but a decoder of untrusted bytes must never
// panic: short and garbled records are errors or odd values.
func FuzzDecodeEvent(f *testing.F) {
	var ev bpf.SharedEvent
	ev.Hook = uint16(denial.HookSocketConnect)
	ev.ObjectKind = uint32(denial.ObjectSocket)
	ev.Family = 2
	var buf bytes.Buffer
	_ = binary.Write(&buf, binary.NativeEndian, ev)
	f.Add(buf.Bytes())
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := decodeEvent(raw)
		if err == nil {
			_ = d.Object.String()
			_ = d.Hook.String()
			_ = d.Operation()
		}
	})
}
