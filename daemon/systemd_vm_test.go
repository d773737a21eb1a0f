package daemon_test

// The protocols the systemd unit relies on, with the real daemon in the VM
// (which has no systemd as PID 1): socket activation (LISTEN_FDS), readiness,
// status and watchdog keep-alives (NOTIFY_SOCKET, WATCHDOG_USEC), SIGHUP
// reopening the audit log, and a request made while the daemon restarts
// answered by the next daemon on the same socket.

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
)

// notifySocket collects the sd_notify datagrams sent to it.
type notifySocket struct {
	path string
	msgs chan string
}

func newNotifySocket(t *testing.T, dir string) *notifySocket {
	n := &notifySocket{path: filepath.Join(dir, "notify.sock"), msgs: make(chan string, 256)}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		b := make([]byte, 4096)
		for {
			k, err := c.Read(b)
			if err != nil {
				close(n.msgs)
				return
			}
			for _, line := range strings.Split(string(b[:k]), "\n") {
				if line != "" {
					n.msgs <- line
				}
			}
		}
	}()
	return n
}

// await waits for a message with prefix and returns it.
func (n *notifySocket) await(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-n.msgs:
			if !ok {
				t.Fatalf("notify socket closed before %q", prefix)
			}
			if strings.HasPrefix(m, prefix) {
				return m
			}
		case <-deadline:
			t.Fatalf("no %q notification within %v", prefix, within)
		}
	}
}

// startActivated starts the daemon as systemd would: the API socket as fd 3
// (LISTEN_FDS=1, LISTEN_PID = the daemon's pid, set by exec from a shell),
// NOTIFY_SOCKET and WATCHDOG_USEC.
func (e *vmEnv) startActivated(sock *os.File, n *notifySocket, watchdog time.Duration) {
	e.t.Helper()
	logf, err := os.OpenFile(filepath.Join(e.dir, "daemon.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ exec "$0" daemon --config "$1"`, e.bin, e.cfg)
	cmd.Env = append(os.Environ(), "LISTEN_FDS=1", "NOTIFY_SOCKET="+n.path,
		"WATCHDOG_USEC="+strconv.FormatInt(watchdog.Microseconds(), 10))
	cmd.ExtraFiles = []*os.File{sock}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.daemon = cmd
}

func TestVMDaemonSystemdProtocols(t *testing.T) {
	e := newVMEnv(t, "127.0.0.1:19491")
	defer e.stopDaemon(t.Failed())
	n := newNotifySocket(t, e.dir)

	l, err := net.Listen("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	sock, err := l.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	defer sock.Close()

	e.startActivated(sock, n, 400*time.Millisecond)
	n.await(t, "READY=1", 180*time.Second)
	if st := n.await(t, "STATUS=", 5*time.Second); !strings.Contains(st, "containers registered") {
		t.Errorf("status line %q", st)
	}
	n.await(t, "WATCHDOG=1", 2*time.Second)
	client := api.NewClient(e.sock, 5*time.Second)
	if st, err := client.Status(context.Background()); err != nil || st.PID != e.daemon.Process.Pid {
		t.Fatalf("status over the activated socket: %+v, %v; want the daemon (pid %d)", st, err, e.daemon.Process.Pid)
	}

	// SIGHUP: the daemon lives on and reopens the audit log at its path.
	if err := os.Rename(e.audit, e.audit+".1"); err != nil {
		t.Fatal(err)
	}
	if err := e.daemon.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(e.audit); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit log not reopened at %s after SIGHUP", e.audit)
		}
	}
	if _, err := client.Status(context.Background()); err != nil {
		t.Fatalf("daemon gone after SIGHUP: %v", err)
	}

	// Restart: the socket outlives the daemon; a request made meanwhile
	// waits in the socket's queue and the next daemon answers it.
	e.daemon.Process.Signal(syscall.SIGTERM)
	e.daemon.Wait()
	n.await(t, "STOPPING=1", time.Second)
	if _, err := os.Stat(e.sock); err != nil {
		t.Fatalf("activated socket removed by the stopping daemon: %v", err)
	}
	type answer struct {
		st  api.Status
		err error
	}
	got := make(chan answer, 1)
	slow := api.NewClient(e.sock, 240*time.Second)
	go func() {
		st, err := slow.Status(context.Background())
		got <- answer{st, err}
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case a := <-got:
		t.Fatalf("answered with no daemon running: %+v, %v", a.st, a.err)
	default:
	}
	e.startActivated(sock, n, 400*time.Millisecond)
	select {
	case a := <-got:
		if a.err != nil || a.st.PID != e.daemon.Process.Pid {
			t.Fatalf("request made during the restart: %+v, %v; want the new daemon's answer (pid %d)", a.st, a.err, e.daemon.Process.Pid)
		}
	case <-time.After(200 * time.Second):
		t.Fatal("request made during the restart never answered")
	}
}
