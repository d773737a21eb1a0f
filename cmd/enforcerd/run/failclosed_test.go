package run

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/entry"
)

// TestRunRepeatedFlagsNeverWiden: a wrapper that puts --network=deny before
// user-supplied flags keeps it: a repeated ceiling flag clamps with the
// earlier one (deny and the narrower shell win), and a repeated --role is
// a usage error. Native, no root.
func TestRunRepeatedFlagsNeverWiden(t *testing.T) {
	for _, c := range []struct {
		args []string
		want policy.KernelCeiling
	}{
		{[]string{"--network=deny", "--network=allow"}, policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}},
		{[]string{"--network=allow", "--network=deny"}, policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}},
		{[]string{"--write=deny", "--write=allow"}, policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}},
		{[]string{"--shell=none", "--shell=full"}, policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}},
		{[]string{"--shell=read_only", "--shell=full", "--shell=read_only"}, policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellReadOnly}},
	} {
		o, _, err := parseRunArgs(t, append(c.args, "--", "true"))
		if err != nil || o.ceiling != c.want {
			t.Errorf("enforcerd run %s: ceiling %s, %v; want %s", strings.Join(c.args, " "), o.ceiling, err, c.want)
		}
	}
	if _, _, err := parseRunArgs(t, []string{"--role", "reviewer", "--role", "general", "--", "true"}); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("a repeated --role: %v, want a usage error", err)
	}
}

// nestedOuter registers a network=false cgroup below this process's own
// (accepted with partial coverage where that is all the host can do) and
// returns it.
func nestedOuter(t *testing.T, full bool) cgroup.Cgroup {
	t.Helper()
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	self, err := cgroup.PidGroup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	outer, err := cgroup.Create(mount, path.Join(self, fmt.Sprintf("enforcerd-test-outer-partial-%d", os.Getpid())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outer.Remove(5 * time.Second) })
	enf, err := enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: mount})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { enf.Close() })
	if err := enf.Register(outer, entry.Entry{Ceiling: policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}, AllowPartial: !full}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { enf.Unregister(outer.ID) })
	return outer
}

// TestNoBPFLSMNestedRunNamesOuterGaps: a run nested in a registered
// network=false cgroup that this host enforces only in part says what of
// that outer ceiling is not enforced, besides the narrowing; where it is
// enforced in full (BPF LSM) no gap is named. Either way the nested
// command's connection is denied (tri-state with TestRunNested's control).
func TestNoBPFLSMNestedRunNamesOuterGaps(t *testing.T) {
	vmtest.RequireRoot(t)
	full, _ := networkCoverage(t)
	outer := nestedOuter(t, full)
	r, res, ran, accepted := tcpProbe(t, "--cgroup-parent", outer.Group)
	if !ran || r.Code != 0 || res.Errno == 0 || accepted {
		t.Fatalf("nested run: exit %d, probe %v (ran %v), accepted %v\nstderr: %s", r.Code, res, ran, accepted, r.Stderr)
	}
	says := strings.Contains(r.Stderr, "enforced only in part here: NOT enforced: network-non-inet")
	if !full && !says {
		t.Errorf("a run nested in a partially enforced network=false cgroup does not name the gaps: %s", r.Stderr)
	}
	if full && says {
		t.Errorf("with BPF LSM the outer ceiling is enforced in full, yet run names gaps: %s", r.Stderr)
	}
}

// TestNoBPFLSMHostPolicyCapsAllowPartial: the daemon records its
// allow_partial in the pins (enforcer.HostPolicy); `run --allow-partial`
// honours it whatever --socket it is given. With allow_partial false
// recorded, a partial ceiling is refused (125, CMD never runs); with true,
// it runs (and the connection is denied). Where network=false is enforced
// in full, --allow-partial changes nothing.
func TestNoBPFLSMHostPolicyCapsAllowPartial(t *testing.T) {
	vmtest.RequireRoot(t)
	full, _ := networkCoverage(t)
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: mount})
	if err != nil {
		t.Fatal(err)
	}
	defer enf.Close()
	t.Cleanup(func() { os.Remove(filepath.Join(testPinDir, enforcer.HostPolicyPin)) })
	elsewhere := filepath.Join(t.TempDir(), "no-daemon-here.sock")
	for _, allow := range []bool{false, true} {
		if err := enf.SetHostPolicy(enforcer.HostPolicy{AllowPartial: allow}); err != nil {
			t.Fatal(err)
		}
		r, res, ran, accepted := tcpProbe(t, "--network=deny", "--allow-partial", "--socket", elsewhere)
		if full || allow {
			if r.Code != 0 || !ran || res.Errno == 0 || accepted {
				t.Errorf("allow_partial=%v recorded (full=%v): exit %d, probe %v (ran %v), accepted %v\nstderr: %s", allow, full, r.Code, res, ran, accepted, r.Stderr)
			}
			continue
		}
		if r.Code != cli.ExitCannotEnforce || ran || accepted || !strings.Contains(r.Stderr, "allow_partial is false") {
			t.Errorf("BYPASS: allow_partial=false recorded in the pins, yet `run --allow-partial --socket OTHER`: exit %d (want %d), probe ran %v, accepted %v\nstderr: %s",
				r.Code, cli.ExitCannotEnforce, ran, accepted, r.Stderr)
		}
	}
}
