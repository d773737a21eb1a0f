package daemon_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/test/probe"
)

// The processes of a simulated container runtime, as probes of this test
// binary (test/probe):
//
//   - runtime-init DIR plays runc init: it waits in the container's cgroup
//     until the runtime says go (a byte on stdin), then execs the entrypoint,
//     the probe workload DIR;
//   - workload DIR tries a socket and a file creation in DIR every 20 ms and
//     prints "net=allowed|denied write=allowed|denied" until its stdin
//     closes;
//   - oci-entry is the entrypoint of a runc container (a static program
//     that is not a shell): it execs /bin/sh (BusyBox) to create /probe-sh,
//     creates /probe itself, and prints both outcomes.
func init() {
	probe.RegisterAll(map[string]probe.Op{
		"runtime-init": func(r *probe.Result, a []string) {
			if _, err := os.Stdin.Read(make([]byte, 1)); !r.Require(err, "wait for the runtime") {
				return
			}
			env := probe.Env("workload", a...)
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, probe.EnvOp+"=") && !strings.HasPrefix(kv, probe.EnvArgs+"=") {
					env = append(env, kv)
				}
			}
			r.Check(syscall.Exec("/proc/self/exe", []string{os.Args[0]}, env), "exec the entrypoint")
		},
		"workload": func(r *probe.Result, a []string) {
			done := make(chan struct{})
			go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
			for i := 0; ; i++ {
				net, write := "allowed", "allowed"
				if fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0); err != nil {
					net = "denied"
				} else {
					syscall.Close(fd)
				}
				if f, err := os.Create(filepath.Join(a[0], fmt.Sprintf("f%d", i))); err != nil {
					write = "denied"
				} else {
					f.Close()
				}
				fmt.Printf("net=%s write=%s\n", net, write)
				select {
				case <-done:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		},
		"oci-entry": func(r *probe.Result, a []string) {
			exe := "ok"
			pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "touch /probe-sh"}, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
			if err != nil {
				exe = err.Error()
			} else {
				var ws syscall.WaitStatus
				syscall.Wait4(pid, &ws, 0, nil)
			}
			create := "ok"
			if f, err := os.Create("/probe"); err != nil {
				create = err.Error()
			} else {
				f.Close()
			}
			fmt.Printf("exec=%s create=%s\n", exe, create)
		},
	})
}

// startIn starts the probe c directly inside the cgroup group (created if
// missing).
func startIn(t *testing.T, mount, group string, c probe.Cmd) *probe.Process {
	t.Helper()
	cg, err := cgroup.Create(mount, group)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cg.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	p, err := probe.Start(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stopProbe closes the probe's stdin and waits for it to end.
func stopProbe(p *probe.Process) {
	p.CloseStdin()
	p.Wait()
}
