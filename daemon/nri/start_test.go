package nri

import (
	"testing"

	"github.com/containerd/nri/pkg/api"

	"github.com/enforcerd/enforcerd/daemon/state"
)

// TestAttackStartAfterSynchronizeRegistered: a container created while
// the plugin was away (no CreateContainer reached it), found CREATED at
// Synchronize and registered pending there, must still start: its
// StartContainer finds it registered already and keeps that
// registration, instead of refusing the start (ErrConflict) and leaving
// an annotated pod that cannot run after every daemon restart.
func TestAttackStartAfterSynchronizeRegistered(t *testing.T) {
	rs := newRuntime(t, "containerd")
	rr := newRealRegistry(t)
	rr.container("/kubepods/p/early", 7000)
	ann := map[string]string{"enforcerd.io/ceiling": "network=false"}
	pa := &api.PodSandbox{Id: "pa", Name: "a", Namespace: "agents", Annotations: ann}
	early := &api.Container{Id: "early", PodSandboxId: "pa", Name: "x", Pid: 7000,
		State: api.ContainerState_CONTAINER_CREATED, Args: []string{"/bin/agent"}}
	rs.mu.Lock()
	rs.pods, rs.ctrs = []*api.PodSandbox{pa}, []*api.Container{early}
	rs.mu.Unlock()
	m := NewMetrics()
	runPlugin(t, rs, rr, nil, func(o *Options) { o.Metrics = m })
	if c, err := rr.Get("early"); err != nil || c.State != state.StatePending {
		t.Fatalf("after Synchronize: %+v, %v; want pending", c, err)
	}
	if err := rs.start(pa, early); err != nil {
		t.Fatalf("StartContainer of a container Synchronize registered: %v", err)
	}
	c, err := rr.Get("early")
	if err != nil || c.State != state.StatePending || c.Kernel.Network || c.InitPID != 7000 {
		t.Fatalf("after StartContainer: %+v, %v; want the pending network=false registration", c, err)
	}
}

// TestAttackStartOfContainerRegisteredElsewhere: a container id already
// registered with another cgroup or another init (not the container the
// runtime starts) is not taken as this container's registration: the
// start is refused.
func TestAttackStartOfContainerRegisteredElsewhere(t *testing.T) {
	rs := newRuntime(t, "containerd")
	rr := newRealRegistry(t)
	rr.container("/kubepods/p/one", 7100)
	rr.container("/kubepods/p/two", 7101)
	ann := map[string]string{"enforcerd.io/ceiling": "network=false"}
	pa := &api.PodSandbox{Id: "pa", Name: "a", Namespace: "agents", Annotations: ann}
	runPlugin(t, rs, rr, nil)
	first := ctr("dup", "x", 7100)
	if err := rs.start(pa, first); err != nil {
		t.Fatal(err)
	}
	second := ctr("dup", "x", 7101)
	if err := rs.start(pa, second); err == nil {
		t.Fatal("StartContainer of an id registered for another cgroup accepted: the container would run unconfined")
	}
}

// TestAttackDuplicatePATH: a container environment with PATH twice,
// differing, has no one entrypoint: runc's init takes the last value,
// crun's lookup (getenv over the same array) the first, so vetting one
// lookup would allow the program the other finds. The registration
// carries no entrypoint (the registry then refuses shell=none:
// ErrEntrypointRequired) when args[0] is looked up in PATH (a bare
// name); a repeated equal PATH is one lookup.
func TestAttackDuplicatePATH(t *testing.T) {
	rs := newRuntime(t, "containerd")
	fake := newFake()
	runPlugin(t, rs, fake, nil)
	ann := map[string]string{"enforcerd.io/ceiling": "network=false"}
	two := ctr("dp1", "a", 4100)
	two.Env = []string{"PATH=/safe", "HOME=/", "PATH=/evil"}
	two.Args = []string{"agent"}
	same := ctr("dp2", "a", 4101)
	same.Env = []string{"PATH=/usr/bin", "PATH=/usr/bin"}
	same.Args = []string{"agent"}
	for _, c := range []*api.Container{two, same} {
		if err := rs.start(pod("agents", ann), c); err != nil {
			t.Fatal(err)
		}
	}
	_, regs := fake.snapshot()
	if ep := regs["dp1"].Entrypoint; ep != nil {
		t.Errorf("two PATHs: entrypoint %+v, want none", *ep)
	}
	if ep := regs["dp2"].Entrypoint; ep == nil || ep.EnvPath != "/usr/bin" {
		t.Errorf("a repeated equal PATH: entrypoint %+v", ep)
	}
}
