package api

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/entry"
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

// ownTerminals fills req's own terminals as a registration's
// own_terminals asks (RegisterRequest.OwnTerminals): "client" reads the
// peer's (peerTerminals), "init" leaves them to the registry (it reads
// init_pid's), "" or "none" declares none. Errors (ErrBadRequest): any
// other value; the peer's cannot be read.
func (s *Server) ownTerminals(r *http.Request, which string, req *registry.Request) error {
	switch which {
	case "", OwnTerminalsNone, OwnTerminalsInit:
		return nil
	case OwnTerminalsClient:
		p, _ := r.Context().Value(ctxKey{}).(peer)
		ts, err := s.peerTerminals(p)
		if err != nil {
			return fmt.Errorf("%w: own_terminals client: %v", registry.ErrBadRequest, err)
		}
		req.Terminals = ts
		return nil
	}
	return fmt.Errorf("%w: own_terminals %q: want client, init or none", registry.ErrBadRequest, which)
}

// peerTerminals returns the own terminals of the peer (its stdio and
// controlling terminal), read while the peer's pid provably names the
// process that connected, as peerGroup does. Errors: errPeerGone; the
// process cannot be read.
func (s *Server) peerTerminals(p peer) ([]entry.Terminal, error) {
	if !p.ok {
		return nil, fmt.Errorf("the caller: %w (no peer credentials)", errPeerGone)
	}
	if p.pidfd != nil {
		ts, err := s.PeerTerminals(p.pid)
		if err != nil {
			return nil, err
		}
		if err := unix.PidfdSendSignal(int(p.pidfd.Fd()), 0, nil, 0); err != nil {
			return nil, fmt.Errorf("caller pid %d: %w (pidfd: %v)", p.pid, errPeerGone, err)
		}
		return ts, nil
	}
	before, err := procid.StartTime(p.pid)
	if err != nil || before > p.accepted {
		return nil, fmt.Errorf("caller pid %d: %w", p.pid, errPeerGone)
	}
	ts, err := s.PeerTerminals(p.pid)
	if err != nil {
		return nil, err
	}
	if after, err := procid.StartTime(p.pid); err != nil || after != before {
		return nil, fmt.Errorf("caller pid %d: %w while its terminals were read", p.pid, errPeerGone)
	}
	return ts, nil
}
