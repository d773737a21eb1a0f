package enforcer_test

// The writable roots' decision cache (bpf/roots.h, roots_check): a write
// every ancestor with roots allowed is remembered on the inode of the
// directory the climb started from. These cases first make the sandbox
// write beneath the root (so the cache holds "allowed" for the
// directory), then change what the decision depended on from outside
// (a rename of the directory or of an ancestor out of the root, the
// registration's roots), and require the next write to be refused at
// once: tri-state, with a control that runs the same steps without a
// ceiling.

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// cacheCase: after warm-up writes beneath R/a/sub, change moves things
// (run outside the sandbox); then op with args (fixture paths) is the
// attempt. fd: a fixture file opened O_WRONLY before the change and
// passed as the inherited descriptor.
type cacheCase struct {
	name   string
	change func(t *testing.T, fx outsideFx)
	op     string
	args   []string
	fd     string
	watch  string
}

// moveSub and moveAncestor put R/a/sub outside the root (T1: the root's
// own tmpfs, so the rename is within one file system).
func moveSub(t *testing.T, fx outsideFx) {
	must(t, os.Rename(fx.path("R/a/sub"), fx.path("T1/sub")))
}

func moveAncestor(t *testing.T, fx outsideFx) {
	must(t, os.Rename(fx.path("R/a"), fx.path("T1/a")))
}

func (c cacheCase) run(t *testing.T, ceiling bool) (probe.Result, func() (bool, string)) {
	name := "cache-control"
	if ceiling {
		name = "cache-case"
	}
	sb := kt.Sandbox(t, name)
	fx := newOutsideFx(t)
	must(t, os.MkdirAll(fx.path("R/a/sub"), 0o755))
	must(t, os.WriteFile(fx.path("R/a/sub/f"), []byte("hello"), 0o644))
	if ceiling {
		sb.Register(t, fx.entry(t, "R"))
	}
	// Warm-up: allowed under either, and the cache's entry for sub.
	for _, w := range [][]string{{"create", "R/a/sub/warm"}, {"append", "R/a/sub/f"}} {
		if r := sb.Probe(t, w[0], fx.path(w[1])); r.Setup != "" || r.Errno != 0 {
			t.Fatalf("warm-up %s %s: %v, want success", w[0], w[1], r)
		}
	}
	var files []*os.File
	if c.fd != "" {
		fd, err := unix.Open(fx.path(c.fd), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		must(t, err)
		f := os.NewFile(uintptr(fd), c.fd)
		defer f.Close()
		files = append(files, f)
	}
	c.change(t, fx)
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = fx.path(a)
	}
	eff := fileChange(t, fx.path(c.watch))
	return sb.Run(t, probe.Cmd{Op: c.op, Args: args, Files: files}), eff
}

// TestOutsideRootsCacheInvalidation: a decision the cache holds is never
// reused once the directory (or an ancestor) was renamed out of the root:
// by name (create, append, chmod, truncate, unlink, mkdir) and through a
// descriptor opened beneath the root before the move.
func TestOutsideRootsCacheInvalidation(t *testing.T) {
	kt.Enforcer(t)
	var cases []cacheCase
	for _, m := range []struct {
		name   string
		change func(t *testing.T, fx outsideFx)
		dir    string
	}{{"dir-moved-out", moveSub, "T1/sub"}, {"ancestor-moved-out", moveAncestor, "T1/a/sub"}} {
		cases = append(cases,
			cacheCase{name: m.name + "/create", change: m.change, op: "create", args: []string{m.dir + "/new"}, watch: m.dir},
			cacheCase{name: m.name + "/append", change: m.change, op: "append", args: []string{m.dir + "/f"}, watch: m.dir},
			cacheCase{name: m.name + "/chmod", change: m.change, op: "chmod", args: []string{m.dir + "/f"}, watch: m.dir},
			cacheCase{name: m.name + "/truncate", change: m.change, op: "truncate", args: []string{m.dir + "/f"}, watch: m.dir},
			cacheCase{name: m.name + "/unlink", change: m.change, op: "unlink", args: []string{m.dir + "/f"}, watch: m.dir},
			cacheCase{name: m.name + "/mkdir", change: m.change, op: "mkdir", args: []string{m.dir + "/d"}, watch: m.dir},
			cacheCase{name: m.name + "/write-held-descriptor", change: m.change, op: "write-fd", fd: "R/a/sub/f", watch: m.dir},
		)
	}
	runCacheCases(t, cases)
}

// runCacheCases runs each case tri-state: without a ceiling the operation
// and its side effect happen; under write=false with root R it is refused
// and the fixture is unchanged.
func runCacheCases(t *testing.T, cases []cacheCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, eff := c.run(t, false)
			if r.Setup != "" || r.Errno != 0 {
				t.Fatalf("control (no ceiling): %v, want success", r)
			}
			if ok, what := eff(); !ok {
				t.Fatalf("control (no ceiling): no side effect (%s)", what)
			}
			r, eff = c.run(t, true)
			expectRootsDenied(t, c.name, r, eff)
		})
	}
}

// TestOutsideRootsCacheRegistration: the registration's roots change (the
// root dropped, then the registration replaced by one with another root)
// after the cache holds "allowed": refused at once.
func TestOutsideRootsCacheRegistration(t *testing.T) {
	kt.Enforcer(t)
	for _, other := range []bool{false, true} {
		name := "roots-dropped"
		if other {
			name = "other-root"
		}
		t.Run(name, func(t *testing.T) {
			sb := kt.Sandbox(t, "cache")
			fx := newOutsideFx(t)
			must(t, os.MkdirAll(fx.path("R/a/sub"), 0o755))
			must(t, os.WriteFile(fx.path("R/a/sub/f"), []byte("hello"), 0o644))
			sb.Register(t, fx.entry(t, "R"))
			if r := sb.Probe(t, "append", fx.path("R/a/sub/f")); r.Setup != "" || r.Errno != 0 {
				t.Fatalf("warm-up append beneath R: %v, want success", r)
			}
			if other {
				sb.Register(t, fx.entry(t, "O"))
			} else {
				sb.Register(t, fx.entry(t))
			}
			eff := fileChange(t, filepath.Join(fx.R, "a"))
			r := sb.Probe(t, "append", fx.path("R/a/sub/f"))
			expectRootsDenied(t, name, r, eff)
			// The new root works: the cache did not keep the old answer
			// for every directory either.
			if other {
				if r := sb.Probe(t, "append", fx.path("O/f")); r.Setup != "" || r.Errno != 0 {
					t.Fatalf("append beneath the new root O: %v, want success", r)
				}
			}
		})
	}
}

// renamesActive reads bpf/roots.h's count of renames in progress (what
// the daemon's enforcerd_renames_in_progress exports).
func renamesActive(t *testing.T) uint64 {
	t.Helper()
	v, err := kt.Enforcer(t).RenamesInProgress()
	must(t, err)
	return v
}

// TestRenamesActiveReturnsToZero: every kind of rename on the host ends
// with the count of renames in progress back where it was, so the roots
// decision cache is not left off (a count left raised is safe but makes
// every write climb again).
func TestRenamesActiveReturnsToZero(t *testing.T) {
	kt.Enforcer(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	must(t, os.WriteFile(a, nil, 0o644))
	must(t, os.WriteFile(b, nil, 0o644))
	for _, c := range []struct {
		name string
		do   func() error
	}{
		{"rename", func() error { return unix.Rename(a, filepath.Join(dir, "c")) }},
		{"rename-back", func() error { return unix.Rename(filepath.Join(dir, "c"), a) }},
		{"exchange", func() error { return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) }},
		{"noreplace-refused", func() error {
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE); err == nil {
				return errors.New("RENAME_NOREPLACE over an existing name succeeded")
			}
			return nil
		}},
		{"missing-source", func() error {
			if err := unix.Rename(filepath.Join(dir, "missing"), a); err == nil {
				return errors.New("renaming a missing file succeeded")
			}
			return nil
		}},
	} {
		before := renamesActive(t)
		if before != 0 {
			t.Fatalf("before %s: %d renames in progress, want 0 (a rename counted and never ended: the decision cache is off)", c.name, before)
		}
		must(t, c.do())
		if after := renamesActive(t); after != before {
			t.Errorf("%s: renames in progress %d before, %d after", c.name, before, after)
		}
	}
	// Renames under a ceiling with a root: inode_rename decides before
	// it counts; one it refuses is never counted, one it allows (its own
	// check may come from the decision cache) ends like any other.
	sb := kt.Sandbox(t, "renames")
	fx := newOutsideFx(t)
	// One file system (T1's tmpfs): a rename across mounts fails with
	// EXDEV before any security check.
	must(t, os.MkdirAll(fx.path("R/a"), 0o755))
	must(t, os.WriteFile(fx.path("R/a/f"), nil, 0o644))
	must(t, os.MkdirAll(fx.path("T1/o"), 0o755))
	must(t, os.WriteFile(fx.path("T1/o/g"), nil, 0o644))
	sb.Register(t, fx.entry(t, "R"))
	for _, c := range []struct {
		name     string
		from, to string
		refused  bool
	}{
		{"allowed-beneath-the-root", "R/a/f", "R/a/f2", false},
		{"allowed-again-from-the-cache", "R/a/f2", "R/a/f", false},
		{"refused-out-of-the-root", "R/a/f", "T1/o/f", true},
		{"refused-into-the-root", "T1/o/g", "R/a/g", true},
	} {
		r := sb.Probe(t, "rename", fx.path(c.from), fx.path(c.to))
		if r.Setup != "" {
			t.Fatalf("%s: %v", c.name, r)
		}
		if c.refused != r.Denied() || (!c.refused && r.Errno != 0) {
			t.Errorf("%s: %v, want refused=%v", c.name, r, c.refused)
		}
		_, errFrom := os.Lstat(fx.path(c.from))
		_, errTo := os.Lstat(fx.path(c.to))
		if moved := errFrom != nil && errTo == nil; moved == c.refused {
			t.Errorf("%s: moved=%v (from: %v, to: %v), want moved=%v", c.name, moved, errFrom, errTo, !c.refused)
		}
		if after := renamesActive(t); after != 0 {
			t.Errorf("%s: %d renames in progress after it, want 0", c.name, after)
		}
	}
}

// namesGen reads names_generation.gen (bpf/roots.h), the generation the
// roots decision cache's entries are kept under.
func namesGen(t *testing.T) uint64 {
	t.Helper()
	m := namesGenerationMap(t)
	defer m.Close()
	var v namesGeneration
	must(t, m.Lookup(uint32(0), &v))
	if v.Tracking != 1 {
		t.Fatalf("names_generation.tracking %d, want 1 (the decision cache on)", v.Tracking)
	}
	return v.Gen
}

// TestNamesGenerationMovesForDirectoriesOnly: a rename that moves a
// directory (rename(2), RENAME_EXCHANGE of a directory with a file, a
// directory replacing an empty one, io_uring's renameat) moves the
// generation twice, before and after (every cache entry of every sandbox
// is stale); a rename that moves no directory (a file, a symlink,
// RENAME_EXCHANGE of two files, RENAME_WHITEOUT of a file, a file
// replacing a file) leaves it where it was, so the host's file renames do
// not make every sandbox's writes climb again. What keeps the second kind
// safe is TestAttackRootsCacheFileMovedOut's.
func TestNamesGenerationMovesForDirectoriesOnly(t *testing.T) {
	kt.Enforcer(t)
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	must(t, os.WriteFile(p("f"), nil, 0o644))
	must(t, os.WriteFile(p("g"), nil, 0o644))
	must(t, os.Symlink("f", p("l")))
	must(t, os.Mkdir(p("d"), 0o755))
	must(t, os.Mkdir(p("e"), 0o755))
	uring := func(o, n string) error { return uringRename(p(o), p(n)) }
	for _, c := range []struct {
		name  string
		moves bool
		do    func() error
	}{
		{"file", false, func() error { return unix.Rename(p("f"), p("f2")) }},
		{"file-back", false, func() error { return unix.Rename(p("f2"), p("f")) }},
		{"symlink", false, func() error { return unix.Rename(p("l"), p("l2")) }},
		{"exchange-files", false, func() error {
			return unix.Renameat2(unix.AT_FDCWD, p("f"), unix.AT_FDCWD, p("g"), unix.RENAME_EXCHANGE)
		}},
		{"whiteout-file", false, func() error {
			return unix.Renameat2(unix.AT_FDCWD, p("g"), unix.AT_FDCWD, p("g2"), unix.RENAME_WHITEOUT)
		}},
		{"file-over-file", false, func() error { return unix.Rename(p("g2"), p("f")) }},
		{"io-uring-file", false, func() error { return uring("f", "f3") }},
		{"directory", true, func() error { return unix.Rename(p("d"), p("d2")) }},
		{"exchange-file-directory", true, func() error {
			return unix.Renameat2(unix.AT_FDCWD, p("f3"), unix.AT_FDCWD, p("d2"), unix.RENAME_EXCHANGE)
		}},
		{"directory-over-empty-directory", true, func() error { return unix.Rename(p("f3"), p("e")) }},
		{"io-uring-directory", true, func() error { return uring("e", "e2") }},
	} {
		before := namesGen(t)
		if err := c.do(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		after := namesGen(t)
		if c.moves && after != before+2 {
			t.Errorf("%s moves a directory: generation %d before, %d after, want +2", c.name, before, after)
		}
		if !c.moves && after != before {
			t.Errorf("%s moves no directory: generation %d before, %d after, want unchanged (every sandbox's cached roots decisions dropped)", c.name, before, after)
		}
		if n := renamesActive(t); n != 0 {
			t.Errorf("after %s: %d renames in progress, want 0", c.name, n)
		}
	}
}
