package hook

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
	"github.com/enforcerd/enforcerd/test/testroot"
)

// floodEnv names the API socket a re-executed test binary floods
// (floodMain) instead of running the tests.
const floodEnv = "ENFORCERD_TEST_FLOOD_SOCKET"

// floodConns is how many slow connections the flooder opens: more than
// api.DefaultMaxConnsPerCgroup.
const floodConns = 4 * api.DefaultMaxConnsPerCgroup

// floodMain opens floodConns connections to sock, each a request that
// declares a body and never sends it, prints "held=N refused=M" (refused:
// answered 503 at once) and holds them until stdin closes.
func floodMain(sock string) int {
	var conns []net.Conn
	for range floodConns {
		c, err := net.Dial("unix", sock)
		if err != nil {
			fmt.Println("dial:", err)
			return 1
		}
		// Its own narrow endpoint: the one request a confined caller
		// may make with a body (anything else is 403 and closed).
		_, _ = io.WriteString(c, "POST /v1/containers/sbx/narrow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		conns = append(conns, c)
	}
	// The daemon accepts and counts connections in order, answering a
	// refused one before it accepts the next: once a last connection's
	// request is answered (a 503, as the limit is reached, or the
	// surface), every answer to the others has been written. Then read
	// them all at the same time, for a moment (a deadline already passed
	// would fail a read without looking at what arrived).
	probe, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	_ = probe.SetDeadline(time.Now().Add(20 * time.Second))
	_, _ = io.WriteString(probe, "GET /v1/containers/sbx/surface HTTP/1.1\r\nHost: x\r\n\r\n")
	if line, err := bufio.NewReader(probe).ReadString('\n'); err != nil {
		fmt.Printf("probe: %q, %v\n", line, err)
		return 1
	}
	probe.Close()
	type answer struct {
		line string
		err  error
	}
	answers := make(chan answer, len(conns))
	deadline := time.Now().Add(300 * time.Millisecond)
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(deadline)
			line, err := bufio.NewReader(c).ReadString('\n')
			answers <- answer{line, err}
		}()
	}
	held, refused := 0, 0
	for range conns {
		a := <-answers
		switch {
		case strings.HasPrefix(a.line, "HTTP/1.1 503"):
			refused++
		case a.line == "" && os.IsTimeout(a.err):
			held++
		default:
			fmt.Printf("unexpected answer %q (%v)\n", a.line, a.err)
			return 1
		}
	}
	fmt.Printf("held=%d refused=%d\n", held, refused)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestFloodFromSandboxLeavesHooksServed: a process in a registered cgroup
// (a sandbox with network allowed, which can reach the socket) holds as
// many slow connections as it can: it gets api.DefaultMaxConnsPerCgroup
// of them, the rest are refused at once, and meanwhile a registration
// and an OCI hook call (unconfined callers) succeed within their
// timeouts. Real cgroups and the API's own peer identification (the
// peer's cgroup from /proc); the map is the registry's fake, since the
// API's confinement check reads only whether a cgroup has an entry.
func TestFloodFromSandboxLeavesHooksServed(t *testing.T) {
	testroot.Require(t, "cgroups")
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Skip(err)
	}
	base := fmt.Sprintf("/enforcerd-flood-%d", os.Getpid())
	mk := func(name string) cgroup.Cgroup {
		cg, err := cgroup.Create(mount, base+"/"+name)
		if err != nil {
			t.Fatal(err)
		}
		return cg
	}
	sbx, ctr, reg1 := mk("sbx"), mk("ctr"), mk("reg")
	t.Cleanup(func() {
		for _, cg := range []cgroup.Cgroup{sbx, ctr, reg1} {
			_ = cg.Remove(5 * time.Second)
		}
		os.Remove(filepath.Join(mount, base))
	})
	fakeCoreLimits(t, nil)
	enf := registrytest.NewEnforcer(true)
	reg := registry.New(registry.Options{Enforcer: enf, Cgroups: registry.SystemCgroups{Mount: mount},
		StatePath: filepath.Join(t.TempDir(), "state.json")})
	sock := clitest.ServeAPI(t, reg, "") // default limits, real peer cgroups
	client := api.NewClient(sock, api.DefaultHookTimeout)
	if _, err := client.Register(context.Background(), api.RegisterRequest{ID: "sbx", Cgroup: sbx.Group, Role: "test", Ceiling: "network=true"}); err != nil {
		t.Fatal(err)
	}

	// The sandbox: this test binary, started inside the registered cgroup.
	dir, err := sbx.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	flood := exec.Command(os.Args[0])
	flood.Env = append(os.Environ(), floodEnv+"="+sock)
	flood.SysProcAttr = cgroup.SysProcAttr(dir)
	stdin, err := flood.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := flood.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	dir.Close()
	t.Cleanup(func() { stdin.Close(); _ = flood.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("flooder: %v (%q)", err, line)
	}
	want := fmt.Sprintf("held=%d refused=%d\n", api.DefaultMaxConnsPerCgroup, floodConns-api.DefaultMaxConnsPerCgroup)
	if line != want {
		t.Fatalf("flooder: %q, want %q", line, want)
	}

	// Unconfined callers while the sandbox holds its maximum.
	start := time.Now()
	if _, err := client.Register(context.Background(), api.RegisterRequest{ID: "reg", Cgroup: reg1.Group, Role: "test", Ceiling: "network=true"}); err != nil {
		t.Fatalf("registration during the flood: %v", err)
	}
	init := exec.Command("sleep", "30")
	cdir, err := ctr.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	init.SysProcAttr = cgroup.SysProcAttr(cdir)
	if err := init.Start(); err != nil {
		t.Fatal(err)
	}
	cdir.Close()
	t.Cleanup(func() { _ = init.Process.Kill(); _ = init.Wait() })
	code, msg := runHookWith(sock, "createRuntime", stateJSON("ctr", init.Process.Pid, `"enforcerd.io/ceiling":"network=true"`))
	if code != cli.ExitOK {
		t.Fatalf("hook during the flood: exit %d: %s", code, msg)
	}
	if d := time.Since(start); d > api.DefaultHookTimeout {
		t.Fatalf("registration and hook call took %v, beyond the hook's timeout %v", d, api.DefaultHookTimeout)
	}
	if enf.Len() != 3 {
		t.Fatalf("%d map entries, want 3 (sbx, reg, ctr)", enf.Len())
	}
}
