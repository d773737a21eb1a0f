package daemon_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/test/probe"
)

// The probes of the exec allow list test:
//
//   - exec-loop reads lines "PROGRAM MARK" from stdin; for each it
//     fork-execs PROGRAM as the probe mark MARK and prints "ok" when the
//     exec succeeded, else the exec's errno ("operation not permitted");
//   - mark creates the file MARK (the effect of an exec that ran).
func init() {
	probe.RegisterAll(map[string]probe.Op{
		"exec-loop": func(r *probe.Result, _ []string) {
			in := bufio.NewScanner(os.Stdin)
			for in.Scan() {
				prog, mark, _ := strings.Cut(in.Text(), " ")
				env := probe.Env("mark", mark)
				pid, err := syscall.ForkExec(prog, []string{prog}, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 2, 2}})
				if err != nil {
					fmt.Println(err.Error())
					continue
				}
				var ws syscall.WaitStatus
				syscall.Wait4(pid, &ws, 0, nil)
				fmt.Println("ok")
			}
		},
		"mark": func(r *probe.Result, a []string) {
			f, err := os.Create(a[0])
			if r.Check(err, "create "+a[0]) {
				f.Close()
			}
		},
	})
}

// execLoop drives an exec-loop probe.
type execLoop struct {
	t *testing.T
	p *probe.Process
}

// exec runs prog in the loop and returns its answer and whether the mark
// was created.
func (l execLoop) exec(prog, mark string) (string, bool) {
	l.t.Helper()
	os.Remove(mark)
	n := len(l.p.Lines())
	if err := l.p.Write([]byte(prog + " " + mark + "\n")); err != nil {
		l.t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ls := l.p.Lines(); len(ls) > n {
			_, err := os.Stat(mark)
			return ls[n], err == nil
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("exec %s: no answer", prog)
		}
	}
}

// copyFile copies the test binary to dst (a file of its own: another
// device+inode identity than every other copy).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVMDaemonExecAllow: a shell=none registration through the API with
// exec_allow=[X] lets a process of its cgroup exec X and nothing else
// (EPERM, no effect); the list is shown, refused for unsafe or malformed
// input, still enforced after a daemon restart that keeps the pins and
// after one that must re-install the entry from the state file, and met
// with the list of a registration nested below it by cgroup.
func TestVMDaemonExecAllow(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19471")
	client := api.NewClient(e.sock, 30*time.Second)
	ctx := context.Background()

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	allowed, other := filepath.Join(e.dir, "allowed-prog"), filepath.Join(e.dir, "other-prog")
	copyFile(t, self, allowed)
	copyFile(t, self, other)
	markA, markO := filepath.Join(e.dir, "mark-allowed"), filepath.Join(e.dir, "mark-other")

	group := "/vmtest-execallow/a"
	loop := execLoop{t: t, p: startIn(t, e.mount, group, probe.Cmd{Op: "exec-loop"})}
	defer removeGroup(e, group)
	defer stopProbe(loop.p)
	// A process in a cgroup below, started before any ceiling (under
	// shell=none its own exec would be refused).
	inner := execLoop{t: t, p: startIn(t, e.mount, group+"/inner", probe.Cmd{Op: "exec-loop"})}
	defer removeGroup(e, group+"/inner")
	defer stopProbe(inner.p)

	// Without a ceiling both run.
	if got, ran := loop.exec(other, markO); got != "ok" || !ran {
		t.Fatalf("control (no ceiling): exec other: %q, mark %v; want ok and the mark", got, ran)
	}
	if got, ran := loop.exec(allowed, markA); got != "ok" || !ran {
		t.Fatalf("control (no ceiling): exec allowed: %q, mark %v; want ok and the mark", got, ran)
	}

	// Refused, with nothing registered: BusyBox (multi-call) → 422
	// unsafe_program; a relative path, or a list without shell=none → 400.
	for _, c := range []struct {
		req    api.RegisterRequest
		status int
		code   string
	}{
		{api.RegisterRequest{ID: "bad", Cgroup: group, Ceiling: "shell=none", ExecAllow: []string{"/bin/sh"}}, http.StatusUnprocessableEntity, "unsafe_program"},
		{api.RegisterRequest{ID: "bad", Cgroup: group, Ceiling: "shell=none", ExecAllow: []string{"bin/sh"}}, http.StatusBadRequest, "bad_request"},
		{api.RegisterRequest{ID: "bad", Cgroup: group, Ceiling: "write=false", ExecAllow: []string{allowed}}, http.StatusBadRequest, "bad_request"},
	} {
		_, err := client.Register(ctx, c.req)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != c.status || ae.Code != c.code {
			t.Fatalf("register exec_allow %v with %q: %v, want HTTP %d %s", c.req.ExecAllow, c.req.Ceiling, err, c.status, c.code)
		}
	}
	if got, ran := loop.exec(other, markO); got != "ok" || !ran {
		t.Fatalf("after refused registrations: exec other: %q, mark %v; want ok (nothing registered)", got, ran)
	}

	c, err := client.Register(ctx, api.RegisterRequest{ID: "a", Cgroup: group, Ceiling: "shell=none", ExecAllow: []string{allowed}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ExecAllow) != 1 || c.ExecAllow[0] != allowed || c.Kernel.Shell != "none" {
		t.Fatalf("registration: shell %s exec_allow %v, want none [%s]", c.Kernel.Shell, c.ExecAllow, allowed)
	}
	check := func(when string) {
		t.Helper()
		if got, ran := loop.exec(allowed, markA); got != "ok" || !ran {
			t.Fatalf("%s: exec of the allowed file: %q, mark %v; want ok and the mark", when, got, ran)
		}
		got, ran := loop.exec(other, markO)
		if got != syscall.EPERM.Error() {
			t.Fatalf("%s: exec of another file: %q, want %q", when, got, syscall.EPERM.Error())
		}
		if ran {
			t.Fatalf("%s: exec of another file was refused but its mark exists", when)
		}
		if g, err := client.Get(ctx, "a"); err != nil || len(g.ExecAllow) != 1 || g.ExecAllow[0] != allowed {
			t.Fatalf("%s: GET: exec_allow %v (%v), want [%s]", when, g.ExecAllow, err, allowed)
		}
	}
	check("registered")

	// Restart, pins kept: the map entry stays.
	e.stopDaemon(false)
	e.startDaemon()
	check("after a restart")

	// Restart after the map entry was lost: Reconcile re-installs it
	// from the state file, list included.
	e.stopDaemon(false)
	cg, err := cgroup.Open(e.mount, group)
	if err != nil {
		t.Fatal(err)
	}
	if n := dropEntry(t, e.pin, cg.ID); n != 1 {
		t.Fatalf("the pinned exec allow map held %d entries of the cgroup, want 1 (the listed file)", n)
	}
	if got, ran := loop.exec(other, markO); got != "ok" || !ran {
		t.Fatalf("entry removed, daemon stopped: exec other: %q, mark %v; want ok (control)", got, ran)
	}
	e.startDaemon()
	check("after a restart that re-installed the entry")
	// Nested by cgroup: the inner registration asks for the allowed file
	// and the other one; the meet with "a" keeps only the allowed one, and
	// the kernel refuses the other there too.
	in, err := client.Register(ctx, api.RegisterRequest{ID: "a-inner", Cgroup: group + "/inner", Ceiling: "shell=none", ExecAllow: []string{allowed, other}})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.ExecAllow) != 1 || in.ExecAllow[0] != allowed {
		t.Fatalf("nested registration: exec_allow %v, want the meet [%s]", in.ExecAllow, allowed)
	}
	if got, ran := inner.exec(allowed, markA); got != "ok" || !ran {
		t.Fatalf("nested: exec of the file both lists allow: %q, mark %v; want ok and the mark", got, ran)
	}
	if got, ran := inner.exec(other, markO); got != syscall.EPERM.Error() || ran {
		t.Fatalf("nested: exec of a file only the inner list names: %q, mark %v; want %q and no mark", got, ran, syscall.EPERM.Error())
	}
	if err := client.Unregister(ctx, "a-inner"); err != nil {
		t.Fatal(err)
	}
	if err := client.Unregister(ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

// dropEntry removes a cgroup's ceiling and exec allow entries from the
// pinned maps behind the daemon's back (as lost pins would), and starts a
// new generation of the cached ceilings. It returns how many exec allow
// entries the cgroup had.
func dropEntry(t *testing.T, pin string, cgid uint64) int {
	t.Helper()
	load := func(name string) *ebpf.Map {
		m, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(pin, name), nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ceilings, allow, config := load(bpf.SharedMapCeilings), load(bpf.SharedMapExecAllow), load(bpf.SharedMapEnforcerdConfig)
	defer ceilings.Close()
	defer allow.Close()
	defer config.Close()
	if err := ceilings.Delete(cgid); err != nil {
		t.Fatal(err)
	}
	var (
		k    bpf.SharedExecKey
		v    uint8
		keys []bpf.SharedExecKey
	)
	for it := allow.Iterate(); it.Next(&k, &v); {
		if k.CgroupId == cgid {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if err := allow.Delete(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := config.Update(uint32(0), uint64(time.Now().UnixNano()), ebpf.UpdateAny); err != nil {
		t.Fatal(err)
	}
	return len(keys)
}
