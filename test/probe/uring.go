package probe

import (
	"encoding/binary"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A minimal io_uring over raw syscalls (no cgo, no liburing): one ring, one
// request at a time. Enough to reach the kernel's io_uring paths that never
// make an open(2), read(2), write(2), socket(2), connect(2), send(2) or
// recv(2) syscall (W5, N2).

// io_uring opcodes (include/uapi/linux/io_uring.h; all exist since 5.19).
const (
	UringConnect = 16
	UringOpenat  = 18
	UringRead    = 22
	UringWrite   = 23
	UringSend    = 26
	UringRecv    = 27
	UringSocket  = 45
)

const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	enterGetEvents = 1
)

type sqOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

type cqOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, CQEs, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

type uringParams struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	SQOff                                                                  sqOffsets
	CQOff                                                                  cqOffsets
}

// Ring is one io_uring instance.
type Ring struct {
	fd           int
	p            uringParams
	sq, cq, sqes []byte
}

// NewRing sets up a ring; its errors are Setupf errors (the probe could
// not attempt the operation).
func NewRing() (*Ring, error) {
	r := &Ring{}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&r.p)), 0)
	if e != 0 {
		return nil, Setupf("io_uring_setup: %v", e)
	}
	r.fd = int(fd)
	var err error
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	if r.sq, err = unix.Mmap(r.fd, offSQRing, int(r.p.SQOff.Array+r.p.SQEntries*4), prot, flags); err != nil {
		r.Close()
		return nil, Setupf("mmap io_uring SQ ring: %v", err)
	}
	if r.cq, err = unix.Mmap(r.fd, offCQRing, int(r.p.CQOff.CQEs+r.p.CQEntries*16), prot, flags); err != nil {
		r.Close()
		return nil, Setupf("mmap io_uring CQ ring: %v", err)
	}
	if r.sqes, err = unix.Mmap(r.fd, offSQEs, int(r.p.SQEntries*64), prot, flags); err != nil {
		r.Close()
		return nil, Setupf("mmap io_uring SQEs: %v", err)
	}
	return r, nil
}

// Close releases the ring.
func (r *Ring) Close() {
	for _, m := range [][]byte{r.sq, r.cq, r.sqes} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	unix.Close(r.fd)
}

func (r *Ring) u32(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }

// SQE is one submission queue entry (the fields of struct io_uring_sqe the
// operations here use).
type SQE struct {
	Op      uint8
	FD      int32
	Off     uint64 // also addr2
	Addr    uint64
	Len     uint32
	OpFlags uint32 // open_flags, rw_flags, ...
}

// Do submits one request, waits for its completion and returns its result:
// a value, a syscall.Errno for a negative result, or a Setupf error when
// the ring itself failed. A request the kernel canceled before it ran
// (ECANCELED) is submitted again 20 ms later, five times at most: work
// handed to an io-wq worker comes back that way when the worker could not
// be started (seen under TCG load: writes, and IORING_OP_RENAMEAT from a
// test's own step on 6.1). A denial is EPERM or EACCES, never ECANCELED,
// so this never turns a denial into a success.
func (r *Ring) Do(s SQE) (int32, error) {
	var res int32
	for i := range 5 {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		var err error
		if res, err = r.submit(s); err != nil {
			return 0, err
		}
		if res != -int32(syscall.ECANCELED) {
			break
		}
	}
	if res < 0 {
		return 0, syscall.Errno(-res)
	}
	return res, nil
}

func (r *Ring) submit(s SQE) (int32, error) {
	tail := atomic.LoadUint32(r.u32(r.sq, r.p.SQOff.Tail))
	idx := tail & *r.u32(r.sq, r.p.SQOff.RingMask)
	e := r.sqes[idx*64 : idx*64+64]
	clear(e)
	e[0] = s.Op
	binary.LittleEndian.PutUint32(e[4:], uint32(s.FD))
	binary.LittleEndian.PutUint64(e[8:], s.Off)
	binary.LittleEndian.PutUint64(e[16:], s.Addr)
	binary.LittleEndian.PutUint32(e[24:], s.Len)
	binary.LittleEndian.PutUint32(e[28:], s.OpFlags)
	binary.LittleEndian.PutUint64(e[32:], 0x656e66) // user_data
	*r.u32(r.sq, r.p.SQOff.Array+idx*4) = idx
	atomic.StoreUint32(r.u32(r.sq, r.p.SQOff.Tail), tail+1)
	// Submit once, then wait until the completion is there: a wait can
	// end early (EINTR, or task work run on the way) without a CQE.
	toSubmit := uintptr(1)
	var head uint32
	for i := 0; ; i++ {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), toSubmit, 1, enterGetEvents, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, Setupf("io_uring_enter: %v", errno)
		}
		if n >= toSubmit {
			toSubmit = 0
		}
		head = atomic.LoadUint32(r.u32(r.cq, r.p.CQOff.Head))
		if head != atomic.LoadUint32(r.u32(r.cq, r.p.CQOff.Tail)) {
			break
		}
		if i >= 1000 {
			return 0, Setupf("io_uring: no completion")
		}
		time.Sleep(time.Millisecond)
	}
	off := r.p.CQOff.CQEs + (head&*r.u32(r.cq, r.p.CQOff.RingMask))*16
	res := int32(binary.LittleEndian.Uint32(r.cq[off+8:]))
	atomic.StoreUint32(r.u32(r.cq, r.p.CQOff.Head), head+1)
	return res, nil
}

// Ptr is the address of b's first byte, for SQE.Addr (keep b alive with
// runtime.KeepAlive until Do returned).
func Ptr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }
