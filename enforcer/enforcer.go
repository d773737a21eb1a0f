// Package enforcer loads, attaches and pins enforcerd's eBPF programs, keeps
// the ceiling map, and reads denial records. It is the only package that
// touches BPF objects; callers get a small typed API (Open, Register,
// Unregister, List, NewReader, Close).
//
// Persistence: maps and links are pinned under Options.PinDir
// (/sys/fs/bpf/enforcerd by default), so enforcement stays in force when the
// process that loaded it exits or crashes. Open re-adopts existing pins and
// attaches only what is missing; it never replaces or wipes a pin.
package enforcer

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/policy"
)

// DefaultPinDir is where maps and links are pinned.
const DefaultPinDir = "/sys/fs/bpf/enforcerd"

// MaxCgroupLevel bounds the in-kernel ancestor walk (MAX_CGROUP_LEVEL in
// bpf/enforcerd.h). Register refuses cgroups at this level or deeper, so every
// enforced cgroup is seen by the walk.
const MaxCgroupLevel = 32

// Errors callers test with errors.Is.
var (
	// ErrCannotEnforce: the ceiling needs a hook this host cannot run. The
	// workload must be refused (fail closed) unless the operator opted into
	// audit-only.
	ErrCannotEnforce = errors.New("ceiling cannot be enforced on this host")
	// ErrNotRegistered: no ceiling is registered for the cgroup.
	ErrNotRegistered = errors.New("cgroup not registered")

	// errLayerUnsupported marks a layer this host cannot run at all (as
	// opposed to one that failed to load).
	errLayerUnsupported = errors.New("not supported on this host")
)

// Layer names a family of programs.
type Layer string

// The layers.
const (
	LayerLSM       Layer = "bpf-lsm"    // LSM hooks: network and write
	LayerCgroup    Layer = "cgroup-bpf" // cgroup socket hooks: network (inet only)
	LayerLifecycle Layer = "lifecycle"  // tp_btf/sched_process_exec: activation at exec
)

// Options configures Open.
type Options struct {
	// PinDir holds the pinned maps and links (default DefaultPinDir). It
	// must be on a bpf filesystem; Open mounts bpffs at /sys/fs/bpf if
	// nothing is mounted there.
	PinDir string
	// CgroupMount is the cgroup2 mount point (default: from mountinfo).
	// The cgroup-BPF programs attach at its root.
	CgroupMount string
}

// HookStatus reports one program.
type HookStatus struct {
	Program  string // program name in the object, e.g. "tamper_inode_unlink"
	Name     string // kernel hook or attach name, e.g. "file_open"
	Layer    Layer
	Attached bool
	Adopted  bool   // re-adopted from an existing pin
	Optional bool   // the hook does not exist on every kernel
	Err      string // why it is not attached
}

// Entry is what is registered for one cgroup.
type Entry struct {
	Ceiling policy.KernelCeiling
	// AuditOnly records would-be denials and allows the operation.
	AuditOnly bool
	// Pending: registered but not yet in force; the first exec in the
	// cgroup's subtree activates it (the container's entrypoint), and under
	// shell=none that file is added to the allow list.
	Pending bool
	// ExecAllow: with shell=none, the files processes in the cgroup may
	// execute besides the entrypoint, by identity (device + inode).
	ExecAllow []FileID
	// AllowPartial: the caller accepts that this host enforces the ceiling
	// only in part (Coverage.Partial). It is kept with the entry (a flag
	// bit the programs ignore), so Lookup returns it and re-registering a
	// looked-up entry is accepted as it was.
	AllowPartial bool
}

// FileID identifies a file the way the kernel does: the device of its
// filesystem (kernel dev_t encoding, major<<20|minor) and its inode number.
type FileID struct {
	Dev uint32
	Ino uint64
}

// FileIDOf returns the identity of the file at path (symlinks followed:
// the file that would be executed). Errors: the path cannot be stat'ed.
func FileIDOf(path string) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FileID{}, fmt.Errorf("file identity of %s: %w", path, err)
	}
	return FileID{Dev: unix.Major(st.Dev)<<20 | unix.Minor(st.Dev), Ino: st.Ino}, nil
}

// Registration is one row of List.
type Registration struct {
	CgroupID uint64
	Entry    Entry
}

// Enforcer holds the loaded or adopted programs and the shared maps.
type Enforcer struct {
	opts     Options
	ceilings *ebpf.Map
	events   *ebpf.Map
	stats    *ebpf.Map
	config   *ebpf.Map // generation of the ceilings map (bpf/enforcerd.h)
	cache    *ebpf.Map // per-cgroup resolve() results
	// Shell ceiling state (bpf/exec.h); nil when the kernel cannot create
	// task/inode storage maps (then the LSM layer is unavailable too).
	taskFlags     *ebpf.Map
	writtenInodes *ebpf.Map
	execAllow     *ebpf.Map
	since         *ebpf.Map // registration times (bpf/exec.h ceiling_since)
	execMapsErr   error
	// Creators of SysV IPC objects and keys (bpf/ipc.bpf.c), pinned so
	// that records outlive an upgrade.
	ipcOwners *ebpf.Map
	keyOwners *ebpf.Map
	// buildID holds the bpf.BuildID of the programs the pinned links run;
	// stale is true when that is not this build's (the links are replaced).
	buildID  *ebpf.Map
	stale    bool
	links    map[string]link.Link
	replaced []link.Link // links of another build whose pins were taken over
	hooks    []HookStatus
	layerErr map[Layer]error
}

// Bits of struct ceiling in bpf/enforcerd.h.
const (
	denyNetwork     = 1 << 0
	denyWrite       = 1 << 1
	denyShell       = 1 << 2
	denyShellWrite  = 1 << 3
	denyTamper      = 1 << 4
	flagAuditOnly   = 1 << 0
	flagPending     = 1 << 1
	flagPartialOK   = 1 << 2
	bpfFSMagic      = 0xcafe4a11
	securityFSMagic = 0x73636673
)

// program describes one program of an object: its name in the object, how it
// attaches, and whether the hook may be absent from the kernel.
type program struct {
	name     string // ELF program name
	hook     string // kernel hook name (LSM) or attach name
	optional bool
	attach   ebpf.AttachType // for cgroup programs
	// params, when non-zero, selects a variant: attach only where the
	// kernel's bpf_lsm_<hook> takes this many parameters (for hooks whose
	// signature changed between kernels).
	params int
}

type object struct {
	layer Layer
	load  func() (*ebpf.CollectionSpec, error)
	progs []program
}

func lsmProgs(names []string, optional ...string) []program {
	opt := map[string]bool{}
	for _, o := range optional {
		opt[o] = true
	}
	ps := make([]program, 0, len(names))
	for _, n := range names {
		ps = append(ps, program{name: n, hook: n, optional: opt[n]})
	}
	return ps
}

var objects = []object{
	{LayerLSM, bpf.LoadNetwork, lsmProgs([]string{
		"socket_create", "socket_bind", "socket_connect", "socket_listen",
		"socket_accept", "socket_sendmsg", "socket_recvmsg",
		"socket_getsockopt", "socket_setsockopt", "socket_shutdown",
		"unix_stream_connect", "unix_may_send"})},
	{LayerLSM, bpf.LoadFile, append(lsmProgs([]string{
		"file_open", "file_permission", "file_truncate", "path_truncate",
		"mmap_file", "file_mprotect", "file_ioctl", "inode_create",
		"inode_link", "inode_unlink", "inode_symlink", "inode_mkdir",
		"inode_rmdir", "inode_mknod", "inode_rename",
		"inode_setxattr", "inode_removexattr", "inode_set_acl",
		"inode_remove_acl", "file_ioctl_compat"},
		// Added in Linux 6.2; 6.1 reaches the same operations through
		// path_truncate and inode_setxattr.
		"file_truncate", "inode_set_acl", "inode_remove_acl",
		// Linux 6.7+: 32-bit ioctls have their own hook; older kernels
		// pass them (with their compat numbers) through file_ioctl.
		"file_ioctl_compat"),
		// inode_setattr gained a struct mnt_idmap * first argument in 6.3.
		program{name: "inode_setattr", hook: "inode_setattr", params: 3},
		program{name: "inode_setattr_pre63", hook: "inode_setattr", params: 2},
	)},
	{LayerLSM, bpf.LoadExec, lsmProgs([]string{"bprm_check_security", "bprm_committed_creds", "task_alloc"})},
	{LayerLSM, bpf.LoadTamper, []program{
		// security_bpf gained a bool kernel argument in 6.9.
		{name: "bpf", hook: "bpf", params: 3},
		{name: "bpf_v4", hook: "bpf", params: 4},
		{name: "ptrace_access_check", hook: "ptrace_access_check"},
		{name: "ptrace_traceme", hook: "ptrace_traceme"},
		{name: "task_kill", hook: "task_kill"},
		{name: "inode_permission", hook: "inode_permission"},
		{name: "sb_mount", hook: "sb_mount"},
		{name: "sb_umount", hook: "sb_umount"},
		{name: "sb_remount", hook: "sb_remount"},
		{name: "move_mount", hook: "move_mount"},
		{name: "sb_pivotroot", hook: "sb_pivotroot"},
		{name: "file_fcntl", hook: "file_fcntl"},
		{name: "capable", hook: "capable"},
		{name: "kernel_module_request", hook: "kernel_module_request"},
		{name: "file_send_sigiotask", hook: "file_send_sigiotask"},
		{name: "task_setnice", hook: "task_setnice"},
		{name: "task_setioprio", hook: "task_setioprio"},
		{name: "task_setscheduler", hook: "task_setscheduler"},
		{name: "task_prlimit", hook: "task_prlimit"},
		{name: "task_setrlimit", hook: "task_setrlimit"},
		// Absent from kernels built without io_uring.
		{name: "uring_cmd", hook: "uring_cmd", optional: true},
		// A tracing (fentry) program: names a sandbox asked the crypto
		// API for, so kernel threads cannot load modules for them.
		{name: "crypto_alg_mod_lookup", hook: "fentry/crypto_alg_mod_lookup", optional: true},
	}},
	{LayerLSM, bpf.LoadIpc, []program{
		{name: "ipc_permission", hook: "ipc_permission"},
		{name: "shm_shmctl", hook: "shm_shmctl"},
		{name: "msg_queue_msgctl", hook: "msg_queue_msgctl"},
		{name: "sem_semctl", hook: "sem_semctl"},
		{name: "shm_shmat", hook: "shm_shmat"},
		{name: "shm_associate", hook: "shm_associate"},
		{name: "msg_queue_associate", hook: "msg_queue_associate"},
		{name: "sem_associate", hook: "sem_associate"},
		{name: "shm_alloc_security", hook: "shm_alloc_security"},
		{name: "msg_queue_alloc_security", hook: "msg_queue_alloc_security"},
		{name: "sem_alloc_security", hook: "sem_alloc_security"},
		{name: "shm_free_security", hook: "shm_free_security"},
		{name: "msg_queue_free_security", hook: "msg_queue_free_security"},
		{name: "sem_free_security", hook: "sem_free_security"},
		{name: "key_alloc", hook: "key_alloc"},
		// Linux 6.1 has it; 6.12 has no bpf_lsm_key_free: there a record
		// is replaced at the next key_alloc of the same address.
		{name: "key_free", hook: "key_free", optional: true},
		{name: "key_permission", hook: "key_permission"},
	}},
	{LayerCgroup, bpf.LoadSock, []program{
		{name: "sock_create", hook: "cgroup/sock_create", attach: ebpf.AttachCGroupInetSockCreate},
		{name: "connect4", hook: "cgroup/connect4", attach: ebpf.AttachCGroupInet4Connect},
		{name: "connect6", hook: "cgroup/connect6", attach: ebpf.AttachCGroupInet6Connect},
		{name: "sendmsg4", hook: "cgroup/sendmsg4", attach: ebpf.AttachCGroupUDP4Sendmsg},
		{name: "sendmsg6", hook: "cgroup/sendmsg6", attach: ebpf.AttachCGroupUDP6Sendmsg},
	}},
	{LayerLifecycle, bpf.LoadLifecycle, []program{
		{name: "sched_process_exec", hook: "sched_process_exec"},
	}},
}

// Open loads the programs (or re-adopts pinned ones) and attaches what is
// missing. It succeeds when at least the maps exist; which layers are in
// force is reported by Hooks and checked per ceiling by Coverage, so a
// caller can refuse exactly the fields this host cannot enforce.
func Open(opts Options) (*Enforcer, error) {
	if opts.PinDir == "" {
		opts.PinDir = DefaultPinDir
	}
	if opts.CgroupMount == "" {
		m, err := cgroup.Mountpoint()
		if err != nil {
			return nil, err
		}
		opts.CgroupMount = m
	}
	if err := ensureBPFFS(opts.PinDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(opts.PinDir, "links"), 0o700); err != nil {
		return nil, fmt.Errorf("pin dir %s: %w", opts.PinDir, err)
	}
	e := &Enforcer{opts: opts, links: map[string]link.Link{}, layerErr: map[Layer]error{}}
	if err := e.openMaps(); err != nil {
		e.Close()
		return nil, err
	}
	kernel, kerr := btf.LoadKernelSpec()
	lsmErr := lsmUsable()
	if lsmErr != nil {
		lsmErr = fmt.Errorf("%w: %w", errLayerUnsupported, lsmErr)
	}
	for _, obj := range objects {
		var err error
		switch {
		case obj.layer == LayerLSM && lsmErr != nil:
			err = lsmErr
		case kerr != nil && obj.layer != LayerCgroup:
			err = fmt.Errorf("kernel BTF: %w", kerr)
		default:
			err = e.openObject(obj, kernel)
		}
		if err != nil && e.layerErr[obj.layer] == nil {
			e.layerErr[obj.layer] = err
		}
		if err != nil {
			for _, p := range obj.progs {
				if p.params != 0 && lsmParams(kernel, p.hook) != p.params {
					continue
				}
				if !e.hasProgram(p.name) {
					e.hooks = append(e.hooks, HookStatus{Program: p.name, Name: p.hook, Layer: obj.layer, Optional: p.optional, Err: err.Error()})
				}
			}
		}
	}
	sort.SliceStable(e.hooks, func(i, j int) bool { return e.hooks[i].Layer < e.hooks[j].Layer })
	e.finishUpgrade()
	return e, nil
}

// finishUpgrade completes the replacement of another build's pinned links:
// it drops the handles on the replaced links (they detach: their pins now
// name this build's links), removes pins of programs this build no longer
// has, and records this build's id. It does nothing unless every layer this
// host supports came up; a failed upgrade leaves the old programs pinned and
// enforcing.
func (e *Enforcer) finishUpgrade() {
	if !e.stale {
		return
	}
	for _, l := range e.replaced {
		l.Close()
	}
	e.replaced = nil
	for _, l := range []Layer{LayerLSM, LayerCgroup, LayerLifecycle} {
		if err := e.layerErr[l]; err != nil && !errors.Is(err, errLayerUnsupported) {
			return
		}
	}
	known := map[string]bool{}
	for _, obj := range objects {
		for _, p := range obj.progs {
			known[filepath.Base(e.linkPin(obj, p))] = true
		}
	}
	dir := filepath.Join(e.opts.PinDir, "links")
	entries, _ := os.ReadDir(dir)
	for _, ent := range entries {
		if !known[ent.Name()] {
			_ = os.Remove(filepath.Join(dir, ent.Name()))
		}
	}
	id := bpf.BuildID()
	if err := e.buildID.Update(uint32(0), id, ebpf.UpdateAny); err == nil {
		e.stale = false
	}
}

func (e *Enforcer) hasProgram(name string) bool {
	for _, h := range e.hooks {
		if h.Program == name {
			return true
		}
	}
	return false
}

// ensureBPFFS makes sure dir's parent is on a bpf filesystem, mounting bpffs
// at /sys/fs/bpf when nothing is mounted there.
func ensureBPFFS(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	var st unix.Statfs_t
	if err := unix.Statfs(parent, &st); err == nil && uint32(st.Type) == bpfFSMagic {
		return nil
	}
	if parent == "/sys/fs/bpf" {
		if err := unix.Mount("bpf", parent, "bpf", 0, "mode=0700"); err != nil {
			return fmt.Errorf("mount bpffs at %s: %w", parent, err)
		}
		return nil
	}
	return fmt.Errorf("pin dir %s: %s is not on a bpf filesystem", dir, parent)
}

func (e *Enforcer) openMaps() error {
	spec, err := bpf.LoadNetwork()
	if err != nil {
		return fmt.Errorf("load map specs: %w", err)
	}
	execSpec, err := bpf.LoadExec()
	if err != nil {
		return fmt.Errorf("load map specs: %w", err)
	}
	ipcSpec, err := bpf.LoadIpc()
	if err != nil {
		return fmt.Errorf("load map specs: %w", err)
	}
	open := func(name string) (*ebpf.Map, error) {
		ms := spec.Maps[name]
		if ms == nil {
			ms = execSpec.Maps[name]
		}
		if ms == nil {
			ms = ipcSpec.Maps[name]
		}
		pin := filepath.Join(e.opts.PinDir, name)
		if m, err := ebpf.LoadPinnedMap(pin, nil); err == nil {
			if err := ms.Compatible(m); err != nil {
				m.Close()
				return nil, fmt.Errorf("pinned map %s is from an incompatible enforcerd: %w (remove it with `enforcerd uninstall` after stopping every workload)", pin, err)
			}
			return m, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("pinned map %s: %w", pin, err)
		}
		m, err := ebpf.NewMap(ms)
		if err != nil {
			return nil, fmt.Errorf("create map %s: %w", name, err)
		}
		if err := m.Pin(pin); err != nil {
			m.Close()
			return nil, fmt.Errorf("pin map %s: %w", pin, err)
		}
		return m, nil
	}
	if e.ceilings, err = open("ceilings"); err != nil {
		return err
	}
	if e.events, err = open("events"); err != nil {
		return err
	}
	if e.stats, err = open("stats"); err != nil {
		return err
	}
	if e.config, err = open("enforcerd_config"); err != nil {
		return err
	}
	if e.cache, err = open("resolve_cache"); err != nil {
		return err
	}
	if e.ipcOwners, err = open("ipc_owners"); err != nil {
		return err
	}
	if e.keyOwners, err = open("key_owners"); err != nil {
		return err
	}
	if err := e.openBuildID(); err != nil {
		return err
	}
	// Task and inode storage need kernel support the cgroup layer does not;
	// their absence disables only the LSM layer.
	if e.taskFlags, err = open("task_flags"); err != nil {
		e.execMapsErr = err
		return nil
	}
	if e.writtenInodes, err = open("written_inodes"); err != nil {
		e.execMapsErr = err
		return nil
	}
	if e.execAllow, err = open("exec_allow"); err != nil {
		e.execMapsErr = err
		return nil
	}
	if e.since, err = open("ceiling_since"); err != nil {
		e.execMapsErr = err
	}
	return nil
}

// openBuildID opens (or creates) the pinned build_id map and decides whether
// the pinned links are this build's. A pinned link with no build id, or
// another one, is stale.
func (e *Enforcer) openBuildID() error {
	pin := filepath.Join(e.opts.PinDir, "build_id")
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if errors.Is(err, os.ErrNotExist) {
		m, err = ebpf.NewMap(&ebpf.MapSpec{Name: "build_id", Type: ebpf.Array, KeySize: 4, ValueSize: 32, MaxEntries: 1})
		if err != nil {
			return fmt.Errorf("create map build_id: %w", err)
		}
		if err := m.Pin(pin); err != nil {
			m.Close()
			return fmt.Errorf("pin map %s: %w", pin, err)
		}
	} else if err != nil {
		return fmt.Errorf("pinned map %s: %w", pin, err)
	}
	e.buildID = m
	var have [32]byte
	if err := m.Lookup(uint32(0), &have); err != nil {
		return fmt.Errorf("read %s: %w", pin, err)
	}
	e.stale = have != bpf.BuildID()
	return nil
}

// replacements returns the shared maps an object's spec declares.
func (e *Enforcer) replacements(spec *ebpf.CollectionSpec) (map[string]*ebpf.Map, error) {
	all := map[string]*ebpf.Map{
		"ceilings": e.ceilings, "events": e.events, "stats": e.stats,
		"enforcerd_config": e.config, "resolve_cache": e.cache,
		"task_flags": e.taskFlags, "written_inodes": e.writtenInodes, "exec_allow": e.execAllow,
		"ceiling_since": e.since, "ipc_owners": e.ipcOwners, "key_owners": e.keyOwners,
	}
	out := map[string]*ebpf.Map{}
	for name := range spec.Maps {
		m, shared := all[name]
		if !shared {
			continue // object-private (.bss, .rodata)
		}
		if m == nil {
			return nil, fmt.Errorf("map %s unavailable: %w", name, e.execMapsErr)
		}
		out[name] = m
	}
	return out, nil
}

func (e *Enforcer) linkPin(obj object, p program) string {
	prefix := map[Layer]string{LayerLSM: "lsm_", LayerCgroup: "cgroup_", LayerLifecycle: "tp_btf_"}[obj.layer]
	return filepath.Join(e.opts.PinDir, "links", prefix+p.name)
}

// openObject adopts pinned links of obj and loads + attaches the missing ones.
func (e *Enforcer) openObject(obj object, kernel *btf.Spec) error {
	var missing []program
	for _, p := range obj.progs {
		if p.params != 0 && lsmParams(kernel, p.hook) != p.params {
			continue // another variant serves this kernel
		}
		pin := e.linkPin(obj, p)
		l, err := link.LoadPinnedLink(pin, nil)
		if err == nil && !e.stale {
			e.links[p.name] = l
			e.hooks = append(e.hooks, HookStatus{Program: p.name, Name: p.hook, Layer: obj.layer, Attached: true, Adopted: true, Optional: p.optional})
			continue
		}
		if err == nil {
			// Another build's program: it keeps enforcing until the new
			// one is attached and has taken over its pin.
			e.replaced = append(e.replaced, l)
		}
		missing = append(missing, p)
	}
	if len(missing) == 0 {
		return nil
	}
	spec, err := obj.load()
	if err != nil {
		return fmt.Errorf("load %s object: %w", obj.layer, err)
	}
	want := map[string]bool{}
	for _, p := range missing {
		if obj.layer == LayerLSM && kernel != nil {
			fn := "bpf_lsm_" + p.hook
			if target, ok := strings.CutPrefix(p.hook, "fentry/"); ok {
				fn = target // a tracing program on a kernel function
			}
			if _, err := kernel.AnyTypeByName(fn); err != nil {
				if p.optional {
					e.hooks = append(e.hooks, HookStatus{Program: p.name, Name: p.hook, Layer: obj.layer, Optional: true, Err: "hook not in this kernel"})
					continue
				}
				return fmt.Errorf("LSM hook %s not in this kernel", p.hook)
			}
		}
		want[p.name] = true
	}
	for name := range spec.Programs {
		if !want[name] {
			delete(spec.Programs, name)
		}
	}
	if len(spec.Programs) == 0 {
		return nil
	}
	repl, err := e.replacements(spec)
	if err != nil {
		return fmt.Errorf("load %s programs: %w", obj.layer, err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil && os.Getenv("ENFORCERD_VERIFIER_LOG") != "" {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			fmt.Fprintf(os.Stderr, "enforcerd: verifier log for %s:\n%+v\n", obj.layer, ve)
		}
	}
	if err != nil {
		if errors.Is(err, unix.EPERM) && obj.layer == LayerLSM {
			return fmt.Errorf("%w: the kernel refuses to load BPF LSM programs (EPERM; e.g. a sandboxed host kernel without trampolines): %w", errLayerUnsupported, unix.EPERM)
		}
		return fmt.Errorf("load %s programs: %w", obj.layer, err)
	}
	defer coll.Close() // links hold their own program references
	for _, p := range missing {
		prog := coll.Programs[p.name]
		if prog == nil {
			continue
		}
		var l link.Link
		switch obj.layer {
		case LayerLSM:
			if prog.Type() == ebpf.Tracing {
				l, err = link.AttachTracing(link.TracingOptions{Program: prog})
			} else {
				l, err = link.AttachLSM(link.LSMOptions{Program: prog})
			}
		case LayerCgroup:
			l, err = link.AttachCgroup(link.CgroupOptions{Path: e.opts.CgroupMount, Attach: p.attach, Program: prog})
		case LayerLifecycle:
			l, err = link.AttachTracing(link.TracingOptions{Program: prog})
		}
		if err != nil {
			return fmt.Errorf("attach %s: %w", p.hook, err)
		}
		// Pin under a temporary name, then rename over any pin of another
		// build: the hook is never without a program.
		pin := e.linkPin(obj, p)
		if err := l.Pin(pin + "_new"); err != nil {
			l.Close()
			return fmt.Errorf("pin link %s: %w", p.hook, err)
		}
		if err := os.Rename(pin+"_new", pin); err != nil {
			l.Unpin()
			l.Close()
			return fmt.Errorf("pin link %s: %w", p.hook, err)
		}
		e.links[p.name] = l
		e.hooks = append(e.hooks, HookStatus{Program: p.name, Name: p.hook, Layer: obj.layer, Attached: true, Optional: p.optional})
	}
	return nil
}

// lsmParams returns the parameter count of bpf_lsm_<hook> in the kernel's
// BTF, or -1 when unknown.
func lsmParams(kernel *btf.Spec, hook string) int {
	if kernel == nil {
		return -1
	}
	var fn *btf.Func
	if err := kernel.TypeByName("bpf_lsm_"+hook, &fn); err != nil {
		return -1
	}
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok {
		return -1
	}
	return len(proto.Params)
}

// lsmUsable reports why BPF LSM programs would enforce nothing: "bpf" must
// be in the active LSM list (if it is not, programs load and attach but are
// never called, a case the VM harness's positive control guards against).
func lsmUsable() error {
	active, err := ActiveLSMs()
	if err != nil {
		return err
	}
	for _, l := range active {
		if l == "bpf" {
			return nil
		}
	}
	return fmt.Errorf(`"bpf" is not in the active LSM list (%s); boot with lsm=...,bpf`, strings.Join(active, ","))
}

// ActiveLSMs reads /sys/kernel/security/lsm, mounting securityfs first if
// nothing is mounted at /sys/kernel/security.
func ActiveLSMs() ([]string, error) {
	const dir = "/sys/kernel/security"
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && uint32(st.Type) != securityFSMagic {
		_ = unix.Mount("securityfs", dir, "securityfs", 0, "")
	}
	b, err := os.ReadFile(dir + "/lsm")
	if err != nil {
		return nil, fmt.Errorf("active LSM list: %w", err)
	}
	return strings.Split(strings.TrimSpace(string(b)), ","), nil
}

// Hooks reports every program: attached, adopted, or why not.
func (e *Enforcer) Hooks() []HookStatus { return append([]HookStatus(nil), e.hooks...) }

// LayerError is nil when every required hook of the layer is attached, else
// the reason.
func (e *Enforcer) LayerError(l Layer) error {
	if err := e.layerErr[l]; err != nil {
		return err
	}
	for _, h := range e.hooks {
		if h.Layer == l && !h.Attached && !h.Optional {
			return fmt.Errorf("hook %s not attached: %s", h.Name, h.Err)
		}
	}
	return nil
}

// CanActivateAtExec reports whether pending registrations are activated at
// the first exec (the lifecycle program is attached).
func (e *Enforcer) CanActivateAtExec() bool { return e.LayerError(LayerLifecycle) == nil }

// Register installs the ceiling for a cgroup and its whole subtree. An
// existing registration of the same cgroup is replaced. Errors: the cgroup is
// too deep for the in-kernel walk; ErrCannotEnforce when Coverage refuses
// the entry (Coverage.Err: a field without mechanism, or partial coverage
// without AllowPartial; never for AuditOnly); a pending entry on a host that
// cannot activate it at exec.
func (e *Enforcer) Register(cg cgroup.Cgroup, en Entry) error {
	if cg.ID == 0 {
		return fmt.Errorf("register cgroup %s: no cgroup id", cg.Group)
	}
	if cg.Level >= MaxCgroupLevel {
		return fmt.Errorf("register cgroup %s: level %d is deeper than the supported %d", cg.Group, cg.Level, MaxCgroupLevel-1)
	}
	if err := e.Coverage(en.Ceiling).Err(en.AuditOnly, en.AllowPartial); err != nil {
		return fmt.Errorf("register cgroup %s: %w", cg.Group, err)
	}
	if en.Pending {
		// Never turn an active registration back into a pending one: that
		// would lift the ceiling until the next exec (fail open).
		if old, err := e.Lookup(cg.ID); err == nil && !old.Pending {
			en.Pending = false
		}
	}
	if en.Pending && !e.CanActivateAtExec() {
		return fmt.Errorf("register cgroup %s: %w: activation at exec needs tp_btf/sched_process_exec: %v", cg.Group, ErrCannotEnforce, e.LayerError(LayerLifecycle))
	}
	if len(en.ExecAllow) > 0 {
		if en.Ceiling.Shell != policy.ShellNone {
			return fmt.Errorf("register cgroup %s: an exec allow list needs shell=none (have %s)", cg.Group, en.Ceiling.Shell)
		}
		if e.execAllow == nil {
			return fmt.Errorf("register cgroup %s: %w: exec allow list: %v", cg.Group, ErrCannotEnforce, e.execMapsErr)
		}
		for _, f := range en.ExecAllow {
			k := bpf.ExecExecKey{CgroupId: cg.ID, Ino: f.Ino, Dev: f.Dev}
			if err := e.execAllow.Update(k, uint8(1), ebpf.UpdateAny); err != nil {
				e.dropExecAllow(cg.ID)
				return fmt.Errorf("register cgroup %s: exec allow list: %w", cg.Group, err)
			}
		}
	}
	if err := e.setSince(cg.ID, en.Ceiling.Shell != policy.ShellFull); err != nil {
		e.dropExecAllow(cg.ID)
		return fmt.Errorf("register cgroup %s: %w", cg.Group, err)
	}
	if err := e.ceilings.Update(cg.ID, encode(en), ebpf.UpdateAny); err != nil {
		e.dropExecAllow(cg.ID)
		return fmt.Errorf("register cgroup %s: %w", cg.Group, err)
	}
	if err := e.invalidate(); err != nil {
		// The entry is in the map but cached results may not see it:
		// undo, so nothing is half-applied.
		_ = e.ceilings.Delete(cg.ID)
		e.dropExecAllow(cg.ID)
		_ = e.invalidate()
		return fmt.Errorf("register cgroup %s: %w", cg.Group, err)
	}
	return nil
}

// invalidate gives the ceilings map a new generation, so that every cached
// resolve() result (bpf/enforcerd.h, struct enforcerd_config) is recomputed.
// The value is random rather than incremented: two processes changing the
// map at once must never both write the same generation.
func (e *Enforcer) invalidate() error {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("new generation: %w", err)
	}
	gen := binary.NativeEndian.Uint64(b[:])
	if err := e.config.Update(uint32(0), gen, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("invalidate cached ceilings: %w", err)
	}
	return nil
}

// dropExecAllow removes every allow-list entry of a cgroup.
func (e *Enforcer) dropExecAllow(cgroupID uint64) {
	if e.execAllow == nil {
		return
	}
	var (
		k    bpf.ExecExecKey
		v    uint8
		keys []bpf.ExecExecKey
	)
	it := e.execAllow.Iterate()
	for it.Next(&k, &v) {
		if k.CgroupId == cgroupID {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		_ = e.execAllow.Delete(k)
	}
}

// setSince records when the cgroup was registered (bpf/exec.h
// ceiling_since): under shell=none/read_only, files whose inode changed at
// or after that time count as written by the sandbox. The time comes from
// CLOCK_REALTIME_COARSE, the clock that stamps inode times, after waiting
// for its next tick (at most one jiffy): every change made after Register
// returns carries a ctime at or after it, and nothing changed before
// Register began does. A re-registration keeps the earlier time (the
// narrower choice). Errors: the clock or the map; ErrCannotEnforce when
// needed (a restricted shell) and the shell layer's maps are missing.
func (e *Enforcer) setSince(cgroupID uint64, needed bool) error {
	if e.since == nil {
		if needed {
			return fmt.Errorf("%w: registration time: %v", ErrCannotEnforce, e.execMapsErr)
		}
		return nil
	}
	var old uint64
	if err := e.since.Lookup(cgroupID, &old); err == nil && old != 0 {
		return nil
	}
	now, err := coarseTick()
	if err != nil {
		return err
	}
	if err := e.since.Update(cgroupID, now, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("registration time: %w", err)
	}
	return nil
}

// coarseTick waits until CLOCK_REALTIME_COARSE moves on and returns its new
// value in nanoseconds since the epoch.
func coarseTick() (uint64, error) {
	var t0 unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &t0); err != nil {
		return 0, fmt.Errorf("clock_gettime(CLOCK_REALTIME_COARSE): %w", err)
	}
	for i := 0; ; i++ {
		var t unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &t); err != nil {
			return 0, fmt.Errorf("clock_gettime(CLOCK_REALTIME_COARSE): %w", err)
		}
		if t != t0 {
			return uint64(t.Nano()), nil
		}
		if i > 10000 {
			return 0, errors.New("CLOCK_REALTIME_COARSE did not advance in 1 s")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// Unregister removes the ceiling of a cgroup. Errors: ErrNotRegistered.
func (e *Enforcer) Unregister(cgroupID uint64) error {
	defer e.dropExecAllow(cgroupID)
	if e.since != nil {
		defer func() { _ = e.since.Delete(cgroupID) }()
	}
	if err := e.ceilings.Delete(cgroupID); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("unregister cgroup id %d: %w", cgroupID, ErrNotRegistered)
		}
		return fmt.Errorf("unregister cgroup id %d: %w", cgroupID, err)
	}
	if err := e.invalidate(); err != nil {
		return fmt.Errorf("unregister cgroup id %d: %w", cgroupID, err)
	}
	return nil
}

// Lookup returns the entry of a cgroup. Errors: ErrNotRegistered.
func (e *Enforcer) Lookup(cgroupID uint64) (Entry, error) {
	var v bpf.NetworkCeiling
	if err := e.ceilings.Lookup(cgroupID, &v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return Entry{}, fmt.Errorf("cgroup id %d: %w", cgroupID, ErrNotRegistered)
		}
		return Entry{}, err
	}
	return decode(v), nil
}

// List returns every registration, ordered by cgroup id.
func (e *Enforcer) List() ([]Registration, error) {
	var (
		id  uint64
		v   bpf.NetworkCeiling
		out []Registration
	)
	it := e.ceilings.Iterate()
	for it.Next(&id, &v) {
		out = append(out, Registration{CgroupID: id, Entry: decode(v)})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("list registrations: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CgroupID < out[j].CgroupID })
	return out, nil
}

// LostRecords is the number of denial records dropped because the ring
// buffer was full (the denials themselves were enforced).
func (e *Enforcer) LostRecords() (uint64, error) {
	var per []uint64
	if err := e.stats.Lookup(uint32(0), &per); err != nil {
		return 0, fmt.Errorf("read stats: %w", err)
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n, nil
}

// Close releases this process's handles. Pinned maps and links stay: the
// kernel keeps enforcing.
func (e *Enforcer) Close() error {
	for _, l := range e.links {
		l.Close()
	}
	for _, l := range e.replaced {
		l.Close()
	}
	for _, m := range []*ebpf.Map{e.ceilings, e.events, e.stats, e.config, e.cache, e.taskFlags, e.writtenInodes, e.execAllow, e.since, e.ipcOwners, e.keyOwners, e.buildID} {
		if m != nil {
			m.Close()
		}
	}
	return nil
}

// Uninstall removes every pin under the pin dir (maps and links). Programs
// detach once no process holds them. For `enforcerd uninstall` and tests.
func (e *Enforcer) Uninstall() error {
	err := os.RemoveAll(e.opts.PinDir)
	e.Close()
	if err != nil {
		return fmt.Errorf("remove pins %s: %w", e.opts.PinDir, err)
	}
	return nil
}

func encode(en Entry) bpf.NetworkCeiling {
	var v bpf.NetworkCeiling
	if !en.Ceiling.Network {
		v.Deny |= denyNetwork
	}
	if !en.Ceiling.Write {
		v.Deny |= denyWrite
	}
	switch en.Ceiling.Shell {
	case policy.ShellFull:
	case policy.ShellReadOnly:
		v.Deny |= denyShellWrite
	default: // none, and anything unknown: the narrowest
		// Allow-listed programs keep the container's write; the meet
		// with a read_only ancestor (OR of bits) adds denyShellWrite.
		v.Deny |= denyShell
	}
	if en.AuditOnly {
		v.Flags |= flagAuditOnly
	}
	if en.Pending {
		v.Flags |= flagPending
	}
	if en.AllowPartial {
		v.Flags |= flagPartialOK
	}
	return v
}

func decode(v bpf.NetworkCeiling) Entry {
	return Entry{
		Ceiling: policy.KernelCeiling{
			Network: v.Deny&denyNetwork == 0,
			Write:   v.Deny&denyWrite == 0,
			Shell:   decodeShell(v.Deny),
		},
		AuditOnly:    v.Flags&flagAuditOnly != 0,
		Pending:      v.Flags&flagPending != 0,
		AllowPartial: v.Flags&flagPartialOK != 0,
	}
}

func decodeShell(deny uint32) policy.Shell {
	switch {
	case deny&denyShell != 0:
		return policy.ShellNone
	case deny&denyShellWrite != 0:
		return policy.ShellReadOnly
	default:
		return policy.ShellFull
	}
}
