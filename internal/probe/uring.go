package probe

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A minimal io_uring over raw syscalls (no cgo, no liburing): one ring, one
// request at a time. Enough to reach the kernel's io_uring paths that never
// make an open(2), write(2), socket(2) or connect(2) syscall (W5, N2).

// io_uring opcodes (include/uapi/linux/io_uring.h; all exist since 5.19).
const (
	opConnect = 16
	opOpenat  = 18
	opWrite   = 23
	opSocket  = 45

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

type ring struct {
	fd           int
	p            uringParams
	sq, cq, sqes []byte
}

func newRing() (*ring, error) {
	r := &ring{}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&r.p)), 0)
	if e != 0 {
		return nil, setupf("io_uring_setup: %v", e)
	}
	r.fd = int(fd)
	var err error
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	if r.sq, err = unix.Mmap(r.fd, offSQRing, int(r.p.SQOff.Array+r.p.SQEntries*4), prot, flags); err != nil {
		r.close()
		return nil, setupf("mmap io_uring SQ ring: %v", err)
	}
	if r.cq, err = unix.Mmap(r.fd, offCQRing, int(r.p.CQOff.CQEs+r.p.CQEntries*16), prot, flags); err != nil {
		r.close()
		return nil, setupf("mmap io_uring CQ ring: %v", err)
	}
	if r.sqes, err = unix.Mmap(r.fd, offSQEs, int(r.p.SQEntries*64), prot, flags); err != nil {
		r.close()
		return nil, setupf("mmap io_uring SQEs: %v", err)
	}
	return r, nil
}

func (r *ring) close() {
	for _, m := range [][]byte{r.sq, r.cq, r.sqes} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	unix.Close(r.fd)
}

func (r *ring) u32(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }

// sqe is one submission queue entry (struct io_uring_sqe, 64 bytes).
type sqe struct {
	op      uint8
	fd      int32
	off     uint64 // also addr2
	addr    uint64
	len     uint32
	opFlags uint32 // open_flags, rw_flags, ...
}

// do submits one request, waits for it and returns its result (a value or
// -errno).
func (r *ring) do(s sqe) (int32, error) {
	tail := atomic.LoadUint32(r.u32(r.sq, r.p.SQOff.Tail))
	idx := tail & *r.u32(r.sq, r.p.SQOff.RingMask)
	e := r.sqes[idx*64 : idx*64+64]
	clear(e)
	e[0] = s.op
	binary.LittleEndian.PutUint32(e[4:], uint32(s.fd))
	binary.LittleEndian.PutUint64(e[8:], s.off)
	binary.LittleEndian.PutUint64(e[16:], s.addr)
	binary.LittleEndian.PutUint32(e[24:], s.len)
	binary.LittleEndian.PutUint32(e[28:], s.opFlags)
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
			return 0, setupf("io_uring_enter: %v", errno)
		}
		if n >= toSubmit {
			toSubmit = 0
		}
		head = atomic.LoadUint32(r.u32(r.cq, r.p.CQOff.Head))
		if head != atomic.LoadUint32(r.u32(r.cq, r.p.CQOff.Tail)) {
			break
		}
		if i >= 1000 {
			return 0, setupf("io_uring: no completion")
		}
		time.Sleep(time.Millisecond)
	}
	off := r.p.CQOff.CQEs + (head&*r.u32(r.cq, r.p.CQOff.RingMask))*16
	res := int32(binary.LittleEndian.Uint32(r.cq[off+8:]))
	atomic.StoreUint32(r.u32(r.cq, r.p.CQOff.Head), head+1)
	return res, nil
}

// result turns a CQE result into an error.
func result(res int32, err error) (int32, error) {
	if err != nil {
		return 0, err
	}
	if res < 0 {
		return 0, syscall.Errno(-res)
	}
	return res, nil
}

func ptr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// uringOpenatWrite: IORING_OP_OPENAT(O_WRONLY|O_CREAT) then IORING_OP_WRITE
// on the descriptor it returned: no open(2) or write(2) syscall happens.
func uringOpenatWrite(a []string) error {
	r, err := newRing()
	if err != nil {
		return err
	}
	defer r.close()
	path := append([]byte(arg(a, 0)), 0)
	fd, err := result(r.do(sqe{op: opOpenat, fd: unix.AT_FDCWD, addr: ptr(path), len: 0o644, opFlags: unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC}))
	runtime.KeepAlive(path)
	if err != nil {
		return err
	}
	defer unix.Close(int(fd))
	return uringWrite(r, fd)
}

func uringWrite(r *ring, fd int32) error {
	buf := []byte(Payload)
	var (
		n   int32
		err error
	)
	// A write punted to an io-wq worker comes back ECANCELED when the
	// worker could not be started (seen under TCG load); that is not a
	// permission decision, so try again before reporting it.
	for i := 0; i < 5; i++ {
		n, err = result(r.do(sqe{op: opWrite, fd: fd, addr: ptr(buf), len: uint32(len(buf))}))
		if err != syscall.ECANCELED {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	runtime.KeepAlive(buf)
	if err == nil && n != int32(len(buf)) {
		return setupf("io_uring write: short write %d", n)
	}
	return err
}

// uringWriteFD: IORING_OP_WRITE on the inherited writable descriptor.
func uringWriteFD(a []string) error {
	r, err := newRing()
	if err != nil {
		return err
	}
	defer r.close()
	return uringWrite(r, InheritedFD)
}

// uringSocket: IORING_OP_SOCKET with "family type protocol".
func uringSocket(a []string) error {
	fam, typ, proto, err := socketArgs(a)
	if err != nil {
		return err
	}
	r, err := newRing()
	if err != nil {
		return err
	}
	defer r.close()
	fd, err := result(r.do(sqe{op: opSocket, fd: int32(fam), off: uint64(typ), len: uint32(proto)}))
	if err != nil {
		return err
	}
	return unix.Close(int(fd))
}

// uringConnectFD: IORING_OP_CONNECT of the inherited socket to an inet
// address.
func uringConnectFD(a []string) error {
	sa, err := rawSockaddr(arg(a, 0))
	if err != nil {
		return err
	}
	r, err := newRing()
	if err != nil {
		return err
	}
	defer r.close()
	_, err = result(r.do(sqe{op: opConnect, fd: InheritedFD, addr: ptr(sa), off: uint64(len(sa))}))
	runtime.KeepAlive(sa)
	return err
}
