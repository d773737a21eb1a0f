package bpfsum

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Regen is the full check: it copies the module's files (git ls-files:
// tracked and untracked, not ignored) to a scratch directory, runs
// `go generate` for the bpf directory there, and compares the regenerated
// record with the committed one. It needs the toolchain the record names;
// on a mismatch it returns the differences, toolchain lines included, since
// another clang or libbpf explains different object bytes.
func Regen(dir string, log func(string)) error {
	root, err := ModuleRoot(dir)
	if err != nil {
		return err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, absDir)
	if err != nil {
		return err
	}
	committed, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return err
	}
	if err := Check(dir); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "bpfsum-regen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	ls := exec.Command("git", "ls-files", "-z", "-c", "-o", "--exclude-standard")
	ls.Dir = root
	out, err := ls.Output()
	if err != nil {
		return fmt.Errorf("git ls-files in %s: %w", root, err)
	}
	for _, f := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		if err := copyFile(filepath.Join(root, f), filepath.Join(scratch, f)); err != nil {
			return err
		}
	}
	log(fmt.Sprintf("regenerating %s in %s (go generate ./%s)", FileName, scratch, filepath.ToSlash(rel)))
	gen := exec.Command("go", "generate", "./"+filepath.ToSlash(rel))
	gen.Dir = scratch
	if b, err := gen.CombinedOutput(); err != nil {
		return fmt.Errorf("go generate ./%s: %w\n%s", rel, err, b)
	}
	fresh, err := os.ReadFile(filepath.Join(scratch, rel, FileName))
	if err != nil {
		return err
	}
	if bytes.Equal(committed, fresh) {
		return nil
	}
	a, err := Parse(committed)
	if err != nil {
		return err
	}
	b, err := Parse(fresh)
	if err != nil {
		return err
	}
	diffs := Diff(a, b)
	for _, t := range a.Toolchain {
		if !slices.Contains(b.Toolchain, t) {
			diffs = append(diffs, "recorded toolchain: "+t)
		}
	}
	for _, t := range b.Toolchain {
		if !slices.Contains(a.Toolchain, t) {
			diffs = append(diffs, "this machine's toolchain: "+t)
		}
	}
	return fmt.Errorf("regenerating the eBPF objects gives other bytes than the committed ones:\n  %s", strings.Join(diffs, "\n  "))
}

func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		if os.IsNotExist(err) {
			return nil // deleted in the work tree, still in the index
		}
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		t, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(t, dst)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, fi.Mode().Perm())
}
