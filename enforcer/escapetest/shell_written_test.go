package escapetest

// The shell ceilings' "written after registration" rule must not depend on
// state the kernel may evict: on a disk filesystem (ext4) an inode written
// by the sandbox, evicted and read back from disk, is still one the sandbox
// wrote. The rule: under shell=none/read_only, exec or PROT_EXEC mapping of
// a file whose inode ctime is at or after the registration is denied,
// whoever changed it.

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

const ext4Magic = 0xef53

// extDir is the guest's ext4 disk ($ENFORCERD_VMTEST_EXT), or fails.
func extDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("ENFORCERD_VMTEST_EXT")
	if d == "" {
		t.Fatal("ENFORCERD_VMTEST_EXT is not set: these cases need the VM's ext4 disk")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(d, &st); err != nil {
		t.Fatalf("ext4 disk %s: %v", d, err)
	}
	if st.Type != ext4Magic {
		t.Fatalf("%s is not ext4 (magic %#x)", d, st.Type)
	}
	return d
}

// extPath is a fresh path on the ext4 disk, removed at cleanup.
func extPath(t *testing.T, name string) string {
	p := filepath.Join(extDir(t), filepath.Base(kt.TmpPath(name)))
	t.Cleanup(func() { os.Remove(p) })
	return p
}

// pwnedArgs: busybox (named busybox-*, so it takes the applet from argv[1])
// runs a shell whose output proves the exec ran.
var pwnedArgs = []string{"sh", "-c", "echo pwned"}

func TestShellWrittenSurvivesEviction(t *testing.T) {
	kt.Enforcer(t)
	extDir(t)
	var tool string
	rewriteExec := func(dst func(t *testing.T) string, evict bool) kerneltest.Attempt {
		return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			between := func() {}
			if evict {
				between = func() { evictCaches(t) }
			}
			args := append([]string{"/bin/busybox", dst(t)}, pwnedArgs...)
			return probeEffect(sb.Run(t, probe.Cmd{Op: "rewrite-wait-exec", Args: args, Between: between}))
		}
	}
	fresh := func(t *testing.T) string { return extPath(t, "busybox-x") }
	theTool := func(*testing.T) string { return tool }
	prepTool := func(t *testing.T) {
		tool = extPath(t, "busybox-tool")
		if err := copyPath("/bin/busybox", tool); err != nil {
			t.Fatal(err)
		}
	}
	cases := []kerneltest.Case{
		{Name: "read_only: exec of a copy the sandbox wrote on ext4", Ceiling: shellReadOnly, Attempt: rewriteExec(fresh, false)},
		{Name: "read_only: exec of a copy the sandbox wrote on ext4, inode evicted", Ceiling: shellReadOnly, Attempt: rewriteExec(fresh, true)},
		// An allowed file (made by the test before registration) whose
		// inode the sandbox rewrote with busybox's bytes, then evicted.
		{Name: "none: exec of an allowed ext4 file the sandbox rewrote, inode evicted", Ceiling: shellNone, Prep: prepTool,
			Allow: allowList(func() string { return tool }), Attempt: rewriteExec(theTool, true)},
		{Name: "none: exec of an allowed ext4 file the sandbox rewrote", Ceiling: shellNone, Prep: prepTool,
			Allow: allowList(func() string { return tool }), Attempt: rewriteExec(theTool, false)},
	}
	for i := range cases {
		cases[i].Want = kerneltest.Hooks(denial.HookBprmCheckSecurity)
		if cases[i].Allow == nil && cases[i].Ceiling.Shell == shellNone.Shell {
			cases[i].Allow = allowList()
		}
	}
	kt.Run(t, cases)
}

func TestShellWrittenMmapExec(t *testing.T) {
	kt.Enforcer(t)
	extDir(t)
	mmapCase := func(name, where, how string, evict bool) []kerneltest.Case {
		var out []kerneltest.Case
		for _, tc := range []kerneltest.Case{{Name: "none", Ceiling: shellNone, Allow: allowList()}, {Name: "read_only", Ceiling: shellReadOnly}} {
			tc.Name += ": " + name
			tc.Attempt = func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				var p string
				if where == "ext4" {
					p = extPath(t, "lib")
				} else {
					p = kt.TmpPath("lib")
				}
				if evict {
					return probeEffect(sb.Run(t, probe.Cmd{Op: "write-mmap-exec", Args: []string{"/bin/busybox", p, "sync", how}, Between: func() { evictCaches(t) }}))
				}
				return probeEffect(sb.Probe(t, "write-mmap-exec", "/bin/busybox", p, "nosync", how))
			}
			out = append(out, tc)
		}
		return out
	}
	var cases []kerneltest.Case
	cases = append(cases, mmapCase("mmap PROT_EXEC of a file it wrote (tmpfs)", "tmp", "mmap", false)...)
	cases = append(cases, mmapCase("mprotect PROT_EXEC of a file it wrote (tmpfs)", "tmp", "mprotect", false)...)
	cases = append(cases, mmapCase("mmap PROT_EXEC of a file it wrote on ext4, inode evicted", "ext4", "mmap", true)...)
	cases = append(cases, mmapCase("mprotect PROT_EXEC of a file it wrote on ext4, inode evicted", "ext4", "mprotect", true)...)
	// Judged by errno and effect; the record is one of two hooks.
	for i := range cases {
		cases[i].Want = kerneltest.Hooks(denial.HookMmapFile, denial.HookFileMprotect, denial.HookBprmCheckSecurity)
	}
	kt.Run(t, cases)
}

// Whoever changed it: a file written or changed by a process outside the
// sandbox after the registration is not one the sandbox may run.
func TestShellChangedAfterRegistration(t *testing.T) {
	kt.Enforcer(t)
	var allowed string
	prepAllowed := func(t *testing.T) {
		allowed = kt.TmpPath("busybox-allowed-late")
		if err := copyPath("/bin/busybox", allowed); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // well before the registration
	}
	run := func(p string) []string { return append([]string{p}, pwnedArgs...) }
	outsideWrites := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		p := kt.TmpPath("busybox-late")
		if err := copyPath("/bin/busybox", p); err != nil {
			t.Fatal(err)
		}
		r := sb.Probe(t, "exec", run(p)...)
		return probeEffect(r)
	}
	cases := []kerneltest.Case{
		{Name: "read_only: exec of a file written outside after registration", Ceiling: shellReadOnly, Attempt: outsideWrites},
		{Name: "read_only: exec of a file written outside after registration, on ext4", Ceiling: shellReadOnly, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := extPath(t, "busybox-late")
			if err := copyPath("/bin/busybox", p); err != nil {
				t.Fatal(err)
			}
			evictCaches(t)
			r := sb.Probe(t, "exec", run(p)...)
			return probeEffect(r)
		}},
		{Name: "none: exec of an allowed file rewritten outside after registration", Ceiling: shellNone, Prep: prepAllowed,
			Allow: allowList(func() string { return allowed }), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				if err := copyPath("/bin/busybox", allowed); err != nil { // O_TRUNC: same inode
					t.Fatal(err)
				}
				r := sb.Probe(t, "exec", run(allowed)...)
				return probeEffect(r)
			}},
		// Only the inode's metadata changed (ctime), by a process outside.
		{Name: "read_only: exec of a file chmod'ed outside after registration", Ceiling: shellReadOnly, Prep: prepAllowed,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				if err := os.Chmod(allowed, 0o750); err != nil {
					t.Fatal(err)
				}
				r := sb.Probe(t, "exec", run(allowed)...)
				return probeEffect(r)
			}},
		{Name: "read_only: mmap PROT_EXEC of a file written outside after registration", Ceiling: shellReadOnly, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := kt.TmpPath("late-lib")
			if err := copyPath("/bin/busybox", p); err != nil {
				t.Fatal(err)
			}
			return probeEffect(sb.Probe(t, "mmap-exec", p, "mmap"))
		}},
	}
	for i := range cases {
		cases[i].Want = kerneltest.Hooks(denial.HookBprmCheckSecurity, denial.HookMmapFile)
	}
	kt.Run(t, cases)
}

// Positive: a file on ext4 that predates the registration still runs after
// its inode was evicted, and still maps executable.
func TestShellExt4OldFileRuns(t *testing.T) {
	kt.Enforcer(t)
	p := extPath(t, "busybox-old")
	if err := copyPath("/bin/busybox", p); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: shellReadOnly})
	evictCaches(t)
	if r := sb.Probe(t, "exec", p, "echo", "ok"); r.Setup != "" || r.Errno != 0 || r.Exit != 0 || r.Out != "ok" {
		t.Errorf("read_only: exec of an ext4 file older than the registration, evicted: %v, want success", r)
	}
	if r := sb.Probe(t, "mmap-exec", p, "mmap"); r.Setup != "" || r.Errno != 0 {
		t.Errorf("read_only: mmap PROT_EXEC of an old ext4 file: %v, want success", r)
	}
}

// probeEffect makes the probe-observed effect (Effect, or an exec that
// printed "pwned") the case's side effect, so the control must show it too.
func probeEffect(r probe.Result) (probe.Result, kerneltest.Effect) {
	if r.Out == "pwned" {
		r.Effect = true
	}
	return r, func() (bool, string) { return r.Effect, "probe observed the effect (" + r.String() + ")" }
}

// TestShellNestedRegistrationTime: under nested registrations, "changed
// after registration" is measured from the earliest registration among
// the ancestors that restrict exec (bpf/exec.h restrict_since; with
// exactly one of them it reads that one's time alone, SEEN_SHELL_ONE). A
// file the host writes between an outer and an inner registration is
// refused to a process in the inner cgroup, by exec and by an executable
// mapping, whichever of the two restricts exec and whichever was
// registered first; one written before both runs (no over-denial).
// Tri-state: the same steps without any registration run the file.
func TestShellNestedRegistrationTime(t *testing.T) {
	kt.Enforcer(t)
	full := policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}
	for _, l := range []struct {
		name         string
		first, inner policy.KernelCeiling // the outer's and the sub-cgroup's
		innerFirst   bool                 // the sub-cgroup registered first
	}{
		{"outer-restricts-inner-full", shellReadOnly, full, false},
		{"both-restrict", shellReadOnly, shellReadOnly, false},
		{"outer-restricts-inner-none", shellReadOnly, shellNone, false},
		{"inner-registered-first", shellReadOnly, shellReadOnly, true},
		{"only-inner-restricts-registered-first", full, shellReadOnly, true},
	} {
		for _, ceiling := range []bool{false, true} {
			name := l.name + "/control"
			if ceiling {
				name = l.name + "/registered"
			}
			t.Run(name, func(t *testing.T) {
				old := kt.TmpPath("busybox-old")
				if err := copyPath("/bin/busybox", old); err != nil {
					t.Fatal(err)
				}
				time.Sleep(30 * time.Millisecond)
				sb := kt.Sandbox(t, "nested-since")
				sub := sb.Sub(t)
				outer, inner := func() {}, func() {}
				if ceiling {
					outer = func() { sb.Register(t, entry.Entry{Ceiling: l.first, ExecAllow: execAllowFor(t, l.first, old)}) }
					inner = func() { sub.Register(t, entry.Entry{Ceiling: l.inner, ExecAllow: execAllowFor(t, l.inner, old)}) }
				}
				if l.innerFirst {
					outer, inner = inner, outer
				}
				outer()
				time.Sleep(30 * time.Millisecond)
				late := kt.TmpPath("busybox-between")
				if err := copyPath("/bin/busybox", late); err != nil {
					t.Fatal(err)
				}
				time.Sleep(30 * time.Millisecond)
				inner()
				r := sub.Probe(t, "exec", append([]string{late}, pwnedArgs...)...)
				m := sub.Probe(t, "mmap-exec", late, "mmap")
				ok := sub.Probe(t, "exec", append([]string{old}, pwnedArgs...)...)
				if ok.Setup != "" || ok.Errno != 0 || ok.Out != "pwned" {
					t.Errorf("exec of a file older than both registrations: %v, want it to run", ok)
				}
				if !ceiling {
					if r.Setup != "" || r.Errno != 0 || r.Out != "pwned" {
						t.Fatalf("control: exec of the file written between: %v, want it to run", r)
					}
					if m.Setup != "" || m.Errno != 0 {
						t.Fatalf("control: mmap PROT_EXEC of it: %v, want success", m)
					}
					return
				}
				if r.Setup != "" || !r.Denied() || r.Out == "pwned" {
					t.Errorf("BYPASS %s: exec of a file written after the earliest restricting registration: %v, want EPERM and no output", l.name, r)
				}
				if m.Setup != "" || !m.Denied() {
					t.Errorf("BYPASS %s: mmap PROT_EXEC of it: %v, want EPERM", l.name, m)
				}
			})
		}
	}
}

// execAllowFor is what a registration of c lists as allowed programs: under
// shell=none the harness's copies and old (the file the test runs as the
// positive case), else nothing.
func execAllowFor(t *testing.T, c policy.KernelCeiling, old string) []entry.FileID {
	if c.Shell != policy.ShellNone {
		return nil
	}
	return allowList(func() string { return old })(t)
}
