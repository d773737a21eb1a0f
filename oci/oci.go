// Package oci reads what an OCI runtime hands enforcerd's runtime hook: the
// container state on stdin (runtime-spec specs.State), the ceiling from
// the container's annotations, and the entrypoint from the bundle's
// config.json. It is pure parsing, no I/O beyond the reader it is given, so
// every parser is fuzzed.
//
// Fail direction: anything the hook does not understand is an error, and the
// hook exits non-zero, which makes the runtime refuse the container. A
// malformed annotation never falls back to a wider (or any default) ceiling.
//
// Layering (docs/design.md): layer 3; it may import policy/, egress/,
// endpoint/, devallow/ and progcheck/, and of other modules no cilium/ebpf.
package oci

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/egress"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// Annotation keys of a container: set by whoever creates it (podman
// --annotation, a bundle's config.json), handed to the hook by the runtime
// in the OCI state.
const (
	AnnotationPrefix     = "enforcerd.io/"
	AnnotationRole       = AnnotationPrefix + "role"
	AnnotationCeiling    = AnnotationPrefix + "ceiling"
	AnnotationParent     = AnnotationPrefix + "parent"
	AnnotationAuditOnly  = AnnotationPrefix + "audit-only"
	AnnotationToolGroups = AnnotationPrefix + "tool-groups"
	AnnotationProxyAllow = AnnotationPrefix + "proxy-allow"
	// AnnotationAllowConnect: comma-separated endpoints the container may
	// still reach under network=false (endpoint syntax; unix
	// paths resolved by the daemon inside the container's root).
	AnnotationAllowConnect = AnnotationPrefix + "allow-connect"
	// AnnotationWriteRoots: comma-separated absolute paths inside the
	// container beneath which writes stay allowed under write=false
	// (policy.ParseWriteRoots).
	AnnotationWriteRoots = AnnotationPrefix + "write-roots"
	// AnnotationExecAllow: with shell=none, comma-separated absolute
	// paths inside the container's root of the files it may execute
	// besides its entrypoint (at most MaxExecAllow; ParseExecAllow),
	// resolved and vetted by the daemon (docs/api.md "Exec allow list").
	AnnotationExecAllow = AnnotationPrefix + "exec-allow"
	// AnnotationAllowDevices: comma-separated device nodes the container
	// may use besides the null-like devices and its own terminals, under
	// every ceiling: "c MAJOR:MINOR", "b MAJOR:MINOR" or an absolute path
	// inside the container, resolved by the daemon (devallow;
	// at most 16). The spec's linux.devices is never taken for it.
	AnnotationAllowDevices = AnnotationPrefix + "allow-devices"
)

// MaxExecAllow is the number of files enforcerd.io/exec-allow may name
// (the daemon's registry.MaxExecAllow).
const MaxExecAllow = 16

// ParseExecAllow splits an enforcerd.io/exec-allow value: comma-separated
// absolute paths of at most 4096 bytes without NUL, cleaned, no two the
// same, at most MaxExecAllow. Errors name the offending entry.
func ParseExecAllow(v string) ([]string, error) {
	parts := strings.Split(v, ",")
	if len(parts) > MaxExecAllow {
		return nil, fmt.Errorf("%d files, at most %d", len(parts), MaxExecAllow)
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if !path.IsAbs(p) || len(p) > 4096 || strings.IndexByte(p, 0) >= 0 {
			return nil, fmt.Errorf("%q is not an absolute path of at most 4096 bytes without NUL", p)
		}
		p = path.Clean(p)
		if seen[p] {
			return nil, fmt.Errorf("%s is given twice", p)
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}

// AllAnnotations lists every key the hook reads; any other key with the
// enforcerd.io/ prefix is an error (a typo must not silently drop a ceiling),
// and so is a key that has the prefix in another letter case
// ("Enforcerd.io/ceiling", "ENFORCERD.IO/ROLE"): annotation keys are
// case-sensitive, so such a key would otherwise be someone else's and its
// ceiling dropped without a word.
var AllAnnotations = append([]string{AnnotationRole, AnnotationCeiling, AnnotationParent, AnnotationAuditOnly, AnnotationToolGroups, AnnotationProxyAllow, AnnotationAllowConnect, AnnotationWriteRoots, AnnotationExecAllow, AnnotationAllowDevices},
	CeilingFieldAnnotations...)

// MaxStateBytes bounds the state JSON read from stdin. Real states are a few
// KiB (annotations included); anything bigger is refused.
const MaxStateBytes = 1 << 20

// MaxConfigBytes bounds the bundle's config.json (runtime-spec "Spec"),
// which also carries mounts, hooks and the seccomp profile.
const MaxConfigBytes = 16 << 20

// Errors callers test with errors.Is.
var (
	// ErrBadState: the state JSON is not a usable runtime-spec state.
	ErrBadState = errors.New("bad OCI state")
	// ErrBadAnnotation: an enforcerd.io/ annotation is malformed or unknown.
	ErrBadAnnotation = errors.New("bad enforcerd annotation")
	// ErrNoAnnotation: the container carries no enforcerd.io/ annotation.
	ErrNoAnnotation = errors.New("no enforcerd.io/ annotation")
	// ErrBadConfig: the bundle's config.json does not name an entrypoint.
	ErrBadConfig = errors.New("bad OCI config")
)

// idPattern is the container id syntax the daemon accepts (runc's own rule,
// plus ':' for CRI-O/podman names); at most 256 bytes.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+:-]{0,255}$`)

// ValidID reports whether id is an acceptable container id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// DecodeState reads one runtime-spec State from r. It accepts any ociVersion
// of major version 1 (runc reports e.g. "1.0.2-dev"), requires a valid id and,
// unless needPID is false (poststop: the process is gone), a positive pid.
// Unknown fields are ignored (later runtime-spec minor versions add some);
// trailing data after the object is an error, and so is a key CheckKeys
// finds ambiguous: one given twice in any object (the annotations
// included), or, where a field is decoded, two keys encoding/json would
// fold to the same field or a key spelled otherwise than the field
// ("ID", "annotation\u017f").
func DecodeState(r io.Reader, needPID bool) (specs.State, error) {
	var st specs.State
	b, err := io.ReadAll(io.LimitReader(r, MaxStateBytes+1))
	if err != nil {
		return st, fmt.Errorf("%w: read stdin: %v", ErrBadState, err)
	}
	if len(b) > MaxStateBytes {
		return st, fmt.Errorf("%w: larger than %d bytes", ErrBadState, MaxStateBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&st); err != nil {
		return specs.State{}, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if dec.More() {
		return specs.State{}, fmt.Errorf("%w: trailing data after the state object", ErrBadState)
	}
	if err := CheckKeys(b, reflect.TypeFor[specs.State]()); err != nil {
		return specs.State{}, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if err := checkVersion(st.Version); err != nil {
		return specs.State{}, err
	}
	if !ValidID(st.ID) {
		return specs.State{}, fmt.Errorf("%w: container id %q is empty or not [A-Za-z0-9][A-Za-z0-9_.+:-]{0,255}", ErrBadState, st.ID)
	}
	if needPID && st.Pid <= 0 {
		return specs.State{}, fmt.Errorf("%w: container %s: pid %d (the hook needs the container's init pid)", ErrBadState, st.ID, st.Pid)
	}
	if st.Pid < 0 {
		return specs.State{}, fmt.Errorf("%w: container %s: negative pid %d", ErrBadState, st.ID, st.Pid)
	}
	return st, nil
}

// checkVersion accepts "1", "1.x", "1.x.y" with any pre-release/build suffix.
func checkVersion(v string) error {
	if v == "" {
		return fmt.Errorf("%w: missing ociVersion", ErrBadState)
	}
	major, _, _ := strings.Cut(v, ".")
	if major != "1" {
		return fmt.Errorf("%w: ociVersion %q: only runtime-spec 1.x is supported", ErrBadState, v)
	}
	return nil
}

// Request is the registration the annotations ask for.
type Request struct {
	Role       string // enforcerd.io/role, as written, a name policy.LookupRole accepts ("" = not given: general)
	Ceiling    string // enforcerd.io/ceiling, validated ceiling text
	Parent     string // enforcerd.io/parent, a container id
	AuditOnly  bool   // enforcerd.io/audit-only
	ToolGroups string // enforcerd.io/tool-groups
	// ProxyAllow is enforcerd.io/proxy-allow (egress.ParseAllowList), nil
	// when not given.
	ProxyAllow *string
	// AllowConnect: enforcerd.io/allow-connect as written, checked
	// (endpoint.SplitAnnotation, endpoint.ParseList); resolved and met by
	// the daemon. AllowConnectList splits it.
	AllowConnect string
	// WriteRoots: enforcerd.io/write-roots, clean absolute paths inside
	// the container (at most policy.MaxWriteRoots).
	WriteRoots []string
	// ExecAllow: enforcerd.io/exec-allow, clean absolute paths inside the
	// container (ParseExecAllow).
	ExecAllow []string
	// AllowDevices: enforcerd.io/allow-devices split into entries,
	// checked (devallow.SplitAnnotation, devallow.ParseList); paths
	// resolved and the list met by the daemon.
	AllowDevices []string
}

// AllowConnectList is r.AllowConnect split into endpoints (nil: none).
func (r Request) AllowConnectList() []string {
	if r.AllowConnect == "" {
		return nil
	}
	parts, _ := endpoint.SplitAnnotation(r.AllowConnect) // checked by ParseAnnotations
	return parts
}

// ParseAnnotations validates the enforcerd.io/ annotations. The ceiling
// is enforcerd.io/ceiling merged with the per-field annotations
// (enforcerd.io/network, ...; MergeCeiling) into Request.Ceiling. Errors wrap
// ErrNoAnnotation when there is none, ErrBadAnnotation for an unknown key,
// a key whose enforcerd.io/ prefix is spelled in another letter case
// (MiscasedAnnotation; checked first, whatever else is there), a
// malformed ceiling (policy.ParseCeiling's message, naming the field), a
// bad parent id, a non-boolean audit-only, a per-field annotation that
// disagrees with enforcerd.io/ceiling (ErrCeilingConflict), an annotation
// named like a bare ceiling key beside a ceiling (ErrStrayCeilingKey:
// what a runtime splitting at commas leaves), or a role that is not a role
// name: an unknown name or an empty value is policy.LookupRole's error
// (wrapping policy.ErrUnknownRole too, and listing the valid names), never
// a fallback to another role. Only a container without the role annotation
// gets the default role.
func ParseAnnotations(ann map[string]string) (Request, error) {
	keys, err := enforcerdKeys(ann)
	if err != nil {
		return Request{}, err
	}
	var r Request
	for _, k := range keys {
		if err := parseAnnotation(&r, k, ann[k]); err != nil {
			return Request{}, err
		}
	}
	if err := mergeCeilingFields(&r, ann); err != nil {
		return Request{}, err
	}
	if r.Role == "" && r.Ceiling == "" {
		return Request{}, fmt.Errorf("%w: neither %s nor %s (or %s<field>) is set", ErrBadAnnotation, AnnotationRole, AnnotationCeiling, AnnotationPrefix)
	}
	return r, nil
}

// enforcerdKeys returns the enforcerd.io/ keys of ann, sorted. A key with
// the prefix in another letter case is an error (the first in sort order
// is named), checked before anything else; no enforcerd.io/ key at all is
// ErrNoAnnotation.
func enforcerdKeys(ann map[string]string) ([]string, error) {
	var keys, miscased []string
	for k := range ann {
		switch {
		case strings.HasPrefix(k, AnnotationPrefix):
			keys = append(keys, k)
		case MiscasedAnnotation(k):
			miscased = append(miscased, k)
		}
	}
	if len(miscased) > 0 {
		sort.Strings(miscased)
		k := miscased[0]
		return nil, fmt.Errorf("%w: annotation %s: keys are case-sensitive, the prefix is %s (known: %s)",
			ErrBadAnnotation, k, AnnotationPrefix, strings.Join(AllAnnotations, ", "))
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: set %s and/or %s on the container", ErrNoAnnotation, AnnotationRole, AnnotationCeiling)
	}
	sort.Strings(keys)
	return keys, nil
}

// annotationStep checks one annotation's value v and records it in r. Its
// error is reported as ErrBadAnnotation: key="value": error; a keyError is
// reported as ErrBadAnnotation: key: error and stays wrapped.
type annotationStep func(r *Request, v string) error

// keyError is a step's error that wraps a sentinel callers test (the role's
// policy.ErrUnknownRole) and already describes the value.
type keyError struct{ err error }

func (e keyError) Error() string { return e.err.Error() }

// annotationSteps holds the parse step of every key in AllAnnotations. The
// per-field ceiling annotations have none: they are merged with
// enforcerd.io/ceiling after every key was read (mergeCeilingFields).
var annotationSteps = map[string]annotationStep{
	AnnotationRole:         parseRoleAnnotation,
	AnnotationCeiling:      parseCeilingAnnotation,
	AnnotationParent:       parseParentAnnotation,
	AnnotationAuditOnly:    parseAuditOnlyAnnotation,
	AnnotationToolGroups:   parseToolGroupsAnnotation,
	AnnotationProxyAllow:   parseProxyAllowAnnotation,
	AnnotationAllowConnect: parseAllowConnectAnnotation,
	AnnotationWriteRoots:   parseWriteRootsAnnotation,
	AnnotationAllowDevices: parseAllowDevicesAnnotation,
	AnnotationExecAllow:    parseExecAllowAnnotation,
	AnnotationNetwork:      nil,
	AnnotationWrite:        nil,
	AnnotationShell:        nil,
	AnnotationTools:        nil,
	AnnotationDepth:        nil,
}

// parseAnnotation runs key k's step on v; an unknown key is an error that
// names the known keys, or the one k spells in another letter case.
func parseAnnotation(r *Request, k, v string) error {
	step, known := annotationSteps[k]
	if !known {
		return unknownAnnotation(k)
	}
	if step == nil {
		return nil
	}
	err := step(r, v)
	if err == nil {
		return nil
	}
	if ke, ok := err.(keyError); ok {
		return fmt.Errorf("%w: %s: %w", ErrBadAnnotation, k, ke.err)
	}
	return fmt.Errorf("%w: %s=%q: %s", ErrBadAnnotation, k, v, err.Error())
}

func unknownAnnotation(k string) error {
	for _, a := range AllAnnotations {
		if policy.EqualFoldASCII(k, a) {
			return fmt.Errorf("%w: annotation %s: keys are case-sensitive, did you mean %s?", ErrBadAnnotation, k, a)
		}
	}
	return fmt.Errorf("%w: unknown annotation %s (known: %s)", ErrBadAnnotation, k, strings.Join(AllAnnotations, ", "))
}

func parseRoleAnnotation(r *Request, v string) error {
	if len(v) > 256 || strings.ContainsAny(v, "\x00\n\r") {
		return errors.New("role must be one line of at most 256 bytes")
	}
	if _, err := policy.LookupRole(v); err != nil {
		return keyError{err}
	}
	r.Role = v
	return nil
}

func parseCeilingAnnotation(r *Request, v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("empty ceiling")
	}
	if _, err := policy.ParseCeiling(v, policy.DefaultSession()); err != nil {
		return err
	}
	r.Ceiling = v
	return nil
}

func parseParentAnnotation(r *Request, v string) error {
	if !ValidID(v) {
		return errors.New("not a container id")
	}
	r.Parent = v
	return nil
}

func parseAuditOnlyAnnotation(r *Request, v string) error {
	b, err := policy.ParseBool(v)
	if err != nil {
		return errors.New("want true|false")
	}
	r.AuditOnly = b
	return nil
}

func parseToolGroupsAnnotation(r *Request, v string) error {
	if len(v) > 1024 || strings.ContainsAny(v, "\x00\n\r") {
		return errors.New("tool groups must be one line of at most 1024 bytes")
	}
	r.ToolGroups = v
	return nil
}

func parseProxyAllowAnnotation(r *Request, v string) error {
	if _, err := egress.ParseAllowList(v); err != nil {
		return err
	}
	r.ProxyAllow = &v
	return nil
}

func parseAllowConnectAnnotation(r *Request, v string) error {
	parts, err := endpoint.SplitAnnotation(v)
	if err == nil {
		_, err = endpoint.ParseList(parts)
	}
	if err != nil {
		return err
	}
	r.AllowConnect = v
	return nil
}

func parseWriteRootsAnnotation(r *Request, v string) error {
	roots, err := policy.ParseWriteRoots(v)
	if err != nil {
		return err
	}
	r.WriteRoots = roots
	return nil
}

func parseAllowDevicesAnnotation(r *Request, v string) error {
	parts, err := devallow.SplitAnnotation(v)
	if err == nil {
		_, err = devallow.ParseList(parts)
	}
	if err != nil {
		return err
	}
	r.AllowDevices = parts
	return nil
}

func parseExecAllowAnnotation(r *Request, v string) error {
	files, err := ParseExecAllow(v)
	if err != nil {
		return err
	}
	r.ExecAllow = files
	return nil
}

// mergeCeilingFields refuses stray bare ceiling keys and merges the
// per-field ceiling annotations into r.Ceiling (MergeCeiling).
func mergeCeilingFields(r *Request, ann map[string]string) error {
	if err := strayCeilingKeys(ann); err != nil {
		return fmt.Errorf("%w: %w", ErrBadAnnotation, err)
	}
	fields := ceilingFields(ann)
	if fields == nil {
		return nil
	}
	merged, err := MergeCeiling(r.Ceiling, fields)
	if err != nil {
		return fmt.Errorf("%w: %s and %s<field>: %w", ErrBadAnnotation, AnnotationCeiling, AnnotationPrefix, err)
	}
	r.Ceiling = merged
	return nil
}

// MiscasedAnnotation reports whether key looks like an enforcerd
// annotation without being spelled like one: it does not start with
// AnnotationPrefix, but does in another letter case (so it also equals a
// known key in another case, e.g. "Enforcerd.io/ceiling"): ASCII case,
// Unicode case folding, or Unicode lower-casing (U+0130 lower-cases to
// "i"), so that no spelling a reader could take for the prefix is ignored.
func MiscasedAnnotation(key string) bool {
	if strings.HasPrefix(key, AnnotationPrefix) {
		return false
	}
	if len(key) >= len(AnnotationPrefix) && policy.EqualFoldASCII(key[:len(AnnotationPrefix)], AnnotationPrefix) {
		return true
	}
	head := []rune(key)
	if n := utf8.RuneCountInString(AnnotationPrefix); len(head) > n {
		head = head[:n]
	}
	return strings.EqualFold(string(head), AnnotationPrefix) || strings.HasPrefix(strings.ToLower(key), AnnotationPrefix)
}

// DecodeSpec reads a bundle's config.json from r. Errors wrap ErrBadConfig:
// r is larger than MaxConfigBytes, not one JSON object, or has a key
// CheckKeys finds ambiguous (given twice, or folding to a runtime-spec
// field it does not spell exactly: runc's encoding/json and crun or youki
// would read such a spec differently, e.g. root.readonly).
func DecodeSpec(r io.Reader) (*specs.Spec, error) {
	var spec specs.Spec
	b, err := io.ReadAll(io.LimitReader(r, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read: %v", ErrBadConfig, err)
	}
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrBadConfig, MaxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the config object", ErrBadConfig)
	}
	if err := CheckKeys(b, reflect.TypeFor[specs.Spec]()); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	return &spec, nil
}

// Entrypoint reads a bundle's config.json from r and names the container's
// entrypoint as its runtime will execute it, seen from outside the
// container at createRuntime (the init, pid, has not pivoted yet, and its
// rootfs may be mounted only in its mount namespace): process.args[0],
// looked up with the PATH of process.env (the last PATH= entry, as runc
// sets them in order) and relative to process.cwd, inside root.path
// (relative to bundle when not absolute) under /proc/PID/root. Errors wrap
// ErrBadConfig: r is not a config DecodeSpec accepts, or process.args or root.path is missing, or bundle is not absolute.
func Entrypoint(r io.Reader, bundle string, pid int) (progcheck.Program, error) {
	spec, err := DecodeSpec(r)
	if err != nil {
		return progcheck.Program{}, err
	}
	if spec.Process == nil || len(spec.Process.Args) == 0 || spec.Process.Args[0] == "" {
		return progcheck.Program{}, fmt.Errorf("%w: no process.args", ErrBadConfig)
	}
	if spec.Root == nil || spec.Root.Path == "" {
		return progcheck.Program{}, fmt.Errorf("%w: no root.path", ErrBadConfig)
	}
	if pid <= 0 {
		return progcheck.Program{}, fmt.Errorf("%w: pid %d", ErrBadConfig, pid)
	}
	rootfs := spec.Root.Path
	if !path.IsAbs(rootfs) {
		if !path.IsAbs(bundle) {
			return progcheck.Program{}, fmt.Errorf("%w: root.path %q is relative and the bundle %q is not absolute", ErrBadConfig, rootfs, bundle)
		}
		rootfs = path.Join(bundle, rootfs)
	}
	p := progcheck.Program{
		Path: spec.Process.Args[0],
		Root: path.Join("/proc", strconv.Itoa(pid), "root", path.Clean(rootfs)),
		Cwd:  spec.Process.Cwd,
	}
	for _, e := range spec.Process.Env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			p.EnvPath = v
		}
	}
	if err := p.Validate(); err != nil {
		return progcheck.Program{}, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	return p, nil
}
