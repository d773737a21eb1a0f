// Package state persists the daemon's registered containers in one JSON file
// (/var/lib/enforcerd/state.json by default), written atomically: a temporary
// file in the same directory, fsync, rename over the old file, fsync of the
// directory. A crash at any point leaves either the old or the new file,
// never a torn one.
//
// The state file is the daemon's memory of *which container* owns each
// cgroup and how its ceiling was derived; enforcement itself lives in the
// pinned BPF map and never depends on this file.
//
// Layering (docs/design.md): layer 4; it may import policy/,
// internal/failpoint/, endpoint/, devallow/, progcheck/, entry/, coverage/
// and oci/, and of other modules no cilium/ebpf, not even through its
// imports.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/internal/failpoint"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// fileVersion is the version of the file format.
const fileVersion = 1

// DefaultPath is where the daemon keeps its state.
const DefaultPath = "/var/lib/enforcerd/state.json"

// Container is one registered container.
type Container struct {
	ID       string `json:"id"`
	Cgroup   string `json:"cgroup"` // group path below the cgroup2 mount
	CgroupID uint64 `json:"cgroup_id"`
	Role     string `json:"role,omitempty"`
	// Session is the ceiling the role was resolved in: the parent's
	// effective ceiling (or the default session), met with the effective
	// ceilings of the registered cgroups above this one, clamped by the
	// requested ceiling text; and clamped again whenever an ancestor (by
	// parent id or by cgroup) is narrowed or registered later.
	Session policy.Ceiling `json:"session"`
	// Ceiling is the effective ceiling (role's request clamped to Session).
	Ceiling     policy.Ceiling       `json:"ceiling"`
	Kernel      policy.KernelCeiling `json:"kernel"`
	Fingerprint string               `json:"fingerprint"`
	Parent      string               `json:"parent,omitempty"`
	AuditOnly   bool                 `json:"audit_only"`
	ToolGroups  string               `json:"tool_groups,omitempty"`
	// ProxyAllow is the container's canonical proxy_allow list ([] for
	// none): the egress proxy's global domain allow list is narrowed to
	// it for clients in this container's cgroup subtree. nil: not given.
	ProxyAllow *[]string `json:"proxy_allow,omitempty"`
	Registered time.Time `json:"registered"`
	// InitPID is the container runtime's init process, which may be in
	// the cgroup while the registration is pending (0: none), and
	// InitStart its start time (clock ticks after boot), so that a reused
	// pid is never taken for it.
	InitPID   int    `json:"init_pid,omitempty"`
	InitStart uint64 `json:"init_start,omitempty"`
	// SetupProgram is the file whose not yet exec'd processes, descended
	// from a process running it beside the cgroup, may be in the cgroup
	// while the registration is pending (registry.Request.SetupProgram;
	// nil: none).
	SetupProgram *ExecFile `json:"setup_program,omitempty"`
	// Activation is "immediate" (in force when the registration returned)
	// or "at-exec" (pending until the first exec in the cgroup subtree);
	// ActivationReason says why a registration that asked for activation
	// at exec was put in force without one, or why it was frozen/killed.
	Activation       string `json:"activation,omitempty"`
	ActivationReason string `json:"activation_reason,omitempty"`
	// State is StatePending, StateActive, StateFrozen or StateKilled.
	State string `json:"state,omitempty"`
	// PendingDeadline: when a registration still pending is frozen (only
	// while State is StatePending).
	PendingDeadline *time.Time `json:"pending_deadline,omitempty"`
	// Unenforced lists what this host does not enforce of Kernel: set
	// only when the daemon's configuration allows partial coverage (or for
	// an audit-only registration); empty when the ceiling is enforced in
	// full.
	Unenforced []coverage.Gap `json:"unenforced,omitempty"`
	// Entrypoint is the registration's entrypoint as given (nil: none),
	// kept so that narrowing a pending registration to shell=none can
	// vet it.
	Entrypoint *progcheck.Program `json:"entrypoint,omitempty"`
	// AllowConnect: under network=false, the endpoints the container may
	// still reach as accepted (unix endpoints with the socket file's
	// identity; entry.Entry.AllowConnect), met with the parent's.
	AllowConnect []endpoint.Endpoint `json:"allow_connect,omitempty"`
	// WriteRoots: with write=false, the directories beneath which writes
	// stay allowed, as requested and as identified at registration (the
	// kernel matches the identity; docs/design.md "Writable roots").
	WriteRoots []WriteRoot `json:"write_roots,omitempty"`
	// ShmDir: the container's POSIX shared memory directory (its
	// /dev/shm, the root of a tmpfs) as identified at registration
	// (entry.Entry.ShmDir); nil: none could be (its files are written
	// like any other).
	ShmDir *FileID `json:"shm_dir,omitempty"`
	// ExecAllow: with shell=none, the files processes in the cgroup may
	// execute (besides an entrypoint taken at the first exec), as
	// requested and as identified at registration, met with the lists of
	// the registrations it is nested in (the kernel matches the identity;
	// docs/api.md "exec_allow"). Re-installed with the entry.
	ExecAllow []ExecFile `json:"exec_allow,omitempty"`
	// ExecInterp: with shell=none, the program interpreters (ELF
	// PT_INTERP) vetted as dynamic loaders for the entrypoint, the
	// ExecAllow files and those of the registrations it is nested in, as
	// named by the ELF files and identified at vetting: the kernel lets
	// them be opened for exec as interpreters only
	// (entry.Entry.ExecInterp). Re-installed with the entry.
	ExecInterp []ExecFile `json:"exec_interp,omitempty"`
	// Spec: what the container's runtime spec enforces by itself, as
	// registered (entry.Entry.Spec), kept so that a later narrowing
	// judges coverage the same way.
	Spec *coverage.SpecLayer `json:"spec,omitempty"`
	// AllowDevices: the device nodes processes in the cgroup may use
	// besides the null-like devices and their own terminals, under every
	// ceiling, as requested (a path entry with the number it resolved to
	// at registration) and met with the lists of the registrations it is
	// nested in (entry.Entry.AllowDevices; docs/design.md "Device
	// allow list"). Re-installed with the entry.
	AllowDevices []devallow.Device `json:"allow_devices,omitempty"`
	// Terminals: the sandbox's own terminals, declared at registration
	// (ownterm; entry.Entry.Terminals). Re-installed with the
	// entry.
	Terminals []Terminal `json:"terminals,omitempty"`
	// DenyConsoleEgress: under network=false, an own terminal that leaves
	// the machine (the console, a serial line) is refused
	// (entry.Entry.DenyConsoleEgress): asked by the registration, set
	// by the daemon's deny_console_egress, or held by a registration it
	// is nested in.
	DenyConsoleEgress bool `json:"deny_console_egress,omitempty"`
}

// Terminal is one own terminal: its device number and, for a pty slave,
// its devpts instance's device, both in the kernel's encoding
// (major<<20|minor; entry.Terminal).
type Terminal struct {
	Dev    uint32 `json:"dev"`
	PtsDev uint32 `json:"pts_dev,omitempty"`
}

// WriteRoot is one writable root: its path as requested (inside the
// container's root) and its identity, kernel dev_t (major<<20|minor) and
// inode number.
// FileID is a file by identity: kernel dev_t (major<<20|minor) and inode
// number.
type FileID struct {
	Dev uint32 `json:"dev"`
	Ino uint64 `json:"ino"`
}

type WriteRoot struct {
	Path string `json:"path"`
	Dev  uint32 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// ExecFile is one file of an exec allow list: its path as requested
// (inside the registered process's root) and its identity, kernel dev_t
// (major<<20|minor) and inode number.
type ExecFile struct {
	Path string `json:"path"`
	Dev  uint32 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// Activations and states of a Container.
const (
	ActivationImmediate = "immediate"
	ActivationAtExec    = "at-exec"

	// StatePending: registered, not in force until the first exec.
	StatePending = "pending"
	// StateActive: the ceiling is in force.
	StateActive = "active"
	// StateFrozen: the pending deadline passed without an exec; the
	// daemon froze the cgroup (cgroup.freeze) and keeps it frozen.
	StateFrozen = "frozen: pending deadline passed"
	// StateKilled: as StateFrozen, but freezing failed and the daemon
	// killed every process of the cgroup (cgroup.kill).
	StateKilled = "killed: pending deadline passed"
)

// file is the on-disk form.
type file struct {
	Version    int         `json:"version"`
	Containers []Container `json:"containers"`
}

// ErrCorrupt: the file exists but cannot be used. The daemon refuses to start
// rather than forget containers (fail closed); the operator moves it away.
var ErrCorrupt = errors.New("state file corrupt")

// Load reads the state file. A missing file is an empty state. Every field
// is checked (validate.go): a value the daemon would not have written is
// ErrCorrupt naming the container and the field.
func Load(path string) ([]Container, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("state %s: %w: %v", path, ErrCorrupt, err)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("state %s: %w: version %d, want %d", path, ErrCorrupt, f.Version, fileVersion)
	}
	if err := validate(f.Containers); err != nil {
		return nil, fmt.Errorf("state %s: %w: %v", path, ErrCorrupt, err)
	}
	return f.Containers, nil
}

// Save writes the containers atomically (sorted by id, so the file is
// deterministic).
func Save(path string, cs []Container) error {
	sorted := append([]Container(nil), cs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	if sorted == nil {
		sorted = []Container{}
	}
	b, err := json.MarshalIndent(file{Version: fileVersion, Containers: sorted}, "", " ")
	if err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	b = append(b, '\n')
	return writeAtomic(path, b, 0o600)
}

// writeAtomic replaces path with data: temp file, fsync, rename, fsync dir.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state dir %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	tmp := f.Name()
	failpoint.Hit("state.create")
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("state %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("state %s: %w", tmp, err)
	}
	failpoint.Hit("state.write")
	if err := f.Sync(); err != nil {
		return fmt.Errorf("state %s: fsync: %w", tmp, err)
	}
	failpoint.Hit("state.fsync")
	if err := f.Close(); err != nil {
		return fmt.Errorf("state %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	ok = true
	failpoint.Hit("state.rename")
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("state dir %s: fsync: %w", dir, err)
		}
	}
	return nil
}
