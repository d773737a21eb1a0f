package nri

import (
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
)

// TestAttackSynchronizeOtherStates: Synchronize must not leave an
// annotated container unconfined because the runtime reports a state
// other than created or running: CRI-O reports PAUSED for a frozen
// container (it thaws later, unconfined), containerd UNKNOWN for one
// whose status it could not load (its processes may well run). Any
// such container with a pid is registered in force at once; only
// STOPPED ones are left.
func TestAttackSynchronizeOtherStates(t *testing.T) {
	rs := newRuntime(t, "cri-o")
	rr := newRealRegistry(t)
	rr.container("/kubepods/p/paused", 8000)
	rr.container("/kubepods/p/unknown", 8001)
	rr.container("/kubepods/p/stopped", 8002)
	ann := map[string]string{"enforcerd.io/ceiling": "network=false"}
	pa := &api.PodSandbox{Id: "pa", Name: "a", Namespace: "agents", Annotations: ann}
	mk := func(id string, pid uint32, st api.ContainerState) *api.Container {
		return &api.Container{Id: id, PodSandboxId: "pa", Name: id, Pid: pid, State: st, Args: []string{"/bin/agent"}}
	}
	rs.mu.Lock()
	rs.pods = []*api.PodSandbox{pa}
	rs.ctrs = []*api.Container{
		mk("paused", 8000, api.ContainerState_CONTAINER_PAUSED),
		mk("unknown", 8001, api.ContainerState_CONTAINER_UNKNOWN),
		mk("stopped", 8002, api.ContainerState_CONTAINER_STOPPED),
	}
	rs.mu.Unlock()
	m := NewMetrics()
	runPlugin(t, rs, rr, nil, func(o *Options) { o.Metrics = m })
	for _, id := range []string{"paused", "unknown"} {
		c, err := rr.Get(id)
		if err != nil || c.State != state.StateActive || c.Kernel.Network {
			t.Errorf("%s container at Synchronize: %+v, %v; want registered in force, network=false", id, c, err)
		}
	}
	if _, err := rr.Get("stopped"); err == nil {
		t.Error("stopped container registered")
	}
}

// TestAttackSynchronizeWithoutItsPod: a container whose pod the runtime
// did not list cannot be judged (its annotations and namespace are
// unknown): it is counted failed, never registered under another
// namespace's policy ("*") nor skipped as unannotated in silence.
func TestAttackSynchronizeWithoutItsPod(t *testing.T) {
	rs := newRuntime(t, "containerd")
	rr := newRealRegistry(t)
	rr.container("/kubepods/p/orphan", 8100)
	rs.mu.Lock()
	rs.ctrs = []*api.Container{{Id: "orphan", PodSandboxId: "gone", Name: "x", Pid: 8100,
		State: api.ContainerState_CONTAINER_RUNNING, Args: []string{"/bin/agent"}}}
	rs.mu.Unlock()
	m := NewMetrics()
	runPlugin(t, rs, rr, func(c *Config) {
		c.Namespaces = map[string]NamespacePolicy{"*": {DefaultCeiling: "write=false"}}
	}, func(o *Options) { o.Metrics = m })
	if c, err := rr.Get("orphan"); err == nil {
		t.Errorf("container without its pod registered under the \"*\" default: %+v", c)
	}
	if got := count(m, "late", "failed"); got != 1 {
		t.Errorf("late{failed} = %v, want 1", got)
	}
}

// TestAttackSynchronizeUnregistrableRunsConfined: a running annotated
// container Synchronize cannot register as asked (here shell=none on a
// host without the shell layer; likewise a shell already running under
// shell=none, a missing allow-connect socket or write root) cannot be
// refused any more. Leaving it wholly unconfined would turn the daemon's
// absence into a permanent escape from every field (the pod's author
// only has to make the exact registration fail): it is registered with
// the narrowest ceiling the host takes, never wider than the pod's in
// network and write, without the holes, with an audit record saying so.
func TestAttackSynchronizeUnregistrableRunsConfined(t *testing.T) {
	rs := newRuntime(t, "containerd")
	rr := newRealRegistry(t)
	rr.container("/kubepods/p/shellnone", 8200)
	rr.container("/kubepods/p/nosock", 8201)
	pa := &api.PodSandbox{Id: "pa", Name: "a", Namespace: "agents",
		Annotations: map[string]string{"enforcerd.io/ceiling": "network=false,write=false,shell=none"}}
	pb := &api.PodSandbox{Id: "pb", Name: "b", Namespace: "agents",
		Annotations: map[string]string{"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-connect": "unix:/missing.sock"}}
	rs.mu.Lock()
	rs.pods = []*api.PodSandbox{pa, pb}
	rs.ctrs = []*api.Container{
		{Id: "shellnone", PodSandboxId: "pa", Name: "x", Pid: 8200, State: api.ContainerState_CONTAINER_RUNNING, Args: []string{"/bin/agent"}},
		{Id: "nosock", PodSandboxId: "pb", Name: "x", Pid: 8201, State: api.ContainerState_CONTAINER_RUNNING, Args: []string{"/bin/agent"}},
	}
	rs.mu.Unlock()
	m := NewMetrics()
	var evs, frozen []string
	runPlugin(t, rs, rr, nil, func(o *Options) {
		o.Metrics = m
		o.OnEvent = func(ev registry.Event) { evs = append(evs, ev.Container+": "+ev.Reason) }
		o.Freeze = func(g string) error { frozen = append(frozen, g); return nil }
	})
	c, err := rr.Get("shellnone")
	if err != nil || c.State != state.StateActive || c.Kernel.Network || c.Kernel.Write {
		t.Errorf("shell=none container: %+v, %v; want in force with network=false, write=false", c, err)
	}
	c, err = rr.Get("nosock")
	if err != nil || c.State != state.StateActive || c.Kernel.Network || len(c.AllowConnect) != 0 {
		t.Errorf("container with a missing socket: %+v, %v; want in force with network=false and no endpoint", c, err)
	}
	// Dropping the endpoint only narrows: in force, running. A wider
	// shell than asked is not enforcing the ceiling: frozen.
	if got := count(m, "late", "degraded"); got != 1 {
		t.Errorf("late{degraded} = %v, want 1 (events %q)", got, evs)
	}
	if got := count(m, "late", "frozen"); got != 1 || len(frozen) != 1 || frozen[0] != "/kubepods/p/shellnone" {
		t.Errorf("late{frozen} = %v, frozen cgroups %q; want the shell=none container's alone", got, frozen)
	}
	if len(evs) != 2 || !strings.Contains(evs[0]+evs[1], "narrowest") || !strings.Contains(evs[0]+evs[1], "frozen") {
		t.Errorf("audit records %q; want two naming the fallback, one the freeze", evs)
	}
}
