package probe

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Payload is what write and send operations write: a test looking for side
// effects looks for these bytes.
const Payload = "PWNED"

// InheritedFD is the first descriptor passed in Cmd.Files.
const InheritedFD = 3

// The operations more than one test package uses (the enforcer's tests, the
// escape tests, the CLI's tests). Paths are never followed when the
// operation says so by name (lchown); otherwise as the system call does.
func init() {
	RegisterAll(map[string]Op{
		// exec PATH ARGS...: run a program (argv[0] = PATH) with only PATH
		// in its environment; Errno is the exec's, Exit and Out the
		// program's.
		"exec": func(r *Result, a []string) { RunProgram(r, a, nil, nil) },
		// tcp-connect ADDR: a new TCP socket connects to ADDR.
		"tcp-connect": func(r *Result, a []string) {
			sa, err := Sockaddr(a[0])
			if !r.Check(err, "address") {
				return
			}
			fd, err := unix.Socket(Family(sa), unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if !r.Check(err, "socket") {
				return
			}
			defer unix.Close(fd)
			r.Check(unix.Connect(fd, sa), "connect")
		},
		// create PATH: create a new file (O_EXCL) and write Payload to it.
		"create": func(r *Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if !r.Check(err, "create") {
				return
			}
			defer unix.Close(fd)
			_, err = unix.Write(fd, []byte(Payload))
			r.Check(err, "write")
		},
		// chmod PATH [MODE]: MODE in octal, default 0777.
		"chmod": func(r *Result, a []string) {
			mode := uint64(0o777)
			if len(a) > 1 {
				var err error
				if mode, err = strconv.ParseUint(a[1], 8, 32); !r.Require(err, "mode") {
					return
				}
			}
			r.Check(unix.Chmod(a[0], uint32(mode)), "chmod")
		},
		// chown PATH [UID GID]: default 4242:4242.
		"chown": func(r *Result, a []string) {
			uid, gid := 4242, 4242
			if len(a) > 2 {
				uid, _ = strconv.Atoi(a[1])
				gid, _ = strconv.Atoi(a[2])
			}
			r.Check(unix.Chown(a[0], uid, gid), "chown")
		},
		// setxattr PATH NAME [VALUE]: default value Payload.
		"setxattr": func(r *Result, a []string) {
			v := Payload
			if len(a) > 2 {
				v = a[2]
			}
			r.Check(unix.Setxattr(a[0], a[1], []byte(v), 0), "setxattr")
		},
		"unlink": func(r *Result, a []string) { r.Check(unix.Unlink(a[0]), "unlink") },
		"rmdir":  func(r *Result, a []string) { r.Check(unix.Rmdir(a[0]), "rmdir") },
		"rename": func(r *Result, a []string) { r.Check(unix.Rename(a[0], a[1]), "rename") },
	})
}

// RunProgram runs argv with PATH and env as its environment and files as
// its fd 3, 4, ...: Errno is the exec's (the program never ran), Exit the
// program's exit status, Out its output (stdout and stderr, at most 300
// bytes).
func RunProgram(r *Result, argv []string, env []string, files []*os.File) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/bin:/sbin:/usr/bin"}, env...)
	cmd.ExtraFiles = files
	out, err := cmd.CombinedOutput()
	r.Out = strings.TrimSpace(string(out))
	if len(r.Out) > 300 {
		r.Out = r.Out[:300]
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.Exit = ee.ExitCode()
		return
	}
	if r.Check(err, "exec "+argv[0]) {
		r.Exit = 0
	}
}

// Sockaddr parses "127.0.0.1:80", "[::1]:80", "/path" or "@abstract".
func Sockaddr(s string) (unix.Sockaddr, error) {
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "@") {
		return &unix.SockaddrUnix{Name: s}, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil, Setupf("address %q: %v", s, err)
	}
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, nil
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}, nil
}

// Family is the address family of sa.
func Family(sa unix.Sockaddr) int {
	switch sa.(type) {
	case *unix.SockaddrInet4:
		return unix.AF_INET
	case *unix.SockaddrInet6:
		return unix.AF_INET6
	}
	return unix.AF_UNIX
}

// OpenPty opens a new pseudo-terminal and returns its master and its slave
// (non-blocking when nonblock is set). A failure before the slave's open is
// a Setupf error; the slave's open returns its errno.
func OpenPty(nonblock bool) (master, slave int, err error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, Setupf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(m)
		return -1, -1, Setupf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		unix.Close(m)
		return -1, -1, Setupf("pty number: %v", err)
	}
	flags := unix.O_RDWR | unix.O_NOCTTY | unix.O_CLOEXEC
	if nonblock {
		flags |= unix.O_NONBLOCK
	}
	s, err := unix.Open("/dev/pts/"+strconv.Itoa(n), flags, 0)
	if err != nil {
		unix.Close(m)
		return -1, -1, err
	}
	return m, s, nil
}

// WaitReadable reports whether fd has data or a pending connection within d.
func WaitReadable(fd int, d time.Duration) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, int(d/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0 && pfd[0].Revents&unix.POLLIN != 0
	}
}

// Contains reports whether b holds the probe payload.
func Contains(b []byte) bool { return bytes.Contains(b, []byte(Payload)) }
