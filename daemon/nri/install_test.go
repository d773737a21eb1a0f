package nri

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/enforcerd/enforcerd/test/testroot"
)

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestInstallHookBinary: the copy is made, left alone when identical,
// replaced (a new inode: renamed over, never rewritten in place) when the
// daemon's executable changed; a directory others can write, or none, is
// refused and nothing is written.
func TestInstallHookBinary(t *testing.T) {
	testroot.Require(t, "the hook's directory must be root-owned")
	dir := t.TempDir()
	src := filepath.Join(dir, "self")
	os.WriteFile(src, []byte("v1"), 0o700)
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	dst := filepath.Join(bin, "enforcerd")
	if err := InstallHookBinary(src, dst); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if b, _ := os.ReadFile(dst); err != nil || !bytes.Equal(b, []byte("v1")) || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed %q mode %v (%v)", b, fi.Mode(), err)
	}
	ino := inode(t, dst)
	if err := InstallHookBinary(src, dst); err != nil || inode(t, dst) != ino {
		t.Fatalf("identical copy rewritten (%v)", err)
	}
	os.WriteFile(src, []byte("v2"), 0o700)
	if err := InstallHookBinary(src, dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "v2" || inode(t, dst) == ino {
		t.Fatalf("after an upgrade: %q, same inode %v", b, inode(t, dst) == ino)
	}
	if ents, _ := os.ReadDir(bin); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}

	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	for _, c := range []struct{ dst, want string }{
		{filepath.Join(open, "enforcerd"), "writable by group or others"},
		{filepath.Join(dir, "absent", "enforcerd"), "no such file"},
		{filepath.Join(src, "enforcerd"), "not a directory"},
	} {
		err := InstallHookBinary(src, c.dst)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nri.hook_path") {
			t.Errorf("%s: %v, want an nri.hook_path error containing %q", c.dst, err, c.want)
		}
		if _, err := os.Stat(c.dst); err == nil {
			t.Errorf("%s written despite the refusal", c.dst)
		}
	}
}

// TestCRIOInstallsHook: in hook mode with install_hook the plugin puts
// the daemon's executable at hook_path when it connects, before the first
// container.
func TestCRIOInstallsHook(t *testing.T) {
	testroot.Require(t, "the hook is installed only into a root-owned directory")
	dir := t.TempDir()
	self := filepath.Join(dir, "self")
	os.WriteFile(self, []byte("daemon build"), 0o700)
	hook := filepath.Join(dir, "enforcerd")
	rs := newRuntime(t, "cri-o")
	runPlugin(t, rs, newFake(), func(c *Config) { c.HookPath, c.InstallHook = hook, true },
		func(o *Options) { o.SelfExe = self })
	if b, err := os.ReadFile(hook); err != nil || string(b) != "daemon build" {
		t.Fatalf("hook binary %q, %v", b, err)
	}
}
