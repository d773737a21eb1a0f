package cgroup

import (
	"errors"
	"strings"
	"testing"
)

const hybridMountinfo = `25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
35 25 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
36 35 0:31 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
37 35 0:32 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd
`

// The cgroup2 mount is found wherever it is (hybrid hosts put it at
// /sys/fs/cgroup/unified), never assumed.
func TestParseMountinfoFindsCgroup2(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{hybridMountinfo, "/sys/fs/cgroup/unified"},
		{"29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup"},
		{"29 23 0:26 / /my\\040cgroups rw - cgroup2 none rw\n", "/my cgroups"},
		// Optional fields before the separator.
		{"29 23 0:26 / /cg rw shared:1 master:2 - cgroup2 none rw\n", "/cg"},
	} {
		got, err := ParseMountinfo(strings.NewReader(c.in))
		if err != nil || got != c.want {
			t.Errorf("ParseMountinfo(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestParseMountinfoWithoutCgroup2(t *testing.T) {
	in := "37 35 0:32 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n"
	if _, err := ParseMountinfo(strings.NewReader(in)); !errors.Is(err, ErrNoCgroup2) {
		t.Fatalf("err = %v, want ErrNoCgroup2", err)
	}
}

func TestLevel(t *testing.T) {
	for g, want := range map[string]int{"/": 0, "": 0, "/a": 1, "/a/b": 2, "/a/b/": 2, "a/b/c": 3} {
		if got := Level(g); got != want {
			t.Errorf("Level(%q) = %d, want %d", g, got, want)
		}
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add(hybridMountinfo)
	f.Add("1 2 3:4 / /x\\134y rw - cgroup2 c rw\n")
	f.Add(" - cgroup2\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseMountinfo(strings.NewReader(in))
		if err == nil && !strings.Contains(in, "cgroup2") {
			t.Fatalf("found %q in input without cgroup2", got)
		}
	})
}
