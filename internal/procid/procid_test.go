package procid

import (
	"errors"
	"os"
	"testing"
)

func TestParseStartTime(t *testing.T) {
	line := []byte("42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10 0")
	v, err := ParseStartTime(line)
	if err != nil || v != 98765 {
		t.Fatalf("ParseStartTime = %d, %v; want 98765", v, err)
	}
	for _, bad := range []string{"42 comm S 1", "42 (x) S 1 2 3", "42 (x) S 1 42 42 0 -1 4 1 0 0 0 1 2 0 0 20 0 1 0 notanumber 1"} {
		if _, err := ParseStartTime([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%q: err %v, want ErrMalformed", bad, err)
		}
	}
}

func TestStartTimeSelf(t *testing.T) {
	st, err := StartTime(os.Getpid())
	if err != nil {
		t.Skip(err) // no /proc
	}
	now, err := Now()
	if err != nil {
		t.Fatal(err)
	}
	if st > now+1 {
		t.Fatalf("own start time %d is after now %d", st, now)
	}
}

func TestParseParent(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int
		ok   bool
	}{
		{"42 (sh) S 7 42 42 0 -1", 7, true},
		{"42 (a) b) (c) S 1 42", 1, true},
		{"42 (x) S", 0, false},
		{"42 (x) S -3 1", 0, false},
		{"42 x S 3", 0, false},
	} {
		got, err := ParseParent([]byte(tc.stat))
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseParent(%q) = %d, %v; want %d (ok %v)", tc.stat, got, err, tc.want, tc.ok)
		}
	}
	if p, err := Parent(os.Getpid()); err != nil || p != os.Getppid() {
		t.Fatalf("Parent(self) = %d, %v; want %d", p, err, os.Getppid())
	}
}
