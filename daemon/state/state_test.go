package state

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/internal/devallow"
	"github.com/enforcerd/enforcerd/policy"
)

// TestRoundTripDevices: a container's device allow list, own terminals
// and console egress choice read back as they were saved.
func TestRoundTripDevices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	in := []Container{{
		ID: "a", Cgroup: "/c/a", CgroupID: 7, Kernel: policy.KernelCeiling{Shell: policy.ShellFull},
		Registered:        time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		AllowDevices:      []devallow.Device{{Major: 226, Minor: 128, Path: "/dev/dri/renderD128"}, {Block: true, Major: 7, Minor: 0}},
		Terminals:         []Terminal{{Dev: 136<<20 | 3, PtsDev: 25}, {Dev: 4<<20 | 64}},
		DenyConsoleEgress: true,
	}, {ID: "b", Cgroup: "/c/b", CgroupID: 8, Registered: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	if err := Save(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("read back\n%+v\nwant\n%+v", out, in)
	}
}
