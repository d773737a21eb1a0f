package e2etest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/nri"
	"github.com/enforcerd/enforcerd/daemon/state"
)

// Annotations of the pods.
var (
	confined = map[string]string{
		"enforcerd.io/ceiling":              "network=false,write=false",
		"required-plugins.noderesource.dev": `["enforcerd"]`,
	}
	// confinedUnrequired does not require the plugin: created without it
	// while the daemon is down, registered at Synchronize.
	confinedUnrequired = map[string]string{"enforcerd.io/ceiling": "network=false,write=false"}
	malformed          = map[string]string{"enforcerd.io/ceiling": "network=maybe"}
)

// TestVMNRIContainerd runs enforcerd's NRI plugin against containerd 2.4
// with pods started through crictl:
//   - control: a pod without annotations reaches a loopback listener and
//     writes its root file system;
//   - a pod with enforcerd.io/ceiling network=false,write=false is denied
//     both with EPERM in the kernel, with no effect (the listener counts
//     nothing, the file is absent) and audit records naming its
//     container; an exec into it is denied too;
//   - a malformed annotation makes `crictl create` fail;
//   - after SIGKILL of the daemon the running pod stays denied, a new pod
//     requiring the plugin (required-plugins.noderesource.dev, the
//     default validator) is refused, and one that does not require it
//     runs unconfined until the restarted daemon's Synchronize registers
//     it, in force from then on;
//   - `crictl rm` unregisters the container.
func TestVMNRIContainerd(t *testing.T) {
	e := newEnv(t)
	e.launchDaemon()
	defer func() {
		e.stopDaemon()
		if t.Failed() {
			t.Log(e.logs())
		}
	}()
	e.startContainerd()
	defer e.stopContainerd()
	e.waitDaemon()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var hits atomic.Int64
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "task")
	}))
	addr := ln.Addr().String()

	// (a) Control: no annotations, nothing registered, both succeed.
	ctl := e.runPod("control", nil, probeScript(addr, "/probe"))
	out := ctl.mustStart()
	if !strings.Contains(out, "wget=0") || !strings.Contains(out, "touch=0") || hits.Load() != 1 || !ctl.exists("/probe") {
		t.Fatalf("control pod: hits %d, /probe exists %v, output:\n%s", hits.Load(), ctl.exists("/probe"), out)
	}
	if _, err := e.api.Get(context.Background(), ctl.ctr); !notFound(err) {
		t.Fatalf("control container: registry Get = %v, want not found", err)
	}

	// (b, c) Confined: denied in the kernel, no effect, audited.
	conf := e.runPod("confined", confined, probeScript(addr, "/probe"))
	out = conf.mustStart()
	denied(t, "confined pod", out)
	if hits.Load() != 1 || conf.exists("/probe") {
		t.Fatalf("confined pod: the effect happened: hits %d (want 1, the control's), /probe exists %v", hits.Load(), conf.exists("/probe"))
	}
	c, err := e.api.Get(context.Background(), conf.ctr)
	if err != nil || c.State != state.StateActive || c.Ceiling.Network || c.Ceiling.Write {
		t.Fatalf("confined container in the registry: %+v, %v", c, err)
	}
	e.waitFor(10*time.Second, "denied network and write records naming the confined container", func() bool {
		fields := map[string]bool{}
		for _, r := range e.auditRecords() {
			if r.Container == conf.ctr && r.Decision == "denied" {
				fields[r.Field] = true
			}
		}
		return fields["network"] && fields["write"]
	})
	conf.mustExecDenied("exec in the confined pod", probeScript(addr, "/probe-exec"))
	if hits.Load() != 1 || conf.exists("/probe-exec") {
		t.Fatalf("exec in the confined pod: hits %d, /probe-exec exists %v", hits.Load(), conf.exists("/probe-exec"))
	}

	// A malformed annotation refuses the container at create.
	bad := e.runPod("malformed", malformed, probeScript(addr, "/probe"))
	if x, err := bad.create(); err == nil || !strings.Contains(x, "enforcerd") || !strings.Contains(x, "network=maybe") {
		t.Fatalf("malformed annotation: crictl create = %v, output:\n%s", err, x)
	}
	bad.remove()

	// The daemon dies (SIGKILL): the running pod stays denied.
	e.killDaemon()
	conf.mustExecDenied("exec in the confined pod, daemon dead", probeScript(addr, "/probe-dead"))
	if hits.Load() != 1 || conf.exists("/probe-dead") {
		t.Fatalf("confined pod with the daemon dead: hits %d, /probe-dead exists %v", hits.Load(), conf.exists("/probe-dead"))
	}
	// A pod requiring the plugin is refused while it is absent (the
	// default validator: required plugin "enforcerd" not present).
	req := e.runPod("required", confined, probeScript(addr, "/probe"))
	if x, err := req.create(); err == nil || !strings.Contains(x, "required plugin") || !strings.Contains(x, "enforcerd") {
		t.Fatalf("a pod requiring enforcerd, daemon dead: crictl create = %v, output:\n%s", err, x)
	} else {
		t.Logf("a pod requiring enforcerd, daemon dead: refused: %s", x)
	}
	req.remove()
	// One that does not require it runs, unconfined (documented)...
	late := e.runPod("late", confinedUnrequired, probeScript(addr, "/probe"))
	out = late.mustStart()
	if !strings.Contains(out, "wget=0") || !strings.Contains(out, "touch=0") || hits.Load() != 2 {
		t.Fatalf("a pod not requiring enforcerd, daemon dead: hits %d, output:\n%s", hits.Load(), out)
	}

	// ... until the daemon is back: Synchronize registers it in force.
	// (enforcerd_nri_connected is 1 once the runtime accepted the plugin;
	// Synchronize follows.)
	e.startDaemon()
	e.waitFor(30*time.Second, "Synchronize to register the late container", func() bool {
		_, err := e.api.Get(context.Background(), late.ctr)
		return err == nil
	})
	c, err = e.api.Get(context.Background(), late.ctr)
	if err != nil || c.State != state.StateActive {
		t.Fatalf("late container after the restart: %+v, %v", c, err)
	}
	late.mustExecDenied("exec in the late-registered pod", probeScript(addr, "/probe-late"))
	if hits.Load() != 2 || late.exists("/probe-late") {
		t.Fatalf("late-registered pod: hits %d, /probe-late exists %v", hits.Load(), late.exists("/probe-late"))
	}
	e.waitFor(10*time.Second, "the nri_registered_late record of the late container", func() bool {
		for _, r := range e.auditRecords() {
			if r.Container == late.ctr && r.Decision == nri.EventRegisteredLate {
				return true
			}
		}
		return false
	})
	// The confined pod is still registered; a new pod requiring the
	// plugin is accepted and confined again.
	if _, err := e.api.Get(context.Background(), conf.ctr); err != nil {
		t.Fatalf("confined container after the restart: %v", err)
	}
	again := e.runPod("again", confined, probeScript(addr, "/probe"))
	out = again.mustStart()
	denied(t, "a pod requiring enforcerd after the restart", out)
	if hits.Load() != 2 || again.exists("/probe") {
		t.Fatalf("pod after the restart: hits %d, /probe exists %v", hits.Load(), again.exists("/probe"))
	}

	// Removal unregisters.
	for _, p := range []*pod{again, conf, late} {
		id := p.ctr
		p.e.crictl("stop", id)
		p.e.crictl("rm", id)
		if _, err := e.api.Get(context.Background(), id); !notFound(err) {
			t.Errorf("pod %s: after crictl rm, registry Get = %v, want not found", p.name, err)
		}
		p.remove()
	}
	list, err := e.api.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		for _, p := range []*pod{again, conf, late} {
			if c.ID == p.ctr {
				t.Errorf("pod %s's container %s is still listed after crictl rm", p.name, c.ID)
			}
		}
	}
	ctl.remove()

	// The DaemonSet's image, built from this binary, runs in containerd.
	e.checkDaemonImage()
}

// notFound: the daemon's API answered 404 (no such container).
func notFound(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}
