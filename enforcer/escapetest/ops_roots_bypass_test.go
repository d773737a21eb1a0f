package escapetest

// Probe ops of the writable-roots attack round (roots_bypass_test.go).

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	// a13-move-ext ORIG: open ORIG (a file beneath the writable root) for
	// read and write, and EXT4_IOC_MOVE_EXT block 0 with the donor at fd
	// 3 (a writable descriptor of a file outside every root, opened
	// before the ceiling). The ioctl is asked of ORIG only; the donor's
	// blocks are swapped with ORIG's without any hook on the donor.
	probe.Register("a13-move-ext", func(r *probe.Result, a []string) {
		fd, err := unix.Open(a[0], unix.O_RDWR|unix.O_CLOEXEC, 0)
		if !r.Require(err, "open "+a[0]+" (beneath the root)") {
			return
		}
		defer unix.Close(fd)
		var me [40]byte
		binary.LittleEndian.PutUint32(me[4:], probe.InheritedFD) // donor_fd
		binary.LittleEndian.PutUint64(me[24:], 1)                // len: one block
		r.Errno = ioctlPtr(fd, ext4IOCMoveExt, unsafe.Pointer(&me[0]))
		r.Out = fmt.Sprintf("moved %d", binary.LittleEndian.Uint64(me[32:]))
	})
	// a13-write-fd: write(2) to fd 3 (the sanity check that the donor is
	// an outside file the ceiling does hold).
	probe.Register("a13-write-fd", func(r *probe.Result, a []string) {
		_, err := unix.Pwrite(probe.InheritedFD, []byte(a[0]), 0)
		r.Check(err, "pwrite fd 3")
	})
	// a13-uinput-at PATH NAME: uinputCreate through the device node at
	// PATH.
	probe.Register("a13-uinput-at", func(r *probe.Result, a []string) { uinputCreate(r, a[0], a[1]) })
}
