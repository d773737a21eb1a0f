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

	"github.com/enforcerd/enforcerd/enforcer"
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
	p := filepath.Join(extDir(t), filepath.Base(tmpPath(name)))
	t.Cleanup(func() { os.Remove(p) })
	return p
}

// pwnedArgs: busybox (named busybox-*, so it takes the applet from argv[1])
// runs a shell whose output proves the exec ran.
var pwnedArgs = []string{"sh", "-c", "echo pwned"}

func TestShellWrittenSurvivesEviction(t *testing.T) {
	kernel(t)
	extDir(t)
	var tool string
	rewriteExec := func(dst func(t *testing.T) string, evict bool) func(*testing.T, *os.File) (result, effect) {
		return func(t *testing.T, dir *os.File) (result, effect) {
			between := func() {}
			if evict {
				between = func() { evictCaches(t) }
			}
			args := append([]string{"/bin/busybox", dst(t)}, pwnedArgs...)
			return probeEffect(probeSync(t, dir, nil, between, "rewrite-wait-exec", args...))
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
	cases := []tcase{
		{name: "read_only: exec of a copy the sandbox wrote on ext4", ceiling: shellReadOnly, attempt: rewriteExec(fresh, false)},
		{name: "read_only: exec of a copy the sandbox wrote on ext4, inode evicted", ceiling: shellReadOnly, attempt: rewriteExec(fresh, true)},
		// An allowed file (made by the test before registration) whose
		// inode the sandbox rewrote with busybox's bytes, then evicted.
		{name: "none: exec of an allowed ext4 file the sandbox rewrote, inode evicted", ceiling: shellNone, prep: prepTool,
			allow: allowList(func() string { return tool }), attempt: rewriteExec(theTool, true)},
		{name: "none: exec of an allowed ext4 file the sandbox rewrote", ceiling: shellNone, prep: prepTool,
			allow: allowList(func() string { return tool }), attempt: rewriteExec(theTool, false)},
	}
	for i := range cases {
		cases[i].hook = enforcer.HookBprmCheckSecurity
		if cases[i].allow == nil && cases[i].ceiling.Shell == shellNone.Shell {
			cases[i].allow = allowList()
		}
	}
	runCases(t, cases)
}

func TestShellWrittenMmapExec(t *testing.T) {
	kernel(t)
	extDir(t)
	mmapCase := func(name, where, how string, evict bool) []tcase {
		var out []tcase
		for _, c := range []struct {
			name string
			tcase
		}{{"none", tcase{ceiling: shellNone, allow: allowList()}}, {"read_only", tcase{ceiling: shellReadOnly}}} {
			tc := c.tcase
			tc.name = c.name + ": " + name
			tc.attempt = func(t *testing.T, dir *os.File) (result, effect) {
				var p string
				if where == "ext4" {
					p = extPath(t, "lib")
				} else {
					p = tmpPath("lib")
				}
				if evict {
					return probeEffect(probeSync(t, dir, nil, func() { evictCaches(t) }, "write-mmap-exec", "/bin/busybox", p, "sync", how))
				}
				return probeEffect(probe(t, dir, nil, "write-mmap-exec", "/bin/busybox", p, "nosync", how))
			}
			out = append(out, tc)
		}
		return out
	}
	var cases []tcase
	cases = append(cases, mmapCase("mmap PROT_EXEC of a file it wrote (tmpfs)", "tmp", "mmap", false)...)
	cases = append(cases, mmapCase("mprotect PROT_EXEC of a file it wrote (tmpfs)", "tmp", "mprotect", false)...)
	cases = append(cases, mmapCase("mmap PROT_EXEC of a file it wrote on ext4, inode evicted", "ext4", "mmap", true)...)
	cases = append(cases, mmapCase("mprotect PROT_EXEC of a file it wrote on ext4, inode evicted", "ext4", "mprotect", true)...)
	// Judged by errno and effect; the record is one of two hooks.
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			triState(t, c)
			checkAnyRecord(t, records(t, 0), []enforcer.Hook{enforcer.HookMmapFile, enforcer.HookFileMprotect, enforcer.HookBprmCheckSecurity}, -1)
		})
	}
}

// Whoever changed it: a file written or changed by a process outside the
// sandbox after the registration is not one the sandbox may run.
func TestShellChangedAfterRegistration(t *testing.T) {
	kernel(t)
	var allowed string
	prepAllowed := func(t *testing.T) {
		allowed = tmpPath("busybox-allowed-late")
		if err := copyPath("/bin/busybox", allowed); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // well before the registration
	}
	run := func(p string) []string { return append([]string{p}, pwnedArgs...) }
	outsideWrites := func(t *testing.T, dir *os.File) (result, effect) {
		p := tmpPath("busybox-late")
		if err := copyPath("/bin/busybox", p); err != nil {
			t.Fatal(err)
		}
		r := probe(t, dir, nil, "exec", run(p)...)
		return probeEffect(r)
	}
	cases := []tcase{
		{name: "read_only: exec of a file written outside after registration", ceiling: shellReadOnly, attempt: outsideWrites},
		{name: "read_only: exec of a file written outside after registration, on ext4", ceiling: shellReadOnly, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			p := extPath(t, "busybox-late")
			if err := copyPath("/bin/busybox", p); err != nil {
				t.Fatal(err)
			}
			evictCaches(t)
			r := probe(t, dir, nil, "exec", run(p)...)
			return probeEffect(r)
		}},
		{name: "none: exec of an allowed file rewritten outside after registration", ceiling: shellNone, prep: prepAllowed,
			allow: allowList(func() string { return allowed }), attempt: func(t *testing.T, dir *os.File) (result, effect) {
				if err := copyPath("/bin/busybox", allowed); err != nil { // O_TRUNC: same inode
					t.Fatal(err)
				}
				r := probe(t, dir, nil, "exec", run(allowed)...)
				return probeEffect(r)
			}},
		// Only the inode's metadata changed (ctime), by a process outside.
		{name: "read_only: exec of a file chmod'ed outside after registration", ceiling: shellReadOnly, prep: prepAllowed,
			attempt: func(t *testing.T, dir *os.File) (result, effect) {
				if err := os.Chmod(allowed, 0o750); err != nil {
					t.Fatal(err)
				}
				r := probe(t, dir, nil, "exec", run(allowed)...)
				return probeEffect(r)
			}},
		{name: "read_only: mmap PROT_EXEC of a file written outside after registration", ceiling: shellReadOnly, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			p := tmpPath("late-lib")
			if err := copyPath("/bin/busybox", p); err != nil {
				t.Fatal(err)
			}
			return probeEffect(probe(t, dir, nil, "mmap-exec", p, "mmap"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			triState(t, c)
			checkAnyRecord(t, records(t, 0), []enforcer.Hook{enforcer.HookBprmCheckSecurity, enforcer.HookMmapFile}, -1)
		})
	}
}

// Positive: a file on ext4 that predates the registration still runs after
// its inode was evicted, and still maps executable.
func TestShellExt4OldFileRuns(t *testing.T) {
	kernel(t)
	p := extPath(t, "busybox-old")
	if err := copyPath("/bin/busybox", p); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	sb := newCgroup(t, "case")
	sb.register(t, enforcer.Entry{Ceiling: shellReadOnly})
	evictCaches(t)
	if r := probe(t, sb.dir, nil, "exec", p, "echo", "ok"); r.Setup != "" || r.Errno != 0 || r.Exit != 0 || r.Out != "ok" {
		t.Errorf("read_only: exec of an ext4 file older than the registration, evicted: %v, want success", r)
	}
	if r := probe(t, sb.dir, nil, "mmap-exec", p, "mmap"); r.Setup != "" || r.Errno != 0 {
		t.Errorf("read_only: mmap PROT_EXEC of an old ext4 file: %v, want success", r)
	}
}

// probeEffect makes the probe-observed effect (Effect, or an exec that
// printed "pwned") the case's side effect, so the control must show it too.
func probeEffect(r result) (result, effect) {
	if r.Out == "pwned" {
		r.Effect = true
	}
	return r, func() (bool, string) { return r.Effect, "probe observed the effect (" + r.String() + ")" }
}
