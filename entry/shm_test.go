package entry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mountinfoSample = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
25 22 0:21 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw
31 22 0:21 /sub /srv/shm-sub rw shared:4 - tmpfs tmpfs rw
`

func TestMountRoot(t *testing.T) {
	for _, tc := range []struct {
		id   uint64
		want string
		err  string
	}{
		{25, "/", ""},
		{31, "/sub", ""},
		{99, "", "not listed"},
	} {
		got, err := mountRoot(strings.NewReader(mountinfoSample), tc.id)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("mount %d: %q, %v; want an error naming %q", tc.id, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("mount %d: %q, %v; want %q", tc.id, got, err, tc.want)
		}
	}
	if _, err := mountRoot(strings.NewReader("x 1 2\n"), 1); err == nil {
		t.Error("a malformed line was accepted")
	}
}

// FuzzMountRoot: no mountinfo text makes the parser panic, and a root it
// returns is the fourth field of a line that names the id.
func FuzzMountRoot(f *testing.F) {
	f.Add(mountinfoSample, uint64(25))
	f.Add("", uint64(0))
	f.Add("1 2 3 4\n", uint64(1))
	f.Add("18446744073709551615 0 0:1 / / rw - tmpfs t rw\n", uint64(18446744073709551615))
	f.Fuzz(func(t *testing.T, text string, id uint64) {
		root, err := mountRoot(strings.NewReader(text), id)
		if err == nil && !strings.Contains(text, root) {
			t.Errorf("root %q is not in the text", root)
		}
	})
}

// ShmDirOf refuses what is not the root of a tmpfs: a missing directory,
// a plain directory (on whatever the test's temporary directory is).
func TestShmDirOfRefuses(t *testing.T) {
	root := t.TempDir()
	if _, err := ShmDirOf(root, "/proc/self/mountinfo"); !errors.Is(err, ErrNoShmDir) {
		t.Errorf("no dev/shm: %v, want ErrNoShmDir", err)
	}
	if err := os.MkdirAll(filepath.Join(root, ShmPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ShmDirOf(root, "/proc/self/mountinfo"); !errors.Is(err, ErrNoShmDir) {
		t.Errorf("a plain directory: %v, want ErrNoShmDir", err)
	}
	if _, err := ShmDirOf(filepath.Join(root, "missing"), "/proc/self/mountinfo"); !errors.Is(err, ErrNoShmDir) {
		t.Errorf("a missing root: %v, want ErrNoShmDir", err)
	}
}
