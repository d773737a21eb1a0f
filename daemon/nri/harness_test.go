package nri

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// runtimeSide is nri's runtime side (pkg/adaptation) on a temporary
// socket, as containerd and CRI-O embed it. Its Synchronize hands the
// plugin pods and ctrs.
type runtimeSide struct {
	*adaptation.Adaptation
	sock   string
	mu     sync.Mutex
	pods   []*api.PodSandbox
	ctrs   []*api.Container
	synced chan struct{}
}

// newRuntime starts a runtime named name ("containerd", "cri-o") on a
// fresh socket (a short path: os.MkdirTemp, not t.TempDir).
func newRuntime(t *testing.T, name string, opts ...adaptation.Option) *runtimeSide {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return startRuntimeAt(t, name, filepath.Join(dir, "nri.sock"), opts...)
}

func startRuntimeAt(t *testing.T, name, sock string, opts ...adaptation.Option) *runtimeSide {
	t.Helper()
	dir := filepath.Dir(sock)
	rs := &runtimeSide{sock: sock, synced: make(chan struct{}, 16)}
	sync := func(ctx context.Context, cb adaptation.SyncCB) error {
		rs.mu.Lock()
		pods, ctrs := rs.pods, rs.ctrs
		rs.mu.Unlock()
		_, err := cb(ctx, pods, ctrs)
		rs.synced <- struct{}{}
		return err
	}
	update := func(context.Context, []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) { return nil, nil }
	opts = append([]adaptation.Option{
		adaptation.WithSocketPath(sock),
		adaptation.WithPluginPath(filepath.Join(dir, "plugins")),
		adaptation.WithPluginConfigPath(filepath.Join(dir, "conf.d")),
	}, opts...)
	a, err := adaptation.New(name, "test", sync, update, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	<-rs.synced // Start synchronizes the pre-installed plugins (none)
	rs.Adaptation = a
	t.Cleanup(a.Stop)
	return rs
}

// waitSynced waits until a plugin has synchronized and been added to the
// runtime's plugins (the sync lock is released after that).
func (rs *runtimeSide) waitSynced(t *testing.T) {
	t.Helper()
	select {
	case <-rs.synced:
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not synchronize")
	}
	rs.BlockPluginSync().Unblock()
}

func (rs *runtimeSide) create(pod *api.PodSandbox, ctr *api.Container) (*api.CreateContainerResponse, error) {
	return rs.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: ctr})
}

func (rs *runtimeSide) start(pod *api.PodSandbox, ctr *api.Container) error {
	return rs.StartContainer(context.Background(), &api.StartContainerRequest{Pod: pod, Container: ctr})
}

func (rs *runtimeSide) remove(pod *api.PodSandbox, ctr *api.Container) error {
	return rs.RemoveContainer(context.Background(), &api.RemoveContainerRequest{Pod: pod, Container: ctr})
}

// runPlugin connects a plugin over reg to rs and stops it at the end.
func runPlugin(t *testing.T, rs *runtimeSide, reg Registrar, cfg func(*Config), opts ...func(*Options)) *Plugin {
	t.Helper()
	return runPluginDial(t, rs, reg, nil, cfg, opts...)
}

// runPluginDial is runPlugin with the plugin's connections made by dial.
func runPluginDial(t *testing.T, rs *runtimeSide, reg Registrar, dial func(string) (net.Conn, error), cfg func(*Config), opts ...func(*Options)) *Plugin {
	t.Helper()
	c := DefaultConfig()
	c.Enable, c.Socket = true, rs.sock
	if cfg != nil {
		cfg(&c)
	}
	o := Options{Config: c, Registry: reg, DaemonSocket: "/run/enforcerd/enforcerd.sock", Log: debugLog,
		Freeze: func(g string) error { return fmt.Errorf("test: unexpected freeze of %s", g) }}
	for _, f := range opts {
		f(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	p.dial = dial
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	rs.waitSynced(t)
	return p
}

func pod(ns string, ann map[string]string) *api.PodSandbox {
	return &api.PodSandbox{Id: "pod-" + ns, Name: "p", Uid: "uid-" + ns, Namespace: ns, Annotations: ann}
}

func ctr(id, name string, pid uint32) *api.Container {
	return &api.Container{Id: id, PodSandboxId: "pod", Name: name, Pid: pid, State: api.ContainerState_CONTAINER_CREATED,
		Args: []string{"/bin/agent"}, Env: []string{"PATH=/usr/bin:/bin"}}
}

// fakeRegistrar records the plugin's calls; CheckErr/RegisterErr fail
// them, Block (when set) holds Check until closed.
type fakeRegistrar struct {
	mu          sync.Mutex
	checked     []registry.Request
	registered  map[string]registry.Request
	CheckErr    error
	RegisterErr error
	Block       chan struct{}
}

func newFake() *fakeRegistrar { return &fakeRegistrar{registered: map[string]registry.Request{}} }

func (f *fakeRegistrar) Check(req registry.Request) (policy.KernelCeiling, error) {
	if f.Block != nil {
		<-f.Block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checked = append(f.checked, req)
	return policy.KernelCeiling{}, f.CheckErr
}

func (f *fakeRegistrar) Register(req registry.Request) (state.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.RegisterErr != nil {
		return state.Container{}, f.RegisterErr
	}
	f.registered[req.ID] = req
	return state.Container{ID: req.ID}, nil
}

func (f *fakeRegistrar) Unregister(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.registered[id]; !ok {
		return fmt.Errorf("%w: %s", registry.ErrNotFound, id)
	}
	delete(f.registered, id)
	return nil
}

func (f *fakeRegistrar) Get(id string) (state.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.registered[id]; !ok {
		return state.Container{}, registry.ErrNotFound
	}
	return state.Container{ID: id}, nil
}

func (f *fakeRegistrar) snapshot() (checked int, registered map[string]registry.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]registry.Request{}
	for k, v := range f.registered {
		out[k] = v
	}
	return len(f.checked), out
}

// realRegistry is the daemon's registry over the in-memory enforcer map
// and cgroup tree (registrytest): the same Register, Check and Unregister
// the API and the hook reach. The fake host has BPF LSM (write=false
// enforceable) but no shell layer (shell other than full: cannot
// enforce).
type realRegistry struct {
	*registry.Registry
	enf    *registrytest.Enforcer
	cgs    *registrytest.Cgroups
	events chan registry.Event
}

// initTerminal is the terminal every init of a realRegistry holds.
var initTerminal = entry.Terminal{Dev: 136<<20 | 4, PtsDev: 0x1a}

func newRealRegistry(t *testing.T) *realRegistry {
	t.Helper()
	rr := &realRegistry{enf: registrytest.NewEnforcer(true), cgs: registrytest.NewCgroups(), events: make(chan registry.Event, 64)}
	rr.Registry = registry.New(registry.Options{
		Enforcer: rr.enf, Cgroups: rr.cgs, StatePath: filepath.Join(t.TempDir(), "state.json"),
		SelfGroup: "/system.slice/enforcerd.service",
		StartTime: func(int) (uint64, error) { return 1, nil },
		OnEvent:   func(ev registry.Event) { rr.events <- ev },
		// Every init's stdio is one pty (initTerminal).
		OwnTerminals: func(int) ([]entry.Terminal, error) { return []entry.Terminal{initTerminal}, nil },
	})
	return rr
}

// container puts a container's init pid into its own cgroup.
func (rr *realRegistry) container(group string, pid int) {
	rr.cgs.Add(group)
	rr.cgs.SetPid(pid, group)
}

// count reads one counter of a vector.
func count(m *Metrics, vec string, labels ...string) float64 {
	switch vec {
	case "events":
		return testutil.ToFloat64(m.Events.WithLabelValues(labels...))
	case "refusals":
		return testutil.ToFloat64(m.Refusals.WithLabelValues(labels...))
	case "late":
		return testutil.ToFloat64(m.Late.WithLabelValues(labels...))
	}
	panic(vec)
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// debugLog is the plugin's logger in tests (nil: discarded).
var debugLog *slog.Logger
