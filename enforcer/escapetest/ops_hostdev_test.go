package escapetest

// Probe operations on host devices and terminals (devices_test.go).

import (
	"encoding/binary"
	"os"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// tcoff is TCXONC's argument that suspends output (asm-generic/termbits.h).
const tcoff = 0

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// watchdog-arm: open /dev/watchdog (which arms it), see its state
		// in sysfs, then stop it with the magic close ('V').
		"watchdog-arm": func(r *probe.Result, a []string) {
			fd, err := unix.Open("/dev/watchdog", unix.O_WRONLY, 0)
			if !r.Check(err, "open /dev/watchdog") {
				return
			}
			b, _ := os.ReadFile("/sys/class/watchdog/watchdog0/state")
			r.Out = strings.TrimSpace(string(b))
			r.Effect = r.Out == "active"
			_, _ = unix.Write(fd, []byte("V"))
			unix.Close(fd)
		},
		// dma-latency: hold a 0 µs CPU latency limit, read it back.
		"dma-latency": func(r *probe.Result, a []string) {
			fd, err := unix.Open("/dev/cpu_dma_latency", unix.O_RDWR, 0)
			if !r.Check(err, "open /dev/cpu_dma_latency") {
				return
			}
			defer unix.Close(fd)
			var v [4]byte
			if _, err := unix.Write(fd, v[:]); !r.Check(err, "write /dev/cpu_dma_latency") {
				return
			}
			n, err := unix.Read(fd, v[:])
			if !r.Check(err, "read /dev/cpu_dma_latency") {
				return
			}
			r.Effect = n == 4 && binary.NativeEndian.Uint32(v[:]) == 0
		},
		// read-dev PATH: open read-only (no controlling tty), read.
		"read-dev": func(r *probe.Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NOCTTY, 0)
			if !r.Check(err, "open "+a[0]) {
				return
			}
			defer unix.Close(fd)
			b := make([]byte, 4096)
			n, err := unix.Read(fd, b)
			if r.Check(err, "read "+a[0]) {
				r.Effect = n > 0
			}
		},
		// tty-ioctl PATH winsz|tcsets|tcxonc|tcgets: open read-only, then
		// the request (resize, echo off, output stopped, a query).
		"tty-ioctl": func(r *probe.Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NOCTTY, 0)
			if !r.Check(err, "open "+a[0]) {
				return
			}
			defer unix.Close(fd)
			ttyIoctl(r, fd, a[1])
		},
		// tty-winsz-compat PATH: open read-only, TIOCSWINSZ through the
		// i386 entry (compat_sys_ioctl).
		"tty-winsz-compat": func(r *probe.Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NOCTTY, 0)
			if !r.Check(err, "open "+a[0]) {
				return
			}
			defer unix.Close(fd)
			mem, err := page32(8)
			if !r.Require(err, "mmap MAP_32BIT") {
				return
			}
			binary.NativeEndian.PutUint16(mem[0:], 77) // ws_row
			binary.NativeEndian.PutUint16(mem[2:], 99) // ws_col
			compatIoctl(r, fd, unix.TIOCSWINSZ, unsafe.Pointer(&mem[0]))
		},
		// tty-fd-ioctl REQ: the request on fd 3.
		"tty-fd-ioctl": func(r *probe.Result, a []string) { ttyIoctl(r, 3, a[0]) },
		// tty-fd-write DATA: write DATA to fd 3.
		"tty-fd-write": func(r *probe.Result, a []string) {
			_, err := unix.Write(3, []byte(a[0]))
			r.Check(err, "write fd 3")
		},
		// tty-fd-read: read what fd 3 has within 2 s.
		"tty-fd-read": func(r *probe.Result, a []string) {
			if !probe.WaitReadable(3, 2*time.Second) {
				r.Setup = "fd 3 has nothing to read"
				return
			}
			b := make([]byte, 256)
			n, err := unix.Read(3, b)
			if r.Check(err, "read fd 3") {
				r.Out = string(b[:max(n, 0)])
				r.Effect = n > 0
			}
		},
		// ctty-write PATH DATA: a new session whose controlling terminal is
		// PATH (opened read-only without O_NOCTTY), then DATA written
		// through /dev/tty.
		"ctty-write": func(r *probe.Result, a []string) {
			if _, err := unix.Setsid(); !r.Require(err, "setsid") {
				return
			}
			fd, err := unix.Open(a[0], unix.O_RDONLY, 0)
			if !r.Check(err, "open "+a[0]) {
				return
			}
			defer unix.Close(fd)
			tty, err := unix.Open("/dev/tty", unix.O_WRONLY, 0)
			if !r.Check(err, "open /dev/tty") {
				return
			}
			defer unix.Close(tty)
			_, err = unix.Write(tty, []byte(a[1]))
			r.Check(err, "write /dev/tty")
		},
		// pty-own: a pty of the probe's own (from /dev/ptmx): resize it,
		// write through the slave, read on the master.
		"pty-own": func(r *probe.Result, a []string) {
			m, s, err := probe.OpenPty(true)
			if !r.Require(err, "open pty") {
				return
			}
			defer unix.Close(m)
			defer unix.Close(s)
			ws := unix.Winsize{Row: 33, Col: 44}
			if !r.Check(unix.IoctlSetWinsize(m, unix.TIOCSWINSZ, &ws), "TIOCSWINSZ master") {
				return
			}
			if !r.Check(unix.IoctlSetWinsize(s, unix.TIOCSWINSZ, &ws), "TIOCSWINSZ slave") {
				return
			}
			if _, err := unix.Write(m, []byte("in\n")); !r.Check(err, "write pty master") {
				return
			}
			if _, err := unix.Write(s, []byte(sentData+"\n")); !r.Check(err, "write pty slave") {
				return
			}
			// The master reads the echo of "in" and the slave's line as
			// the tty layer's worker delivers them, in one read or in
			// several: read until the line is there or 2 s have passed.
			var got []byte
			b := make([]byte, 256)
			for deadline := time.Now().Add(2 * time.Second); !strings.Contains(string(got), sentData) && time.Now().Before(deadline); {
				if !probe.WaitReadable(m, time.Until(deadline)) {
					break
				}
				n, err := unix.Read(m, b)
				if err != nil || n <= 0 {
					break
				}
				got = append(got, b[:n]...)
			}
			r.Effect = strings.Contains(string(got), sentData)
		},
	})
}

// ttyIoctl issues one terminal request on fd (see tty-ioctl).
func ttyIoctl(r *probe.Result, fd int, req string) {
	switch req {
	case "winsz":
		r.Check(unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 77, Col: 99}), "TIOCSWINSZ")
	case "tcsets":
		tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if !r.Require(err, "TCGETS") {
			return
		}
		tio.Lflag &^= unix.ECHO
		r.Check(unix.IoctlSetTermios(fd, unix.TCSETS, tio), "TCSETS")
	case "tcxonc":
		r.Check(unix.IoctlSetInt(fd, unix.TCXONC, tcoff), "TCXONC")
	case "tcgets":
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		r.Check(err, "TCGETS")
		r.Effect = err == nil
	default:
		r.Setup = "unknown request " + req
	}
}
