package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/test/probe"
)

// spec-write is the entrypoint of a runc container that tries, in order,
// each "what=kind:target" of its arguments and prints "what=ok" or
// "what=<error>": kind "create" creates the file target, "chmod" makes
// target mode 0777.
func init() {
	probe.Register("spec-write", func(r *probe.Result, a []string) {
		for _, arg := range a {
			what, spec, _ := strings.Cut(arg, "=")
			kind, target, _ := strings.Cut(spec, ":")
			var err error
			switch kind {
			case "create":
				var f *os.File
				if f, err = os.Create(target); err == nil {
					f.Close()
				}
			case "chmod":
				err = os.Chmod(target, 0o777)
			default:
				err = fmt.Errorf("unknown kind %q", kind)
			}
			res := "ok"
			if err != nil {
				res = err.Error()
			}
			fmt.Printf("%s=%s\n", what, res)
		}
	})
}

// specBundle writes a bundle whose entrypoint is this test binary running
// spec-write: root read-only (readonly), /proc read-only, no CAP_SYS_ADMIN,
// a device cgroup for harmless character devices only (oci/speccheck's
// write=false rules), plus, when rwDir is set, a read-write bind mount of
// that host directory at /data.
func specBundle(t *testing.T, e *vmEnv, id, ceiling string, readonly bool, rwDir string) string {
	caps := []string{"CAP_CHOWN", "CAP_FOWNER", "CAP_DAC_OVERRIDE"}
	mounts := []map[string]any{{"destination": "/proc", "type": "proc", "source": "proc", "options": []string{"ro", "nosuid", "nodev", "noexec"}}}
	if rwDir != "" {
		mounts = append(mounts, map[string]any{"destination": "/data", "type": "bind", "source": rwDir, "options": []string{"rbind", "rw"}})
	}
	dev := func(major, minor int) map[string]any {
		m := map[string]any{"allow": true, "type": "c", "major": major, "access": "rwm"}
		if minor >= 0 {
			m["minor"] = minor
		}
		return m
	}
	args := []string{"out=create:/out", "chmod=chmod:/bin/entry", "data=create:/data/f"}
	return writeProbeBundle(t, e, id, []string{"data"}, probe.Env("spec-write", args...), caps, map[string]any{
		"root":        map[string]any{"path": "rootfs", "readonly": readonly},
		"mounts":      mounts,
		"annotations": map[string]string{"enforcerd.io/ceiling": ceiling},
		"linux": map[string]any{
			"namespaces":  []map[string]string{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}},
			"cgroupsPath": "/vmtest-runc/" + id,
			"resources": map[string]any{"devices": []map[string]any{{"allow": false, "access": "rwm"},
				dev(1, 3), dev(1, 5), dev(1, 7), dev(1, 8), dev(1, 9), dev(5, 0), dev(5, 2), dev(136, -1)}},
		},
	})
}

// writeProbeBundle writes the runc bundle e.dir/bundle-ID for a spec test:
// a rootfs with /bin, /proc, /dev and dirs, this test binary as /bin/entry
// run as root with env (a probe's) and the capability set caps (bounding,
// effective, permitted), enforcerd's createRuntime and poststop hooks on
// e's socket, hostname ID, and the rest of config.json from cfg (root,
// mounts, annotations, linux). It returns the bundle's directory.
func writeProbeBundle(t *testing.T, e *vmEnv, id string, dirs, env, caps []string, cfg map[string]any) string {
	t.Helper()
	b := filepath.Join(e.dir, "bundle-"+id)
	for _, d := range []string{"bin", "proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(b, "rootfs", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "rootfs", "bin", "entry"), self, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(b, "rootfs", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg["process"] = map[string]any{
		"terminal": false, "user": map[string]int{"uid": 0, "gid": 0},
		"args": []string{"/bin/entry"}, "env": append([]string{"PATH=/bin"}, env...), "cwd": "/",
		"capabilities": map[string][]string{"bounding": caps, "effective": caps, "permitted": caps},
	}
	writeBundleConfig(t, e, b, id, cfg)
	return b
}

// TestNoBPFLSMRuncContainerSpec: on a host without BPF LSM, whose daemon
// allows partial coverage, a write=false container is judged by its
// config.json (container-spec, docs/no-bpf-lsm.md "Containers"). With
// Debian's runc, tri-state: (a) a control container (write=true, root
// writable) creates /out, chmods its entrypoint and writes in /data; (b) a
// write=false container whose spec is read-only runs, and each write fails
// with EROFS, while the same ceiling with one read-write bind mount is
// refused by the hook (runc fails, the message names mount /data, the
// entrypoint never runs); (c) no file was created, the mode is unchanged,
// nothing appeared in the bound directory. With BPF LSM the read-write
// container is accepted and its writes fail with EPERM (the programs
// enforce it; the spec is not relied on).
func TestNoBPFLSMRuncContainerSpec(t *testing.T) {
	e, lsm := runcSpecDaemon(t, "127.0.0.1:19468", "write")
	defer e.stopDaemon(t.Failed())
	outcomes := func(out string) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && (k == "out" || k == "chmod" || k == "data") {
				m[k] = v
			}
		}
		return m
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	denied := func(res string) bool {
		return strings.HasSuffix(res, unix.EROFS.Error()) || strings.HasSuffix(res, unix.EPERM.Error())
	}
	mode := func(b string) os.FileMode {
		fi, err := os.Stat(filepath.Join(b, "rootfs", "bin", "entry"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}

	// (a) control: writes happen.
	dataA := t.TempDir()
	b := specBundle(t, e, "spec-ctl", "write=true", false, dataA)
	code, out := runRunc(t, e, "spec-ctl", b)
	got := outcomes(out)
	if code != 0 || got["out"] != "ok" || got["chmod"] != "ok" || got["data"] != "ok" {
		t.Fatalf("control (write=true): runc exit %d, outcomes %v, want every write ok; output:\n%s", code, got, out)
	}
	if !exists(filepath.Join(b, "rootfs", "out")) || mode(b) != 0o777 || !exists(filepath.Join(dataA, "f")) {
		t.Fatalf("control: the writes left no effect")
	}

	// (b) write=false with a read-write mount.
	dataB := t.TempDir()
	b = specBundle(t, e, "spec-rw", "write=false", true, dataB)
	code, out = runRunc(t, e, "spec-rw", b)
	got = outcomes(out)
	t.Logf("write=false, /data read-write: runc exit %d: %s", code, out)
	if !lsm {
		if code == 0 || !strings.Contains(out, "mount /data") || !strings.Contains(out, "not read-only") {
			t.Errorf("BYPASS: no BPF LSM, a read-write mount under write=false: runc exit %d, want a refusal naming mount /data", code)
		}
		if len(got) != 0 {
			t.Errorf("BYPASS: the refused container's entrypoint ran: %v", got)
		}
	} else {
		// The root is read-only anyway: EROFS (the VFS checks it before
		// the LSM hooks) or EPERM; /data only the programs deny.
		for _, k := range []string{"out", "chmod"} {
			if !denied(got[k]) {
				t.Errorf("BYPASS: BPF LSM, write=false: %s: %q, want EROFS or EPERM", k, got[k])
			}
		}
		if !strings.HasSuffix(got["data"], unix.EPERM.Error()) {
			t.Errorf("BYPASS: BPF LSM, write=false: data (read-write mount): %q, want EPERM", got["data"])
		}
	}
	// (c) nothing written.
	if exists(filepath.Join(dataB, "f")) || exists(filepath.Join(b, "rootfs", "out")) || mode(b) != 0o755 {
		t.Errorf("BYPASS: write=false with a read-write mount: a write took effect (data/f %v, out %v, mode %v)",
			exists(filepath.Join(dataB, "f")), exists(filepath.Join(b, "rootfs", "out")), mode(b))
	}

	// (b) write=false, read-only spec: accepted, writes fail.
	b = specBundle(t, e, "spec-ro", "write=false", true, "")
	code, out = runRunc(t, e, "spec-ro", b)
	got = outcomes(out)
	t.Logf("write=false, read-only spec: runc exit %d: %s", code, out)
	if code != 0 {
		t.Fatalf("write=false, read-only spec: runc exit %d, want 0 (accepted); output:\n%s", code, out)
	}
	for _, k := range []string{"out", "chmod"} {
		if !strings.HasSuffix(got[k], unix.EROFS.Error()) && (!lsm || !denied(got[k])) {
			t.Errorf("BYPASS: write=false, read-only spec: %s: %q, want EROFS", k, got[k])
		}
	}
	// The registration record names the spec's gap (no BPF LSM) or none.
	audit, _ := os.ReadFile(e.audit)
	if named := strings.Contains(string(audit), `"write-inherited-fds"`); named == lsm {
		t.Errorf("audit log: write-inherited-fds named %v with BPF LSM %v:\n%s", named, lsm, audit)
	}
	// (c) nothing written.
	if exists(filepath.Join(b, "rootfs", "out")) || mode(b) != 0o755 {
		t.Errorf("BYPASS: write=false, read-only spec: a write took effect (out %v, mode %v)", exists(filepath.Join(b, "rootfs", "out")), mode(b))
	}
}

// runcSpecDaemon starts a daemon allowing partial coverage on metrics
// address addr for a runc spec test (which needs runc) and reports
// whether the daemon enforces field in full: whether its BPF LSM layer
// works (the active LSM list is not enough, a kernel may still refuse the
// programs). The caller stops the daemon.
func runcSpecDaemon(t *testing.T, addr, field string) (*vmEnv, bool) {
	t.Helper()
	e := newVMEnvAnyLSM(t, addr, "allow_partial: true\n")
	requireRunc(t)
	e.startDaemon()
	st, err := api.NewClient(e.sock, 5*time.Second).Status(context.Background())
	if err != nil {
		e.stopDaemon(true)
		t.Fatal(err)
	}
	full := false
	for _, fc := range st.Coverage {
		if fc.Field == field {
			full = fc.State == coverage.StateFull
		}
	}
	t.Logf("BPF LSM layer in force (%s in full): %v", field, full)
	return e, full
}
