package api

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/procid"
)

// ctxKey is the context key of a connection's peer (connContext).
type ctxKey struct{}

// errPeerGone: the process that connected has exited (or its pid now names
// another process), so the caller cannot be identified.
var errPeerGone = errors.New("the connecting process is gone")

// peer is the identity of a connection's other end.
type peer struct {
	ok       bool
	pid, uid int // SO_PEERCRED
	// pidfd of the peer (SO_PEERPIDFD, Linux 6.5+); nil on older kernels.
	pidfd *os.File
	// accepted: CLOCK_BOOTTIME in clock ticks when the connection was
	// accepted (the fallback check without pidfd).
	accepted uint64
}

// peerOf reads the credentials of a unix connection.
func peerOf(c net.Conn) peer {
	p := peer{}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return p
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return p
	}
	now, nerr := procid.Now()
	_ = raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil || nerr != nil {
			return
		}
		p = peer{ok: true, pid: int(cred.Pid), uid: int(cred.Uid), accepted: now}
		if pfd, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil && pfd >= 0 {
			unix.CloseOnExec(pfd)
			p.pidfd = os.NewFile(uintptr(pfd), fmt.Sprintf("pidfd:%d", cred.Pid))
		}
	})
	return p
}

// peerGroup returns the cgroup of the peer, read while the peer's pid
// provably names the process that connected. Errors: errPeerGone; the
// cgroup cannot be read.
func (s *Server) peerGroup(p peer) (string, error) {
	if p.pidfd != nil {
		group, err := s.PeerGroup(p.pid)
		if err != nil {
			return "", err
		}
		// Alive now: the pid was not reused while its cgroup was read.
		if err := unix.PidfdSendSignal(int(p.pidfd.Fd()), 0, nil, 0); err != nil {
			return "", fmt.Errorf("caller pid %d: %w (pidfd: %v)", p.pid, errPeerGone, err)
		}
		return group, nil
	}
	before, err := procid.StartTime(p.pid)
	if err != nil {
		return "", fmt.Errorf("caller pid %d: %w: %v", p.pid, errPeerGone, err)
	}
	if before > p.accepted {
		return "", fmt.Errorf("caller pid %d: %w: the process at that pid started after the connection was accepted", p.pid, errPeerGone)
	}
	group, err := s.PeerGroup(p.pid)
	if err != nil {
		return "", err
	}
	if after, err := procid.StartTime(p.pid); err != nil || after != before {
		return "", fmt.Errorf("caller pid %d: %w while its cgroup was read", p.pid, errPeerGone)
	}
	return group, nil
}
