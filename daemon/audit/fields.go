package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/enforcerd/enforcerd/denial"
)

// Host is Record.Host: the host's name when the daemon started ("" when
// the kernel has none).
var Host = func() string {
	h, _ := os.Hostname()
	return h
}()

// FingerprintID is Record.FingerprintID of a fingerprint's text: the first
// 16 hex digits of its SHA-256 ("" for ""). The registration record of a
// container carries both, so the text of any record's id can be found.
func FingerprintID(fingerprint string) string {
	if fingerprint == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(fingerprint))
	return hex.EncodeToString(sum[:8])
}

// ObjectFields is the object of a denial decoded for machines; Kind says
// which fields can be set. A field is absent when the kernel's record does
// not carry it; numbers for which 0 is a value (a port, a protocol, a
// capability, a bpf command, an IPC id) are pointers, so that absent and 0
// differ. Ino and Mode are absent when 0 (no inode: the kernel had none yet,
// e.g. a create).
type ObjectFields struct {
	// Kind: file, socket, task, cgroup, bpf_cmd, mount, capability,
	// filesystem, or none.
	Kind string `json:"kind"`
	// Files: the path within the file's own filesystem (at most its last 4
	// components, ".../" when cut), its device ("major:minor"), inode
	// number and mode (type and permission bits, decimal).
	Path string `json:"path,omitempty"`
	Dev  string `json:"dev,omitempty"`
	Ino  uint64 `json:"ino,omitempty"` // sockets: the inode of a unix peer created outside
	Mode uint32 `json:"mode,omitempty"`
	// Sockets: family and type by name (or number when unnamed), protocol
	// number; address and port of the destination, absent when none.
	Family   string  `json:"family,omitempty"`
	SockType string  `json:"sock_type,omitempty"`
	Protocol *uint32 `json:"protocol,omitempty"`
	Address  string  `json:"address,omitempty"`
	Port     *uint16 `json:"port,omitempty"`
	// TargetPID: the process acted on (thread group id); negative: a
	// process group in F_SETOWN's convention (-1 also: unreadable).
	TargetPID      *int64  `json:"target_pid,omitempty"`
	TargetCgroupID *uint64 `json:"target_cgroup_id,omitempty"`
	Capability     *uint64 `json:"capability,omitempty"`
	CapabilityName string  `json:"capability_name,omitempty"`
	BPFCmd         *uint64 `json:"bpf_cmd,omitempty"`
	// FSMagic ("0x..."), Filesystem: a kernel interface filesystem.
	FSMagic    string `json:"fs_magic,omitempty"`
	Filesystem string `json:"filesystem,omitempty"`
	// The request's argument, named by the rule that recorded it.
	IoctlCmd       string  `json:"ioctl_cmd,omitempty"`       // rule tty-inject, "0x..."
	IPCID          *uint64 `json:"ipc_id,omitempty"`          // rule ipc-outside
	KeySerial      *uint64 `json:"key_serial,omitempty"`      // rule key-outside
	RlimitResource *uint64 `json:"rlimit_resource,omitempty"` // rule core-dump-limit
	Module         string  `json:"module,omitempty"`          // hook kernel_module_request
	// Kind syscall (a denial of the process layer's seccomp filter,
	// SeccompObject): the system call's name ("" for a call of another
	// ABI), its number and the audit arch ("c000003e").
	Syscall   string  `json:"syscall,omitempty"`
	SyscallNr *uint64 `json:"syscall_nr,omitempty"`
	Arch      string  `json:"arch,omitempty"`
}

// SeccompObject is the object of a seccomp denial: for humans
// "syscall NAME (arch A nr N)", and its fields.
func SeccompObject(name string, arch uint32, nr uint64) (string, *ObjectFields) {
	a := strconv.FormatUint(uint64(arch), 16)
	text := "syscall " + name + " (arch " + a + " nr " + strconv.FormatUint(nr, 10) + ")"
	if name == "" {
		text = "syscall of another ABI (arch " + a + " nr " + strconv.FormatUint(nr, 10) + ")"
	}
	return text, &ObjectFields{Kind: "syscall", Syscall: name, SyscallNr: &nr, Arch: a}
}

var kindNames = map[denial.ObjectKind]string{
	denial.ObjectNone: "none", denial.ObjectFile: "file", denial.ObjectSocket: "socket",
	denial.ObjectTask: "task", denial.ObjectCgroup: "cgroup", denial.ObjectBPFCmd: "bpf_cmd",
	denial.ObjectMount: "mount", denial.ObjectCap: "capability", denial.ObjectFS: "filesystem",
}

// objectFields decodes o, recorded at hook h by rule r.
func objectFields(h denial.Hook, r denial.Rule, o denial.Object) *ObjectFields {
	f := &ObjectFields{Kind: kindNames[o.Kind]}
	if f.Kind == "" {
		f.Kind = fmt.Sprintf("kind(%d)", uint32(o.Kind))
	}
	id := o.ID
	switch o.Kind {
	case denial.ObjectFile:
		if h == denial.HookKernelModuleRequest {
			// The module name, recorded as the one path component.
			f.Module = filepath.Base(o.Path)
			return f
		}
		f.Path, f.Ino, f.Mode = o.Path, o.Ino, o.Mode
		if o.Dev != 0 || o.Ino != 0 {
			f.Dev = fmt.Sprintf("%d:%d", o.Dev>>20, o.Dev&0xfffff)
		}
	case denial.ObjectSocket:
		if f.Family = denial.FamilyName(o.Family); f.Family == "" {
			f.Family = strconv.FormatUint(uint64(o.Family), 10)
		}
		if f.SockType = denial.SockTypeName(o.SockType); f.SockType == "" && o.SockType != 0 {
			f.SockType = strconv.FormatUint(uint64(o.SockType), 10)
		}
		proto := o.Protocol
		f.Protocol = &proto
		if o.Addr.IsValid() {
			port := o.Port
			f.Address, f.Port = o.Addr.String(), &port
		}
		f.Ino = o.Ino
	case denial.ObjectTask:
		pid := int64(id)
		f.TargetPID = &pid
	case denial.ObjectCgroup:
		f.TargetCgroupID = &id
	case denial.ObjectBPFCmd:
		f.BPFCmd = &id
	case denial.ObjectCap:
		f.Capability, f.CapabilityName = &id, denial.CapabilityName(id)
	case denial.ObjectFS:
		f.FSMagic, f.Filesystem = fmt.Sprintf("0x%x", id), denial.FilesystemName(id)
	case denial.ObjectNone:
		// No object: the rule says what the id is, an ioctl command or
		// the number the field of that rule holds.
		if r == denial.RuleTTYInject {
			f.IoctlCmd = fmt.Sprintf("0x%x", id)
		} else if field := map[denial.Rule]**uint64{
			denial.RuleIPCOutside:    &f.IPCID,
			denial.RuleKeyOutside:    &f.KeySerial,
			denial.RuleCoreDumpLimit: &f.RlimitResource,
		}[r]; field != nil {
			*field = &id
		}
	}
	return f
}

// procRoot is where procOf reads (tests replace it).
var procRoot = "/proc"

// procOf reads the parent (thread group id) and executable of process
// tgid, whose thread tid acted, from /proc when the record is read, not
// when the kernel decided: best effort. Both are absent when the thread is
// gone, or when its command name no longer is the record's comm (it
// exec'd since, or the pid was reused); a process that exec'd a program of
// the same name in between reads as that program. The kernel record does
// not carry them (its layout is fixed across upgrades, bpf/event.h).
func procOf(tgid, tid uint32, comm string) (*uint32, string) {
	if tgid == 0 || tid == 0 {
		return nil, ""
	}
	dir := filepath.Join(procRoot, strconv.FormatUint(uint64(tgid), 10))
	stat, err := os.ReadFile(filepath.Join(dir, "task", strconv.FormatUint(uint64(tid), 10), "stat"))
	if err != nil {
		return nil, ""
	}
	// "pid (comm) state ppid ...": comm may hold ") ", so the last one.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open || string(stat[open+1:end]) != comm {
		return nil, ""
	}
	rest := bytes.Fields(stat[end+1:])
	if len(rest) < 2 {
		return nil, ""
	}
	pp, err := strconv.ParseUint(string(rest[1]), 10, 32)
	if err != nil {
		return nil, ""
	}
	ppid := uint32(pp)
	exe, _ := os.Readlink(filepath.Join(dir, "exe"))
	return &ppid, exe
}
