package enforcer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// deepDir is the 8-level directory below a root the allowed writes use.
const deepDir = "1/2/3/4/5/6/7/8"

// rootsFx is a fresh tree outside any sandbox: base/R (the writable root:
// f, deepDir/old, and mnt, a tmpfs mounted beneath it with f) and base/O
// (outside: f with an xattr, and a directory d).
type rootsFx struct{ base, R, O string }

func newRootsFx(t *testing.T) rootsFx {
	t.Helper()
	base, err := os.MkdirTemp("", "enforcerd-roots-")
	must(t, err)
	fx := rootsFx{base: base, R: filepath.Join(base, "R"), O: filepath.Join(base, "O")}
	must(t, os.MkdirAll(filepath.Join(fx.R, deepDir), 0o755))
	must(t, os.WriteFile(filepath.Join(fx.R, "f"), []byte("hello"), 0o644))
	must(t, os.WriteFile(filepath.Join(fx.R, deepDir, "old"), []byte("hello"), 0o644))
	must(t, os.MkdirAll(filepath.Join(fx.O, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(fx.O, "f"), []byte("hello"), 0o644))
	must(t, unix.Setxattr(filepath.Join(fx.O, "f"), fixtureXattr(), []byte("1"), 0))
	mnt := filepath.Join(fx.R, "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	must(t, unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"))
	must(t, os.WriteFile(filepath.Join(mnt, "f"), []byte("hello"), 0o644))
	t.Cleanup(func() {
		_ = unix.Unmount(mnt, unix.MNT_DETACH)
		os.RemoveAll(base)
	})
	return fx
}

// path maps "R/x" and "O/x" to the fixture's; anything else stays as is.
func (fx rootsFx) path(p string) string {
	if rest, ok := strings.CutPrefix(p, "R/"); ok {
		return filepath.Join(fx.R, rest)
	}
	if rest, ok := strings.CutPrefix(p, "O/"); ok {
		return filepath.Join(fx.O, rest)
	}
	switch p {
	case "R":
		return fx.R
	case "O":
		return fx.O
	}
	return p
}

func (fx rootsFx) entry(t *testing.T, roots ...string) entry.Entry {
	t.Helper()
	return writeRootsEntry(t, fx.path, roots...)
}

// expectRootsDenied: the attempt r of case name under write=false with a
// root was made, refused (EPERM or EACCES), and changed nothing (eff).
func expectRootsDenied(t *testing.T, name string, r probe.Result, eff kerneltest.Effect) {
	t.Helper()
	if r.Setup != "" {
		t.Fatalf("ceiling: probe could not attempt the operation: %v", r)
	}
	if !r.Denied() {
		t.Errorf("BYPASS %s under write=false with root R: %v, want EPERM or EACCES", name, r)
	}
	if ok, what := eff(); ok {
		t.Errorf("BYPASS %s: side effect happened: %s", name, what)
	}
}

// writeRootsEntry is write=false with roots (fixture names, mapped to
// paths by path) as its writable roots.
func writeRootsEntry(t *testing.T, path func(string) string, roots ...string) entry.Entry {
	t.Helper()
	en := entry.Entry{Ceiling: writeDeny}
	for _, r := range roots {
		id, err := entry.WriteRootOf(path(r))
		must(t, err)
		en.WriteRoots = append(en.WriteRoots, id)
	}
	return en
}

// rootsCase is one alias kind: op with args (fixture paths), fd (when not
// "") a fixture file the test opens with fdFlags and passes as fd 3, and
// the hooks one of which must record the denial. watch: the part of the
// fixture whose change is the side effect ("" the whole tree).
type rootsCase struct {
	name    string
	op      string
	args    []string
	fd      string
	fdFlags int
	hooks   []denial.Hook
	watch   string
}

func (c rootsCase) attempt(t *testing.T, sb *kerneltest.Sandbox, fx rootsFx) (probe.Result, kerneltest.Effect) {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = fx.path(a)
	}
	watch := fx.base
	if c.watch != "" {
		watch = fx.path(c.watch)
	}
	cmd := probe.Cmd{Op: c.op, Args: args}
	if c.fd != "" {
		fd, err := unix.Open(fx.path(c.fd), c.fdFlags|unix.O_CLOEXEC, 0)
		must(t, err)
		f := os.NewFile(uintptr(fd), c.fd)
		defer f.Close()
		cmd.Files = []*os.File{f}
	}
	eff := fileChange(t, watch)
	return sb.Run(t, cmd), eff
}

// rootsDenied: R1–R8 (docs/threat-model.md), each under write=false with
// the single root R.
var rootsDenied = []rootsCase{
	{name: "R1/create-outside", op: "create", args: []string{"O/new"}, hooks: hooks(denial.HookInodeCreate)},
	{name: "R1/mkdir-outside", op: "mkdir", args: []string{"O/newdir"}, hooks: hooks(denial.HookInodeMkdir)},
	{name: "R1/open-write-outside", op: "append", args: []string{"O/f"}, hooks: hooks(denial.HookFileOpen)},
	{name: "R1/truncate-outside", op: "truncate", args: []string{"O/f"}, hooks: hooks(denial.HookPathTruncate, denial.HookInodeSetattr)},
	{name: "R1/unlink-outside", op: "unlink", args: []string{"O/f"}, hooks: hooks(denial.HookInodeUnlink)},
	{name: "R1/chmod-outside", op: "chmod", args: []string{"O/f"}, hooks: hooks(denial.HookInodeSetattr)},
	{name: "R2/dotdot", op: "append", args: []string{"R/1/../../O/f"}, hooks: hooks(denial.HookFileOpen)},
	{name: "R2/symlink-in-root-to-outside", op: "symlink-append", args: []string{"O/f", "R/sym"}, hooks: hooks(denial.HookFileOpen), watch: "O"},
	{name: "R3/link-outside-file-in", op: "link", args: []string{"O/f", "R/hard"}, hooks: hooks(denial.HookInodeLink)},
	{name: "R3/link-inside-file-out", op: "link", args: []string{"R/f", "O/hard"}, hooks: hooks(denial.HookInodeLink)},
	{name: "R3/tmpfile-linkat-out", op: "tmpfile-link", args: []string{"R", "O/new"}, hooks: hooks(denial.HookInodeLink), watch: "O"},
	{name: "R4/rename-out", op: "rename", args: []string{"R/f", "O/moved"}, hooks: hooks(denial.HookInodeRename)},
	{name: "R4/rename-in", op: "rename", args: []string{"O/f", "R/moved"}, hooks: hooks(denial.HookInodeRename)},
	{name: "R4/exchange", op: "exchange", args: []string{"R/f", "O/f"}, hooks: hooks(denial.HookInodeRename)},
	{name: "R5/inherited-outside-fd", op: "write-fd", fd: "O/f", fdFlags: unix.O_WRONLY | unix.O_APPEND, hooks: hooks(denial.HookFilePermission)},
	{name: "R5/proc-self-fd-reopen", op: "reopen-append", fd: "O/f", fdFlags: unix.O_RDONLY, hooks: hooks(denial.HookFileOpen)},
	{name: "R6/mount-beneath-root-create", op: "create", args: []string{"R/mnt/new"}, hooks: hooks(denial.HookInodeCreate)},
	{name: "R6/mount-beneath-root-chmod", op: "chmod", args: []string{"R/mnt/f"}, hooks: hooks(denial.HookInodeSetattr)},
}

func hooks(h ...denial.Hook) []denial.Hook { return h }

// TestWriteRootsDenyAliases: (a) the operation succeeds with its side
// effect in an unregistered cgroup; (b) under write=false with root R it
// is denied; (c) nothing changed, and the denial is recorded.
func TestWriteRootsDenyAliases(t *testing.T) {
	kt.Enforcer(t)
	cases := append([]rootsCase(nil), rootsDenied...)
	cases = append(cases, rootsCase{name: "R1/setxattr-outside", op: "setxattr", args: []string{"O/f", xattrNS() + "new"}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.op == "setxattr" {
				h, alt := xattrHooks(denial.HookInodeSetxattr)
				c.hooks = hooks(h, alt)
			}
			ctl := kt.Sandbox(t, "control")
			fx := newRootsFx(t)
			r, eff := c.attempt(t, ctl, fx)
			if r.Setup != "" || r.Errno != 0 {
				t.Fatalf("control (no ceiling): %v, want success", r)
			}
			if ok, what := eff(); !ok {
				t.Fatalf("control (no ceiling): no side effect (%s): the probe proves nothing", what)
			}
			sb := kt.Sandbox(t, "case")
			fx = newRootsFx(t)
			sb.Register(t, fx.entry(t, "R"))
			r, eff = c.attempt(t, sb, fx)
			expectRootsDenied(t, c.name, r, eff)
			kt.Expect(t, sb.Cg.ID, kerneltest.Hooks(c.hooks...))
		})
	}
}

// rootsAllowed: writes beneath R, 8 levels deep and across a mount where a
// file hook sees the vfsmount; each must be denied under write=false
// without roots (the control that proves the root is what allows it).
var rootsAllowed = []struct {
	name string
	op   string
	args []string
	want string // the file that must then hold Payload at its end
}{
	{"create-deep", "create", []string{"R/" + deepDir + "/new"}, "R/" + deepDir + "/new"},
	{"modify-deep", "append", []string{"R/" + deepDir + "/old"}, "R/" + deepDir + "/old"},
	{"mkdir-deep", "mkdir", []string{"R/" + deepDir + "/newdir"}, ""},
	{"rename-within", "rename", []string{"R/f", "R/" + deepDir + "/moved"}, ""},
	{"symlink-within", "symlink-append", []string{"R/f", "R/" + deepDir + "/sym"}, "R/f"},
	{"tmpfile-linkat-within", "tmpfile-link", []string{"R", "R/" + deepDir + "/tmp"}, "R/" + deepDir + "/tmp"},
	{"modify-across-mount", "append", []string{"R/mnt/f"}, "R/mnt/f"},
	{"unlink-within", "unlink", []string{"R/" + deepDir + "/old"}, ""},
}

// TestWriteRootsAllowBeneath: each write is denied under write=false
// without roots, and allowed with root R, its effect seen.
func TestWriteRootsAllowBeneath(t *testing.T) {
	kt.Enforcer(t)
	for _, c := range rootsAllowed {
		t.Run(c.name, func(t *testing.T) {
			args := func(fx rootsFx) []string {
				out := make([]string, len(c.args))
				for i, a := range c.args {
					out[i] = fx.path(a)
				}
				return out
			}
			ctl := kt.Sandbox(t, "control")
			fx := newRootsFx(t)
			ctl.Register(t, fx.entry(t))
			eff := fileChange(t, fx.base)
			if r := ctl.Probe(t, c.op, args(fx)...); !r.Denied() {
				t.Fatalf("control (write=false, no roots): %v, want a denial", r)
			}
			if ok, what := eff(); ok {
				t.Fatalf("control (write=false, no roots): %s", what)
			}
			sb := kt.Sandbox(t, "case")
			fx = newRootsFx(t)
			sb.Register(t, fx.entry(t, "R"))
			eff = fileChange(t, fx.base)
			if r := sb.Probe(t, c.op, args(fx)...); r.Setup != "" || r.Errno != 0 {
				t.Fatalf("beneath root R: %v, want success (records %v)", r, hookNames(sb.Records(t)))
			}
			if ok, what := eff(); !ok {
				t.Errorf("beneath root R: no effect: %s", what)
			}
			if c.want != "" {
				b, err := os.ReadFile(fx.path(c.want))
				if err != nil || !strings.HasSuffix(string(b), probe.Payload) {
					t.Errorf("%s after the write: %q, %v; want it to end in %q", c.want, b, err, probe.Payload)
				}
			}
			if ds := sb.Records(t); len(ds) != 0 {
				t.Errorf("records for allowed writes: %v", hookNames(ds))
			}
		})
	}
}

func hookNames(ds []denial.Denial) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Hook.String()+" "+d.Object.String())
	}
	return out
}

// TestWriteRootsMeet: the meet of nested registrations is the
// intersection of their roots. Parent: roots A; child: roots A/b and C
// (write=false), or no roots with write=true. A process in the child may
// write beneath A/b only (write=false child), or beneath A (write=true).
func TestWriteRootsMeet(t *testing.T) {
	kt.Enforcer(t)
	for _, childWrite := range []bool{false, true} {
		parent := kt.Sandbox(t, "meet")
		child := kt.SandboxAt(t, parent.Cg.Group+"/child")
		fx := newRootsFx(t)
		a, c := filepath.Join(fx.R, "1"), fx.O
		ab := filepath.Join(a, "2")
		parent.Register(t, fx.entry(t, a))
		if childWrite {
			child.Register(t, entry.Entry{Ceiling: policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}})
		} else {
			child.Register(t, fx.entry(t, ab, c))
		}
		for _, w := range []struct {
			dir   string
			allow bool
		}{
			{ab, true},
			{filepath.Join(ab, "3"), true},
			{a, childWrite},
			{c, false},
			{fx.R, false},
		} {
			p := filepath.Join(w.dir, "meet-new")
			r := child.Probe(t, "create", p)
			_, err := os.Stat(p)
			switch {
			case r.Setup != "":
				t.Fatalf("probe: %v", r)
			case w.allow && (r.Errno != 0 || err != nil):
				t.Errorf("child write=%v: create %s: %v (stat: %v), want success", childWrite, p, r, err)
			case !w.allow && !r.Denied():
				t.Errorf("BYPASS child write=%v: create %s: %v, want a denial", childWrite, p, r)
			case !w.allow && err == nil:
				t.Errorf("BYPASS child write=%v: %s exists", childWrite, p)
			}
			if !w.allow {
				if err := kerneltest.Match(kt.Records(t, 0), kerneltest.Hooks(denial.HookInodeCreate)); err != nil {
					t.Errorf("child write=%v: create %s: %v", childWrite, p, err)
				}
			} else {
				kt.Records(t, 0)
			}
		}
	}
}

// TestWriteRootsLookup: the roots come back from Lookup and List, and a
// registration with roots but write allowed, or too many roots, is refused
// with nothing registered.
func TestWriteRootsLookup(t *testing.T) {
	e := kt.Enforcer(t)
	sb := kt.Sandbox(t, "lookup")
	fx := newRootsFx(t)
	en := fx.entry(t, "R", "O")
	sb.Register(t, en)
	got, err := e.Lookup(sb.Cg.ID)
	must(t, err)
	if len(got.WriteRoots) != 2 || got.WriteRoots[0] != en.WriteRoots[0] || got.WriteRoots[1] != en.WriteRoots[1] {
		t.Errorf("Lookup roots %v, want %v", got.WriteRoots, en.WriteRoots)
	}
	regs, err := e.List()
	must(t, err)
	found := false
	for _, r := range regs {
		if r.CgroupID == sb.Cg.ID {
			found = len(r.Entry.WriteRoots) == 2
		}
	}
	if !found {
		t.Errorf("List: no registration of %d with 2 roots", sb.Cg.ID)
	}
	bad := kt.Sandbox(t, "bad")
	for name, en := range map[string]entry.Entry{
		"write allowed": {Ceiling: policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}, WriteRoots: en.WriteRoots},
		"17 roots":      {Ceiling: writeDeny, WriteRoots: make([]entry.FileID, 17)},
	} {
		if err := e.Register(bad.Cg, en); err == nil {
			t.Errorf("%s: registered", name)
		}
		if _, err := e.Lookup(bad.Cg.ID); err == nil {
			t.Errorf("%s: something was registered", name)
		}
	}
}

// TestWriteRootsAuditOnly: an audit-only registration with roots records a
// write outside them as audited (and allows it), and leaves no record for
// a write beneath them.
func TestWriteRootsAuditOnly(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "audit")
	fx := newRootsFx(t)
	en := fx.entry(t, "R")
	en.AuditOnly = true
	sb.Register(t, en)
	if r := sb.Probe(t, "create", fx.path("R/"+deepDir+"/new")); r.Setup != "" || r.Errno != 0 {
		t.Fatalf("create beneath R: %v", r)
	}
	if ds := sb.Records(t); len(ds) != 0 {
		t.Errorf("records for a write beneath the root: %v", hookNames(ds))
	}
	if r := sb.Probe(t, "create", fx.path("O/new")); r.Setup != "" || r.Errno != 0 {
		t.Fatalf("create outside under audit-only: %v, want success", r)
	}
	if _, err := os.Stat(fx.path("O/new")); err != nil {
		t.Errorf("audit-only create outside left no file: %v", err)
	}
	kt.Expect(t, sb.Cg.ID, kerneltest.Want{Hooks: []denial.Hook{denial.HookInodeCreate}, Audited: true})
}

// TestWriteRootsReadOnlyShell: roots never lift the write denial of a
// program a shell=read_only ceiling exec'd (bpf/exec.h): (a) with
// write=false and root R an exec'd shell appends to a file beneath R; (b)
// with shell=read_only added it is denied; (c) the file is unchanged.
func TestWriteRootsReadOnlyShell(t *testing.T) {
	kt.Enforcer(t)
	readOnly := policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellReadOnly}
	for _, shell := range []policy.KernelCeiling{writeDeny, readOnly} {
		sb := kt.Sandbox(t, "ro")
		fx := newRootsFx(t)
		en := fx.entry(t, "R")
		en.Ceiling = shell
		sb.Register(t, en)
		f := fx.path("R/" + deepDir + "/old")
		before, _ := os.ReadFile(f)
		r := sb.Probe(t, "exec", "/bin/sh", "-c", "echo x >> "+f)
		after, _ := os.ReadFile(f)
		changed := string(after) != string(before)
		if shell == writeDeny {
			if r.Setup != "" || r.Exit != 0 || !changed {
				t.Fatalf("control (write=false, root R): exec'd sh: %v, changed %v", r, changed)
			}
			continue
		}
		if changed {
			t.Errorf("BYPASS: a program exec'd under shell=read_only wrote beneath a root: %q", after)
		}
		kt.Expect(t, sb.Cg.ID, kerneltest.Hooks(denial.HookFileOpen))
	}
}
