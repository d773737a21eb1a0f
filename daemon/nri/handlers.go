package nri

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/containerd/nri/pkg/api"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
)

// Configure chooses the mode from the runtime's name (Config.Mode) and
// subscribes to CreateContainer (both modes), StartContainer and
// RemoveContainer (direct mode). An unknown runtime under mode auto is an
// error: the plugin does not register, and pods that require it are
// refused.
func (p *Plugin) Configure(_ context.Context, _, runtime, version string) (api.EventMask, error) {
	mode, err := chooseMode(p.o.Config.Mode, runtime)
	if err != nil {
		p.o.Metrics.Events.WithLabelValues("configure", "error").Inc()
		p.o.Log.Error("nri: configure", "runtime", runtime, "version", version, "err", err)
		return 0, err
	}
	if mode == ModeHook && p.o.Config.InstallHook {
		// Before any container is seen: a hook that does not exist
		// fails every annotated container, a stale one is the wrong
		// version.
		if err := InstallHookBinary(p.o.SelfExe, p.o.Config.HookPath); err != nil {
			p.o.Metrics.Events.WithLabelValues("configure", "error").Inc()
			p.o.Log.Error("nri: configure: installing the hook binary", "path", p.o.Config.HookPath, "err", err)
			return 0, err
		}
		p.o.Log.Info("nri: hook binary installed", "path", p.o.Config.HookPath)
	}
	p.mu.Lock()
	p.mode = mode
	p.mu.Unlock()
	p.o.Metrics.Events.WithLabelValues("configure", "ok").Inc()
	p.o.Log.Info("nri: configured", "runtime", runtime, "version", version, "mode", mode)
	if mode == ModeHook {
		return api.MustParseEventMask("CreateContainer"), nil
	}
	return api.MustParseEventMask("CreateContainer,StartContainer,RemoveContainer"), nil
}

// Synchronize registers the containers of annotated pods (and of
// namespaces with a default ceiling) that the registry does not know:
// created or started while the plugin was not connected. Every state but
// STOPPED is considered. A created container (its init waits for the
// start) is registered pending until its entrypoint's exec; a running,
// paused (CRI-O; it thaws later) or unknown one (containerd, status not
// loaded) is registered in force at once, with an audit record and a
// metric marking it late. A container that cannot be registered, or
// whose pod is not in the runtime's list (its annotations are unknown),
// is logged and counted (failed): a running container cannot be refused
// any more.
func (p *Plugin) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	// Answered in time (bounded): a Synchronize past the runtime's
	// registration timeout fails the connection, and a slow registration
	// (a pod's author can cause one) must not keep the plugin away from
	// every later container. The rest goes on in the background.
	if err := bounded(ctx, func() error { p.synchronize(pods, ctrs); return nil }); err != nil {
		p.o.Log.Warn("nri: synchronize answered before its registrations finished; they go on in the background", "err", err)
	}
	p.o.Metrics.Events.WithLabelValues("synchronize", "ok").Inc()
	return nil, nil
}

func (p *Plugin) synchronize(pods []*api.PodSandbox, ctrs []*api.Container) {
	byID := make(map[string]*api.PodSandbox, len(pods))
	for _, pod := range pods {
		byID[pod.GetId()] = pod
	}
	for _, ctr := range ctrs {
		if ctr.GetState() == api.ContainerState_CONTAINER_STOPPED {
			continue
		}
		if _, err := p.o.Registry.Get(ctr.GetId()); err == nil {
			continue
		}
		pod := byID[ctr.GetPodSandboxId()]
		if pod == nil {
			// Its annotations and namespace are unknown: judging it
			// by "*" or as unannotated would decide on missing state.
			p.o.Metrics.Late.WithLabelValues("failed").Inc()
			p.o.Log.Error("nri: a container's pod is not in the runtime's list at synchronize: not judged, it runs unconfined if annotated",
				"container", ctr.GetName(), "id", ctr.GetId(), "pod_id", ctr.GetPodSandboxId())
			continue
		}
		p.syncOne(pod, ctr)
	}
}

func (p *Plugin) syncOne(pod *api.PodSandbox, ctr *api.Container) {
	log := p.o.Log.With("pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName(), "id", ctr.GetId())
	req, ok, err := p.request(pod, ctr)
	if err == nil && !ok {
		return
	}
	if err == nil && ctr.GetPid() == 0 {
		err = errors.New("the runtime reports no pid")
	}
	// Only a created container's init is known to wait for its start;
	// running, paused (it thaws) and unknown ones are put in force now.
	running := ctr.GetState() != api.ContainerState_CONTAINER_CREATED
	if err == nil {
		// No spec layer here (req.Spec nil): a container found at
		// synchronize already runs, so a refusal would not stop it; a
		// spec that does not give network=false would turn its
		// cgroup-BPF coverage into a refusal (docs/no-bpf-lsm.md) and
		// leave it with nothing at all.
		req.PID = int(ctr.GetPid())
		if running {
			req.Activate = registry.ActivateNow
		} else {
			req.InitPID = req.PID
			req.TerminalsOfInit = true
			req.Entrypoint = p.entrypoint(ctr)
		}
		var c state.Container
		c, err = p.o.Registry.Register(req)
		reason := "found running at NRI synchronize (started while the plugin was not connected): in force from now on, it ran unconfined until then"
		outcome := "active"
		if err != nil && running {
			if fc, widened, ok := p.registerLateFallback(req); ok {
				log.Error("nri: a running annotated container could not be registered as asked: registered with the narrowest ceiling this host takes", "err", err, "shell", fc.Kernel.Shell, "shell_widened", widened)
				reason += "; it could not be registered as asked (" + err.Error() + "): in force with the narrowest ceiling this host takes, without allow-connect and write-roots, shell " + string(fc.Kernel.Shell)
				c, err, outcome = fc, nil, "degraded"
				if widened {
					// Its shell field is not what it asks: the
					// container may not run on (fail closed).
					if ferr := p.o.Freeze(fc.Cgroup); ferr != nil {
						log.Error("nri: freezing a container registered with a wider shell than it asks", "err", ferr)
						reason += "; freezing it failed: " + ferr.Error()
					} else {
						reason += "; frozen, since its shell is wider than it asks: thaw it only to remove it"
						outcome = "frozen"
					}
				}
			}
		}
		if err == nil {
			if !running {
				outcome = "pending"
			} else if p.o.OnEvent != nil {
				p.o.OnEvent(registry.Event{Time: p.o.Now().UTC(), Kind: EventRegisteredLate, Container: c.ID,
					Cgroup: c.Cgroup, CgroupID: c.CgroupID, Fingerprint: c.Fingerprint, Reason: reason})
			}
			p.o.Metrics.Late.WithLabelValues(outcome).Inc()
			log.Warn("nri: registered late", "outcome", outcome, "kernel", c.Kernel.String())
			return
		}
	}
	p.o.Metrics.Late.WithLabelValues("failed").Inc()
	log.Error("nri: an annotated container could not be registered at synchronize: it runs unconfined", "running", running, "err", err)
}

// CreateContainer checks the container's registration without making it
// (registry.Check after ParsePod and the node's policy): an error refuses
// the container. In hook mode it also returns the hook adjustment.
func (p *Plugin) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	const ev = "create_container"
	var (
		req registry.Request
		ok  bool
	)
	err := bounded(ctx, func() error {
		var err error
		if req, ok, err = p.request(pod, ctr); err != nil || !ok {
			return err
		}
		// A dry run: the capabilities and the root's read-only flag
		// are read at StartContainer, where the registration is decided.
		req.Spec = specLayer(ctr, req.WriteRoots, p.o.ProcRoot, 0)
		_, err = p.o.Registry.Check(req)
		return err
	})
	if err == nil && !ok {
		p.o.Metrics.Events.WithLabelValues(ev, "skipped").Inc()
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, p.refused(ev, pod, ctr, err)
	}
	p.o.Metrics.Events.WithLabelValues(ev, "ok").Inc()
	if p.Mode() == ModeHook {
		return p.hookAdjustment(ctr, req), nil, nil
	}
	return nil, nil, nil
}

// StartContainer (direct mode) registers the container, pending until
// its entrypoint's exec: Container.Pid is the runtime's init, in the
// container's cgroup. An error refuses the container (containerd does
// not run the entrypoint).
func (p *Plugin) StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	const ev = "start_container"
	if p.Mode() != ModeDirect {
		return nil
	}
	err := bounded(ctx, func() error { return p.startContainer(pod, ctr) })
	if errors.Is(err, errTooSlow) {
		return p.refused(ev, pod, ctr, err)
	}
	return err
}

// startContainer is StartContainer's work; its error is already the
// refusal the runtime reports.
func (p *Plugin) startContainer(pod *api.PodSandbox, ctr *api.Container) error {
	const ev = "start_container"
	req, ok, err := p.request(pod, ctr)
	if err == nil && !ok {
		p.o.Metrics.Events.WithLabelValues(ev, "skipped").Inc()
		return nil
	}
	if err == nil && ctr.GetPid() == 0 {
		err = fmt.Errorf("container %s: the runtime reports no init pid", ctr.GetId())
	}
	if err == nil {
		if c, gerr := p.o.Registry.Get(ctr.GetId()); gerr == nil {
			// Synchronize registered it while it was created (the
			// plugin was away at its CreateContainer): the same
			// request from the same annotations, on this init (pending,
			// or already in force: stricter). Any other registration
			// of the id is not this container's: refused.
			if c.InitPID != int(ctr.GetPid()) {
				return p.refused(ev, pod, ctr, fmt.Errorf("%w: container %s is registered already (init pid %d), not on its init pid %d",
					registry.ErrConflict, ctr.GetId(), c.InitPID, ctr.GetPid()))
			}
			p.o.Metrics.Events.WithLabelValues(ev, "ok").Inc()
			return nil
		}
		req.PID, req.InitPID = int(ctr.GetPid()), int(ctr.GetPid())
		req.TerminalsOfInit = true
		req.Entrypoint = p.entrypoint(ctr)
		req.Spec = specLayer(ctr, req.WriteRoots, p.o.ProcRoot, int(ctr.GetPid()))
		var c state.Container
		if c, err = p.o.Registry.Register(req); err == nil {
			p.o.Metrics.Events.WithLabelValues(ev, "ok").Inc()
			p.o.Log.Info("nri: registered", "pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName(),
				"id", c.ID, "cgroup", c.Cgroup, "kernel", c.Kernel.String(), "state", c.State)
			return nil
		}
	}
	return p.refused(ev, pod, ctr, err)
}

// RemoveContainer (direct mode) unregisters the container. Not at
// StopContainer: the ceiling stays in force while the container's
// processes shut down. An unknown container is not an error; a failure
// is logged (the registry's sweep drops it once its cgroup is gone).
func (p *Plugin) RemoveContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	const ev = "remove_container"
	if p.Mode() != ModeDirect {
		return nil
	}
	err := p.o.Registry.Unregister(ctr.GetId())
	switch {
	case err == nil:
		p.o.Metrics.Events.WithLabelValues(ev, "ok").Inc()
	case errors.Is(err, registry.ErrNotFound):
		p.o.Metrics.Events.WithLabelValues(ev, "skipped").Inc()
	default:
		p.o.Metrics.Events.WithLabelValues(ev, "error").Inc()
		p.o.Log.Error("nri: unregister", "pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName(), "id", ctr.GetId(), "err", err)
	}
	return nil
}

// Shutdown is the runtime going away; Run reconnects.
func (p *Plugin) Shutdown(context.Context) {
	p.o.Metrics.Events.WithLabelValues("shutdown", "ok").Inc()
	p.o.Log.Info("nri: runtime shut down the plugin connection")
}

// refused counts and logs a refusal and returns the error the runtime
// reports ("enforcerd: ...").
func (p *Plugin) refused(ev string, pod *api.PodSandbox, ctr *api.Container, err error) error {
	reason := refusalReason(err)
	p.o.Metrics.Events.WithLabelValues(ev, "refused").Inc()
	p.o.Metrics.Refusals.WithLabelValues(ev, reason).Inc()
	out := clipped{fmt.Errorf("enforcerd: refusing container %s of pod %s/%s: %w", ctr.GetName(), pod.GetNamespace(), pod.GetName(), err)}
	p.o.Log.Warn("nri: container refused", "event", ev, "pod", pod.GetNamespace()+"/"+pod.GetName(),
		"container", ctr.GetName(), "id", ctr.GetId(), "reason", reason, "err", out.Error())
	return out
}

// maxRefusalBytes bounds the text of a refusal: an annotation value
// quoted whole (up to 256 KiB) would be logged and reported by the
// runtime again on every retry of the pod.
const maxRefusalBytes = 2048

// clipped is an error whose text is cut at maxRefusalBytes (errors.Is
// and As still reach what it wraps).
type clipped struct{ err error }

func (c clipped) Unwrap() error { return c.err }
func (c clipped) Error() string {
	s := c.err.Error()
	if len(s) <= maxRefusalBytes {
		return s
	}
	cut := maxRefusalBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", s[:cut], len(s))
}
