package policy

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestParseWriteRoots(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // joined with "|"; "" = error
	}{
		{"/work", "/work"},
		{" /work , /tmp/x/ ", "/work|/tmp/x"},
		{"/a/../b", "/b"},
		{"/", "/"},
		{"", ""},
		{" ", ""},
		{"work", ""},
		{"/a,,/b", ""},
		{"/a,/a/", ""},
		{"/a,relative", ""},
		{"/a\x00b", ""},
		{strings.Repeat("/a", 2049), ""},
		{strings.TrimSuffix(strings.Repeat("/r,", 17), ","), ""},
		{strings.TrimSuffix(strings.Repeat("/r,", 16), ","), ""}, // duplicates
	} {
		got, err := ParseWriteRoots(c.in)
		if c.want == "" {
			if err == nil || !errors.Is(err, ErrBadWriteRoots) {
				t.Errorf("ParseWriteRoots(%q) = %v, %v; want an ErrBadWriteRoots error", c.in, got, err)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != c.want {
			t.Errorf("ParseWriteRoots(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	var many []string
	for i := range MaxWriteRoots {
		many = append(many, "/r"+string(rune('a'+i)))
	}
	if got, err := ParseWriteRoots(strings.Join(many, ",")); err != nil || len(got) != MaxWriteRoots {
		t.Errorf("%d roots: %v, %v", MaxWriteRoots, got, err)
	}
}

// FuzzParseWriteRoots: any input is refused with ErrBadWriteRoots or gives
// at most MaxWriteRoots distinct, clean, absolute paths without commas.
func FuzzParseWriteRoots(f *testing.F) {
	for _, s := range []string{"/work", "/a,/b", " /a/../b ", "", "rel", "/a,/a", "/a\x00", "/,/", strings.Repeat("/x,", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseWriteRoots(s)
		if err != nil {
			if !errors.Is(err, ErrBadWriteRoots) {
				t.Fatalf("error %v does not wrap ErrBadWriteRoots", err)
			}
			return
		}
		if len(got) == 0 || len(got) > MaxWriteRoots {
			t.Fatalf("%d roots", len(got))
		}
		seen := map[string]bool{}
		for _, p := range got {
			if !path.IsAbs(p) || path.Clean(p) != p || strings.ContainsAny(p, ",\x00") || seen[p] {
				t.Fatalf("bad root %q in %q", p, got)
			}
			seen[p] = true
		}
	})
}
