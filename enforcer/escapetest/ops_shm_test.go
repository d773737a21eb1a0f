package escapetest

// Probe ops for POSIX semaphores and shared memory in the sandbox's shm
// directory (shm_test.go): glibc's sem_open(3) and shm_open(3) sequences,
// done with the raw system calls.

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// semSize is sizeof(sem_t) on x86_64: what sem_open writes into its
// temporary file before it links it.
const semSize = 32

// mapWrite maps fd's first n bytes shared and writable, writes b at its
// start and unmaps (r: the first failure).
func mapWrite(r *probe.Result, fd, n int, b []byte) bool {
	m, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if !r.Check(err, "mmap MAP_SHARED") {
		return false
	}
	copy(m, b)
	return r.Check(unix.Munmap(m), "munmap")
}

// mapRead maps fd's first n bytes shared (read-write, as sem_open does for
// an existing semaphore) and returns them.
func mapRead(r *probe.Result, fd, n int) ([]byte, bool) {
	m, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if !r.Check(err, "mmap MAP_SHARED of the existing object") {
		return nil, false
	}
	out := append([]byte(nil), m...)
	return out, r.Check(unix.Munmap(m), "munmap")
}

// semOpen is glibc's sem_open(NAME, O_CREAT) in dir: a temporary file
// created O_EXCL, sizeof(sem_t) written, mapped shared, linked to
// sem.NAME, the temporary unlinked; then sem_open of the existing
// semaphore (open O_RDWR, map), sem_post through the first mapping seen
// through the second, sem_unlink.
func semOpen(r *probe.Result, dir, name string) {
	tmp := fmt.Sprintf("%s/sem.%06d", dir, os.Getpid()%1000000)
	final := dir + "/sem." + name
	fd, err := unix.Open(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if !r.Check(err, "open O_CREAT|O_EXCL of the temporary file") {
		return
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, make([]byte, semSize)); !r.Check(err, "write sem_t") {
		return
	}
	m, err := unix.Mmap(fd, 0, semSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if !r.Check(err, "mmap MAP_SHARED") {
		return
	}
	defer unix.Munmap(m)
	if !r.Check(unix.Link(tmp, final), "link to sem.NAME") {
		unix.Unlink(tmp)
		return
	}
	if !r.Check(unix.Unlink(tmp), "unlink of the temporary file") {
		return
	}
	copy(m, "posted")
	fd2, err := unix.Open(final, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if !r.Check(err, "open of the existing semaphore") {
		return
	}
	defer unix.Close(fd2)
	got, ok := mapRead(r, fd2, semSize)
	if !ok {
		return
	}
	if !r.Check(unix.Unlink(final), "sem_unlink") {
		return
	}
	r.Effect = bytes.HasPrefix(got, []byte("posted"))
}

// shmOpen is shm_open(NAME, O_RDWR|O_CREAT|O_EXCL) in dir, ftruncate to a
// page, a shared writable mapping written; shm_open of the existing object
// (O_RDWR), read back through a second mapping; ftruncate and truncate(2)
// of it, shm_open with O_TRUNC, shm_unlink.
func shmOpen(r *probe.Result, dir, name string) {
	p := dir + "/" + name
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if !r.Check(err, "shm_open O_CREAT|O_EXCL") {
		return
	}
	defer unix.Close(fd)
	if !r.Check(unix.Ftruncate(fd, 4096), "ftruncate") || !mapWrite(r, fd, 4096, []byte("shared")) {
		return
	}
	fd2, err := unix.Open(p, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if !r.Check(err, "shm_open of the existing object") {
		return
	}
	defer unix.Close(fd2)
	got, ok := mapRead(r, fd2, 4096)
	if !ok || !r.Check(unix.Ftruncate(fd2, 8192), "ftruncate of the existing object") {
		return
	}
	if !r.Check(unix.Truncate(p, 4096), "truncate(2) by name") {
		return
	}
	fd3, err := unix.Open(p, unix.O_RDWR|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if !r.Check(err, "shm_open O_TRUNC") {
		return
	}
	unix.Close(fd3)
	if !r.Check(unix.Unlink(p), "shm_unlink") {
		return
	}
	r.Effect = bytes.HasPrefix(got, []byte("shared"))
}

func init() {
	// sem-open DIR NAME: semOpen; Effect: the semaphore's bytes came back.
	probe.Register("sem-open", func(r *probe.Result, a []string) { semOpen(r, a[0], a[1]) })
	// shm-open DIR NAME: shmOpen; Effect: the object's bytes came back.
	probe.Register("shm-open", func(r *probe.Result, a []string) { shmOpen(r, a[0], a[1]) })
	// shm-rw PATH: open an existing file O_RDWR and write Payload.
	probe.Register("shm-rw", func(r *probe.Result, a []string) {
		fd, err := unix.Open(a[0], unix.O_RDWR|unix.O_CLOEXEC, 0)
		if !r.Check(err, "open O_RDWR") {
			return
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte(probe.Payload))
		r.Check(err, "write")
	})
	// shm-map-fd: map the inherited descriptor (opened O_RDWR outside)
	// shared and writable and write Payload through the mapping.
	probe.Register("shm-map-fd", func(r *probe.Result, a []string) {
		mapWrite(r, probe.InheritedFD, len(probe.Payload), []byte(probe.Payload))
	})
	// shm-uring-rw PATH: open an existing file O_RDWR with io_uring's
	// IORING_OP_OPENAT (no open(2)), then write Payload.
	probe.Register("shm-uring-rw", func(r *probe.Result, a []string) {
		ring, err := probe.NewRing()
		if !r.Require(err, "io_uring_setup") {
			return
		}
		defer ring.Close()
		path := append([]byte(a[0]), 0)
		fd, err := ring.Do(probe.SQE{Op: probe.UringOpenat, FD: unix.AT_FDCWD, Addr: probe.Ptr(path), OpFlags: unix.O_RDWR | unix.O_CLOEXEC})
		runtime.KeepAlive(path)
		if !r.Check(err, "IORING_OP_OPENAT") {
			return
		}
		defer unix.Close(int(fd))
		_, err = unix.Write(int(fd), []byte(probe.Payload))
		r.Check(err, "write")
	})
	// shm-link SRC DST: link(2).
	probe.Register("shm-link", func(r *probe.Result, a []string) { r.Check(unix.Link(a[0], a[1]), "link") })
	// shm-own-move DIR DST link|rename: create DIR/own-<pid> (an own
	// object), then link or rename it to DST. The own file is removed
	// when it is still there.
	probe.Register("shm-own-move", func(r *probe.Result, a []string) {
		own := fmt.Sprintf("%s/own-%d", a[0], os.Getpid())
		fd, err := unix.Open(own, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if !r.Require(err, "create the own object") {
			return
		}
		unix.Close(fd)
		defer unix.Unlink(own)
		if a[2] == "rename" {
			r.Check(unix.Rename(own, a[1]), "rename")
			return
		}
		r.Check(unix.Link(own, a[1]), "link")
	})
	// shm-mkdir PATH: mkdir(2).
	probe.Register("shm-mkdir", func(r *probe.Result, a []string) { r.Check(unix.Mkdir(a[0], 0o700), "mkdir") })
	// shm-create-mode PATH MODE: create PATH with MODE (octal; umask 0),
	// write a byte; Effect: the file exists with a set-ID bit.
	probe.Register("shm-create-mode", func(r *probe.Result, a []string) {
		mode, err := strconv.ParseUint(a[1], 8, 32)
		if !r.Require(err, "mode") {
			return
		}
		unix.Umask(0)
		fd, err := unix.Open(a[0], unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, uint32(mode))
		if !r.Check(err, "create") {
			return
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte{0x7f})
		r.Check(err, "write")
	})
}
