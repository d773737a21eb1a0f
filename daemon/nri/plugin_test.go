package nri

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	validator "github.com/containerd/nri/plugins/default-validator/builtin"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
)

// badPods carry annotations every container of the pod is refused for.
var badPods = map[string]map[string]string{
	"unknown key":                {"enforcerd.io/ceilin": "network=false"},
	"bad ceiling value":          {"enforcerd.io/ceiling": "network=maybe"},
	"unknown ceiling key":        {"enforcerd.io/ceiling": "netwrok=false"},
	"miscased prefix":            {"Enforcerd.io/ceiling": "network=false"},
	"unknown role":               {"enforcerd.io/role": "root"},
	"parent":                     {"enforcerd.io/ceiling": "network=false", "enforcerd.io/parent": "abc"},
	"scoped unknown key":         {"enforcerd.io/ceiling": "network=false", "ceilin.enforcerd.io/container.agent": "write=false"},
	"scoped without pod ceiling": {"ceiling.enforcerd.io/container.agent": "network=false"},
	"scoped role differs":        {"enforcerd.io/ceiling": "network=false", "enforcerd.io/role": "explore", "role.enforcerd.io/container.agent": "implement"},
	"scoped audit-only widens":   {"enforcerd.io/ceiling": "network=false", "audit-only.enforcerd.io/container.agent": "true"},
	"misplaced domain":           {"ceiling.enforcerd.io/pod": "network=false"},
}

// TestMalformedAnnotationsRefuseAndRegisterNothing: with the fake and
// with the real registry, CreateContainer (and StartContainer) of a pod
// with a malformed or unknown annotation fails, and nothing is
// registered or even checked with the registry.
func TestMalformedAnnotationsRefuseAndRegisterNothing(t *testing.T) {
	for _, real := range []bool{false, true} {
		rs := newRuntime(t, "containerd")
		fake, rr := newFake(), newRealRegistry(t)
		var reg Registrar = fake
		if real {
			reg = rr
		}
		m := NewMetrics()
		runPlugin(t, rs, reg, nil, func(o *Options) { o.Metrics = m })
		n := 0
		for name, ann := range badPods {
			n++
			c := ctr("c"+name[:3]+strings.Repeat("x", n), "agent", 4242)
			rr.container("/kubepods/"+c.Id, 4242)
			if _, err := rs.create(pod("agents", ann), c); err == nil || !strings.Contains(err.Error(), "enforcerd") {
				t.Errorf("real=%t %s: CreateContainer: %v, want a refusal by enforcerd", real, name, err)
			}
			if err := rs.start(pod("agents", ann), c); err == nil {
				t.Errorf("real=%t %s: StartContainer accepted", real, name)
			}
		}
		if checked, regs := fake.snapshot(); checked != 0 || len(regs) != 0 {
			t.Errorf("fake registry: %d checks, %d registrations after refusals", checked, len(regs))
		}
		if l := rr.List(); len(l) != 0 || rr.enf.Len() != 0 {
			t.Errorf("real registry: %d containers, %d map entries after refusals", len(l), rr.enf.Len())
		}
		if got := count(m, "refusals", "create_container", "annotation"); got != float64(len(badPods)) {
			t.Errorf("real=%t: refusals{annotation} = %v, want %d", real, got, len(badPods))
		}
	}
}

// TestValidPodPendingAtStartClamped: a valid pod passes CreateContainer
// without a registration; StartContainer registers it pending until the
// entrypoint's exec, with the ceiling met from the pod's, the
// container's, the namespace's and the node's; RemoveContainer (not
// StopContainer) unregisters.
func TestValidPodPendingAtStartClamped(t *testing.T) {
	rs := newRuntime(t, "containerd")
	rr := newRealRegistry(t)
	m := NewMetrics()
	runPlugin(t, rs, rr, func(c *Config) {
		c.Namespaces = map[string]NamespacePolicy{"agents": {MaxCeiling: "write=false"}}
		c.MaxCeiling = "depth=0"
	}, func(o *Options) { o.Metrics = m })
	ann := map[string]string{
		"enforcerd.io/ceiling":                 "network=true",
		"enforcerd.io/role":                    "implement",
		"ceiling.enforcerd.io/container.agent": "network=false",
	}
	c := ctr("c1", "agent", 4242)
	rr.container("/kubepods/pod1/c1", 4242)
	if _, err := rs.create(pod("agents", ann), c); err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if rr.Len() != 0 {
		t.Fatal("registered at CreateContainer (a dry run)")
	}
	if err := rs.start(pod("agents", ann), c); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	got, err := rr.Get("c1")
	if err != nil {
		t.Fatal(err)
	}
	want := policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}
	if len(got.Terminals) != 1 || got.Terminals[0] != (state.Terminal{Dev: initTerminal.Dev, PtsDev: initTerminal.PtsDev}) {
		t.Errorf("own terminals %v, want the init's %v", got.Terminals, initTerminal)
	}
	if got.State != state.StatePending || got.Kernel != want || got.Cgroup != "/kubepods/pod1/c1" || got.InitPID != 4242 || got.Role != "implement" {
		t.Fatalf("registration = state %s kernel %v cgroup %s init %d role %q; want pending %v in /kubepods/pod1/c1, init 4242, implement",
			got.State, got.Kernel, got.Cgroup, got.InitPID, got.Role, want)
	}
	if got.Session.DelegationDepth != 0 {
		t.Errorf("node max depth=0 not applied: session %v", got.Session)
	}
	en, err := rr.enf.Lookup(got.CgroupID)
	if err != nil || !en.Pending || en.Ceiling != want {
		t.Fatalf("map entry %+v, %v; want pending %v", en, err, want)
	}
	if _, err := rs.StopContainer(t.Context(), &api.StopContainerRequest{Pod: pod("agents", ann), Container: c}); err != nil {
		t.Fatal(err)
	}
	if _, err := rr.Get("c1"); err != nil {
		t.Fatal("StopContainer unregistered: the container would shut down unenforced")
	}
	if err := rs.remove(pod("agents", ann), c); err != nil {
		t.Fatal(err)
	}
	if _, err := rr.Get("c1"); !errors.Is(err, registry.ErrNotFound) || rr.enf.Len() != 0 {
		t.Fatalf("after RemoveContainer: %v, %d map entries", err, rr.enf.Len())
	}
	if count(m, "events", "remove_container", "ok") != 1 || count(m, "events", "start_container", "ok") != 1 {
		t.Error("event metrics not counted")
	}
}

// TestUnenforceableCeilingRefused: shell=none on a host without the shell
// layer is refused at CreateContainer (the registry's coverage rule),
// and nothing is registered.
func TestUnenforceableCeilingRefused(t *testing.T) {
	rs := newRuntime(t, "containerd")
	rr := newRealRegistry(t)
	m := NewMetrics()
	runPlugin(t, rs, rr, nil, func(o *Options) { o.Metrics = m })
	ann := map[string]string{"enforcerd.io/ceiling": "shell=none"}
	c := ctr("c2", "agent", 4243)
	rr.container("/kubepods/pod1/c2", 4243)
	_, err := rs.create(pod("agents", ann), c)
	if err == nil || !strings.Contains(err.Error(), "cannot") {
		t.Fatalf("CreateContainer: %v, want cannot enforce", err)
	}
	if rr.Len() != 0 || count(m, "refusals", "create_container", "cannot_enforce") != 1 {
		t.Fatalf("registered %d, refusals{cannot_enforce} %v", rr.Len(), count(m, "refusals", "create_container", "cannot_enforce"))
	}
}

// TestOperatorPolicy: require_annotation refuses a pod without
// annotations, default_ceiling registers one, audit-only from a pod is
// refused unless the node allows it, and a runtime handler outside the
// node's kernel (Kata) is refused for an annotated pod.
func TestOperatorPolicy(t *testing.T) {
	rs := newRuntime(t, "containerd")
	fake := newFake()
	runPlugin(t, rs, fake, func(c *Config) {
		c.Namespaces = map[string]NamespacePolicy{
			"strict": {RequireAnnotation: true},
			"*":      {DefaultCeiling: "network=false", MaxCeiling: "write=false"},
		}
	})
	if _, err := rs.create(pod("strict", nil), ctr("s1", "a", 1)); err == nil || !strings.Contains(err.Error(), "require_annotation") {
		t.Errorf("strict namespace without annotations: %v", err)
	}
	if err := rs.start(pod("other", nil), ctr("d1", "a", 77)); err != nil {
		t.Fatal(err)
	}
	_, regs := fake.snapshot()
	if r, ok := regs["d1"]; !ok || r.Ceiling != "network=false,write=false,shell=full,tools=true,depth=1" || r.Activate != registry.ActivateExec || r.InitPID != 77 {
		t.Errorf("default ceiling: %+v, %t", r, ok)
	}
	audit := map[string]string{"enforcerd.io/ceiling": "network=false", "enforcerd.io/audit-only": "true"}
	if _, err := rs.create(pod("other", audit), ctr("a1", "a", 1)); err == nil || !strings.Contains(err.Error(), "allow_audit_only") {
		t.Errorf("audit-only without nri.allow_audit_only: %v", err)
	}
	kata := pod("other", map[string]string{"enforcerd.io/ceiling": "network=false"})
	kata.RuntimeHandler = "kata"
	if _, err := rs.create(kata, ctr("k1", "a", 1)); err == nil || !strings.Contains(err.Error(), "runtime handler") {
		t.Errorf("kata: %v", err)
	}
}

// TestTimedOutPluginFailsRequest: the plugin asks for FailRequest (and
// KeepConnected); a runtime whose nri honours it (this module's
// adaptation) fails a CreateContainer the plugin does not answer in
// time, instead of creating the container unchecked, and keeps the
// plugin for the next request.
func TestTimedOutPluginFailsRequest(t *testing.T) {
	adaptation.SetPluginRequestTimeout(200 * time.Millisecond)
	t.Cleanup(func() { adaptation.SetPluginRequestTimeout(adaptation.DefaultPluginRequestTimeout) })
	rs := newRuntime(t, "containerd")
	fake := newFake()
	fake.Block = make(chan struct{})
	runPlugin(t, rs, fake, nil)
	ann := map[string]string{"enforcerd.io/ceiling": "network=false"}
	_, err := rs.create(pod("agents", ann), ctr("t1", "a", 1))
	close(fake.Block)
	if err == nil || !strings.Contains(err.Error(), "enforcerd") {
		t.Fatalf("CreateContainer with a plugin past the timeout: %v, want the request failed naming the plugin", err)
	}
	// Kept connected: the next request reaches the plugin.
	eventually(t, "the blocked handler to return", func() bool { n, _ := fake.snapshot(); return n == 1 })
	if _, err := rs.create(pod("agents", ann), ctr("t2", "a", 1)); err != nil {
		t.Fatalf("next CreateContainer: %v", err)
	}
	if n, _ := fake.snapshot(); n != 2 {
		t.Fatalf("checks = %d, want 2 (the plugin stayed connected)", n)
	}
}

// TestCRIOGetsHooks: under a runtime named cri-o, CreateContainer
// returns the createRuntime and poststop hooks (`enforcerd hook`) and the
// resolved annotations (the meet, the container-scoped keys folded in),
// replacing the container's own enforcerd.io/ keys; StartContainer
// registers nothing (the hook does).
func TestCRIOGetsHooks(t *testing.T) {
	rs := newRuntime(t, "cri-o")
	fake := newFake()
	p := runPlugin(t, rs, fake, func(c *Config) { c.HookPath = "/opt/enforcerd/enforcerd" })
	if p.Mode() != ModeHook {
		t.Fatalf("mode %q, want hook", p.Mode())
	}
	ann := map[string]string{"enforcerd.io/ceiling": "network=false", "ceiling.enforcerd.io/container.agent": "write=false"}
	c := ctr("h1", "agent", 5)
	c.Annotations = map[string]string{"enforcerd.io/tool-groups": "x", "io.kubernetes.cri-o.x": "y"}
	rpl, err := rs.create(pod("agents", ann), c)
	if err != nil {
		t.Fatal(err)
	}
	adj := rpl.GetAdjust()
	hooks := adj.GetHooks()
	if len(hooks.GetCreateRuntime()) != 1 || len(hooks.GetPoststop()) != 1 {
		t.Fatalf("hooks = %+v", hooks)
	}
	for stage, h := range map[string]*api.Hook{"createRuntime": hooks.CreateRuntime[0], "poststop": hooks.Poststop[0]} {
		want := []string{"/opt/enforcerd/enforcerd", "hook", "--socket", "/run/enforcerd/enforcerd.sock", stage}
		if h.Path != "/opt/enforcerd/enforcerd" || strings.Join(h.Args, " ") != strings.Join(want, " ") || h.Timeout.GetValue() <= 8 {
			t.Errorf("%s hook = %+v", stage, h)
		}
	}
	got := adj.GetAnnotations()
	if got[oci.AnnotationCeiling] != "network=false,write=false,shell=full,tools=true,depth=1" {
		t.Errorf("ceiling annotation %q", got[oci.AnnotationCeiling])
	}
	if _, ok := got[api.MarkForRemoval(oci.AnnotationToolGroups)]; !ok {
		t.Errorf("the container's own enforcerd.io/tool-groups is not removed: %v", got)
	}
	// The annotations the hook will read parse to what was checked.
	parsed, err := oci.ParseAnnotations(map[string]string{oci.AnnotationCeiling: got[oci.AnnotationCeiling]})
	if err != nil || parsed.Ceiling != got[oci.AnnotationCeiling] {
		t.Errorf("hook parse: %+v, %v", parsed, err)
	}
	if err := rs.start(pod("agents", ann), c); err != nil {
		t.Fatal(err)
	}
	if _, regs := fake.snapshot(); len(regs) != 0 {
		t.Errorf("hook mode registered at StartContainer: %v", regs)
	}
}

// TestSynchronizeRegistersLate: containers the runtime reports at
// Synchronize that the registry does not know are registered: created →
// pending, running → in force at once with an audit record and the
// metric marking it late; unannotated ones and known ones are left.
func TestSynchronizeRegistersLate(t *testing.T) {
	rs := newRuntime(t, "containerd")
	rr := newRealRegistry(t)
	rr.container("/kubepods/p/run", 5000)
	rr.container("/kubepods/p/new", 5001)
	rr.container("/kubepods/p/plain", 5002)
	ann := map[string]string{"enforcerd.io/ceiling": "network=false"}
	pa := &api.PodSandbox{Id: "pa", Name: "a", Namespace: "agents", Annotations: ann}
	pb := &api.PodSandbox{Id: "pb", Name: "b", Namespace: "agents"}
	running := &api.Container{Id: "run", PodSandboxId: "pa", Name: "x", Pid: 5000, State: api.ContainerState_CONTAINER_RUNNING, Args: []string{"/bin/agent"}}
	created := &api.Container{Id: "new", PodSandboxId: "pa", Name: "y", Pid: 5001, State: api.ContainerState_CONTAINER_CREATED, Args: []string{"/bin/agent"}}
	plain := &api.Container{Id: "plain", PodSandboxId: "pb", Name: "z", Pid: 5002, State: api.ContainerState_CONTAINER_RUNNING}
	rs.mu.Lock()
	rs.pods, rs.ctrs = []*api.PodSandbox{pa, pb}, []*api.Container{running, created, plain}
	rs.mu.Unlock()
	m := NewMetrics()
	var late []registry.Event
	runPlugin(t, rs, rr, nil, func(o *Options) {
		o.Metrics = m
		o.OnEvent = func(ev registry.Event) { late = append(late, ev) }
	})
	r, err := rr.Get("run")
	if err != nil || r.State != state.StateActive || r.Kernel.Network {
		t.Fatalf("running container: %+v, %v; want active network=false", r, err)
	}
	n, err := rr.Get("new")
	if err != nil || n.State != state.StatePending {
		t.Fatalf("created container: %+v, %v; want pending", n, err)
	}
	if _, err := rr.Get("plain"); err == nil {
		t.Fatal("unannotated container registered")
	}
	if len(late) != 1 || late[0].Kind != EventRegisteredLate || late[0].Container != "run" || !strings.Contains(late[0].Reason, "unconfined") {
		t.Fatalf("late audit records = %+v", late)
	}
	if count(m, "late", "active") != 1 || count(m, "late", "pending") != 1 {
		t.Fatalf("late metrics active %v pending %v", count(m, "late", "active"), count(m, "late", "pending"))
	}
}

// TestRequiredPluginsValidatorRefusesWhileDisconnected: with the
// runtime's default validator on, a pod annotated
// required-plugins.noderesource.dev: ["enforcerd"] is refused while the
// plugin is not connected, and created once it is.
func TestRequiredPluginsValidatorRefusesWhileDisconnected(t *testing.T) {
	rs := newRuntime(t, "containerd", adaptation.WithDefaultValidator(&validator.DefaultValidatorConfig{Enable: true}))
	ann := map[string]string{"enforcerd.io/ceiling": "network=false", "required-plugins.noderesource.dev": `["enforcerd"]`}
	if _, err := rs.create(pod("agents", ann), ctr("v1", "a", 1)); err == nil || !strings.Contains(err.Error(), "enforcerd") {
		t.Fatalf("CreateContainer without the plugin: %v, want refused (required plugin missing)", err)
	}
	runPlugin(t, rs, newFake(), nil)
	if _, err := rs.create(pod("agents", ann), ctr("v2", "a", 1)); err != nil {
		t.Fatalf("CreateContainer with the plugin: %v", err)
	}
}

// TestReconnectAfterRuntimeRestart: when the runtime goes away (its
// connection closes) and a new one listens on the same socket, the
// plugin registers again (with backoff) and synchronizes, late-registering
// what started meanwhile.
func TestReconnectAfterRuntimeRestart(t *testing.T) {
	old := MinBackoff
	MinBackoff = 20 * time.Millisecond
	t.Cleanup(func() { MinBackoff = old })
	rs := newRuntime(t, "containerd")
	conns := make(chan net.Conn, 8)
	dial := func(path string) (net.Conn, error) {
		c, err := net.Dial("unix", path)
		if err == nil {
			conns <- c
		}
		return c, err
	}
	m := NewMetrics()
	rr := newRealRegistry(t)
	runPluginDial(t, rs, rr, dial, nil, func(o *Options) { o.Metrics = m })
	// The runtime dies: its end of the connection is gone.
	rs.Stop()
	(<-conns).Close()
	eventually(t, "the plugin to notice", func() bool { return testutil.ToFloat64(m.Connected) == 0 })
	rr.container("/kubepods/p/meanwhile", 6000)
	rs2 := startRuntimeAt(t, "containerd", rs.sock)
	rs2.mu.Lock()
	rs2.pods = []*api.PodSandbox{{Id: "pa", Name: "a", Namespace: "agents", Annotations: map[string]string{"enforcerd.io/ceiling": "network=false"}}}
	rs2.ctrs = []*api.Container{{Id: "meanwhile", PodSandboxId: "pa", Name: "x", Pid: 6000, State: api.ContainerState_CONTAINER_RUNNING}}
	rs2.mu.Unlock()
	rs2.waitSynced(t)
	if c, err := rr.Get("meanwhile"); err != nil || c.State != state.StateActive {
		t.Fatalf("container started while the plugin was away: %+v, %v", c, err)
	}
	ann := map[string]string{"enforcerd.io/ceiling": "network=maybe"}
	if _, err := rs2.create(pod("agents", ann), ctr("r1", "a", 1)); err == nil {
		t.Fatal("the reconnected plugin did not see CreateContainer")
	}
	if got := testutil.ToFloat64(m.Connections.WithLabelValues("ok")); got != 2 {
		t.Errorf("connections{ok} = %v, want 2", got)
	}
}
