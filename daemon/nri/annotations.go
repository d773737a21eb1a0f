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
	pod, mine, scoped, err := splitPodKeys(ann, container)
	if err != nil {
		return Parsed{}, err
	}
	if err := refuseUnsupported(ann, pod, mine, container); err != nil {
		return Parsed{}, err
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

// splitPodKeys checks every key of ann in sort order (the first bad one is
// the error) and sorts the enforcerd ones: pod holds the pod-wide keys,
// mine the keys scoped to container (as enforcerd.io/<key>); scoped
// reports a container-scoped key for any container.
func splitPodKeys(ann map[string]string, container string) (pod, mine map[string]string, scoped bool, err error) {
	pod, mine = map[string]string{}, map[string]string{}
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
			if err := checkScopedKey(k, short, name, known); err != nil {
				return nil, nil, false, err
			}
			scoped = true
			if name == container {
				mine[oci.AnnotationPrefix+short] = v
			}
			continue
		}
		if oci.MiscasedAnnotation(k) || strings.Contains(strings.ToLower(k), "enforcerd.io") {
			return nil, nil, false, badf("annotation %s: not an enforcerd key (pod-wide: %s<key>, one container: <key>%s<name>; keys are case-sensitive)", k, scopeDomain, containerScope)
		}
	}
	return pod, mine, scoped, nil
}

// checkScopedKey checks container-scoped key k (<short>.enforcerd.io/container.<name>):
// a known short key and a Kubernetes container name.
func checkScopedKey(k, short, name string, known []string) error {
	if !contains(known, short) {
		return badf("annotation %s: unknown key %q (known: %s)", k, short, strings.Join(known, ", "))
	}
	if name == "" || strings.Contains(name, "/") {
		return badf("annotation %s: no container name after %q", k, containerScope)
	}
	if !containerNameRE.MatchString(name) {
		return badf("annotation %s: %q is not a Kubernetes container name (an RFC 1123 label: [a-z0-9-], at most 63, alphanumeric at both ends), so it narrows no container", k, name)
	}
	return nil
}

// refuseUnsupported refuses the keys the NRI path does not carry:
// enforcerd.io/parent (pod-wide or for container) and enforcerd.io/exec-allow
// (pod-wide or for any container).
func refuseUnsupported(ann, pod, mine map[string]string, container string) error {
	if _, ok := pod[oci.AnnotationParent]; ok {
		return badf("annotation %s: not supported on Kubernetes", oci.AnnotationParent)
	}
	if _, ok := mine[oci.AnnotationParent]; ok {
		return badf("annotation parent%s%s: not supported on Kubernetes", containerScope, container)
	}
	// The NRI path does not carry an exec allow list yet: refused rather
	// than dropped, so a pod never runs with another list than it wrote.
	for k := range ann {
		if k == oci.AnnotationExecAllow || strings.HasPrefix(k, "exec-allow"+containerScope) {
			return badf("annotation %s: not supported on Kubernetes in this version (use the OCI hook or the API)", k)
		}
	}
	return nil
}

// meetContainer narrows the pod's request pr with the container's keys,
// key by key (containerMeet's steps, in this order); the first key that
// would widen the pod's is the error.
func meetContainer(pr oci.Request, ann, mine map[string]string, container string) (Parsed, error) {
	cr, err := parseContainerKeys(pr, mine, container)
	if err != nil {
		return Parsed{}, err
	}
	m := &containerMeet{pr: pr, cr: cr, ann: ann, mine: mine, container: container, out: pr}
	for _, step := range []func() error{
		m.role, m.ceiling, m.auditOnly, m.toolGroups, m.proxyAllow, m.allowConnect, m.writeRoots, m.allowDevices,
	} {
		if err := step(); err != nil {
			return Parsed{}, err
		}
	}
	return Parsed{Annotated: true, Req: m.out}, nil
}

// parseContainerKeys reads the container's keys as oci.ParseAnnotations
// does; without a role or ceiling of its own, the pod's ceiling stands in
// for it (met with itself, it changes nothing).
func parseContainerKeys(pr oci.Request, mine map[string]string, container string) (oci.Request, error) {
	probe := mine
	if mine[oci.AnnotationRole] == "" && mine[oci.AnnotationCeiling] == "" && !hasCeilingField(mine) {
		probe = map[string]string{oci.AnnotationCeiling: pr.Ceiling}
		for k, v := range mine {
			probe[k] = v
		}
	}
	cr, err := oci.ParseAnnotations(probe)
	if err != nil {
		return oci.Request{}, fmt.Errorf("container %s: %w", container, err)
	}
	return cr, nil
}

// containerMeet is one container's request cr narrowing its pod's pr into
// out; mine are the container's keys, ann all of the pod's.
type containerMeet struct {
	pr, cr    oci.Request
	ann, mine map[string]string
	container string
	out       oci.Request
}

// key is the container-scoped spelling of short key short.
func (m *containerMeet) key(short string) string { return short + containerScope + m.container }

// given reports whether the container gives annotation a.
func (m *containerMeet) given(a string) bool {
	_, ok := m.mine[a]
	return ok
}

// role: roles are not a lattice; a container may repeat the pod's.
func (m *containerMeet) role() error {
	if !m.given(oci.AnnotationRole) {
		return nil
	}
	if m.pr.Role != "" && m.cr.Role != m.pr.Role {
		return badf("annotation %s=%q: the pod's role is %q (roles do not combine: give one)", m.key("role"), m.cr.Role, m.pr.Role)
	}
	m.out.Role = m.cr.Role
	return nil
}

// ceiling: the meet of the pod's and the container's ceilings.
func (m *containerMeet) ceiling() error {
	if !m.given(oci.AnnotationCeiling) && !hasCeilingField(m.mine) {
		return nil
	}
	var err error
	if m.out.Ceiling, err = MeetCeilings(m.pr.Ceiling, m.cr.Ceiling); err != nil {
		return badf("annotation %s: %v", m.key("ceiling"), err)
	}
	return nil
}

// auditOnly: a container may not opt out of an enforcing pod.
func (m *containerMeet) auditOnly() error {
	if !m.given(oci.AnnotationAuditOnly) {
		return nil
	}
	if m.cr.AuditOnly && !m.pr.AuditOnly {
		return badf("annotation %s=true: the pod is enforcing (a container may not opt out)", m.key("audit-only"))
	}
	m.out.AuditOnly = m.cr.AuditOnly
	return nil
}

// toolGroups: among the pod's tool groups when the pod gives them.
func (m *containerMeet) toolGroups() error {
	if !m.given(oci.AnnotationToolGroups) {
		return nil
	}
	_, podTools := m.ann[oci.AnnotationToolGroups]
	if podTools && !subset(splitList(m.cr.ToolGroups), splitList(m.pr.ToolGroups)) {
		return badf("annotation %s=%q: not among the pod's tool groups %q", m.key("tool-groups"), m.cr.ToolGroups, m.pr.ToolGroups)
	}
	m.out.ToolGroups = m.cr.ToolGroups
	return nil
}

// proxyAllow: among the pod's patterns when the pod gives a list.
func (m *containerMeet) proxyAllow() error {
	if m.cr.ProxyAllow == nil {
		return nil
	}
	if m.pr.ProxyAllow != nil && !proxySubset(*m.cr.ProxyAllow, *m.pr.ProxyAllow) {
		return badf("annotation %s=%q: not among the pod's %q", m.key("proxy-allow"), *m.cr.ProxyAllow, *m.pr.ProxyAllow)
	}
	m.out.ProxyAllow = m.cr.ProxyAllow
	return nil
}

// allowConnect: every endpoint in the pod's list, which must be given.
func (m *containerMeet) allowConnect() error {
	if !m.given(oci.AnnotationAllowConnect) {
		return nil
	}
	if m.pr.AllowConnect == "" || !subset(m.cr.AllowConnectList(), m.pr.AllowConnectList()) {
		return badf("annotation %s=%q: every endpoint must be in the pod-wide %s (%q)", m.key("allow-connect"), m.cr.AllowConnect, oci.AnnotationAllowConnect, m.pr.AllowConnect)
	}
	m.out.AllowConnect = m.cr.AllowConnect
	return nil
}

// writeRoots: every root in the pod's list, which must be given.
func (m *containerMeet) writeRoots() error {
	if !m.given(oci.AnnotationWriteRoots) {
		return nil
	}
	if len(m.pr.WriteRoots) == 0 || !subset(m.cr.WriteRoots, m.pr.WriteRoots) {
		return badf("annotation %s: every root must be in the pod-wide %s (%q)", m.key("write-roots"), oci.AnnotationWriteRoots, strings.Join(m.pr.WriteRoots, ","))
	}
	m.out.WriteRoots = m.cr.WriteRoots
	return nil
}

// allowDevices: every device in the pod's list, which must be given.
func (m *containerMeet) allowDevices() error {
	if !m.given(oci.AnnotationAllowDevices) {
		return nil
	}
	if len(m.pr.AllowDevices) == 0 || !sameDevices(m.cr.AllowDevices, m.pr.AllowDevices) {
		return badf("annotation %s: every device must be in the pod-wide %s (%q)", m.key("allow-devices"), oci.AnnotationAllowDevices, strings.Join(m.pr.AllowDevices, ","))
	}
	m.out.AllowDevices = m.cr.AllowDevices
	return nil
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
