package escapetest

// Probe ops of the block-device rewrite case (shell_blockdev_test.go).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// fiemapPhysical returns the physical byte offset on the block device of
// the file's first extent (FS_IOC_FIEMAP, on the read-only ioctl list;
// FIEMAP_FLAG_SYNC writes the file back first).
func fiemapPhysical(fd int) (uint64, error) {
	const (
		fiemapFlagSync = 0x1
		hdr            = 32
		ext            = 56
	)
	buf := make([]byte, hdr+ext)
	binary.LittleEndian.PutUint64(buf[0:], 0)          // fm_start
	binary.LittleEndian.PutUint64(buf[8:], ^uint64(0)) // fm_length
	binary.LittleEndian.PutUint32(buf[16:], fiemapFlagSync)
	binary.LittleEndian.PutUint32(buf[24:], 1) // fm_extent_count
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fsIOCFiemap, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		return 0, e
	}
	if binary.LittleEndian.Uint32(buf[20:]) < 1 { // fm_mapped_extents
		return 0, unix.ENODATA
	}
	if binary.LittleEndian.Uint64(buf[hdr:]) != 0 { // fe_logical
		return 0, unix.ENODATA
	}
	return binary.LittleEndian.Uint64(buf[hdr+8:]), nil // fe_physical
}

func init() {
	// blk-rewrite-exec DEV FILE HEX ARGV...: check that FILE does not run
	// with ARGV; write the bytes HEX over the
	// first bytes of FILE's data, through the block device DEV (no inode
	// of FILE is touched: its ctime stays what it was), drop FILE's clean
	// page cache, then exec FILE with ARGV (argv[0] = FILE).
	probe.Register("blk-rewrite-exec", func(r *probe.Result, a []string) {
		dev, file := a[0], a[1]
		patch := make([]byte, len(a[2])/2)
		for i := range patch {
			var b byte
			for _, c := range a[2][2*i : 2*i+2] {
				b <<= 4
				switch {
				case c >= '0' && c <= '9':
					b |= byte(c - '0')
				default:
					b |= byte(c-'a') + 10
				}
			}
			patch[i] = b
		}
		// Before: the file does not run (the test broke its ELF magic).
		var before probe.Result
		probe.RunProgram(&before, append([]string{file}, a[3:]...), nil, nil)
		if before.Setup != "" || (before.Errno == 0 && before.Exit == 0) {
			r.Setup = "the file ran before the rewrite: " + before.String()
			return
		}
		fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if !r.Require(err, "open "+file) {
			return
		}
		phys, err := fiemapPhysical(fd)
		if !r.Require(err, "FIEMAP "+file) {
			return
		}
		// O_DIRECT: the block device's own page cache is not coherent
		// with the file system's writes (a 4-byte write through it would
		// read-modify-write a 4 KiB page cached from an earlier use of
		// these blocks, putting stale bytes around the patch). Read the
		// aligned 4 KiB from the disk, patch it, write it back, all
		// direct.
		bd, err := unix.Open(dev, unix.O_RDWR|unix.O_DIRECT|unix.O_CLOEXEC, 0)
		if !r.Check(err, "open "+dev+" for write") {
			return
		}
		blk, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if !r.Require(err, "mmap an aligned buffer") {
			return
		}
		defer unix.Munmap(blk)
		base := int64(phys) &^ 4095
		if int64(phys)-base+int64(len(patch)) > int64(len(blk)) {
			r.Setup = fmt.Sprintf("the %d-byte patch at disk offset %d crosses a 4 KiB block", len(patch), phys)
			return
		}
		if n, err := unix.Pread(bd, blk, base); err != nil || n != len(blk) {
			r.Require(fmt.Errorf("read %d bytes: %v", n, err), "O_DIRECT pread "+dev)
			return
		}
		copy(blk[int64(phys)-base:], patch)
		if _, err := unix.Pwrite(bd, blk, base); !r.Check(err, "pwrite "+dev) {
			return
		}
		if !r.Check(unix.Fsync(bd), "fsync "+dev) {
			return
		}
		unix.Close(bd)
		// The file's pages are clean (written back before): drop them so
		// the exec reads the blocks from the disk. A page still in use
		// (the "before" exec's mapping being torn down) survives one
		// DONTNEED: retry until a read sees the new bytes (bounded; past
		// it the exec below shows what the page cache holds).
		// Past half the bound, drop the whole clean page cache too (only
		// reached where the block device was writable: without a
		// ceiling). Bytes never seen are a setup failure that says so,
		// not an exec result.
		got := make([]byte, len(patch))
		seen := false
		for i := 0; i < 100 && !seen; i++ {
			if !r.Require(unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED), "fadvise DONTNEED") {
				return
			}
			if i >= 50 {
				_ = os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0)
			}
			n, err := unix.Pread(fd, got, 0)
			seen = err == nil && n == len(got) && bytes.Equal(got, patch)
			if !seen {
				time.Sleep(50 * time.Millisecond)
			}
		}
		unix.Close(fd)
		if !seen {
			r.Setup = fmt.Sprintf("the rewrite through %s never became visible in %s (page cache kept %x)", dev, file, got)
			return
		}
		probe.RunProgram(r, append([]string{file}, a[3:]...), nil, nil)
	})
}
