package escapetest

// The shell ceiling at exec (docs/threat-model.md X1, X2; docs/design.md "Kernel
// meaning per field"): shell=none allows only the entrypoint and the allow list, by
// device and inode; shell=read_only runs exec'd programs write-denied; both
// deny exec of memfds and of files the sandbox wrote.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/policy"
)

var (
	shellNone     = policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}
	shellReadOnly = policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellReadOnly}
	fullNoWrite   = policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}
)

// allowList: the test-made copies of this binary and of busybox, plus extra.
func allowList(extra ...func() string) func(t *testing.T) []enforcer.FileID {
	return func(t *testing.T) []enforcer.FileID {
		ids := []enforcer.FileID{fileID(t, shared.allowed), fileID(t, shared.bbAllowed)}
		for _, e := range extra {
			ids = append(ids, fileID(t, e()))
		}
		return ids
	}
}

// execTouch runs argv (ending in a shell command that touches %F) and
// observes the file. argv entries equal to "%F" are replaced.
func execTouch(argv ...string) func(*testing.T, *os.File) (result, effect) {
	return func(t *testing.T, dir *os.File) (result, effect) {
		f := tmpPath("touched")
		a := make([]string, len(argv))
		for i, s := range argv {
			a[i] = strings.ReplaceAll(s, "%F", f)
		}
		return probe(t, dir, nil, "exec", a...), fileExists(f)
	}
}

func TestShellNone(t *testing.T) {
	kernel(t)
	symlink := func() string {
		// Named "sh" so busybox picks the sh applet from argv[0].
		d := tmpPath("linkdir")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "sh")
		if err := os.Symlink("/bin/sh", p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shCopy := func() string {
		p := tmpPath("busybox-sh-copy")
		if err := copyPath("/bin/busybox", p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// /tmp is its own tmpfs; /bin/busybox is on rootfs: link at /.
	hardlink := func() string {
		p := filepath.Join("/", filepath.Base(tmpPath("busybox-escapetest-link")))
		if err := os.Link("/bin/busybox", p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
		return p
	}
	var script string
	mkScript := func() string { return script }
	bad := hardlink() // made once: rootfs is not the test's temp dir
	cases := []tcase{
		{name: "X1 /bin/sh by path", attempt: execTouch("/bin/sh", "-c", "touch %F")},
		{name: "X1 symlink to /bin/sh", attempt: func(t *testing.T, dir *os.File) (result, effect) {
			return execTouch(symlink(), "-c", "touch %F")(t, dir)
		}},
		{name: "X1 copy of /bin/sh", attempt: func(t *testing.T, dir *os.File) (result, effect) {
			return execTouch(shCopy(), "sh", "-c", "touch %F")(t, dir)
		}},
		{name: "X1 hard link of /bin/sh", attempt: execTouch(bad, "sh", "-c", "touch %F")},
		{name: "X2 busybox sh -c", attempt: execTouch("/bin/busybox", "sh", "-c", "touch %F")},
		// An allowed interpreter (a copy of busybox) reaching exec: awk's
		// system() runs /bin/sh, which is not allowed. awk itself runs.
		{name: "X2 allowed awk system()", nested: true, attempt: execTouch(shared.bbAllowed, "awk", `BEGIN{system("/bin/busybox touch %F")}`)},
		{name: "X2 allowed sh -c nested exec", nested: true, attempt: execTouch(shared.bbAllowed, "sh", "-c", "/bin/busybox touch %F")},
		// The script is on the allow list; its interpreter is not.
		{name: "X2 shebang script, interpreter not allowed", allow: allowList(mkScript), prep: func(t *testing.T) {
			script = tmpPath("script")
			if err := os.WriteFile(script, []byte("#!/bin/sh\n/bin/busybox touch \"$1\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			f := tmpPath("touched")
			return probe(t, dir, nil, "exec", script, f), fileExists(f)
		}},
		{name: "X2 dynamic loader invoked directly", attempt: func(t *testing.T, dir *os.File) (result, effect) {
			return probe(t, dir, nil, "exec", dynamicLoader(t), "--version"), nil
		}},
		{name: "X2 unlisted ELF", attempt: func(t *testing.T, dir *os.File) (result, effect) {
			p := tmpPath("unlisted")
			if err := copyPath(shared.self, p); err != nil {
				t.Fatal(err)
			}
			return probe(t, dir, nil, "exec-probe", p), nil
		}},
		{name: "X2 memfd exec of an allowed binary's bytes", attempt: op("memfd-exec", shared.allowed)},
		// An allowed file the sandbox opened for write is no longer allowed.
		{name: "exec of an allowed file the sandbox rewrote", allow: allowList(mkScript), prep: prepCopy(&script), attempt: func(t *testing.T, dir *os.File) (result, effect) {
			return probe(t, dir, nil, "copy-exec", shared.self, script), nil
		}},
		// The same through a writable descriptor inherited from outside
		// (e.g. stdout redirected to a file): an allowed file's bytes become
		// busybox, then the "allowed" file runs a shell.
		{name: "exec of an allowed file rewritten through an inherited fd", allow: allowList(mkScript), prep: prepCopy(&script), attempt: func(t *testing.T, dir *os.File) (result, effect) {
			fd, err := os.OpenFile(script, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f := tmpPath("touched")
			return probe(t, dir, []*os.File{fd}, "fd-write-exec", "/bin/busybox", script, "sh", "-c", "/bin/busybox touch "+f), fileExists(f)
		}},
	}
	for i := range cases {
		cases[i].ceiling = shellNone
		if cases[i].allow == nil {
			cases[i].allow = allowList()
		}
		if !cases[i].nested {
			cases[i].hook = enforcer.HookBprmCheckSecurity
		}
	}
	runCases(t, cases)
}

// The entrypoint and the allow list still run under shell=none.
func TestShellNoneAllowedStillRun(t *testing.T) {
	kernel(t)
	sb := newCgroup(t, "case")
	sb.register(t, enforcer.Entry{Ceiling: shellNone, ExecAllow: allowList()(t)})
	for _, argv := range [][]string{{"/proc/self/exe"}, {shared.self}, {shared.allowed}} {
		if r := probe(t, sb.dir, nil, "exec-probe", argv...); r.Setup != "" || r.Errno != 0 || r.Exit != 0 {
			t.Errorf("shell=none: exec of allowed %s: %v, want success", argv[0], r)
		}
	}
	// An allowed busybox copy runs (awk without exec).
	if r := probe(t, sb.dir, nil, "exec", shared.bbAllowed, "awk", "BEGIN{print 1}"); r.Errno != 0 || r.Exit != 0 || r.Out != "1" {
		t.Errorf("shell=none: allowed awk: %v, want success", r)
	}
}

// prepCopy makes a fresh test-made copy of this binary at *p.
func prepCopy(p *string) func(t *testing.T) {
	return func(t *testing.T) {
		*p = tmpPath("busybox-allowed-copy") // busybox picks applets from argv[1]
		if err := copyPath(shared.self, *p); err != nil {
			t.Fatal(err)
		}
	}
}

// dynamicLoader is the guest's glibc loader (ld.so --version runs without
// any dynamic binary).
func dynamicLoader(t *testing.T) string {
	m, _ := filepath.Glob("/lib*/ld-linux*")
	if len(m) == 0 {
		t.Fatal("no dynamic loader in the guest: cover the case with an unlisted ELF only")
	}
	return m[0]
}

func TestShellReadOnly(t *testing.T) {
	kernel(t)
	cases := []tcase{
		// exec'd programs run write-denied even though write=true.
		{name: "exec'd touch creates", nested: true, hook: enforcer.HookInodeCreate, attempt: execTouch("/bin/busybox", "touch", "%F")},
		{name: "exec'd sh redirect writes", nested: true, hook: enforcer.HookInodeCreate, attempt: execTouch("/bin/sh", "-c", "echo x > %F")},
		{name: "exec'd rm unlinks", nested: true, hook: enforcer.HookInodeUnlink, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			f := tmpPath("victim")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return probe(t, dir, nil, "exec", "/bin/busybox", "rm", f), fileGone(f)
		}},
		{name: "exec'd program writes an existing file", nested: true, hook: enforcer.HookFileOpen, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			f := tmpPath("victim")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := probe(t, dir, nil, "exec", "/bin/sh", "-c", "echo changed >> "+f)
			return r, func() (bool, string) {
				b, _ := os.ReadFile(f)
				return string(b) != "x", f + " modified"
			}
		}},
		{name: "memfd exec", hook: enforcer.HookBprmCheckSecurity, attempt: op("memfd-exec", shared.allowed)},
		{name: "exec of a file the sandbox wrote", hook: enforcer.HookBprmCheckSecurity, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			return probe(t, dir, nil, "copy-exec", shared.self, tmpPath("sandbox-written")), nil
		}},
		// Written through a descriptor inherited from outside (stdout
		// redirected to a file): never opened for write inside.
		{name: "exec of a file the sandbox wrote through an inherited fd", hook: enforcer.HookBprmCheckSecurity, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			p := tmpPath("inherited")
			fd, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			return probe(t, dir, []*os.File{fd}, "fd-write-exec", shared.self, p), nil
		}},
	}
	for i := range cases {
		cases[i].ceiling = shellReadOnly
	}
	runCases(t, cases)
}

// Under read_only, ls/cat/grep run; the entrypoint itself still writes.
func TestShellReadOnlyToolsRun(t *testing.T) {
	kernel(t)
	sb := newCgroup(t, "case")
	sb.register(t, enforcer.Entry{Ceiling: shellReadOnly})
	for _, argv := range [][]string{
		{"/bin/busybox", "ls", "/"},
		{"/bin/busybox", "cat", "/proc/version"},
		{"/bin/sh", "-c", "/bin/busybox grep -q Linux /proc/version"},
		{"/bin/busybox", "env"},
	} {
		if r := probe(t, sb.dir, nil, "exec", argv...); r.Errno != 0 || r.Exit != 0 {
			t.Errorf("shell=read_only: %v: %v, want success", argv, r)
		}
	}
	sb2 := newCgroup(t, "case")
	sb2.register(t, enforcer.Entry{Ceiling: shellReadOnly})
	f := tmpPath("entrypoint-writes")
	if r := probe(t, sb2.dir, nil, "create", f); r.Errno != 0 || r.Setup != "" {
		t.Errorf("shell=read_only, write=true: the entrypoint's own create: %v, want success", r)
	}
}

// Under shell=full a shell runs, and is still subject to write=false.
func TestShellFull(t *testing.T) {
	kernel(t)
	sb := newCgroup(t, "case")
	sb.register(t, enforcer.Entry{Ceiling: fullNoWrite})
	if r := probe(t, sb.dir, nil, "exec", "/bin/sh", "-c", "/bin/busybox true && echo ok"); r.Errno != 0 || r.Exit != 0 || r.Out != "ok" {
		t.Errorf("shell=full: sh -c: %v, want success", r)
	}
	runCases(t, []tcase{{name: "shell writes under write=false", ceiling: fullNoWrite, nested: true, hook: enforcer.HookInodeCreate,
		attempt: execTouch("/bin/sh", "-c", "echo x > %F")}})
}
