package bench

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// splitJIT takes the jit lines out of a console log (carriage returns and
// a prefix before them included) and refuses a malformed line or a log
// without any.
func TestSplitJIT(t *testing.T) {
	dir := t.TempDir()
	code := []byte{0xf3, 0x0f, 0x1e, 0xfa, 0xc3}
	log := filepath.Join(dir, "console.log")
	text := "boot noise\r\n[  1.0] " + jitLinePrefix + "file_open funcs=3,2 " + base64.StdEncoding.EncodeToString(code) + "\r\nmore\n"
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := splitJIT(log, out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "file_open.bin")); err != nil || !bytes.Equal(b, code) {
		t.Fatalf("file_open.bin: %x, %v; want %x", b, err, code)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "file_open.funcs")); string(b) != "3,2\n" {
		t.Fatalf("file_open.funcs: %q", b)
	}
	for name, bad := range map[string]string{
		"no line":   "nothing here\n",
		"malformed": jitLinePrefix + "file_open 3,2 AAAA\n",
		"bad code":  jitLinePrefix + "file_open funcs=1 !!!\n",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := splitJIT(p, out); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
