package api

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/procid"
)

func groupOK(int) (string, error) { return "/host", nil }

// exited starts and reaps a short-lived process and returns a pidfd that
// still names it, and its (now free) pid.
func exited(t *testing.T) (*os.File, int) {
	t.Helper()
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		cmd.Wait()
		t.Skipf("pidfd_open: %v", err)
	}
	cmd.Wait()
	return os.NewFile(uintptr(fd), "pidfd"), pid
}

func TestPeerGroupPidfdRefusesExitedPeer(t *testing.T) {
	s := &Server{PeerGroup: groupOK}
	fd, pid := exited(t)
	defer fd.Close()
	// The pid may name any process by now (reuse): the pidfd says the
	// peer is gone, so the request is refused whatever /proc says.
	if _, err := s.peerGroup(peer{ok: true, pid: pid, pidfd: fd}); !errors.Is(err, errPeerGone) {
		t.Fatalf("exited peer: err %v, want errPeerGone", err)
	}
	self, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skip(err)
	}
	sf := os.NewFile(uintptr(self), "pidfd")
	defer sf.Close()
	if g, err := s.peerGroup(peer{ok: true, pid: os.Getpid(), pidfd: sf}); err != nil || g != "/host" {
		t.Fatalf("live peer: %q, %v", g, err)
	}
}

func TestPeerGroupFallbackStartTime(t *testing.T) {
	s := &Server{PeerGroup: groupOK}
	now, err := procid.Now()
	if err != nil {
		t.Fatal(err)
	}
	start, err := procid.StartTime(os.Getpid())
	if err != nil {
		t.Skip(err)
	}
	if g, err := s.peerGroup(peer{ok: true, pid: os.Getpid(), accepted: now}); err != nil || g != "/host" {
		t.Fatalf("live peer, no pidfd: %q, %v", g, err)
	}
	// The process at the pid started after the accept: not the peer.
	if _, err := s.peerGroup(peer{ok: true, pid: os.Getpid(), accepted: start - 1}); !errors.Is(err, errPeerGone) {
		t.Fatalf("process younger than the connection: err %v, want errPeerGone", err)
	}
	fd, pid := exited(t)
	fd.Close()
	if _, err := procid.StartTime(pid); err == nil {
		t.Skip("pid reused already")
	}
	if _, err := s.peerGroup(peer{ok: true, pid: pid, accepted: now}); !errors.Is(err, errPeerGone) {
		t.Fatalf("exited peer, no pidfd: err %v, want errPeerGone", err)
	}
}

// TestPeerOfUnixConn: a connection's peer has our pid and uid, and on
// Linux 6.5+ a pidfd.
func TestPeerOfUnixConn(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("unix", sock)
		if err == nil {
			defer c.Close()
			b := make([]byte, 1)
			c.Read(b)
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := peerOf(c)
	if !p.ok || p.pid != os.Getpid() || p.uid != os.Getuid() {
		t.Fatalf("peer %+v, want pid %d uid %d", p, os.Getpid(), os.Getuid())
	}
	if p.pidfd != nil {
		defer p.pidfd.Close()
	}
	t.Logf("SO_PEERPIDFD: %v", p.pidfd != nil)
}
