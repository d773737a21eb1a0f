package run

import (
	"slices"
	"testing"

	"github.com/enforcerd/enforcerd/policy"
)

// TestRunFlags: every documented flag of run, as spelled in its help, and
// the "--" that ends them.
func TestRunFlags(t *testing.T) {
	o, _, err := parseRunArgs(t, []string{"--", "ls"})
	if err != nil || o.pinDir != "/sys/fs/bpf/enforcerd" || o.socket != "/run/enforcerd/enforcerd.sock" || o.quiet || o.auditOnly || o.allowPartial || o.cgroupParent != "" {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, _, err = parseRunArgs(t, []string{"--network", "DENY", "--write=False", "--shell", "none",
		"--exec-allow", "/usr/bin/a,b", "--exec-allow=/usr/bin/c", "--audit-only", "--allow-partial", "-q",
		"--cgroup-parent", "/p", "--pin-dir=/sys/fs/bpf/x", "--socket", "/s", "--", "ls", "--network=allow", "-q", "--"})
	want := runOptions{ceiling: policy.KernelCeiling{Shell: policy.ShellNone}, auditOnly: true, allowPartial: true, quiet: true,
		execAllow: []string{"/usr/bin/a,b", "/usr/bin/c"}, cgroupParent: "/p", pinDir: "/sys/fs/bpf/x", socket: "/s",
		argv: []string{"ls", "--network=allow", "-q", "--"}}
	if err != nil || o.ceiling != want.ceiling || !slices.Equal(o.execAllow, want.execAllow) || !slices.Equal(o.argv, want.argv) ||
		o.auditOnly != want.auditOnly || o.allowPartial != want.allowPartial || o.quiet != want.quiet ||
		o.cgroupParent != want.cgroupParent || o.pinDir != want.pinDir || o.socket != want.socket {
		t.Errorf("got %+v, %v\nwant %+v", o, err, want)
	}
	for _, c := range []struct {
		flags []string
		want  policy.KernelCeiling
	}{
		{[]string{"--network=allow", "--write=true"}, policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}},
		{[]string{"--network=false", "--quiet"}, policy.KernelCeiling{Write: true, Shell: policy.ShellFull}},
		// A flag only narrows; the last of a repeated flag counts.
		{[]string{"--role", "reviewer", "--network=allow", "--write", "allow"}, policy.KernelCeiling{Shell: policy.ShellReadOnly}},
		{[]string{"--shell=none", "--shell=READ_ONLY"}, policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}}, // repeated: the narrowest
	} {
		o, _, err := parseRunArgs(t, append(c.flags, "--", "true"))
		if err != nil || o.ceiling != c.want {
			t.Errorf("%q: %v, %v; want %v", c.flags, o.ceiling, err, c.want)
		}
	}
}
