// Package nri is enforcerd's Kubernetes plugin: a Node Resource Interface
// plugin (github.com/containerd/nri pkg/stub) run inside `enforcerd
// daemon` (config nri.enable: true) that registers the containers of
// annotated pods through the daemon's registry, the one registration path
// the API and the OCI hook use too.
//
// Modes (Config.Mode; auto chooses from the runtime name Configure
// reports):
//   - direct (containerd): CreateContainer is a dry run (annotations,
//     role, ceiling, the operator's policy, enforceability:
//     registry.Check) whose error refuses the container; StartContainer
//     registers it pending until the entrypoint's exec (the runtime's
//     init, Container.Pid, is in the container's cgroup and has not
//     exec'd), whose error refuses it too; RemoveContainer unregisters
//     (not StopContainer: the ceiling stays in force while the container
//     shuts down).
//   - hook (CRI-O, which ignores StartContainer errors): CreateContainer
//     validates the same way and injects the createRuntime and poststop
//     hooks (`enforcerd hook`) with the resolved enforcerd.io/
//     annotations, so that the hook registers exactly what was checked.
//
// Fail closed: the plugin asks for the failure policy FailRequest and
// KeepConnected (a runtime that honours it fails a request the plugin did
// not answer); the per-pod annotation required-plugins.noderesource.dev
// and the runtime's default validator refuse pods while the plugin is
// absent (docs/kubernetes.md); Synchronize registers annotated containers
// created or started while it was absent; Run reconnects with backoff.
//
// Files: plugin.go (Plugin, the request of a container), handlers.go (the
// NRI event handlers), run.go (connection and reconnect), annotations.go
// (ParsePod), config.go (Config, the operator's policy), metrics.go.
//
// Layering (docs/design.md): layer 4; it may import policy/, egress/,
// endpoint/, devallow/, progcheck/, entry/, coverage/, enforcer/, oci/,
// oci/speccheck/, daemon/state/ and daemon/registry/, and of other modules
// no cilium/ebpf.
package nri

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/api"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// Registrar is the part of *registry.Registry the plugin uses (tests pass
// a fake).
type Registrar interface {
	Check(registry.Request) (policy.KernelCeiling, error)
	Register(registry.Request) (state.Container, error)
	Unregister(id string) error
	Get(id string) (state.Container, error)
}

// EventRegisteredLate is the kind of the audit record (registry.Event)
// of a container Synchronize found running unregistered and registered
// in force at once: it ran unconfined until then.
const EventRegisteredLate = "nri_registered_late"

// Options configures New.
type Options struct {
	Config   Config
	Registry Registrar
	// DaemonSocket is the daemon's API socket, which the injected hooks
	// use (--socket) in hook mode.
	DaemonSocket string
	Log          *slog.Logger
	// Metrics (nil: NewMetrics, not exported).
	Metrics *Metrics
	// OnEvent receives the plugin's own audit records
	// (EventRegisteredLate); the registry's records go their own way.
	OnEvent func(registry.Event)
	Now     func() time.Time
	// ProcRoot is where the runtime's processes are seen ("/proc").
	ProcRoot string
	// Freeze freezes a cgroup (a path below the cgroup2 mount) and waits
	// until it is frozen: a running container Synchronize could register
	// only with a wider shell than it asks is frozen (fail closed). nil:
	// such a container is counted failed and left unfrozen only if this
	// is nil, which New refuses.
	Freeze func(group string) error
	// SelfExe is the executable Config.InstallHook copies to
	// Config.HookPath ("": /proc/self/exe).
	SelfExe string
}

// Plugin is the NRI plugin. Its exported methods are the stub's handlers.
type Plugin struct {
	o    Options
	mu   sync.Mutex
	mode string // ModeDirect or ModeHook once configured
	// dial connects to the runtime's socket (nil: the stub's; tests
	// wrap the connection to cut it as a runtime restart does).
	dial func(string) (net.Conn, error)
}

// New checks the configuration and returns a plugin; Run connects it.
func New(o Options) (*Plugin, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Registry == nil {
		return nil, errors.New("nri: no registry")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.Freeze == nil {
		return nil, errors.New("nri: no cgroup freezer")
	}
	if o.SelfExe == "" {
		o.SelfExe = "/proc/self/exe"
	}
	return &Plugin{o: o}, nil
}

// Mode is the mode chosen at Configure ("" before).
func (p *Plugin) Mode() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// chooseMode resolves Config.Mode for a runtime's name.
func chooseMode(configured, runtime string) (string, error) {
	if configured != ModeAuto {
		return configured, nil
	}
	switch strings.ToLower(runtime) {
	case "containerd":
		return ModeDirect, nil
	case "cri-o", "crio":
		return ModeHook, nil
	}
	return "", fmt.Errorf("runtime %q: nri.mode auto knows containerd (direct) and cri-o (hook); set nri.mode", runtime)
}

// refusal is a container the plugin refuses, with the metric's reason.
type refusal struct {
	reason string
	err    error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

func refuse(reason string, err error) error { return &refusal{reason, err} }

// request is the registration of container ctr of pod, or ok false when
// the container is not registered. Errors are refusals.
func (p *Plugin) request(pod *api.PodSandbox, ctr *api.Container) (req registry.Request, ok bool, err error) {
	parsed, err := ParsePod(pod.GetAnnotations(), ctr.GetName())
	if err != nil {
		return req, false, refuse("annotation", fmt.Errorf("pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), err))
	}
	r, ok, err := p.o.Config.decide(pod.GetNamespace(), parsed)
	if err != nil {
		return req, false, refuse("policy", fmt.Errorf("pod %s/%s, container %s: %w", pod.GetNamespace(), pod.GetName(), ctr.GetName(), err))
	}
	if !ok {
		return req, false, nil
	}
	if h := pod.GetRuntimeHandler(); !p.o.Config.handlerAllowed(h) {
		return req, false, refuse("runtime_handler", fmt.Errorf("%w: pod %s/%s: runtime handler %q does not run containers in this node's kernel, where enforcerd enforces (nri.runtime_handlers: %q)",
			ErrRefused, pod.GetNamespace(), pod.GetName(), h, p.o.Config.RuntimeHandlers))
	}
	return registry.Request{
		ID: ctr.GetId(), Role: r.Role, Ceiling: r.Ceiling, AuditOnly: r.AuditOnly,
		ToolGroups: r.ToolGroups, ProxyAllow: r.ProxyAllow, AllowConnect: r.AllowConnectList(),
		WriteRoots: r.WriteRoots, AllowDevices: r.AllowDevices, Activate: registry.ActivateExec,
	}, true, nil
}

// entrypoint names what the first exec of a created container will run:
// process.args[0] inside the root of its init (runc init has pivoted by
// StartContainer), looked up in the container's PATH. nil when args[0]
// is relative with a directory part (the init's working directory is not
// in the NRI container), or a bare name while the environment holds
// differing PATH values (runtimes pick different ones): the registry
// refuses a shell=none registration without an entrypoint (fail closed).
func (p *Plugin) entrypoint(ctr *api.Container) *progcheck.Program {
	args := ctr.GetArgs()
	if len(args) == 0 || ctr.GetPid() == 0 {
		return nil
	}
	if !strings.HasPrefix(args[0], "/") && strings.Contains(args[0], "/") {
		return nil
	}
	ep := &progcheck.Program{Path: args[0], Root: p.o.ProcRoot + "/" + strconv.Itoa(int(ctr.GetPid())) + "/root"}
	seen := false
	for _, e := range ctr.GetEnv() {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			if seen && v != ep.EnvPath && !strings.Contains(args[0], "/") {
				// runc's init looks the name up in the last PATH,
				// crun's in the first: no one program to vet.
				return nil
			}
			ep.EnvPath, seen = v, true
		}
	}
	if ep.Validate() != nil {
		return nil
	}
	return ep
}

// hookAdjustment is the hook mode's change to a container: its
// enforcerd.io/ annotations replaced by the resolved request, and the
// createRuntime and poststop hooks that register and unregister it.
func (p *Plugin) hookAdjustment(ctr *api.Container, req registry.Request) *api.ContainerAdjustment {
	adj := &api.ContainerAdjustment{}
	set := map[string]string{}
	if req.Role != "" {
		set[oci.AnnotationRole] = req.Role
	}
	if req.Ceiling != "" {
		set[oci.AnnotationCeiling] = req.Ceiling
	}
	if req.AuditOnly {
		set[oci.AnnotationAuditOnly] = "true"
	}
	if req.ToolGroups != "" {
		set[oci.AnnotationToolGroups] = req.ToolGroups
	}
	if req.ProxyAllow != nil {
		set[oci.AnnotationProxyAllow] = *req.ProxyAllow
	}
	if len(req.AllowConnect) > 0 {
		set[oci.AnnotationAllowConnect] = strings.Join(req.AllowConnect, ",")
	}
	if len(req.WriteRoots) > 0 {
		set[oci.AnnotationWriteRoots] = strings.Join(req.WriteRoots, ",")
	}
	if len(req.AllowDevices) > 0 {
		set[oci.AnnotationAllowDevices] = strings.Join(req.AllowDevices, ",")
	}
	for k := range ctr.GetAnnotations() {
		if _, ok := set[k]; !ok && (strings.HasPrefix(k, oci.AnnotationPrefix) || oci.MiscasedAnnotation(k)) {
			adj.RemoveAnnotation(k)
		}
	}
	for k, v := range set {
		adj.AddAnnotation(k, v)
	}
	hook := func(stage string) *api.Hook {
		return &api.Hook{
			Path:    p.o.Config.HookPath,
			Args:    []string{p.o.Config.HookPath, "hook", "--socket", p.o.DaemonSocket, stage},
			Timeout: api.Int(10),
		}
	}
	adj.AddHooks(&api.Hooks{CreateRuntime: []*api.Hook{hook("createRuntime")}, Poststop: []*api.Hook{hook("poststop")}})
	return adj
}

// refusalReason is the metric reason of a registry error.
func refusalReason(err error) string {
	var r *refusal
	switch {
	case errors.As(err, &r):
		return r.reason
	case errors.Is(err, registry.ErrCannotEnforce), errors.Is(err, registry.ErrUnsafeProgram), errors.Is(err, registry.ErrEntrypointRequired):
		return "cannot_enforce"
	}
	return "registration"
}
