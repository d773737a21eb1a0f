package nri

import (
	"testing"

	"github.com/containerd/nri/pkg/api"

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
