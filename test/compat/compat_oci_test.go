package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/policy"
)

// TestCompatOCI runs the cells of OCITools × OCIRoles once more through
// the daemon: a daemon started here (its own socket, state and audit log)
// and, per cell, `runc run` of an OCI bundle whose createRuntime and
// poststop hooks call `enforcerd hook`, with the role in
// enforcerd.io/role and, under write=false, the workspace in
// enforcerd.io/write-roots. The container's root is the guest's root file
// system (a private bind mount of /, without its submounts) with /proc,
// the guest's /dev and /sys and a /tmp of its own, so the task sees the
// same paths as under `enforcerd run`. The denials are the daemon's audit
// records of the container; each cell prints
// "compat: <tool>/<role>@oci ...".
func TestCompatOCI(t *testing.T) {
	s := setUp(t)
	if _, err := exec.LookPath("runc"); err != nil {
		t.Fatalf("runc: %v (the Debian image has it)", err)
	}
	d := startDaemon(t, s.bin, filepath.Join(s.base, "daemon"))
	o := ociEnv{suite: s, daemon: d, rootfs: guestRootfs(t), state: filepath.Join(s.base, "runc")}
	for _, name := range OCITools {
		tool, ok := toolNamed(name)
		if !ok {
			t.Fatalf("OCITools: no tool %q", name)
		}
		for _, role := range OCIRoles {
			t.Run(tool.Name+"/"+role, func(t *testing.T) {
				r := o.run(t, tool, role)
				fmt.Println(r.Line())
				if !r.OK {
					t.Errorf("%s", r.Line())
				}
			})
		}
	}
}

// daemon is a daemon the test started: its socket and audit log.
type daemon struct {
	sock, audit string
}

// startDaemon writes a configuration in dir (socket, state, audit log; no
// metrics listener), starts `enforcerd daemon` and waits for it to be
// ready; it is stopped when the test ends (its log shown when the test
// failed).
func startDaemon(t *testing.T, bin, dir string) daemon {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	d := daemon{sock: filepath.Join(dir, "api.sock"), audit: filepath.Join(dir, "audit.jsonl")}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("socket: %s\nstate: %s/state.json\naudit:\n  path: %s\nmetrics:\n  listen: \"\"\n",
		d.sock, dir, d.audit)), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "daemon", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("daemon log:\n%s", tail(string(b), 60))
		}
	})
	c := api.NewClient(d.sock, time.Second)
	start := time.Now()
	for deadline := start.Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := c.Ready(context.Background()); err == nil && r.Ready {
			t.Logf("daemon ready in %v", time.Since(start).Round(time.Millisecond))
			return d
		}
	}
	b, _ := os.ReadFile(logf.Name())
	t.Fatalf("the daemon did not become ready:\n%s", b)
	return d
}

// guestRootfs returns a new directory that is a bind mount of the guest's
// root file system alone (not its submounts: the container mounts its own
// /proc, /dev, /sys and /tmp), private so that neither the mount nor the
// runtime's mounts propagate; unmounted and removed (rmdir, never a
// recursive removal: that would reach the guest's files) when the test
// ends. The directory first becomes a private mount of its own, so that
// the bind of / beneath it propagates to no peer of / (a copy of / inside
// itself). It is outside the suite's directory, which TestMain removes.
func guestRootfs(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/run", "compat-rootfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	for _, m := range []struct {
		src   string
		flags uintptr
	}{
		{dir, unix.MS_BIND}, {"", unix.MS_PRIVATE}, {"/", unix.MS_BIND}, {"", unix.MS_PRIVATE},
	} {
		if err := unix.Mount(m.src, dir, "", m.flags, ""); err != nil {
			t.Fatalf("mount %q on %s (flags %#x): %v", m.src, dir, m.flags, err)
		}
		if m.flags == unix.MS_BIND {
			t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		}
	}
	return dir
}

// ociEnv is what the OCI cells share: the suite, the daemon, the
// containers' root and runc's state directory.
type ociEnv struct {
	suite
	daemon daemon
	rootfs string
	state  string
}

// run runs the cell's task as a container's process (this test binary
// execs /bin/sh -eux TASK, as under `enforcerd run`) and judges the
// daemon's records of the container.
func (o ociEnv) run(t *testing.T, tool Tool, role string) Result {
	id := tool.Name + "-" + role
	c := o.cell("oci-" + id)
	c.makeWorkspace(t)
	bundle := filepath.Join(o.base, "bundle-"+id)
	o.writeBundle(t, bundle, id, c, tool, role)
	ctx, cancel := context.WithTimeout(context.Background(), cellTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "runc", "--root", o.state, "run", "--no-pivot", "--bundle", bundle, id)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	exit := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("runc: %v", err)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(&out, "\ncompat: timed out after %v\n", cellTimeout)
	}
	log, ds := o.denials(t, id)
	r := JudgeDenials(tool.Name, role, Expect(tool, role), exit, ds, out.String(), c.ws, c.fix)
	r.Variant = OCIVariant
	if r.OK && !Registered(log, id) {
		r.OK, r.Problem = false, "no registration record of the container in the daemon's audit log (the hook did not register it)"
	}
	t.Logf("%s/%s@%s: exit %d in %v", tool.Name, role, OCIVariant, exit, time.Since(start).Round(time.Millisecond))
	if !r.OK {
		for _, d := range ds {
			fmt.Fprintln(&out, d.Line)
		}
		t.Logf("output and the container's denials:\n%s", tail(out.String(), 60))
	}
	return r
}

// ociCaps are the capabilities of the container's process: a container
// engine's default set.
var ociCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
	"CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_MKNOD", "CAP_AUDIT_WRITE", "CAP_SETFCAP"}

// writeBundle writes bundle/config.json: the cell's process and
// environment, the guest's root, enforcerd's hooks on the daemon's socket,
// the role's annotations.
func (o ociEnv) writeBundle(t *testing.T, bundle, id string, c cell, tool Tool, role string) {
	t.Helper()
	if err := os.MkdirAll(bundle, 0o755); err != nil {
		t.Fatal(err)
	}
	annotations := map[string]string{"enforcerd.io/role": role}
	if !policy.RequestedCeiling(policy.Role(role), policy.DefaultSession()).Write {
		annotations["enforcerd.io/write-roots"] = c.ws
	}
	hook := func(stage string) map[string]any {
		return map[string]any{"path": o.bin, "args": []string{"enforcerd", "hook", "--socket", o.daemon.sock, stage}, "timeout": 120}
	}
	cfg := map[string]any{
		"ociVersion": "1.0.2-dev",
		"hostname":   id,
		"process": map[string]any{
			"terminal":     false,
			"user":         map[string]int{"uid": 0, "gid": 0},
			"args":         []string{c.self, "/bin/sh", "-eux", filepath.Join(c.tasks, tool.Name+".sh")},
			"env":          c.env(),
			"cwd":          c.ws,
			"capabilities": map[string][]string{"bounding": ociCaps, "effective": ociCaps, "permitted": ociCaps},
		},
		"root": map[string]any{"path": o.rootfs},
		"mounts": []map[string]any{
			{"destination": "/proc", "type": "proc", "source": "proc"},
			{"destination": "/dev", "type": "bind", "source": "/dev", "options": []string{"rbind", "rw"}},
			{"destination": "/sys", "type": "bind", "source": "/sys", "options": []string{"rbind", "ro"}},
			{"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "nodev"}},
		},
		"hooks":       map[string]any{"createRuntime": []any{hook("createRuntime")}, "poststop": []any{hook("poststop")}},
		"annotations": annotations,
		"linux": map[string]any{
			// The guest's network (no network namespace), as the
			// cells of enforcerd run have it.
			"namespaces":  []map[string]string{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}},
			"cgroupsPath": "/compat-oci/" + id,
		},
	}
	buf, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// denials reads the daemon's audit log and the container's denials in it once
// it has stopped growing: the kernel's records reach the log through the
// daemon's ring buffer reader after the container has ended, so the log
// is read until it has not changed for a second (at most 30 s).
func (o ociEnv) denials(t *testing.T, id string) ([]byte, []Denied) {
	t.Helper()
	var last []byte
	quiet := time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, err := os.ReadFile(o.daemon.audit)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if !bytes.Equal(b, last) {
			last, quiet = b, time.Now()
			continue
		}
		if time.Since(quiet) >= time.Second {
			break
		}
	}
	ds, err := AuditDenials(last, id)
	if err != nil {
		t.Fatal(err)
	}
	return last, ds
}
