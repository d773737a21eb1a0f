package nri

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
)

// Modes of the plugin (Config.Mode).
const (
	// ModeAuto chooses from the runtime name Configure reports:
	// "containerd" → ModeDirect, "cri-o" → ModeHook; any other runtime
	// is refused (the plugin does not register: fail closed).
	ModeAuto = "auto"
	// ModeDirect validates at CreateContainer, registers at
	// StartContainer (pending until the entrypoint's exec), unregisters
	// at RemoveContainer. For runtimes that refuse a container whose
	// StartContainer fails (containerd).
	ModeDirect = "direct"
	// ModeHook validates at CreateContainer and injects the
	// createRuntime and poststop hooks (`enforcerd hook`) with the
	// resolved annotations: for runtimes that only log StartContainer
	// errors (CRI-O).
	ModeHook = "hook"
)

// Config is the daemon configuration's "nri:" section.
type Config struct {
	// Enable starts the plugin with the daemon (default false).
	Enable bool `yaml:"enable"`
	// Socket is the runtime's NRI socket (default /var/run/nri/nri.sock).
	Socket string `yaml:"socket"`
	// PluginName and PluginIndex name the plugin to the runtime
	// ("enforcerd", "10"): the name is what the
	// required-plugins.noderesource.dev annotation and the default
	// validator's required_plugins list.
	PluginName  string `yaml:"plugin_name"`
	PluginIndex string `yaml:"plugin_index"`
	// Mode is auto, direct or hook (ModeAuto...).
	Mode string `yaml:"mode"`
	// HookPath is the host path of the enforcerd binary the runtime runs
	// as the injected hook (hook mode only; it must exist on the host).
	HookPath string `yaml:"hook_path"`
	// InstallHook, in hook mode, copies the daemon's own executable to
	// HookPath when the plugin connects (InstallHookBinary), so the
	// hooks run the daemon's version; for a daemon in a pod, whose
	// binary is not on the host. Default false: the binary is installed
	// on the host by other means.
	InstallHook bool `yaml:"install_hook"`
	// MaxCeiling bounds every container registered through the plugin
	// (ceiling text; "" = no bound).
	MaxCeiling string `yaml:"max_ceiling"`
	// AllowAuditOnly honours enforcerd.io/audit-only=true from a pod;
	// default false: such a pod is refused.
	AllowAuditOnly bool `yaml:"allow_audit_only"`
	// RuntimeHandlers are the pod runtime handlers (RuntimeClass
	// handlers) whose containers enforcerd can confine: their processes
	// run in the node's kernel. Default "", "runc", "crun". A container
	// with another handler (Kata, gVisor) that would be registered is
	// refused.
	RuntimeHandlers []string `yaml:"runtime_handlers"`
	// AllowDevices bounds what a pod may list in
	// enforcerd.io/allow-devices: every entry a pod lists must be one of
	// these, compared as written (type and number, or the same path).
	// Default none: a pod that lists a device is refused. Every ceiling
	// decides devices, and a pod author can narrow, never widen: only
	// the operator opens a device to pods.
	AllowDevices []string `yaml:"allow_devices"`
	// Namespaces is the operator's policy per Kubernetes namespace; the
	// key "*" applies to namespaces not listed.
	Namespaces map[string]NamespacePolicy `yaml:"namespaces"`
}

// NamespacePolicy is what the operator sets for one namespace. A pod
// author can narrow it, never widen it or opt out.
type NamespacePolicy struct {
	// MaxCeiling bounds every container of the namespace (ceiling text).
	MaxCeiling string `yaml:"max_ceiling"`
	// DefaultCeiling is registered for containers of pods without
	// enforcerd annotations (met with the maxima).
	DefaultCeiling string `yaml:"default_ceiling"`
	// RequireAnnotation refuses containers of pods without enforcerd
	// annotations.
	RequireAnnotation bool `yaml:"require_annotation"`
}

// DefaultConfig is the section with no file: disabled; the runtime's
// default socket, plugin 10-enforcerd, mode auto, runc and crun.
func DefaultConfig() Config {
	return Config{
		Socket: "/var/run/nri/nri.sock", PluginName: "enforcerd", PluginIndex: "10",
		Mode: ModeAuto, HookPath: "/usr/local/bin/enforcerd",
		RuntimeHandlers: []string{"", "runc", "crun"},
	}
}

var (
	pluginNameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	pluginIndexRE = regexp.MustCompile(`^[0-9]{2}$`)
	// namespaceRE is a Kubernetes namespace name (an RFC 1123 label).
	namespaceRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// Validate checks the section; errors name the key ("nri.mode: ...").
// A disabled section is checked too: a typo must not wait for the day it
// is enabled.
func (c Config) Validate() error {
	if !filepath.IsAbs(c.Socket) {
		return fmt.Errorf("nri.socket: %q is not an absolute path", c.Socket)
	}
	if !pluginNameRE.MatchString(c.PluginName) {
		return fmt.Errorf("nri.plugin_name: %q: want [a-z0-9][a-z0-9._-]{0,62}", c.PluginName)
	}
	if !pluginIndexRE.MatchString(c.PluginIndex) {
		return fmt.Errorf("nri.plugin_index: %q: want two digits", c.PluginIndex)
	}
	switch c.Mode {
	case ModeAuto, ModeDirect, ModeHook:
	default:
		return fmt.Errorf("nri.mode: %q: want auto, direct or hook", c.Mode)
	}
	if !filepath.IsAbs(c.HookPath) {
		return fmt.Errorf("nri.hook_path: %q is not an absolute path", c.HookPath)
	}
	if err := checkCeiling(c.MaxCeiling); err != nil {
		return fmt.Errorf("nri.max_ceiling: %w", err)
	}
	if _, err := devallow.ParseList(c.AllowDevices); err != nil {
		return fmt.Errorf("nri.allow_devices: %w", err)
	}
	for _, h := range c.RuntimeHandlers {
		if strings.ContainsAny(h, " \t\n/") {
			return fmt.Errorf("nri.runtime_handlers: %q is not a handler name", h)
		}
	}
	names := make([]string, 0, len(c.Namespaces))
	for ns := range c.Namespaces {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		p := c.Namespaces[ns]
		key := "nri.namespaces." + ns
		if ns != "*" && !namespaceRE.MatchString(ns) {
			return fmt.Errorf("%s: %q is not a namespace name (or \"*\")", key, ns)
		}
		if err := checkCeiling(p.MaxCeiling); err != nil {
			return fmt.Errorf("%s.max_ceiling: %w", key, err)
		}
		if err := checkCeiling(p.DefaultCeiling); err != nil {
			return fmt.Errorf("%s.default_ceiling: %w", key, err)
		}
		if p.RequireAnnotation && p.DefaultCeiling != "" {
			return fmt.Errorf("%s: require_annotation and default_ceiling exclude each other", key)
		}
	}
	return nil
}

func checkCeiling(t string) error {
	if t == "" {
		return nil
	}
	if strings.TrimSpace(t) == "" {
		return fmt.Errorf("blank ceiling")
	}
	_, err := policy.ParseCeiling(t, policy.DefaultSession())
	return err
}

// namespace is the policy of namespace ns: its own entry, else "*".
func (c Config) namespace(ns string) (NamespacePolicy, string) {
	if p, ok := c.Namespaces[ns]; ok {
		return p, ns
	}
	return c.Namespaces["*"], "*"
}

// ErrRefused: the operator's policy refuses the container (an
// annotation is required, audit-only is not allowed, the runtime handler
// is not one enforcerd confines).
var ErrRefused = fmt.Errorf("refused by the node's enforcerd policy")

// decide turns what a pod asks for (p) into the registration of a
// container of namespace ns: the pod's ceiling met with the namespace's
// and the node's maxima; the namespace's default for pods without
// annotations. ok is false when the container is not registered (no
// annotation, no default, not required).
func (c Config) decide(ns string, p Parsed) (req oci.Request, ok bool, err error) {
	pol, key := c.namespace(ns)
	req = p.Req
	if !p.Annotated {
		switch {
		case pol.RequireAnnotation:
			return req, false, fmt.Errorf("%w: namespace %s (nri.namespaces.%s.require_annotation) requires %s on every pod", ErrRefused, ns, key, oci.AnnotationCeiling)
		case pol.DefaultCeiling != "":
			req.Ceiling = pol.DefaultCeiling
		default:
			return req, false, nil
		}
	}
	if req.AuditOnly && !c.AllowAuditOnly {
		return req, false, fmt.Errorf("%w: %s=true: this node does not honour audit-only from pods (nri.allow_audit_only)", ErrRefused, oci.AnnotationAuditOnly)
	}
	req.Ceiling, err = MeetCeilings(req.Ceiling, pol.MaxCeiling, c.MaxCeiling)
	if err != nil {
		return req, false, err
	}
	if err := c.checkHoles(req, key); err != nil {
		return req, false, err
	}
	if len(req.AllowDevices) > 0 && !sameDevices(req.AllowDevices, c.AllowDevices) {
		return req, false, fmt.Errorf("%w: %s=%q: every device must be one the node allows pods to list (nri.allow_devices: %q)",
			ErrRefused, oci.AnnotationAllowDevices, strings.Join(req.AllowDevices, ","), strings.Join(c.AllowDevices, ","))
	}
	return req, true, nil
}

// checkHoles refuses a pod's tcp and udp allow-connect endpoints under
// an operator's maximum (the node's or the namespace's max_ceiling) with
// network=false, and its write-roots under one with write=false: they
// reopen the field the operator's maximum closes (any address reachable,
// paths writable), so honouring them would widen the operator's policy.
// Unix endpoints stay allowed: a socket file the container can see (the
// egress proxy's, whose allow_domains the pod's proxy-allow only
// narrows). Errors wrap ErrRefused and name both keys.
func (c Config) checkHoles(req oci.Request, nsKey string) error {
	maxima := []struct{ key, text string }{
		{"nri.namespaces." + nsKey + ".max_ceiling", c.Namespaces[nsKey].MaxCeiling},
		{"nri.max_ceiling", c.MaxCeiling},
	}
	for _, m := range maxima {
		if strings.TrimSpace(m.text) == "" {
			continue
		}
		mc, err := policy.ParseCeiling(m.text, policy.DefaultSession())
		if err != nil {
			return fmt.Errorf("%s: %w", m.key, err)
		}
		if !mc.Network {
			eps, err := endpoint.ParseList(req.AllowConnectList())
			if err != nil {
				return fmt.Errorf("%s: %w", oci.AnnotationAllowConnect, err)
			}
			for _, e := range eps {
				if e.Kind != endpoint.Unix {
					return fmt.Errorf("%w: %s=%q: %s is network=false, a pod may not open inet endpoints in it (unix ones, such as the egress proxy's socket, stay allowed)",
						ErrRefused, oci.AnnotationAllowConnect, req.AllowConnect, m.key)
				}
			}
		}
		if !mc.Write && len(req.WriteRoots) > 0 {
			return fmt.Errorf("%w: %s=%q: %s is write=false, a pod may not open writable roots in it", ErrRefused, oci.AnnotationWriteRoots, strings.Join(req.WriteRoots, ","), m.key)
		}
	}
	return nil
}

// handlerAllowed reports whether pods of runtime handler h run in the
// node's kernel (Config.RuntimeHandlers).
func (c Config) handlerAllowed(h string) bool { return contains(c.RuntimeHandlers, h) }
