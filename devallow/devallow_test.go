package devallow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/quick"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Device
	}{
		{"c 1:3", Device{Major: 1, Minor: 3}},
		{"b 8:0", Device{Block: true, Major: 8, Minor: 0}},
		{"c 226:128", Device{Major: 226, Minor: 128}},
		{"c\t10:200", Device{Major: 10, Minor: 200}},
		{" c  4095:1048575 ", Device{Major: 4095, Minor: 1048575}},
		{"c 010:07", Device{Major: 10, Minor: 7}},
		{"/dev/dri/renderD128", Device{Path: "/dev/dri/renderD128"}},
		{"/dev//dri/../dri/card0", Device{Path: "/dev/dri/card0"}},
		{"/dev/nvidia0", Device{Path: "/dev/nvidia0"}},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, why string }{
		{"", "empty"},
		{"   ", "empty"},
		{"c", "not a type"},
		{"c 1", "no ':'"},
		{"x 1:3", "not a type"},
		{"C 1:3", "not a type"},
		{"c 1:3 extra", "not a type"},
		{"c1:3", "not a type"},
		{"c 0:3", "major 0"},
		{"c 4096:0", "larger than 4095"},
		{"c 1:1048576", "larger than 1048575"},
		{"c -1:3", "not a decimal"},
		{"c +1:3", "not a decimal"},
		{"c 0x10:3", "not a decimal"},
		{"c 1:", "not a decimal"},
		{"c :3", "not a decimal"},
		{"c 195:*", "wildcards"},
		{"b *:*", "wildcards"},
		{"a *:* rwm", "not a type"},
		{"dev/null", "must be absolute"},
		{"/dev/a,b", "comma"},
		{"/dev/a\x00b", "NUL"},
		{"/" + strings.Repeat("a", maxPathBytes), "longer than"},
		{"c 99999999999:1", "larger than"},
	} {
		_, err := Parse(c.in)
		if !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.in)) {
			t.Errorf("Parse(%q): %v; want ErrBad naming the entry and %q", c.in, err, c.why)
		}
	}
}

func TestParseList(t *testing.T) {
	var many []string
	for i := 0; i <= Max; i++ {
		many = append(many, fmt.Sprintf("c 10:%d", i))
	}
	if got, err := ParseList(many[:Max]); err != nil || len(got) != Max {
		t.Errorf("%d devices: %v, %v", Max, got, err)
	}
	if _, err := ParseList(many); !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), "at most 16") {
		t.Errorf("%d devices: %v, want ErrBad naming the bound", Max+1, err)
	}
	for _, dups := range [][]string{
		{"c 1:3", "c 1:3"},
		{"c 1:3", "c 01:3"},
		{"/dev/null", "/dev/../dev/null"},
	} {
		if _, err := ParseList(dups); !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), "listed twice") || !strings.Contains(err.Error(), fmt.Sprintf("%q", dups[1])) {
			t.Errorf("ParseList(%q): %v, want a duplicate error naming the second entry", dups, err)
		}
	}
	// A character and a block device of the same number are two devices.
	if got, err := ParseList([]string{"c 8:0", "b 8:0"}); err != nil || len(got) != 2 {
		t.Errorf("c 8:0 and b 8:0: %v, %v", got, err)
	}
	if got, err := ParseList(nil); err != nil || len(got) != 0 {
		t.Errorf("empty list: %v, %v", got, err)
	}
}

func TestSplitAnnotation(t *testing.T) {
	got, err := SplitAnnotation(" c 226:128 ,/dev/dri/card0")
	if err != nil || len(got) != 2 || got[0] != "c 226:128" || got[1] != "/dev/dri/card0" {
		t.Errorf("SplitAnnotation = %q, %v", got, err)
	}
	for _, v := range []string{"", " ", "c 1:3,", ",c 1:3", "c 1:3,,c 1:5"} {
		if _, err := SplitAnnotation(v); !errors.Is(err, ErrBad) {
			t.Errorf("SplitAnnotation(%q): %v, want ErrBad", v, err)
		}
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "file")
	if err := os.WriteFile(reg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var null unix.Stat_t
	if err := unix.Stat("/dev/null", &null); err != nil {
		t.Skipf("no /dev/null: %v", err)
	}
	ds, err := ParseList([]string{"/dev/null", "c 10:200"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(ds, "/")
	if err != nil {
		t.Fatal(err)
	}
	want := []Device{{Major: unix.Major(null.Rdev), Minor: unix.Minor(null.Rdev), Path: "/dev/null"}, {Major: 10, Minor: 200}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Resolve = %+v, want %+v", got, want)
	}
	if s := got[0].String(); s != "c 1:3 (/dev/null)" {
		t.Errorf("String = %q", s)
	}
	// Inside a root: the path is the root's, and a symlink stays inside.
	if err := os.Symlink("/dev/null", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve([]Device{{Path: "/link"}}, dir); err == nil {
		t.Error("a symlink to /dev/null inside a root without /dev resolved on the host")
	}
	for _, c := range []struct {
		ds   []Device
		root string
		why  string
	}{
		{[]Device{{Path: reg}}, "/", "a regular file"},
		{[]Device{{Path: dir}}, "/", "a directory"},
		{[]Device{{Path: filepath.Join(dir, "missing")}}, "/", "no such file"},
		{[]Device{{Path: "/dev/null"}, {Major: 1, Minor: 3}}, "/", "listed twice"},
	} {
		_, err := Resolve(c.ds, c.root)
		if !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), fmt.Sprintf("%q", entryName(c.ds[len(c.ds)-1]))) {
			t.Errorf("Resolve(%+v): %v; want ErrBad naming the entry and %q", c.ds, err, c.why)
		}
		if c.why == "a regular file" && !errors.Is(err, ErrNotDevice) {
			t.Errorf("Resolve(regular file): %v does not wrap ErrNotDevice", err)
		}
	}
}

func TestIntersect(t *testing.T) {
	a := []Device{{Major: 1, Minor: 3, Path: "/dev/null"}, {Major: 226, Minor: 128}, {Block: true, Major: 8}}
	b := []Device{{Major: 226, Minor: 128, Path: "/dev/dri/renderD128"}, {Major: 8}, {Major: 1, Minor: 3}}
	got := Intersect(a, b)
	if len(got) != 2 || got[0] != a[0] || got[1] != a[1] {
		t.Errorf("Intersect = %+v", got)
	}
	if got := Intersect(a, nil); got == nil || len(got) != 0 {
		t.Errorf("Intersect with nothing = %#v, want []", got)
	}
}

// TestIntersectNeverWidens: the meet of a child's list with its parent's
// holds only devices both list, whatever the lists (a child never
// widens), and meeting again changes nothing.
func TestIntersectNeverWidens(t *testing.T) {
	gen := func(raw []uint16) []Device {
		var out []Device
		for _, r := range raw {
			out = append(out, Device{Block: r&1 == 1, Major: uint32(r>>1)%4 + 1, Minor: uint32(r>>3) % 4})
		}
		return out
	}
	in := func(d Device, l []Device) bool {
		for _, o := range l {
			if Same(d, o) {
				return true
			}
		}
		return false
	}
	prop := func(child, parent []uint16) bool {
		c, p := gen(child), gen(parent)
		m := Intersect(c, p)
		for _, d := range m {
			if !in(d, c) || !in(d, p) {
				return false
			}
		}
		for _, d := range c {
			if in(d, p) && !in(d, m) {
				return false // the meet drops only what the parent lacks
			}
		}
		return len(Intersect(m, p)) == len(m)
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

// FuzzParse: Parse never panics; what it accepts is a number in range
// (which prints back to itself through Number) or a clean absolute path
// without NUL or comma.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"c 1:3", "b 8:0", "c 226:128", "/dev/dri/renderD128", "c 195:*", "c 0:0", "c 4096:1", "x", "", "/a,b", "c 1:3 rwm", "b\t7:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrBad) {
				t.Fatalf("Parse(%q): %v does not wrap ErrBad", s, err)
			}
			return
		}
		if d.Path != "" {
			if d.Resolved() || !strings.HasPrefix(d.Path, "/") || strings.ContainsAny(d.Path, "\x00,") || filepath.Clean(d.Path) != d.Path {
				t.Fatalf("Parse(%q) accepted %+v", s, d)
			}
			return
		}
		if d.Major == 0 || d.Major > MaxMajor || d.Minor > MaxMinor {
			t.Fatalf("Parse(%q) accepted %+v", s, d)
		}
		back, err := Parse(d.Number())
		if err != nil || back != d {
			t.Fatalf("Parse(Number(%+v)) = %+v, %v", d, back, err)
		}
		if d.Dev()>>20 != d.Major || d.Dev()&MaxMinor != d.Minor {
			t.Fatalf("Dev of %+v = %#x", d, d.Dev())
		}
	})
}
