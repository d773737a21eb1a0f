package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/test/testroot"
)

// peerClientEnv names the socket a re-executed test binary connects to as
// a client (peerClientMain) instead of running the tests.
const peerClientEnv = "ENFORCERD_API_TEST_PEER_SOCKET"

func TestMain(m *testing.M) {
	if sock := os.Getenv(peerClientEnv); sock != "" {
		os.Exit(peerClientMain(sock))
	}
	os.Exit(m.Run())
}

// peerClientMain sends GET /v1/status to sock and prints the status line
// and the body.
func peerClientMain(sock string) int {
	c, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		fmt.Println("write:", err)
		return 1
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		fmt.Println("read:", err)
		return 1
	}
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("%s\n%s", resp.Status, b)
	return 0
}

// TestPeerWithOtherUIDRefused: a process whose uid is not 0 that reaches
// the socket (here: its mode opened for the test; in production the mode
// 0600 stops it first) is refused by the peer-uid check (SO_PEERCRED),
// while a root peer of the same server is served.
func TestPeerWithOtherUIDRefused(t *testing.T) {
	testroot.Require(t, "a child process with another uid")
	const uid = 65534
	dir := t.TempDir()
	bin := filepath.Join(dir, "client")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "api.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	enf, cgs := registrytest.NewEnforcer(true), registrytest.NewCgroups()
	cgs.Add("/host")
	reg := registry.New(registry.Options{Enforcer: enf, Cgroups: cgs, StatePath: filepath.Join(dir, "state.json")})
	srv := &Server{Reg: reg, Hub: audit.NewHub(), PeerGroup: func(int) (string, error) { return "/host", nil }}
	hs := srv.NewHTTPServer()
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	run := func(cred *syscall.Credential) string {
		t.Helper()
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), peerClientEnv+"="+sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("client (credential %+v): %v: %s", cred, err, out)
		}
		return string(out)
	}
	if out := run(nil); !strings.HasPrefix(out, "200 ") {
		t.Fatalf("root peer: %q, want 200", out)
	}
	out := run(&syscall.Credential{Uid: uid, Gid: uid})
	if !strings.HasPrefix(out, "403 ") || !strings.Contains(out, fmt.Sprintf("uid %d: the API is root-only", uid)) {
		t.Fatalf("peer with uid %d: %q, want 403 naming the uid", uid, out)
	}
}
