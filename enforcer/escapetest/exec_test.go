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

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

var (
	shellNone     = policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}
	shellReadOnly = policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellReadOnly}
	fullNoWrite   = policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}
)

// allowList: the test-made copies of this binary and of busybox, plus extra.
func allowList(extra ...func() string) func(t *testing.T) []entry.FileID {
	return func(t *testing.T) []entry.FileID {
		ids := []entry.FileID{fileID(t, fx.allowed), fileID(t, fx.bbAllowed)}
		for _, e := range extra {
			ids = append(ids, fileID(t, e()))
		}
		return ids
	}
}

// execTouch runs argv (ending in a shell command that touches %F) and
// observes the file. argv entries equal to "%F" are replaced.
func execTouch(argv ...string) kerneltest.Attempt {
	return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		f := kt.TmpPath("touched")
		a := make([]string, len(argv))
		for i, s := range argv {
			a[i] = strings.ReplaceAll(s, "%F", f)
		}
		return sb.Probe(t, "exec", a...), kerneltest.FileExists(f)
	}
}

func TestShellNone(t *testing.T) {
	kt.Enforcer(t)
	symlink := func() string {
		// Named "sh" so busybox picks the sh applet from argv[0].
		d := kt.TmpPath("linkdir")
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
		p := kt.TmpPath("busybox-sh-copy")
		if err := copyPath("/bin/busybox", p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// /tmp is its own tmpfs; /bin/busybox is on rootfs: link at /.
	hardlink := func() string {
		p := filepath.Join("/", filepath.Base(kt.TmpPath("busybox-escapetest-link")))
		if err := os.Link("/bin/busybox", p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
		return p
	}
	var script string
	mkScript := func() string { return script }
	bad := hardlink() // made once: rootfs is not the test's temp dir
	cases := []kerneltest.Case{
		{Name: "X1 /bin/sh by path", Attempt: execTouch("/bin/sh", "-c", "touch %F")},
		{Name: "X1 symlink to /bin/sh", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return execTouch(symlink(), "-c", "touch %F")(t, sb)
		}},
		{Name: "X1 copy of /bin/sh", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return execTouch(shCopy(), "sh", "-c", "touch %F")(t, sb)
		}},
		{Name: "X1 hard link of /bin/sh", Attempt: execTouch(bad, "sh", "-c", "touch %F")},
		{Name: "X2 busybox sh -c", Attempt: execTouch("/bin/busybox", "sh", "-c", "touch %F")},
		// An allowed interpreter (a copy of busybox) reaching exec: awk's
		// system() runs /bin/sh, which is not allowed. awk itself runs.
		{Name: "X2 allowed awk system()", Nested: true, Attempt: execTouch(fx.bbAllowed, "awk", `BEGIN{system("/bin/busybox touch %F")}`)},
		{Name: "X2 allowed sh -c nested exec", Nested: true, Attempt: execTouch(fx.bbAllowed, "sh", "-c", "/bin/busybox touch %F")},
		// The script is on the allow list; its interpreter is not: it is
		// refused when the kernel opens it for exec, after the script
		// passed its check (bpf/exec.h exec_open).
		{Name: "X2 shebang script, interpreter not allowed", Allow: allowList(mkScript), Want: kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleExecOpen), Prep: func(t *testing.T) {
			script = kt.TmpPath("script")
			if err := os.WriteFile(script, []byte("#!/bin/sh\n/bin/busybox touch \"$1\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			f := kt.TmpPath("touched")
			return sb.Probe(t, "exec", script, f), kerneltest.FileExists(f)
		}},
		{Name: "X2 dynamic loader invoked directly", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "exec", dynamicLoader(t), "--version"), nil
		}},
		{Name: "X2 unlisted ELF", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := kt.TmpPath("unlisted")
			if err := copyPath(kt.Self(), p); err != nil {
				t.Fatal(err)
			}
			return sb.Probe(t, "exec-probe", p), nil
		}},
		{Name: "X2 memfd exec of an allowed binary's bytes", Attempt: kerneltest.Op("memfd-exec", fx.allowed)},
		// An allowed file the sandbox opened for write is no longer allowed.
		{Name: "exec of an allowed file the sandbox rewrote", Allow: allowList(mkScript), Prep: prepCopy(&script), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "copy-exec", kt.Self(), script), nil
		}},
		// The same through a writable descriptor inherited from outside
		// (e.g. stdout redirected to a file): an allowed file's bytes become
		// busybox, then the "allowed" file runs a shell.
		{Name: "exec of an allowed file rewritten through an inherited fd", Allow: allowList(mkScript), Prep: prepCopy(&script), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			fd, err := os.OpenFile(script, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f := kt.TmpPath("touched")
			return sb.ProbeFiles(t, []*os.File{fd}, "fd-write-exec", "/bin/busybox", script, "sh", "-c", "/bin/busybox touch "+f), kerneltest.FileExists(f)
		}},
	}
	for i := range cases {
		cases[i].Ceiling = shellNone
		if cases[i].Allow == nil {
			cases[i].Allow = allowList()
		}
		if !cases[i].Nested && len(cases[i].Want.Hooks) == 0 {
			cases[i].Want = kerneltest.Hooks(denial.HookBprmCheckSecurity)
		}
	}
	kt.Run(t, cases)
}

// The entrypoint and the allow list still run under shell=none.
func TestShellNoneAllowedStillRun(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: shellNone, ExecAllow: allowList()(t)})
	for _, argv := range [][]string{{"/proc/self/exe"}, {kt.Self()}, {fx.allowed}} {
		if r := sb.Probe(t, "exec-probe", argv...); r.Setup != "" || r.Errno != 0 || r.Exit != 0 {
			t.Errorf("shell=none: exec of allowed %s: %v, want success", argv[0], r)
		}
	}
	// An allowed busybox copy runs (awk without exec).
	if r := sb.Probe(t, "exec", fx.bbAllowed, "awk", "BEGIN{print 1}"); r.Errno != 0 || r.Exit != 0 || r.Out != "1" {
		t.Errorf("shell=none: allowed awk: %v, want success", r)
	}
}

// prepCopy makes a fresh test-made copy of this binary at *p.
func prepCopy(p *string) func(t *testing.T) {
	return func(t *testing.T) {
		*p = kt.TmpPath("busybox-allowed-copy") // busybox picks applets from argv[1]
		if err := copyPath(kt.Self(), *p); err != nil {
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
	kt.Enforcer(t)
	cases := []kerneltest.Case{
		// exec'd programs run write-denied even though write=true.
		{Name: "exec'd touch creates", Nested: true, Want: kerneltest.Hooks(denial.HookInodeCreate), Attempt: execTouch("/bin/busybox", "touch", "%F")},
		{Name: "exec'd sh redirect writes", Nested: true, Want: kerneltest.Hooks(denial.HookInodeCreate), Attempt: execTouch("/bin/sh", "-c", "echo x > %F")},
		{Name: "exec'd rm unlinks", Nested: true, Want: kerneltest.Hooks(denial.HookInodeUnlink), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			f := kt.TmpPath("victim")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return sb.Probe(t, "exec", "/bin/busybox", "rm", f), kerneltest.FileGone(f)
		}},
		{Name: "exec'd program writes an existing file", Nested: true, Want: kerneltest.Hooks(denial.HookFileOpen), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			f := kt.TmpPath("victim")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := sb.Probe(t, "exec", "/bin/sh", "-c", "echo changed >> "+f)
			return r, func() (bool, string) {
				b, _ := os.ReadFile(f)
				return string(b) != "x", f + " modified"
			}
		}},
		{Name: "memfd exec", Want: kerneltest.Hooks(denial.HookBprmCheckSecurity), Attempt: kerneltest.Op("memfd-exec", fx.allowed)},
		{Name: "exec of a file the sandbox wrote", Want: kerneltest.Hooks(denial.HookBprmCheckSecurity), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "copy-exec", kt.Self(), kt.TmpPath("sandbox-written")), nil
		}},
		// Written through a descriptor inherited from outside (stdout
		// redirected to a file): never opened for write inside.
		{Name: "exec of a file the sandbox wrote through an inherited fd", Want: kerneltest.Hooks(denial.HookBprmCheckSecurity), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := kt.TmpPath("inherited")
			fd, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			return sb.ProbeFiles(t, []*os.File{fd}, "fd-write-exec", kt.Self(), p), nil
		}},
	}
	for i := range cases {
		cases[i].Ceiling = shellReadOnly
	}
	kt.Run(t, cases)
}

// Under read_only, ls/cat/grep run; the entrypoint itself still writes.
func TestShellReadOnlyToolsRun(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: shellReadOnly})
	for _, argv := range [][]string{
		{"/bin/busybox", "ls", "/"},
		{"/bin/busybox", "cat", "/proc/version"},
		{"/bin/sh", "-c", "/bin/busybox grep -q Linux /proc/version"},
		{"/bin/busybox", "env"},
	} {
		if r := sb.Probe(t, "exec", argv...); r.Errno != 0 || r.Exit != 0 {
			t.Errorf("shell=read_only: %v: %v, want success", argv, r)
		}
	}
	sb2 := kt.Sandbox(t, "case")
	sb2.Register(t, entry.Entry{Ceiling: shellReadOnly})
	f := kt.TmpPath("entrypoint-writes")
	if r := sb2.Probe(t, "create", f); r.Errno != 0 || r.Setup != "" {
		t.Errorf("shell=read_only, write=true: the entrypoint's own create: %v, want success", r)
	}
}

// Under shell=full a shell runs, and is still subject to write=false.
func TestShellFull(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: fullNoWrite})
	if r := sb.Probe(t, "exec", "/bin/sh", "-c", "/bin/busybox true && echo ok"); r.Errno != 0 || r.Exit != 0 || r.Out != "ok" {
		t.Errorf("shell=full: sh -c: %v, want success", r)
	}
	kt.Run(t, []kerneltest.Case{{Name: "shell writes under write=false", Ceiling: fullNoWrite, Nested: true, Want: kerneltest.Hooks(denial.HookInodeCreate),
		Attempt: execTouch("/bin/sh", "-c", "echo x > %F")}})
}
