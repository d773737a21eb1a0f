package nri

import (
	"errors"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
)

func TestParsePod(t *testing.T) {
	good := []struct {
		name string
		ann  map[string]string
		want oci.Request
		ok   bool
	}{
		{"none", map[string]string{"other.io/x": "y"}, oci.Request{}, false},
		{"pod-wide", map[string]string{"enforcerd.io/ceiling": "network=false", "enforcerd.io/role": "implement"},
			oci.Request{Ceiling: "network=false", Role: "implement"}, true},
		{"scoped meet", map[string]string{"enforcerd.io/ceiling": "network=false", "ceiling.enforcerd.io/container.agent": "write=false,network=true"},
			oci.Request{Ceiling: "network=false,write=false,shell=full,tools=true,depth=1"}, true},
		{"other container's key ignored", map[string]string{"enforcerd.io/ceiling": "network=false", "ceiling.enforcerd.io/container.sidecar": "write=false"},
			oci.Request{Ceiling: "network=false"}, true},
		{"same role", map[string]string{"enforcerd.io/ceiling": "write=false", "enforcerd.io/role": "explore", "role.enforcerd.io/container.agent": "explore"},
			oci.Request{Ceiling: "write=false", Role: "explore"}, true},
		{"container enforces under audit-only pod", map[string]string{"enforcerd.io/ceiling": "write=false", "enforcerd.io/audit-only": "true", "audit-only.enforcerd.io/container.agent": "false"},
			oci.Request{Ceiling: "write=false"}, true},
		{"pod-wide per-field", map[string]string{"enforcerd.io/network": "false", "enforcerd.io/write": "false"},
			oci.Request{Ceiling: "network=false,write=false"}, true},
		{"scoped per-field meet", map[string]string{"enforcerd.io/network": "false", "write.enforcerd.io/container.agent": "false"},
			oci.Request{Ceiling: "network=false,write=false,shell=full,tools=true,depth=1"}, true},
		{"scoped per-field cannot widen", map[string]string{"enforcerd.io/ceiling": "network=false", "network.enforcerd.io/container.agent": "true"},
			oci.Request{Ceiling: "network=false,write=true,shell=full,tools=true,depth=1"}, true},
		{"narrower endpoints", map[string]string{"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-connect": "tcp:10.0.0.1:443,tcp:10.0.0.2:443",
			"allow-connect.enforcerd.io/container.agent": "tcp:10.0.0.2:443"},
			oci.Request{Ceiling: "network=false", AllowConnect: "tcp:10.0.0.2:443"}, true},
	}
	for _, tc := range good {
		p, err := ParsePod(tc.ann, "agent")
		if err != nil || p.Annotated != tc.ok || p.Req.Ceiling != tc.want.Ceiling || p.Req.Role != tc.want.Role ||
			p.Req.AuditOnly != tc.want.AuditOnly || p.Req.AllowConnect != tc.want.AllowConnect {
			t.Errorf("%s: %+v, %v; want %+v annotated=%t", tc.name, p, err, tc.want, tc.ok)
		}
	}
	bad := map[string]map[string]string{
		"scoped endpoints without the pod's":   {"enforcerd.io/ceiling": "network=false", "allow-connect.enforcerd.io/container.agent": "tcp:10.0.0.2:443"},
		"scoped endpoints outside the pod's":   {"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-connect": "tcp:10.0.0.1:443", "allow-connect.enforcerd.io/container.agent": "tcp:10.0.0.2:443"},
		"scoped roots without the pod's":       {"enforcerd.io/ceiling": "write=false", "write-roots.enforcerd.io/container.agent": "/tmp"},
		"scoped proxy wider":                   {"enforcerd.io/ceiling": "network=false", "enforcerd.io/proxy-allow": "a.example.com", "proxy-allow.enforcerd.io/container.agent": "b.example.com"},
		"scoped tool groups wider":             {"enforcerd.io/ceiling": "network=false", "enforcerd.io/tool-groups": "read", "tool-groups.enforcerd.io/container.agent": "read,edit"},
		"empty container name":                 {"enforcerd.io/ceiling": "network=false", "ceiling.enforcerd.io/container.": "write=false"},
		"scoped parent":                        {"enforcerd.io/ceiling": "network=false", "parent.enforcerd.io/container.agent": "x"},
		"upper-case domain":                    {"enforcerd.io/ceiling": "network=false", "ceiling.ENFORCERD.IO/container.agent": "write=false"},
		"bad scoped value":                     {"enforcerd.io/ceiling": "network=false", "ceiling.enforcerd.io/container.agent": "write=perhaps"},
		"bad other container's value":          {"enforcerd.io/ceiling": "network=false", "ceilin.enforcerd.io/container.sidecar": "write=false"},
		"audit-only alone":                     {"enforcerd.io/audit-only": "true"},
		"per-field disagrees with the ceiling": {"enforcerd.io/ceiling": "network=false", "enforcerd.io/network": "true"},
		"scoped per-field disagrees":           {"enforcerd.io/ceiling": "network=false", "ceiling.enforcerd.io/container.agent": "write=false", "write.enforcerd.io/container.agent": "true"},
	}
	for name, ann := range bad {
		if p, err := ParsePod(ann, "agent"); err == nil || !errors.Is(err, oci.ErrBadAnnotation) {
			t.Errorf("%s: accepted %+v (%v)", name, p, err)
		}
	}
	for name, ann := range badPods {
		if p, err := ParsePod(ann, "agent"); err == nil || !errors.Is(err, oci.ErrBadAnnotation) {
			t.Errorf("%s: accepted %+v (%v)", name, p, err)
		}
	}
}

// FuzzParsePod: no input panics; an accepted request is one
// oci.ParseAnnotations accepts as the hook would read it, and its ceiling
// is never wider than the pod-wide one.
func FuzzParsePod(f *testing.F) {
	f.Add("enforcerd.io/ceiling", "network=false", "ceiling.enforcerd.io/container.agent", "write=false", "agent")
	f.Add("enforcerd.io/role", "implement", "role.enforcerd.io/container.agent", "explore", "agent")
	f.Add("enforcerd.io/ceiling", "shell=none", "audit-only.enforcerd.io/container.a", "true", "a")
	f.Add("Enforcerd.io/ceiling", "x", "enforcerd.io/parent", "p", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, name string) {
		ann := map[string]string{k1: v1, k2: v2}
		p, err := ParsePod(ann, name)
		if err != nil || !p.Annotated {
			return
		}
		if p.Req.Ceiling != "" {
			c, err := policy.ParseCeiling(p.Req.Ceiling, policy.DefaultSession())
			if err != nil {
				t.Fatalf("accepted ceiling %q does not parse: %v", p.Req.Ceiling, err)
			}
			if pc, ok := ann[oci.AnnotationCeiling]; ok {
				pod, _ := policy.ParseCeiling(pc, policy.DefaultSession())
				if !c.Within(pod) {
					t.Fatalf("ceiling %v wider than the pod's %v", c, pod)
				}
			}
		}
		if p.Req.AuditOnly && !strings.EqualFold(strings.TrimSpace(ann[oci.AnnotationAuditOnly]), "true") {
			if b, err := policy.ParseBool(ann[oci.AnnotationAuditOnly]); err != nil || !b {
				t.Fatalf("audit-only without the pod's: %v", ann)
			}
		}
	})
}

func TestConfigValidateNamesTheKey(t *testing.T) {
	for want, mod := range map[string]func(*Config){
		"nri.mode":                         func(c *Config) { c.Mode = "sideways" },
		"nri.socket":                       func(c *Config) { c.Socket = "nri.sock" },
		"nri.plugin_name":                  func(c *Config) { c.PluginName = "Enforcer D" },
		"nri.plugin_index":                 func(c *Config) { c.PluginIndex = "1" },
		"nri.hook_path":                    func(c *Config) { c.HookPath = "enforcerd" },
		"nri.max_ceiling":                  func(c *Config) { c.MaxCeiling = "network=nope" },
		"nri.runtime_handlers":             func(c *Config) { c.RuntimeHandlers = []string{"a b"} },
		"nri.namespaces.Bad_NS":            func(c *Config) { c.Namespaces = map[string]NamespacePolicy{"Bad_NS": {}} },
		"nri.namespaces.a.max_ceiling":     func(c *Config) { c.Namespaces = map[string]NamespacePolicy{"a": {MaxCeiling: "x=y"}} },
		"nri.namespaces.*.default_ceiling": func(c *Config) { c.Namespaces = map[string]NamespacePolicy{"*": {DefaultCeiling: "shell=sometimes"}} },
		"nri.namespaces.b: require_annotation": func(c *Config) {
			c.Namespaces = map[string]NamespacePolicy{"b": {DefaultCeiling: "network=false", RequireAnnotation: true}}
		},
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("want an error naming %s, got %v", want, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestChooseMode(t *testing.T) {
	for _, tc := range []struct{ cfg, rt, want string }{
		{ModeAuto, "containerd", ModeDirect}, {ModeAuto, "cri-o", ModeHook}, {ModeHook, "containerd", ModeHook}, {ModeDirect, "other", ModeDirect},
	} {
		if got, err := chooseMode(tc.cfg, tc.rt); err != nil || got != tc.want {
			t.Errorf("chooseMode(%s, %s) = %s, %v; want %s", tc.cfg, tc.rt, got, err, tc.want)
		}
	}
	if _, err := chooseMode(ModeAuto, "podman"); err == nil {
		t.Error("unknown runtime accepted under auto")
	}
}

// TestParsePodAllowDevices: a container's allow-devices narrows the
// pod's (entries compared as devices), never widens it, and needs the
// pod-wide key.
func TestParsePodAllowDevices(t *testing.T) {
	p, err := ParsePod(map[string]string{"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-devices": "c 226:128, /dev/dri/card0",
		"allow-devices.enforcerd.io/container.agent": "c 0226:128"}, "agent")
	if err != nil || strings.Join(p.Req.AllowDevices, ",") != "c 0226:128" {
		t.Errorf("narrower devices: %+v, %v", p.Req, err)
	}
	p, err = ParsePod(map[string]string{"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-devices": "c 226:128"}, "agent")
	if err != nil || strings.Join(p.Req.AllowDevices, ",") != "c 226:128" {
		t.Errorf("pod-wide devices: %+v, %v", p.Req, err)
	}
	for name, ann := range map[string]map[string]string{
		"without the pod's":   {"enforcerd.io/ceiling": "network=false", "allow-devices.enforcerd.io/container.agent": "c 226:128"},
		"outside the pod's":   {"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-devices": "c 226:128", "allow-devices.enforcerd.io/container.agent": "c 226:129"},
		"a path for a number": {"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-devices": "c 226:128", "allow-devices.enforcerd.io/container.agent": "/dev/dri/renderD128"},
		"malformed":           {"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-devices": "c 226:*"},
	} {
		if p, err := ParsePod(ann, "agent"); !errors.Is(err, oci.ErrBadAnnotation) || !strings.Contains(err.Error(), "allow-devices") {
			t.Errorf("%s: %+v, %v; want an error naming allow-devices", name, p, err)
		}
	}
}

// TestDecideAllowDevices: a pod's device list must lie within the node's
// nri.allow_devices (default none: refused).
func TestDecideAllowDevices(t *testing.T) {
	p := Parsed{Annotated: true, Req: oci.Request{Ceiling: "network=false", AllowDevices: []string{"c 226:128"}}}
	if _, _, err := (Config{}).decide("agents", p); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "nri.allow_devices") {
		t.Errorf("no node list: %v, want ErrRefused naming nri.allow_devices", err)
	}
	c := Config{AllowDevices: []string{"c 226:128", "/dev/dri/card0"}}
	if req, ok, err := c.decide("agents", p); err != nil || !ok || len(req.AllowDevices) != 1 {
		t.Errorf("within the node's list: %+v, %t, %v", req, ok, err)
	}
	p.Req.AllowDevices = []string{"c 226:128", "c 226:129"}
	if _, _, err := c.decide("agents", p); !errors.Is(err, ErrRefused) {
		t.Errorf("outside the node's list: %v, want ErrRefused", err)
	}
	bad := DefaultConfig()
	bad.AllowDevices = []string{"c 195:*"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "nri.allow_devices") {
		t.Errorf("malformed nri.allow_devices: %v", err)
	}
}

// TestAttackScopedNameNeverAContainer: a container-scoped key whose
// name no Kubernetes container can have (container names are RFC 1123
// labels: lower case, digits, '-', at most 63) can never narrow any
// container: the narrowing the pod's author or reviewer reads in it
// silently does not exist, and every container runs with the pod-wide
// ceiling. It is refused like an unknown key.
func TestAttackScopedNameNeverAContainer(t *testing.T) {
	for _, name := range []string{"Agent", "AGENT", "agent_1", "agent.x", "-agent", "agent-", "ａgent", strings.Repeat("a", 64)} {
		ann := map[string]string{
			"enforcerd.io/ceiling":                   "network=true",
			"ceiling.enforcerd.io/container." + name: "network=false",
		}
		if p, err := ParsePod(ann, "agent"); err == nil || !errors.Is(err, oci.ErrBadAnnotation) {
			t.Errorf("scoped name %q: accepted %+v (%v)", name, p, err)
		}
	}
	ok := map[string]string{"enforcerd.io/ceiling": "network=true", "ceiling.enforcerd.io/container.a-1": "network=false"}
	if p, err := ParsePod(ok, "a-1"); err != nil || p.Req.Ceiling != "network=false,write=true,shell=full,tools=true,depth=1" {
		t.Errorf("valid scoped name: %+v, %v", p, err)
	}
}

// TestAttackLongValueRefusalIsShort: a refused annotation value of
// hundreds of KiB (Kubernetes allows 256 KiB of annotations) is not
// echoed whole into the error the runtime logs and reports on every
// retry of the pod (and the daemon's own log): the refusal names the key
// and is clipped.
func TestAttackLongValueRefusalIsShort(t *testing.T) {
	rs := newRuntime(t, "containerd")
	runPlugin(t, rs, newFake(), nil)
	ann := map[string]string{"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-connect": strings.Repeat("tcp:10.0.0.1:443,", 14000)}
	_, err := rs.create(pod("agents", ann), ctr("l1", "a", 1))
	if err == nil || !strings.Contains(err.Error(), "enforcerd.io/allow-connect") {
		t.Fatalf("CreateContainer: %v", err)
	}
	if n := len(err.Error()); n > 4096 {
		t.Errorf("refusal of %d bytes, want at most 4096", n)
	}
}
