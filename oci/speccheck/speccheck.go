// Package speccheck decides which parts of a kernel ceiling an OCI
// container's runtime spec (its bundle's config.json) enforces by itself,
// for hosts without BPF LSM: a read-only container closes write=false, a
// private network namespace with a seccomp filter that denies every socket
// family but AF_UNIX closes the socket families the cgroup-BPF layer does
// not see. The OCI hook runs Check before it registers a container; the
// daemon credits what it reports as the mechanism "container-spec"
// (coverage.MechContainerSpec). The rules and the reason for each are in
// docs/no-bpf-lsm.md, "Containers".
//
// Check is pure: it reads the spec (and the few host facts Options gives)
// and nothing else. It does not see what the runtime does beyond the spec
// (mounts placed beneath root.path before the runtime starts, descriptors
// the runtime hands the container); the coverage keeps those as partial
// gaps.
//
// Layering (docs/design.md): layer 3; it may import policy/, entry/ and
// coverage/, and of other modules no cilium/ebpf, not even through its
// imports.
package speccheck

import (
	"fmt"
	"path"
	"runtime"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/policy"
)

// Rules (Missing.Rule): the stable names of what a spec must give.
const (
	RuleRootReadonly   = "root-readonly"     // write: root.readonly true
	RuleMountNamespace = "mount-namespace"   // write: a new mount namespace
	RuleMountReadonly  = "mount-readonly"    // write: every mount read-only (recursively for rbind)
	RuleCapSysAdmin    = "cap-sys-admin"     // write, network: CAP_SYS_ADMIN in no capability set
	RuleDevices        = "devices"           // write: the device cgroup denies writes to all but harmless character devices
	RuleNetNamespace   = "network-namespace" // network: a new network namespace
	RuleSeccomp        = "seccomp"           // network: the filter denies socket/socketpair but AF_UNIX, and io_uring_setup
	RuleArchitectures  = "architectures"     // network: the filter admits the native ABI only
	RuleHostSockets    = "host-sockets"      // network: no bind mount of a host socket or a directory of them
	RulePIDNamespace   = "pid-namespace"     // write, network: a new PID namespace, no host /proc bound in
)

// WriteRules are the rules a spec must give for write=false, in the order
// Check reports them (docs/no-bpf-lsm.md "Containers", write=false).
var WriteRules = []string{RuleRootReadonly, RuleMountNamespace, RulePIDNamespace, RuleMountReadonly, RuleCapSysAdmin, RuleDevices}

// NetworkRules are the rules a spec must give for network=false, in the
// order Check reports them (docs/no-bpf-lsm.md "Containers",
// network=false).
var NetworkRules = []string{RuleNetNamespace, RulePIDNamespace, RuleCapSysAdmin, RuleArchitectures, RuleSeccomp, RuleHostSockets}

// Missing is one thing the spec does not give for a restricted field.
type Missing struct {
	// Field is the ceiling field: "write" or "network".
	Field string `json:"field"`
	// Rule is one of the Rule* names.
	Rule string `json:"rule"`
	// Detail names the spec element that fails it (a mount's destination,
	// a capability set, a system call).
	Detail string `json:"detail"`
}

func (m Missing) String() string { return m.Field + ": " + m.Rule + ": " + m.Detail }

// Options are the host facts Check needs besides the spec.
type Options struct {
	// Arch is the host's GOARCH (default runtime.GOARCH): the seccomp
	// filter must admit only its native ABI.
	Arch string
	// WriteRoots are the ceiling's writable roots (absolute paths inside
	// the container): a read-write mount at or beneath one is allowed,
	// and reported in Result.WritableMounts.
	WriteRoots []string
	// IsSocket reports whether a bind mount's source (a host path) is a
	// socket; nil: not asked (only the names in hostSocketDirs refuse).
	IsSocket func(path string) bool
}

// Result is what Check found.
type Result struct {
	// Credited are the gap codes the spec closes: coverage.GapWrite when
	// it gives every write rule, coverage.GapNetworkNonInet (and
	// coverage.GapNetwork) when it gives every network rule; only for
	// fields the ceiling restricts.
	Credited []string
	// Missing is what it lacks, per restricted field, in rule order.
	Missing []Missing
	// WritableMounts are the destinations of read-write mounts allowed
	// because they are at or beneath a writable root: the credit for
	// write holds only while those roots do (the daemon checks them
	// against the registration's roots).
	WritableMounts []string
}

// Fields reports whether the result credits each field.
func (r Result) Fields() (write, network bool) {
	for _, c := range r.Credited {
		switch c {
		case coverage.GapWrite:
			write = true
		case coverage.GapNetworkNonInet:
			network = true
		}
	}
	return write, network
}

// MissingFor is the Missing of field, joined for a message ("" if none).
func (r Result) MissingFor(field string) string {
	var s []string
	for _, m := range r.Missing {
		if m.Field == field {
			s = append(s, m.Rule+": "+m.Detail)
		}
	}
	return strings.Join(s, "; ")
}

// Check reports which restricted fields of ceiling the spec enforces by
// itself (see the package doc). A nil spec, or one without a linux
// section, gives nothing. shell=none and shell=read_only get nothing from
// a spec: no spec element restricts exec to a list of programs.
func Check(spec *specs.Spec, ceiling policy.KernelCeiling, o Options) Result {
	var r Result
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if !ceiling.Write {
		ms, writable := checkWrite(spec, o)
		if len(ms) == 0 {
			r.Credited = append(r.Credited, coverage.GapWrite)
			r.WritableMounts = writable
		}
		r.Missing = append(r.Missing, ms...)
	}
	if !ceiling.Network {
		ms := checkNetwork(spec, o)
		if len(ms) == 0 {
			r.Credited = append(r.Credited, coverage.GapNetwork, coverage.GapNetworkNonInet)
		}
		r.Missing = append(r.Missing, ms...)
	}
	return r
}

func missingf(field, rule, format string, a ...any) Missing {
	return Missing{Field: field, Rule: rule, Detail: fmt.Sprintf(format, a...)}
}

// privateNamespace checks that the spec asks for a new namespace of type
// t: present in linux.namespaces without a path (a path joins an existing
// namespace, which may be the host's: that cannot be told cheaply).
func privateNamespace(spec *specs.Spec, field, rule string, t specs.LinuxNamespaceType) []Missing {
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type != t {
			continue
		}
		if ns.Path != "" {
			return []Missing{missingf(field, rule, "linux.namespaces joins the %s namespace at %s: a namespace that may be shared cannot be verified", t, ns.Path)}
		}
		return nil
	}
	return []Missing{missingf(field, rule, "linux.namespaces has no %s namespace: the container shares the runtime's", t)}
}

// privatePIDs checks that the spec asks for a new PID namespace and binds
// no host /proc in: in the host's PID namespace (or with the host's proc
// file system) /proc/PID/root leads into another process's root, whose
// mounts are not the container's read-only ones, and to the unix sockets
// beneath it; ptrace reaches host processes of the same user. Both hold
// whatever the container's own mounts and network namespace are.
func privatePIDs(spec *specs.Spec, field string) []Missing {
	out := privateNamespace(spec, field, RulePIDNamespace, specs.PIDNamespace)
	for _, m := range spec.Mounts {
		if _, _, bind, _ := mountFlags(m); bind && beneath(cleanDest(m.Source), "/proc") {
			out = append(out, missingf(field, RulePIDNamespace, "mount %s binds %s, the host's proc file system: /proc/PID/root of host processes leads out of the container", cleanDest(m.Destination), cleanDest(m.Source)))
		}
	}
	return out
}

// noCapSysAdmin checks that CAP_SYS_ADMIN is in no capability set: remount
// (and setns into another network namespace) needs it. Every set counts:
// exec recomputes permitted from bounding, inheritable and ambient. No
// process.capabilities at all leaves the runtime's full set.
func noCapSysAdmin(spec *specs.Spec, field string) []Missing {
	if spec.Process == nil || spec.Process.Capabilities == nil {
		return []Missing{missingf(field, RuleCapSysAdmin, "process.capabilities is absent: the runtime keeps every capability, CAP_SYS_ADMIN included")}
	}
	c := spec.Process.Capabilities
	var out []Missing
	for _, set := range []struct {
		name string
		caps []string
	}{{"bounding", c.Bounding}, {"effective", c.Effective}, {"permitted", c.Permitted}, {"inheritable", c.Inheritable}, {"ambient", c.Ambient}} {
		for _, cp := range set.caps {
			if strings.EqualFold(cp, "CAP_SYS_ADMIN") || strings.EqualFold(cp, "SYS_ADMIN") || strings.EqualFold(cp, "ALL") {
				out = append(out, missingf(field, RuleCapSysAdmin, "process.capabilities.%s has %s: it can remount a mount read-write (and enter other namespaces)", set.name, cp))
				break
			}
		}
	}
	return out
}

// cleanDest is a mount destination or root path, cleaned, absolute.
func cleanDest(p string) string { return path.Clean("/" + p) }

// beneath reports whether p is dir or a path beneath it.
func beneath(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
