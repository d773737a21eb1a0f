package e2etest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// CRIEnvVar names the directory holding bin/{containerd,
// containerd-shim-runc-v2,ctr,crictl}, with room for the runtime's root:
// /cri in the scripts/vmtest guest (testdata/needs-cri).
const CRIEnvVar = "ENFORCERD_VMTEST_CRI"

// metricsAddr is the daemon's metrics listener in these tests.
const metricsAddr = "127.0.0.1:19481"

// env is one daemon and one containerd wired together through NRI.
type env struct {
	t   *testing.T
	dir string // short: sockets live here
	cri string // ENFORCERD_VMTEST_CRI

	bin, daemonCfg, apiSock, auditLog string
	daemon                            *exec.Cmd
	daemonStart                       time.Time

	ctrdCfg, ctrdSock, nriSock, crictlCfg string
	containerd                            *exec.Cmd
	api                                   *api.Client
}

// newEnv checks the guest (BPF LSM, root, the runtime's disk, the
// enforcerd binary) and writes the configurations of the daemon (NRI on,
// the runtime's NRI socket) and of containerd (NRI with the default
// validator, the test image as sandbox image, the native snapshotter on
// the runtime's disk, requests to the plugin allowed 10 s: the guest is
// emulated; runc without pivot_root, which the guest's root, the
// initramfs, does not allow).
func newEnv(t *testing.T) *env {
	t.Helper()
	vmtest.RequireLSM(t, nil)
	cri := os.Getenv(CRIEnvVar)
	if cri == "" {
		vmtest.Skip(t, CRIEnvVar+" not set (scripts/vmtest attaches the runtime's disk for packages with testdata/needs-cri)")
	}
	bin := os.Getenv("ENFORCERD_BIN")
	if bin == "" {
		vmtest.Skip(t, "ENFORCERD_BIN not set")
	}
	dir, err := os.MkdirTemp("", "nri-e2e") // not t.TempDir: unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &env{t: t, dir: dir, cri: cri, bin: bin,
		daemonCfg: filepath.Join(dir, "enforcerd.yaml"), apiSock: filepath.Join(dir, "api.sock"),
		auditLog: filepath.Join(dir, "audit.jsonl"), ctrdCfg: filepath.Join(dir, "containerd.toml"),
		ctrdSock: filepath.Join(dir, "containerd.sock"), nriSock: filepath.Join(dir, "nri.sock"),
		crictlCfg: filepath.Join(dir, "crictl.yaml")}
	e.api = api.NewClient(e.apiSock, 10*time.Second)
	pin, _ := vmtest.PinDir("nri-e2e")
	e.write(e.daemonCfg, fmt.Sprintf("socket: %s\nstate: %s/state.json\npin_dir: %s\naudit:\n  path: %s\nmetrics:\n  listen: %q\n"+
		"nri:\n  enable: true\n  socket: %s\n", e.apiSock, dir, pin, e.auditLog, metricsAddr, e.nriSock))
	e.write(e.ctrdCfg, fmt.Sprintf(`version = 3
root = %q
state = %q
[grpc]
  address = %q
[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = %q
  plugin_request_timeout = '10s'
  [plugins.'io.containerd.nri.v1.nri'.default_validator]
    enable = true
    tolerate_missing_plugins_annotation = 'tolerate-missing-plugins.noderesource.dev'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
  sandboxer = 'podsandbox'
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
    NoPivotRoot = true
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'native'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q
`, filepath.Join(cri, "lib/containerd"), filepath.Join(dir, "state"), e.ctrdSock, e.nriSock, testImage))
	e.write(e.crictlCfg, fmt.Sprintf("runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 120\n", e.ctrdSock, e.ctrdSock))
	// A host-network pod gets copies of these (containerd refuses the
	// sandbox without them); the guest's initramfs has neither.
	for f, body := range map[string]string{"/etc/hosts": "127.0.0.1 localhost\n", "/etc/resolv.conf": "nameserver 127.0.0.1\n"} {
		if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
			e.write(f, body)
		}
	}
	return e
}

func (e *env) write(path, body string) {
	e.t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) criBin(name string) string { return filepath.Join(e.cri, "bin", name) }

// startProc starts name with its output appended to dir/<log>.
func (e *env) startProc(log string, name string, args ...string) *exec.Cmd {
	e.t.Helper()
	f, err := os.OpenFile(filepath.Join(e.dir, log), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(e.cri, "bin")+":"+os.Getenv("PATH"))
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { cmd.Wait(); f.Close() }()
	return cmd
}

// waitFor polls ok every 100 ms for up to d; on timeout it fails the test
// with what and the tail of the logs.
func (e *env) waitFor(d time.Duration, what string, ok func() bool) {
	e.t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %v waiting for %s\n%s", d, what, e.logs())
		}
	}
}

// logs is the tail of the daemon's and containerd's logs.
func (e *env) logs() string {
	var b strings.Builder
	for _, l := range []string{"daemon.log", "containerd.log"} {
		buf, _ := os.ReadFile(filepath.Join(e.dir, l))
		if len(buf) > 6000 {
			buf = buf[len(buf)-6000:]
		}
		fmt.Fprintf(&b, "--- %s (tail):\n%s\n", l, buf)
	}
	return b.String()
}

// startContainerd starts containerd and imports the test image (made
// from the guest's static busybox) into the CRI namespace, unpacked for
// the native snapshotter.
func (e *env) startContainerd() {
	e.t.Helper()
	t0 := time.Now()
	e.containerd = e.startProc("containerd.log", e.criBin("containerd"), "--config", e.ctrdCfg)
	e.waitFor(60*time.Second, "containerd's socket", func() bool {
		return exec.Command(e.criBin("ctr"), "--address", e.ctrdSock, "version").Run() == nil
	})
	img := filepath.Join(e.dir, "image.tar")
	writeImage(e.t, img, "/bin/busybox")
	if out, err := exec.Command(e.criBin("ctr"), "--address", e.ctrdSock, "-n", "k8s.io", "images", "import", "--local",
		"--snapshotter", "native", "--platform", "linux/"+runtime.GOARCH, img).CombinedOutput(); err != nil {
		e.t.Fatalf("ctr images import: %v\n%s\n%s", err, out, e.logs())
	}
	e.waitFor(30*time.Second, "the CRI image service to list "+testImage, func() bool {
		out, err := e.crictlOut("images", "-q", testImage)
		return err == nil && strings.TrimSpace(out) != ""
	})
	e.t.Logf("containerd up and image imported in %v", time.Since(t0))
}

// stopContainerd removes every pod, then stops containerd.
func (e *env) stopContainerd() {
	if e.containerd == nil {
		return
	}
	e.crictlOut("rmp", "-a", "-f")
	e.containerd.Process.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(20 * time.Second); e.containerd.ProcessState == nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if err := e.containerd.Process.Signal(syscall.Signal(0)); err != nil {
			break
		}
	}
	e.containerd.Process.Kill()
}

// startDaemon starts `enforcerd daemon` and waits until its API answers
// and its NRI plugin is registered with containerd
// (enforcerd_nri_connected 1).
func (e *env) startDaemon() {
	e.t.Helper()
	e.launchDaemon()
	e.waitDaemon()
}

// launchDaemon starts `enforcerd daemon`; waitDaemon waits for it. In
// between, the test can start containerd while the daemon loads its
// programs (the plugin retries its connection).
func (e *env) launchDaemon() {
	e.t.Helper()
	e.daemonStart = time.Now()
	e.daemon = e.startProc("daemon.log", e.bin, "daemon", "--config", e.daemonCfg)
}

func (e *env) waitDaemon() {
	e.t.Helper()
	t0 := e.daemonStart
	e.waitFor(180*time.Second, "the daemon's API", func() bool {
		_, err := e.api.Status(context.Background())
		return err == nil
	})
	e.waitFor(60*time.Second, "the NRI plugin to register (enforcerd_nri_connected 1)", func() bool {
		return e.metric("enforcerd_nri_connected") == "1"
	})
	e.t.Logf("daemon up and plugin registered in %v", time.Since(t0))
}

// killDaemon SIGKILLs the daemon: no cleanup of any kind runs.
func (e *env) killDaemon() {
	e.t.Helper()
	if err := e.daemon.Process.Kill(); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor(10*time.Second, "the killed daemon to exit", func() bool {
		return e.daemon.Process.Signal(syscall.Signal(0)) != nil
	})
}

func (e *env) stopDaemon() {
	if e.daemon != nil {
		e.daemon.Process.Signal(syscall.SIGTERM)
		e.waitFor(30*time.Second, "the daemon to stop", func() bool {
			return e.daemon.Process.Signal(syscall.Signal(0)) != nil
		})
	}
}

// metric is the value of the unlabelled metric name ("" when absent).
func (e *env) metric(name string) string {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v
		}
	}
	return ""
}

// crictlOut runs crictl with the test's configuration: its standard
// output, or on an error its standard output and error (crictl warns on
// its standard error, e.g. that the pod has no cgroup_parent).
func (e *env) crictlOut(args ...string) (string, error) {
	var stdout, stderr strings.Builder
	cmd := exec.Command(e.criBin("crictl"), append([]string{"--config", e.crictlCfg}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// crictl runs crictl and fails the test on an error; it returns the
// trimmed output.
func (e *env) crictl(args ...string) string {
	e.t.Helper()
	out, err := e.crictlOut(args...)
	if err != nil {
		e.t.Fatalf("crictl %s: %v\n%s\n%s", strings.Join(args, " "), err, out, e.logs())
	}
	return strings.TrimSpace(out)
}

// auditRecords are the records of the daemon's audit log.
func (e *env) auditRecords() []audit.Record {
	f, err := os.Open(e.auditLog)
	if err != nil {
		return nil
	}
	defer f.Close()
	var recs []audit.Record
	dec := json.NewDecoder(f)
	for {
		var r audit.Record
		if err := dec.Decode(&r); err != nil {
			if !errors.Is(err, io.EOF) {
				e.t.Logf("audit log: %v", err)
			}
			return recs
		}
		recs = append(recs, r)
	}
}
