package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/enforcerd/enforcerd/daemon"
)

// decodeStrict reads one manifest into out with sigs.k8s.io/yaml's strict
// decode: an unknown or duplicate field (a typo the API server would drop
// or refuse) is an error.
func decodeStrict(t *testing.T, name string, out any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("kubernetes", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestKubernetesManifests: the namespace admits privileged pods; the
// DaemonSet runs privileged with the host's pids, no service-account
// token, system-node-critical, tolerating every taint, a liveness probe
// through `enforcerd ctl status`, a readiness probe through `enforcerd
// ctl ready` with its --timeout below the probe's, Prometheus scrape
// annotations naming metrics.listen's port, a CPU request, and the host paths the daemon's
// configuration names (bpffs with Bidirectional propagation, cgroup2,
// the API socket's directory, state, audit log, the NRI directory); the
// ConfigMap's config.yaml is a valid daemon configuration with the NRI
// plugin enabled whose paths lie under those mounts.
func TestKubernetesManifests(t *testing.T) {
	var ns corev1.Namespace
	decodeStrict(t, "namespace.yaml", &ns)
	if ns.Kind != "Namespace" || ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("namespace %s: kind %s, labels %v", ns.Name, ns.Kind, ns.Labels)
	}

	var cm corev1.ConfigMap
	decodeStrict(t, "configmap.yaml", &cm)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := daemon.LoadConfig(cfgPath, true)
	if err != nil {
		t.Fatalf("configmap config.yaml: %v", err)
	}
	if !cfg.NRI.Enable || cm.Namespace != ns.Name {
		t.Errorf("configmap: nri.enable %t, namespace %q", cfg.NRI.Enable, cm.Namespace)
	}

	var ds appsv1.DaemonSet
	decodeStrict(t, "daemonset.yaml", &ds)
	if ds.Kind != "DaemonSet" || ds.Namespace != ns.Name {
		t.Fatalf("daemonset: kind %s, namespace %s", ds.Kind, ds.Namespace)
	}
	spec := ds.Spec.Template.Spec
	if ds.Spec.Template.Annotations["tolerate-missing-plugins.noderesource.dev"] != "true" {
		t.Error("enforcerd's pod does not tolerate the missing plugin: a node-wide required_plugins would keep it from starting")
	}
	if !spec.HostPID {
		t.Error("hostPID is not set: NRI's init pids are host pids")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the service-account token is mounted (the daemon needs no API access)")
	}
	if spec.PriorityClassName != "system-node-critical" {
		t.Errorf("priorityClassName %q", spec.PriorityClassName)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Operator != corev1.TolerationOpExists || spec.Tolerations[0].Key != "" {
		t.Errorf("tolerations %+v: want one that tolerates every taint", spec.Tolerations)
	}
	if spec.HostNetwork || spec.HostIPC {
		t.Error("host network or IPC: not needed")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Error("not privileged: containerd gives only privileged containers the host cgroup namespace")
	}
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil || !slices.Contains(c.SecurityContext.Capabilities.Add, "AUDIT_WRITE") {
		t.Error("capabilities.add lacks AUDIT_WRITE (audit.linux_audit; implied by privileged, named so a narrower securityContext keeps it)")
	}
	if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil || !slices.Contains(c.SecurityContext.Capabilities.Add, "AUDIT_READ") {
		t.Error("capabilities.add lacks AUDIT_READ (the seccomp trail without BPF LSM; implied by privileged, named so a narrower securityContext keeps it)")
	}
	if !slices.Equal(c.Command[:2], []string{"enforcerd", "daemon"}) || !slices.Contains(c.Command, "/etc/enforcerd/config.yaml") {
		t.Errorf("command %v", c.Command)
	}
	if p := c.LivenessProbe; p == nil || p.Exec == nil || strings.Join(p.Exec.Command, " ") != "enforcerd ctl status" {
		t.Errorf("liveness probe %+v: want exec enforcerd ctl status", p)
	}
	// Readiness through the API socket: works with metrics on loopback.
	if p := c.ReadinessProbe; p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command[:3], []string{"enforcerd", "ctl", "ready"}) {
		t.Errorf("readiness probe %+v: want exec enforcerd ctl ready", p)
	} else if i := slices.Index(p.Exec.Command, "--timeout"); i < 0 || i+1 >= len(p.Exec.Command) {
		t.Errorf("readiness probe %v: no --timeout below the probe's", p.Exec.Command)
	} else if d, err := time.ParseDuration(p.Exec.Command[i+1]); err != nil || d >= time.Duration(p.TimeoutSeconds)*time.Second {
		t.Errorf("readiness probe: ctl --timeout %s (%v) not below timeoutSeconds %d", p.Exec.Command[i+1], err, p.TimeoutSeconds)
	}
	ann := ds.Spec.Template.Annotations
	if _, port, _ := strings.Cut(cfg.Metrics.Listen, ":"); ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != port ||
		ann["prometheus.io/path"] != "/metrics" || !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return fmt.Sprint(p.ContainerPort) == port }) {
		t.Errorf("scrape annotations %v: want scrape true, the port of metrics.listen %q (a container port), path /metrics", ann, cfg.Metrics.Listen)
	}
	if _, ok := c.Resources.Requests["cpu"]; !ok {
		t.Error("no CPU request")
	}

	hostPaths := map[string]corev1.HostPathVolumeSource{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = *v.HostPath
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
		if hp, ok := hostPaths[m.Name]; ok && hp.Path != m.MountPath {
			t.Errorf("volume %s: host path %s mounted at %s (the configuration's paths are host paths)", m.Name, hp.Path, m.MountPath)
		}
	}
	want := map[string]string{
		"/sys/fs/bpf":        "pins (pin_dir)",
		"/sys/fs/cgroup":     "cgroup2",
		"/run/enforcerd":     "the API socket",
		"/var/lib/enforcerd": "the state file",
		"/var/log/enforcerd": "the audit log",
		"/var/run/nri":       "the NRI socket's directory",
		"/opt/enforcerd/bin": "the hook binary's directory (hook mode)",
	}
	for p, what := range want {
		m, ok := mounts[p]
		if _, host := hostPaths[m.Name]; !ok || !host {
			t.Errorf("%s (%s) is not mounted from the host", p, what)
		}
	}
	if m := mounts["/sys/fs/bpf"]; m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationBidirectional {
		t.Error("/sys/fs/bpf without Bidirectional propagation: pins would not reach the host")
	}
	if hostPaths["nri"].Path != "/var/run/nri" {
		t.Error("mount the NRI directory, not the socket: the runtime recreates it when it restarts")
	}
	if !cfg.NRI.InstallHook {
		t.Error("nri.install_hook is off: under CRI-O the hook binary would be missing on the host")
	}
	if _, ok := mounts["/etc/enforcerd"]; !ok {
		t.Error("the configuration is not mounted at /etc/enforcerd")
	}
	for what, p := range map[string]string{"socket": cfg.Socket, "state": cfg.State, "pin_dir": cfg.PinDir,
		"audit.path": cfg.Audit.Path, "nri.socket": cfg.NRI.Socket, "nri.hook_path": cfg.NRI.HookPath} {
		if !under(p, mounts) {
			t.Errorf("config %s %s is under no host mount", what, p)
		}
	}
}

func under(p string, mounts map[string]corev1.VolumeMount) bool {
	for mp := range mounts {
		if strings.HasPrefix(p, mp+"/") {
			return true
		}
	}
	return false
}
