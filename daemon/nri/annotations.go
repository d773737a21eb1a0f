package nri

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
)

// Kubernetes allows one "/" in an annotation key, so a pod's annotations
// name a container in the key's prefix:
//
//	enforcerd.io/<key>                         pod-wide, every container of the pod
//	<key>.enforcerd.io/container.<name>        container <name> only
//
// <key> is one of oci.AllAnnotations without the prefix (role, ceiling,
// audit-only, tool-groups, proxy-allow, allow-connect, write-roots,
// allow-devices; parent and exec-allow are refused on Kubernetes).
const (
	scopeDomain    = "enforcerd.io/"
	containerScope = ".enforcerd.io/container."
)

// containerNameRE is a Kubernetes container name (an RFC 1123 label, as
// the API server validates the names of containers, init containers and
// ephemeral containers): a scoped key naming anything else can never
// apply to a container.
var containerNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ErrBadAnnotation: a pod's enforcerd annotations are malformed, unknown,
// or combine in a way that could widen or leave a container unconfined.
// It wraps oci.ErrBadAnnotation too.
var ErrBadAnnotation = oci.ErrBadAnnotation

// Parsed is what a pod's annotations ask for one of its containers.
type Parsed struct {
	// Annotated: the pod carries at least one enforcerd annotation (for
	// any of its containers). False: Req is empty and the namespace's
	// policy decides (Config.decide).
	Annotated bool
	// Req is the pod-wide request met with the container-scoped one.
	Req oci.Request
}

// shortKeys are the keys a container-scoped annotation may name.
func shortKeys() []string {
	out := make([]string, 0, len(oci.AllAnnotations))
	for _, k := range oci.AllAnnotations {
		out = append(out, strings.TrimPrefix(k, oci.AnnotationPrefix))
	}
	return out
}

func badf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadAnnotation, fmt.Sprintf(format, a...))
}

// ParsePod reads the enforcerd annotations of a pod for its container
// named container. Rules (each violation is an error wrapping
// ErrBadAnnotation, naming the key):
//   - every key is checked, also those scoped to other containers: an
//     unknown <key>, a key that spells enforcerd.io in another letter case
//     or in another place (ceiling.enforcerd.io/pod), an empty container
//     name or one no Kubernetes container has (not an RFC 1123 label: it
//     would narrow nothing), and any value oci.ParseAnnotations refuses
//     are errors;
//   - enforcerd.io/parent (pod-wide or scoped) is refused: containers of
//     different pods are not ancestors of one another in this version;
//   - enforcerd.io/exec-allow (pod-wide or scoped) is refused: the NRI
//     path does not carry an exec allow list in this version;
//   - a container-scoped key needs a pod-wide enforcerd.io/ceiling, so
//     that a mistyped container name leaves no container unconfined;
//   - the container's values narrow the pod's, never widen them: the
//     ceilings meet (policy.Ceiling.Clamp); a pod role and a different
//     container role is an error (roles are not a lattice); audit-only
//     true on the container under an enforcing pod is an error; the
//     container's allow-connect, write-roots, allow-devices, proxy-allow
//     and tool-groups entries must all be among the pod's when the pod
//     gives the key (and allow-connect, write-roots, allow-devices need
//     the pod's key: they open holes in a ceiling).
func ParsePod(ann map[string]string, container string) (Parsed, error) {
	pod := map[string]string{}
	mine := map[string]string{}
	scoped := false
	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	known := shortKeys()
	for _, k := range keys {
		v := ann[k]
		if strings.HasPrefix(k, scopeDomain) {
			pod[k] = v
			continue
		}
		if short, name, ok := strings.Cut(k, containerScope); ok {
			if !contains(known, short) {
				return Parsed{}, badf("annotation %s: unknown key %q (known: %s)", k, short, strings.Join(known, ", "))
			}
			if name == "" || strings.Contains(name, "/") {
				return Parsed{}, badf("annotation %s: no container name after %q", k, containerScope)
			}
			if !containerNameRE.MatchString(name) {
				return Parsed{}, badf("annotation %s: %q is not a Kubernetes container name (an RFC 1123 label: [a-z0-9-], at most 63, alphanumeric at both ends), so it narrows no container", k, name)
			}
			scoped = true
			if name == container {
				mine[oci.AnnotationPrefix+short] = v
			}
			continue
		}
		if oci.MiscasedAnnotation(k) || strings.Contains(strings.ToLower(k), "enforcerd.io") {
			return Parsed{}, badf("annotation %s: not an enforcerd key (pod-wide: %s<key>, one container: <key>%s<name>; keys are case-sensitive)", k, scopeDomain, containerScope)
		}
	}
	if _, ok := pod[oci.AnnotationParent]; ok {
		return Parsed{}, badf("annotation %s: not supported on Kubernetes", oci.AnnotationParent)
	}
	if _, ok := mine[oci.AnnotationParent]; ok {
		return Parsed{}, badf("annotation parent%s%s: not supported on Kubernetes", containerScope, container)
	}
	// The NRI path does not carry an exec allow list yet: refused rather
	// than dropped, so a pod never runs with another list than it wrote.
	for k := range ann {
		if k == oci.AnnotationExecAllow || strings.HasPrefix(k, "exec-allow"+containerScope) {
			return Parsed{}, badf("annotation %s: not supported on Kubernetes in this version (use the OCI hook or the API)", k)
		}
	}
	if len(pod) == 0 && !scoped {
		return Parsed{}, nil
	}
	if scoped && strings.TrimSpace(pod[oci.AnnotationCeiling]) == "" && !hasCeilingField(pod) {
		return Parsed{}, badf("container-scoped annotations (<key>%s<name>) need a pod-wide %s: a mistyped container name must not leave a container unconfined", containerScope, oci.AnnotationCeiling)
	}
	pr, err := oci.ParseAnnotations(pod)
	if err != nil {
		return Parsed{}, fmt.Errorf("pod-wide: %w", err)
	}
	if len(mine) == 0 {
		return Parsed{Annotated: true, Req: pr}, nil
	}
	return meetContainer(pr, ann, mine, container)
}

// meetContainer narrows the pod's request pr with the container's keys.
func meetContainer(pr oci.Request, ann, mine map[string]string, container string) (Parsed, error) {
	probe := mine
	if mine[oci.AnnotationRole] == "" && mine[oci.AnnotationCeiling] == "" && !hasCeilingField(mine) {
		// oci.ParseAnnotations wants a role or a ceiling; the pod's
		// ceiling met with itself changes nothing.
		probe = map[string]string{oci.AnnotationCeiling: pr.Ceiling}
		for k, v := range mine {
			probe[k] = v
		}
	}
	cr, err := oci.ParseAnnotations(probe)
	if err != nil {
		return Parsed{}, fmt.Errorf("container %s: %w", container, err)
	}
	key := func(short string) string { return short + containerScope + container }
	out := pr
	if _, ok := mine[oci.AnnotationRole]; ok {
		if pr.Role != "" && cr.Role != pr.Role {
			return Parsed{}, badf("annotation %s=%q: the pod's role is %q (roles do not combine: give one)", key("role"), cr.Role, pr.Role)
		}
		out.Role = cr.Role
	}
	if _, ok := mine[oci.AnnotationCeiling]; ok || hasCeilingField(mine) {
		if out.Ceiling, err = MeetCeilings(pr.Ceiling, cr.Ceiling); err != nil {
			return Parsed{}, badf("annotation %s: %v", key("ceiling"), err)
		}
	}
	if _, ok := mine[oci.AnnotationAuditOnly]; ok {
		if cr.AuditOnly && !pr.AuditOnly {
			return Parsed{}, badf("annotation %s=true: the pod is enforcing (a container may not opt out)", key("audit-only"))
		}
		out.AuditOnly = cr.AuditOnly
	}
	_, podTools := ann[oci.AnnotationToolGroups]
	if _, ok := mine[oci.AnnotationToolGroups]; ok {
		if podTools && !subset(splitList(cr.ToolGroups), splitList(pr.ToolGroups)) {
			return Parsed{}, badf("annotation %s=%q: not among the pod's tool groups %q", key("tool-groups"), cr.ToolGroups, pr.ToolGroups)
		}
		out.ToolGroups = cr.ToolGroups
	}
	if cr.ProxyAllow != nil {
		if pr.ProxyAllow != nil && !proxySubset(*cr.ProxyAllow, *pr.ProxyAllow) {
			return Parsed{}, badf("annotation %s=%q: not among the pod's %q", key("proxy-allow"), *cr.ProxyAllow, *pr.ProxyAllow)
		}
		out.ProxyAllow = cr.ProxyAllow
	}
	if _, ok := mine[oci.AnnotationAllowConnect]; ok {
		if pr.AllowConnect == "" || !subset(cr.AllowConnectList(), pr.AllowConnectList()) {
			return Parsed{}, badf("annotation %s=%q: every endpoint must be in the pod-wide %s (%q)", key("allow-connect"), cr.AllowConnect, oci.AnnotationAllowConnect, pr.AllowConnect)
		}
		out.AllowConnect = cr.AllowConnect
	}
	if _, ok := mine[oci.AnnotationWriteRoots]; ok {
		if len(pr.WriteRoots) == 0 || !subset(cr.WriteRoots, pr.WriteRoots) {
			return Parsed{}, badf("annotation %s: every root must be in the pod-wide %s (%q)", key("write-roots"), oci.AnnotationWriteRoots, strings.Join(pr.WriteRoots, ","))
		}
		out.WriteRoots = cr.WriteRoots
	}
	if _, ok := mine[oci.AnnotationAllowDevices]; ok {
		if len(pr.AllowDevices) == 0 || !sameDevices(cr.AllowDevices, pr.AllowDevices) {
			return Parsed{}, badf("annotation %s: every device must be in the pod-wide %s (%q)", key("allow-devices"), oci.AnnotationAllowDevices, strings.Join(pr.AllowDevices, ","))
		}
		out.AllowDevices = cr.AllowDevices
	}
	return Parsed{Annotated: true, Req: out}, nil
}

// hasCeilingField reports whether ann holds a per-field ceiling
// annotation (oci.CeilingFieldAnnotations): like enforcerd.io/ceiling, it
// gives a ceiling, and a container's narrows the pod's.
func hasCeilingField(ann map[string]string) bool {
	for _, k := range oci.CeilingFieldAnnotations {
		if _, ok := ann[k]; ok {
			return true
		}
	}
	return false
}

// MeetCeilings is the meet (policy.Ceiling.Clamp) of ceiling texts, each
// read over policy.DefaultSession, as canonical text; "" when every text
// is blank (no ceiling given: the registry's default applies).
func MeetCeilings(texts ...string) (string, error) {
	c := policy.DefaultSession()
	any := false
	for _, t := range texts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		p, err := policy.ParseCeiling(t, policy.DefaultSession())
		if err != nil {
			return "", err
		}
		c, any = c.Clamp(p), true
	}
	if !any {
		return "", nil
	}
	return c.String(), nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// proxySubset: "none" allows nothing, so it is within anything.
func proxySubset(c, p string) bool {
	if strings.TrimSpace(c) == "none" {
		return true
	}
	if strings.TrimSpace(p) == "none" {
		return false
	}
	return subset(splitList(c), splitList(p))
}

// sameDevices: every entry of a is one of b's, compared as parsed
// (checked by oci.ParseAnnotations): "c 1:3" and "c 01:3" are one device.
func sameDevices(a, b []string) bool {
	pa, err1 := devallow.ParseList(a)
	pb, err2 := devallow.ParseList(b)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, d := range pa {
		if !slices.ContainsFunc(pb, func(o devallow.Device) bool {
			return d.Resolved() == o.Resolved() && (d.Resolved() && devallow.Same(d, o) || !d.Resolved() && d.Path == o.Path)
		}) {
			return false
		}
	}
	return true
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !contains(b, x) {
			return false
		}
	}
	return true
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
