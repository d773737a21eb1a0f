package escapetest

// Probe operations of the shell cases on files written or changed after
// the registration (shell_written_test.go), and what the test does between their
// steps.

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// evictCaches writes back and drops the page cache, dentries and inodes
// (from the test, outside every sandbox), so that state the kernel keeps
// only while an inode is cached is gone.
func evictCaches(t *testing.T) {
	t.Helper()
	unix.Sync()
	for i := 0; i < 2; i++ {
		if err := writeFile("/proc/sys/vm/drop_caches", "3"); err != nil {
			t.Fatalf("drop_caches: %v", err)
		}
	}
}

func init() {
	// rewrite-wait-exec SRC DST ARGS...: open DST for write (create or
	// O_TRUNC), write SRC's bytes, close; wait for the test (which evicts
	// the inode); exec DST ARGS. Effect: its output has "pwned".
	probe.Register("rewrite-wait-exec", func(r *probe.Result, a []string) {
		f, err := os.OpenFile(a[1], os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if !r.Require(err, "open "+a[1]+" for write") {
			return
		}
		err = copyFile(f, a[0])
		f.Close()
		if !r.Require(err, "write "+a[1]) {
			return
		}
		probe.Sync()
		probe.RunProgram(r, a[1:], nil, nil)
		r.Effect = strings.Contains(r.Out, "pwned")
	})
	// write-mmap-exec SRC DST sync|nosync mmap|mprotect: write DST (SRC's
	// bytes), optionally wait for the test, then map it executable
	// (mmap PROT_EXEC, or mmap PROT_READ and mprotect PROT_EXEC).
	probe.Register("write-mmap-exec", func(r *probe.Result, a []string) {
		f, err := os.OpenFile(a[1], os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if !r.Require(err, "open "+a[1]+" for write") {
			return
		}
		err = copyFile(f, a[0])
		f.Close()
		if !r.Require(err, "write "+a[1]) {
			return
		}
		if a[2] == "sync" {
			probe.Sync()
		}
		mapExec(r, a[1], a[3])
	})
	// mmap-exec PATH mmap|mprotect: map an existing file executable.
	probe.Register("mmap-exec", func(r *probe.Result, a []string) { mapExec(r, a[0], a[1]) })
}

func mapExec(r *probe.Result, path, how string) {
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if !r.Require(err, "open "+path) {
		return
	}
	defer unix.Close(fd)
	if how == "mprotect" {
		b, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE)
		if !r.Require(err, "mmap PROT_READ") {
			return
		}
		r.Effect = r.Check(unix.Mprotect(b, unix.PROT_READ|unix.PROT_EXEC), "mprotect PROT_EXEC")
		return
	}
	b, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if r.Check(err, "mmap PROT_EXEC") {
		r.Effect = true
		_ = unix.Munmap(b)
	}
}
