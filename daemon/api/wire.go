package api

import (
	"time"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/ownterm"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// The types below are the API's JSON and nothing else. The registry takes
// a registry.Request and keeps state.Container, whose JSON is the state
// file's; the conversions at the end of this file are the only place the
// two meet, so the wire and the state file can change separately
// (testdata/wire.golden pins the wire byte for byte). Values of the policy
// core (policy.Ceiling, policy.KernelCeiling, policy.Surface) and the
// enforcer's reports (coverage.Field, coverage.HookStatus) travel
// in their own JSON form.

// Activation says when a registered ceiling takes effect
// (RegisterRequest.Activate).
type Activation string

const (
	// ActivateNow: in force when the registration returns (the default).
	ActivateNow Activation = "now"
	// ActivateExec: pending until the first exec in the cgroup's subtree
	// (an OCI container registered at createRuntime).
	ActivateExec Activation = "exec"
)

// RegisterRequest is the body of POST /v1/containers (registry.Request).
type RegisterRequest struct {
	ID string `json:"id"`
	// Cgroup is the group path below the cgroup2 mount ("/machine.slice/x");
	// or give PID and the daemon reads /proc/PID/cgroup. With both, they
	// must agree.
	Cgroup string `json:"cgroup,omitempty"`
	PID    int    `json:"pid,omitempty"`
	// Role is a role name policy.LookupRole accepts; "" (absent) is the
	// general default.
	Role       string `json:"role,omitempty"`
	Ceiling    string `json:"ceiling,omitempty"`
	Parent     string `json:"parent,omitempty"`
	AuditOnly  bool   `json:"audit_only,omitempty"`
	ToolGroups string `json:"tool_groups,omitempty"`
	// ProxyAllow narrows the egress proxy's domain allow list for this
	// container: comma-separated domain patterns, or "none"
	// (egress.ParseAllowList). Absent: the proxy's global list.
	ProxyAllow *string    `json:"proxy_allow,omitempty"`
	Activate   Activation `json:"activate,omitempty"` // default now
	// InitPID (only with Activate exec) is the container runtime's init,
	// the only process that may be in the cgroup while the registration is
	// pending.
	InitPID int `json:"init_pid,omitempty"`
	// SetupProgram (only with Activate exec; cgroup below the machine's
	// own, as <machine>/payload): absolute path of the program whose not
	// yet exec'd processes set the container up in the cgroup before its
	// first exec (systemd-nspawn). A process still running that file and
	// descended from one running it beside the cgroup (nspawn's
	// supervisor) is no intruder while the registration is pending
	// (registry.Request.SetupProgram).
	SetupProgram string `json:"setup_program,omitempty"`
	// Entrypoint is the program the first exec will run; required when
	// Activate is exec and the effective ceiling is shell=none.
	Entrypoint *Entrypoint `json:"entrypoint,omitempty"`
	// AllowConnect: under network=false, endpoints the container may
	// still reach: "tcp:IP:PORT", "udp:IP:PORT" ("[IPv6]:PORT"),
	// "unix:/PATH" (resolved inside entrypoint.root when given, else on
	// the daemon's host), at most 16 (registry.Request.AllowConnect).
	AllowConnect []string `json:"allow_connect,omitempty"`
	// WriteRoots: with write=false, absolute paths beneath which writes
	// stay allowed (at most 16), resolved inside the registered process's
	// root: entrypoint.root when given, else /proc/PID/root, else "/".
	WriteRoots []string `json:"write_roots,omitempty"`
	// ExecAllow: with the effective ceiling shell=none, absolute paths of
	// the files processes in the cgroup may execute besides the
	// entrypoint (at most registry.MaxExecAllow = 16), resolved like
	// write_roots and kept by identity (device + inode). Malformed, or
	// given when the effective shell is not none: 400 "bad_request"; a
	// shell, a multi-call binary, the dynamic loader, or a file that
	// cannot be classified: 422 "unsafe_program".
	ExecAllow []string `json:"exec_allow,omitempty"`
	// ContainerSpec: what the container's runtime spec enforces by itself
	// (the OCI hook's reading of its bundle's config.json,
	// oci/speccheck); credited on a host without BPF LSM
	// (registry.Request.Spec, docs/no-bpf-lsm.md "Containers").
	ContainerSpec *coverage.SpecLayer `json:"container_spec,omitempty"`
	// AllowDevices: device nodes processes in the cgroup may use besides
	// the null-like devices and their own terminals, under every
	// ceiling: "c MAJOR:MINOR", "b MAJOR:MINOR" or an absolute path to a
	// device node (resolved like write_roots), at most 16, no
	// duplicates (registry.Request.AllowDevices). Met with the lists of
	// the registrations it is nested in.
	AllowDevices []string `json:"allow_devices,omitempty"`
	// OwnTerminals: whose terminals the sandbox owns (its stdio and
	// controlling terminal, ownterm): "client", the process
	// that sent this request (enforcerd run: CMD inherits its stdio);
	// "init", init_pid (the OCI hook: the runtime's init); absent or
	// "none": no terminal (every terminal is then a host device).
	OwnTerminals string `json:"own_terminals,omitempty"`
	// DenyConsoleEgress: under network=false, refuse an own terminal
	// that leaves the machine (the console, a serial line). The
	// daemon's deny_console_egress sets it for every registration.
	DenyConsoleEgress bool `json:"deny_console_egress,omitempty"`
	// CeilingFields gives ceiling fields one by one (the JSON form of
	// the enforcerd.io/network, ... annotations), merged with Ceiling by
	// oci.MergeCeiling: a field both give must agree, else 422
	// "ceiling_conflict"; a malformed value is 400.
	CeilingFields *CeilingFields `json:"ceiling_fields,omitempty"`
}

// CeilingFields are ceiling fields given one by one, each a value as the
// ceiling text takes it (policy.ParseCeiling); absent: not given.
type CeilingFields struct {
	Network *string `json:"network,omitempty"`
	Write   *string `json:"write,omitempty"`
	Shell   *string `json:"shell,omitempty"`
	Tools   *string `json:"tools,omitempty"`
	Depth   *string `json:"depth,omitempty"`
}

// Map is f keyed by ceiling key (policy.CeilingKeys), the given fields
// only (nil f: nil).
func (f *CeilingFields) Map() map[string]string {
	if f == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range map[string]*string{"network": f.Network, "write": f.Write, "shell": f.Shell, "tools": f.Tools, "depth": f.Depth} {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// Values of RegisterRequest.OwnTerminals.
const (
	OwnTerminalsNone   = "none"
	OwnTerminalsClient = "client"
	OwnTerminalsInit   = "init"
)

// Entrypoint names a container's entrypoint as the daemon resolves it
// (progcheck.Program).
type Entrypoint struct {
	// Path is process.args[0]: absolute, relative to Cwd, or a bare name
	// looked up in EnvPath.
	Path string `json:"path"`
	// Root is the host path of the directory the process sees as "/".
	Root    string `json:"root"`
	EnvPath string `json:"env_path,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
}

// Gap is one part of a ceiling the host does not enforce (coverage.Gap).
type Gap struct {
	Code   string `json:"code"`
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

func (g Gap) String() string { return g.Code + ": " + g.Detail }

// Container is a registered container: the body of a registration,
// narrowing or GET /v1/containers/{id} response.
type Container struct {
	ID       string `json:"id"`
	Cgroup   string `json:"cgroup"`
	CgroupID uint64 `json:"cgroup_id"`
	Role     string `json:"role,omitempty"`
	// Session is the ceiling the role was resolved in; Ceiling the
	// effective ceiling; Kernel its kernel form.
	Session     policy.Ceiling       `json:"session"`
	Ceiling     policy.Ceiling       `json:"ceiling"`
	Kernel      policy.KernelCeiling `json:"kernel"`
	Fingerprint string               `json:"fingerprint"`
	Parent      string               `json:"parent,omitempty"`
	AuditOnly   bool                 `json:"audit_only"`
	ToolGroups  string               `json:"tool_groups,omitempty"`
	// ProxyAllow is the canonical proxy_allow list ([] for "none"),
	// absent when none was given.
	ProxyAllow *[]string `json:"proxy_allow,omitempty"`
	Registered time.Time `json:"registered"`
	InitPID    int       `json:"init_pid,omitempty"`
	InitStart  uint64    `json:"init_start,omitempty"`
	// SetupProgram is the registration's setup program (path), if any.
	SetupProgram string `json:"setup_program,omitempty"`
	// Activation is "immediate" or "at-exec" (state.Activation*);
	// ActivationReason says why an at-exec request is in force without an
	// exec, or why it was frozen or killed.
	Activation       string `json:"activation,omitempty"`
	ActivationReason string `json:"activation_reason,omitempty"`
	// State is one of state.StatePending, StateActive, StateFrozen,
	// StateKilled.
	State           string     `json:"state,omitempty"`
	PendingDeadline *time.Time `json:"pending_deadline,omitempty"`
	// Unenforced: what the host does not enforce of Kernel (partial
	// coverage the daemon allows, or an audit-only registration).
	Unenforced []Gap       `json:"unenforced,omitempty"`
	Entrypoint *Entrypoint `json:"entrypoint,omitempty"`
	// AllowConnect: the endpoints reachable under network=false, as
	// accepted (met with the parent's list).
	AllowConnect []string `json:"allow_connect,omitempty"`
	// WriteRoots: the paths of the writable roots, as requested.
	WriteRoots []string `json:"write_roots,omitempty"`
	// ExecAllow: with shell=none, the paths of the files processes in the
	// cgroup may execute (besides an entrypoint taken at the first exec),
	// as requested and met with the lists of the registrations it is
	// nested in (by parent id or cgroup).
	ExecAllow []string `json:"exec_allow,omitempty"`
	// ExecInterp: with shell=none, the program interpreters (ELF
	// PT_INTERP paths) vetted as dynamic loaders for the entrypoint and
	// the exec_allow files: the only files besides those that processes
	// in the cgroup may open for exec, and only as interpreters.
	ExecInterp []string `json:"exec_interp,omitempty"`
	// AllowDevices: the device allow list as accepted (met with the
	// lists of the registrations it is nested in): "c 226:128", with the
	// path it was resolved from, "c 226:128 (/dev/dri/renderD128)".
	AllowDevices []string `json:"allow_devices,omitempty"`
	// Terminals: the own terminals declared at registration, "c 4:64",
	// a pty slave with its devpts instance "c 136:3 (devpts 0:25)".
	Terminals []string `json:"terminals,omitempty"`
	// DenyConsoleEgress: under network=false an own terminal that leaves
	// the machine is refused.
	DenyConsoleEgress bool `json:"deny_console_egress,omitempty"`
}

// ListBody is the body of GET /v1/containers.
type ListBody struct {
	Containers []Container `json:"containers"`
}

// NarrowRequest is the body of POST /v1/containers/{id}/narrow.
type NarrowRequest struct {
	Ceiling string `json:"ceiling"`
}

// UnregisterBody is the body of DELETE /v1/containers/{id}.
type UnregisterBody struct {
	Unregistered string `json:"unregistered"`
}

// DenialsBody is the body of GET /v1/denials/recent: audit records,
// oldest first; [] when there are none.
type DenialsBody struct {
	Denials []audit.Record `json:"denials"`
}

// ErrorBody is the JSON of every error response.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// Readiness is the body of GET /v1/ready (200 when Ready, else 503): the
// daemon's readiness, the one the metrics listener's /readyz serves.
// Missing names each part not ready, "PART: why" with PART one of pins
// (the programs and maps adopted, the host policy set), state (the state
// file reconciled) and api (the socket served); empty when Ready.
type Readiness struct {
	Ready   bool     `json:"ready"`
	Missing []string `json:"missing"`
}

// Status is the body of GET /v1/status. The fields are in name order:
// the body was a JSON object with sorted keys before it had a type.
type Status struct {
	ActivateAtExec bool             `json:"activate_at_exec"`
	AllowPartial   bool             `json:"allow_partial"`
	Containers     int              `json:"containers"`
	Coverage       []coverage.Field `json:"coverage"`
	Hooks          []HookStatus     `json:"hooks"`
	LostRecords    uint64           `json:"lost_records"`
	PID            int              `json:"pid"`
	// PinDir is the daemon's pin directory: it reads the denial records
	// of the programs pinned there.
	PinDir  string `json:"pin_dir"`
	Version string `json:"version"`
}

// HookStatus is one eBPF program's state in Status.
type HookStatus struct {
	// Program is its name in the objects, e.g. "inode_setattr_pre63".
	Program string `json:"program"`
	// Hook is what it attaches to: the LSM hook or tracepoint as the
	// kernel names it ("file_open", "sched_process_exec"), or the section
	// of a cgroup-BPF or fentry program ("cgroup/connect4").
	Hook string `json:"hook"`
	// Layer is "bpf-lsm", "cgroup-bpf" or "lifecycle".
	Layer    string `json:"layer"`
	Attached bool   `json:"attached"`
	// Adopted: re-adopted from a pin of this build.
	Adopted bool `json:"adopted,omitempty"`
	// Optional: the hook does not exist on every kernel.
	Optional bool `json:"optional,omitempty"`
	// Error says why it is not attached.
	Error string `json:"error,omitempty"`
}

// HooksFrom is the wire form of the enforcer's hook states.
func HooksFrom(hs []coverage.HookStatus) []HookStatus {
	out := make([]HookStatus, 0, len(hs))
	for _, h := range hs {
		out = append(out, HookStatus{Program: h.Program, Hook: h.Name, Layer: string(h.Layer), Attached: h.Attached,
			Adopted: h.Adopted, Optional: h.Optional, Error: h.Err})
	}
	return out
}

// EntrypointFrom is the wire form of a program (nil for nil).
func EntrypointFrom(p *progcheck.Program) *Entrypoint {
	if p == nil {
		return nil
	}
	return &Entrypoint{Path: p.Path, Root: p.Root, EnvPath: p.EnvPath, Cwd: p.Cwd}
}

func (e *Entrypoint) program() *progcheck.Program {
	if e == nil {
		return nil
	}
	return &progcheck.Program{Path: e.Path, Root: e.Root, EnvPath: e.EnvPath, Cwd: e.Cwd}
}

// request is r as the registry takes it; an Activate value other than now
// and exec passes through for the registry to refuse.
func (r RegisterRequest) request() registry.Request {
	return registry.Request{
		ID: r.ID, Cgroup: r.Cgroup, PID: r.PID, Role: r.Role, Ceiling: r.Ceiling, Parent: r.Parent,
		AuditOnly: r.AuditOnly, ToolGroups: r.ToolGroups, ProxyAllow: r.ProxyAllow, Activate: registry.Activation(r.Activate),
		InitPID: r.InitPID, SetupProgram: r.SetupProgram, Entrypoint: r.Entrypoint.program(), AllowConnect: r.AllowConnect, WriteRoots: r.WriteRoots,
		ExecAllow: r.ExecAllow, Spec: r.ContainerSpec,
		AllowDevices: r.AllowDevices, TerminalsOfInit: r.OwnTerminals == OwnTerminalsInit,
		DenyConsoleEgress: r.DenyConsoleEgress,
	}
}

// containerFrom is the wire form of a registered container.
func containerFrom(c state.Container) Container {
	return Container{
		ID: c.ID, Cgroup: c.Cgroup, CgroupID: c.CgroupID, Role: c.Role,
		Session: c.Session, Ceiling: c.Ceiling, Kernel: c.Kernel, Fingerprint: c.Fingerprint,
		Parent: c.Parent, AuditOnly: c.AuditOnly, ToolGroups: c.ToolGroups, ProxyAllow: c.ProxyAllow, Registered: c.Registered,
		InitPID: c.InitPID, InitStart: c.InitStart, SetupProgram: setupPath(c.SetupProgram),
		Activation: c.Activation, ActivationReason: c.ActivationReason,
		State: c.State, PendingDeadline: c.PendingDeadline,
		Unenforced: gapsFrom(c.Unenforced), Entrypoint: EntrypointFrom(c.Entrypoint),
		AllowConnect:      endpointStrings(c.AllowConnect),
		WriteRoots:        writeRootPaths(c.WriteRoots),
		ExecAllow:         execAllowPaths(c.ExecAllow),
		ExecInterp:        execAllowPaths(c.ExecInterp),
		AllowDevices:      deviceStrings(c.AllowDevices),
		Terminals:         terminalStrings(c.Terminals),
		DenyConsoleEgress: c.DenyConsoleEgress,
	}
}

// deviceStrings is the wire form of a device allow list (nil: omitted).
func deviceStrings(ds []devallow.Device) []string {
	if len(ds) == 0 {
		return nil
	}
	return devallow.Strings(ds)
}

// terminalStrings is the wire form of own terminals (nil: omitted).
func terminalStrings(ts []state.Terminal) []string {
	out := make([]entry.Terminal, len(ts))
	for i, t := range ts {
		out[i] = entry.Terminal{Dev: t.Dev, PtsDev: t.PtsDev}
	}
	return ownterm.Strings(out)
}

// setupPath is the wire form of a setup program ("" for none).
func setupPath(f *state.ExecFile) string {
	if f == nil {
		return ""
	}
	return f.Path
}

// containersFrom converts a list; never nil (the list is [], not null).
func containersFrom(cs []state.Container) []Container {
	out := make([]Container, 0, len(cs))
	for _, c := range cs {
		out = append(out, containerFrom(c))
	}
	return out
}

// endpointStrings is the wire form of a list (nil stays nil: omitted).
func endpointStrings(es []endpoint.Endpoint) []string {
	if len(es) == 0 {
		return nil
	}
	return endpoint.Strings(es)
}

func gapsFrom(gs []coverage.Gap) []Gap {
	if gs == nil {
		return nil
	}
	out := make([]Gap, len(gs))
	for i, g := range gs {
		out[i] = Gap{Code: g.Code, Field: g.Field, Detail: g.Detail}
	}
	return out
}

// writeRootPaths are the paths of a container's writable roots.
func writeRootPaths(rs []state.WriteRoot) []string {
	if len(rs) == 0 {
		return nil
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Path
	}
	return out
}

// execAllowPaths are the paths of a container's exec allow list.
func execAllowPaths(fs []state.ExecFile) []string {
	if len(fs) == 0 {
		return nil
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Path
	}
	return out
}
