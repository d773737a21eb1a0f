package proxy

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/internal/procid"
)

// Client is who is on the other end of a proxy connection.
type Client struct {
	// Listener is "unix" or "tcp".
	Listener string
	// PID is the connecting process (SO_PEERCRED; 0 unknown).
	PID int
	// Group is its cgroup v2 group path, CgroupID that cgroup's id
	// ("", 0 unknown).
	Group    string
	CgroupID uint64
	// Err says why the client could not be identified (nil: identified).
	Err error
}

// errUnidentified: the client's process or cgroup could not be read.
var errUnidentified = errors.New("client not identified")

// identify reads the peer of a connection. Over a unix socket: the pid
// from SO_PEERCRED, its cgroup from /proc/PID/cgroup, read while the pid
// provably names the process that connected (its pidfd, SO_PEERPIDFD,
// Linux 6.5+, is still alive afterwards; older kernels: its start time is
// before the connection and unchanged across the read). Over TCP: the
// socket table and /proc/PID/fd (tcpPeer).
func identify(c net.Conn, mount string) Client {
	switch c := c.(type) {
	case *net.UnixConn:
		cl := Client{Listener: "unix"}
		cl.PID, cl.Group, cl.Err = unixPeer(c)
		if cl.Err == nil {
			cl.CgroupID, cl.Err = groupID(mount, cl.Group)
		}
		return cl
	case *net.TCPConn:
		cl := Client{Listener: "tcp"}
		cl.PID, cl.Group, cl.Err = tcpPeer(c)
		if cl.Err == nil {
			cl.CgroupID, cl.Err = groupID(mount, cl.Group)
		}
		return cl
	}
	return Client{Listener: c.LocalAddr().Network(), Err: fmt.Errorf("%w: %T connection", errUnidentified, c)}
}

func groupID(mount, group string) (uint64, error) {
	if mount == "" {
		return 0, fmt.Errorf("%w: no cgroup2 mount", errUnidentified)
	}
	cg, err := cgroup.Open(mount, group)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errUnidentified, err)
	}
	return cg.ID, nil
}

func unixPeer(c *net.UnixConn) (int, string, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, "", fmt.Errorf("%w: %v", errUnidentified, err)
	}
	accepted, nerr := procid.Now()
	var pid int
	var pidfd *os.File
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			cerr = err
			return
		}
		pid = int(cred.Pid)
		if pfd, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil && pfd >= 0 {
			unix.CloseOnExec(pfd)
			pidfd = os.NewFile(uintptr(pfd), "pidfd")
		}
	}); err != nil {
		cerr = err
	}
	if cerr != nil || pid <= 0 {
		return 0, "", fmt.Errorf("%w: SO_PEERCRED: %v", errUnidentified, cerr)
	}
	if pidfd != nil {
		defer pidfd.Close()
		group, err := cgroup.PidGroup(pid)
		if err != nil {
			return pid, "", fmt.Errorf("%w: %v", errUnidentified, err)
		}
		if err := unix.PidfdSendSignal(int(pidfd.Fd()), 0, nil, 0); err != nil {
			return pid, "", fmt.Errorf("%w: pid %d exited while its cgroup was read", errUnidentified, pid)
		}
		return pid, group, nil
	}
	if nerr != nil {
		return pid, "", fmt.Errorf("%w: %v", errUnidentified, nerr)
	}
	group, err := stablePidGroup(pid, accepted)
	return pid, group, err
}

// stablePidGroup is the fallback without pidfd: the process at pid
// started before the connection was accepted and is the same process
// after its cgroup was read.
func stablePidGroup(pid int, accepted uint64) (string, error) {
	before, err := procid.StartTime(pid)
	if err != nil {
		return "", fmt.Errorf("%w: pid %d: %v", errUnidentified, pid, err)
	}
	if before > accepted {
		return "", fmt.Errorf("%w: pid %d was reused after the connection", errUnidentified, pid)
	}
	group, err := cgroup.PidGroup(pid)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errUnidentified, err)
	}
	if after, err := procid.StartTime(pid); err != nil || after != before {
		return "", fmt.Errorf("%w: pid %d exited while its cgroup was read", errUnidentified, pid)
	}
	return group, nil
}
