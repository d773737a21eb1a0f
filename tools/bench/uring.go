package bench

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A minimal io_uring for io_uring_rw, by raw system calls (no io_uring
// library is among this module's dependencies): a ring of 2 submission
// entries, mapped once, driven by io_uring_enter. The layouts are the
// kernel's (include/uapi/linux/io_uring.h).

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

// uringSQE is struct io_uring_sqe (64 B) as read and write use it.
type uringSQE struct {
	opcode   uint8
	_        uint8  // flags
	_        uint16 // ioprio
	fd       int32
	_        uint64 // off: 0, the file's start
	addr     uint64
	len      uint32
	_        uint32 // rw_flags
	userData uint64
	_        [24]byte
}

// uringCQE is struct io_uring_cqe (16 B).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

const (
	ioringOpRead        = 22
	ioringOpWrite       = 23
	ioringEnterGetevent = 1
	ioringFeatSingleMap = 1
	ioringOffSQRing     = 0
	ioringOffCQRing     = 0x8000000
	ioringOffSQEs       = 0x10000000
)

// uring is one ring.
type uring struct {
	fd                     int
	sqRing, cqRing, sqeMem []byte
	sqHead, sqTail, sqMask *uint32
	sqArray                unsafe.Pointer
	cqHead, cqTail, cqMask *uint32
	cqes                   unsafe.Pointer
	sqes                   *[2]uringSQE
}

// ioUringDisabledSysctl says whether io_uring may be set up (Linux 6.6+).
const ioUringDisabledSysctl = "/proc/sys/kernel/io_uring_disabled"

// newURing sets up a ring of 2 entries. Errors: io_uring_setup's, with the
// kernel.io_uring_disabled sysctl's value when it is not 0 (io_uring off
// for this process); the mmaps'.
func newURing() (*uring, error) {
	var p uringParams
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 2, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		b, _ := os.ReadFile(ioUringDisabledSysctl) // absent before Linux 6.6
		return nil, uringSetupError(errno, strings.TrimSpace(string(b)))
	}
	u := &uring{fd: int(fd)}
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	if p.features&ioringFeatSingleMap != 0 {
		sqSize = max(sqSize, cqSize)
		cqSize = sqSize
	}
	var err error
	mm := func(off int64, size int) []byte {
		if err != nil {
			return nil
		}
		var b []byte
		b, err = unix.Mmap(u.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		return b
	}
	u.sqRing = mm(ioringOffSQRing, sqSize)
	if p.features&ioringFeatSingleMap != 0 {
		u.cqRing = u.sqRing
	} else {
		u.cqRing = mm(ioringOffCQRing, cqSize)
	}
	u.sqeMem = mm(ioringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})))
	if err != nil {
		unix.Close(u.fd)
		return nil, fmt.Errorf("io_uring mmap: %w", err)
	}
	if p.sqEntries < 2 {
		return nil, fmt.Errorf("io_uring_setup: %d submission entries, want 2", p.sqEntries)
	}
	at := func(b []byte, off uint32) unsafe.Pointer { return unsafe.Pointer(&b[off]) }
	u.sqHead, u.sqTail, u.sqMask = (*uint32)(at(u.sqRing, p.sqOff.head)), (*uint32)(at(u.sqRing, p.sqOff.tail)), (*uint32)(at(u.sqRing, p.sqOff.ringMask))
	u.sqArray = at(u.sqRing, p.sqOff.array)
	u.cqHead, u.cqTail, u.cqMask = (*uint32)(at(u.cqRing, p.cqOff.head)), (*uint32)(at(u.cqRing, p.cqOff.tail)), (*uint32)(at(u.cqRing, p.cqOff.ringMask))
	u.cqes = at(u.cqRing, p.cqOff.cqes)
	u.sqes = (*[2]uringSQE)(unsafe.Pointer(&u.sqeMem[0]))
	return u, nil
}

// uringSetupError is io_uring_setup's errno as an error, naming the
// kernel.io_uring_disabled sysctl when its value (disabled) is set and
// not 0: 1 allows only members of kernel.io_uring_group (and
// CAP_SYS_ADMIN), 2 disables io_uring for every process.
func uringSetupError(errno unix.Errno, disabled string) error {
	if disabled != "" && disabled != "0" {
		return fmt.Errorf("io_uring_setup: %w: io_uring is disabled on this kernel (kernel.io_uring_disabled = %s)", errno, disabled)
	}
	return fmt.Errorf("io_uring_setup: %w", errno)
}

// readWrite submits an IORING_OP_READ of len(rb) bytes into rb and an
// IORING_OP_WRITE of wb, both at offset 0 of fd, with one io_uring_enter
// that waits for both completions, and again while some are missing (raw
// system calls: they wait for the kernel, not for a thread of the worker). Errors: io_uring_enter's; the
// write's error, else the read's (a completion's negative res), or a
// short transfer.
func (u *uring) readWrite(fd int, rb, wb []byte) error {
	// 6.1 cancels a request its io-wq worker had not started when the
	// submitting thread is interrupted at the wrong moment (seen under the
	// GC-pressure test, never in a measured loop, where the collector is
	// off): submit the pair again, at most twice more.
	var err error
	for range 3 {
		if err = u.readWriteOnce(fd, rb, wb); !errors.Is(err, unix.ECANCELED) {
			return err
		}
	}
	return err
}

// readWriteOnce is one submission of readWrite's pair.
func (u *uring) readWriteOnce(fd int, rb, wb []byte) error {
	tail := atomic.LoadUint32(u.sqTail)
	mask := *u.sqMask
	for i, s := range []struct {
		op uint8
		b  []byte
	}{{ioringOpRead, rb}, {ioringOpWrite, wb}} {
		u.sqes[i] = uringSQE{opcode: s.op, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(&s.b[0]))), len: uint32(len(s.b)), userData: uint64(i)}
		*(*uint32)(unsafe.Add(u.sqArray, 4*((tail+uint32(i))&mask))) = uint32(i)
	}
	atomic.StoreUint32(u.sqTail, tail+2)
	var res [2]int32
	got, submit := 0, 2
	for got < 2 {
		// io_uring_enter may return before min_complete completions are
		// in (it did on 6.12, in the guest): wait again for the rest, as
		// liburing's io_uring_wait_cqe does.
		n, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(submit), uintptr(2-got), ioringEnterGetevent, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
		if int(n) < submit {
			return fmt.Errorf("io_uring_enter: %d of %d submitted", n, submit)
		}
		submit = 0
		head := atomic.LoadUint32(u.cqHead)
		for ; got < 2 && head != atomic.LoadUint32(u.cqTail); head++ {
			c := (*uringCQE)(unsafe.Add(u.cqes, int(unsafe.Sizeof(uringCQE{}))*int(head&*u.cqMask)))
			if c.userData > 1 {
				return fmt.Errorf("io_uring: completion of unknown request %d", c.userData)
			}
			res[c.userData] = c.res
			got++
		}
		atomic.StoreUint32(u.cqHead, head)
	}
	what := [2]string{"IORING_OP_READ", "IORING_OP_WRITE"}
	for _, i := range []int{1, 0} {
		if res[i] < 0 {
			return fmt.Errorf("%s: %w", what[i], unix.Errno(-res[i]))
		}
		if int(res[i]) != len(rb) {
			return fmt.Errorf("%s: %d of %d bytes", what[i], res[i], len(rb))
		}
	}
	return nil
}
