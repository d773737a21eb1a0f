// Package fallback is `enforcerd run`'s process layer on a host without
// BPF LSM: what a re-exec helper applies to itself (no_new_privs, a
// Landlock ruleset, a seccomp filter) just before it execs the command, so
// that the command and every process it starts are held to it. The
// cgroup-BPF programs stay attached as well.
//
// Plan turns a ceiling into a Spec (what to apply; coverage.Of with a
// coverage.ProcessLayer decides what that covers and which gaps
// remain: the decision is not repeated here); Command wraps the command in
// the helper; Main is the helper (the enforcerd binary's first argument
// HelperArg). docs/design.md "Hosts without BPF LSM" lists what each
// mechanism covers and misses.
//
// SeccompFor and Classify name the filter's denials in the audit
// vocabulary (the daemon reads them back from the kernel's audit records,
// docs/audit.md).
//
// Layering (docs/design.md): layer 3; it may import policy/, denial/, endpoint/,
// progcheck/, entry/, coverage/ and enforcer/, and of other modules no
// cilium/ebpf.
package fallback

import (
	"errors"
	"fmt"
	"os"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// Landlock access rights by ABI (Documentation/userspace-api/landlock.rst).
const (
	// writeRightsV1: every ABI 1 right but EXECUTE, READ_FILE, READ_DIR.
	writeRightsV1 = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile |
		llsys.AccessFSMakeChar | llsys.AccessFSMakeDir | llsys.AccessFSMakeReg | llsys.AccessFSMakeSock |
		llsys.AccessFSMakeFifo | llsys.AccessFSMakeBlock | llsys.AccessFSMakeSym
	// fileRights are the rights a rule on a non-directory may hold.
	fileRights = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSTruncate
)

// writeRights are the write rights Landlock at abi handles: ABI 2 adds
// REFER (cross-directory links and renames), ABI 3 TRUNCATE. IOCTL_DEV
// (ABI 5) is not handled: terminals need their ioctls.
func writeRights(abi int) uint64 {
	r := uint64(writeRightsV1)
	if abi >= 2 {
		r |= llsys.AccessFSRefer
	}
	if abi >= 3 {
		r |= llsys.AccessFSTruncate
	}
	return r
}

// writableDevices stay writable under write=false, as for the BPF LSM
// layer (chr_write_allowed): they modify no file system. /dev/pts is a
// directory (every terminal beneath it).
var writableDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/pts"}

// PathRule allows Access beneath (or on) Path. Dev and Ino, when not both
// 0, are the identity (stat st_dev, st_ino) the helper requires of the
// file it opens at Path: a path replaced after the plan is refused.
type PathRule struct {
	Path   string `json:"path"`
	Access uint64 `json:"access"`
	Dev    uint64 `json:"dev,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
}

// Seccomp is the filter the helper loads: each true field denies a set of
// system calls with EPERM (see filter.go).
type Seccomp struct {
	// Sockets denies socket(2) of every family but AF_UNIX (and, with
	// AllowInet, AF_INET/AF_INET6), socketpair(2) of every family but
	// AF_UNIX.
	Sockets   bool `json:"sockets"`
	AllowInet bool `json:"allow_inet"`
	// IOURing denies io_uring_setup/enter/register: io_uring creates
	// sockets without socket(2) and changes files without the checked
	// system calls.
	IOURing bool `json:"io_uring"`
	// FileMeta denies chmod, chown, xattr and timestamp changes (Landlock
	// handles none of them), everywhere, writable roots included.
	FileMeta bool `json:"file_meta"`
	// Memfd denies memfd_create: an executable memfd is outside every
	// Landlock rule.
	Memfd bool `json:"memfd"`
}

// Spec is what the helper applies, in this order: no_new_privs, the
// Landlock ruleset (when LandlockABI > 0), the seccomp filter. Always
// denied by the filter: every system call of another ABI (i386 and x32
// on x86-64) and TIOCSTI.
type Spec struct {
	LandlockABI int        `json:"landlock_abi"`
	HandledFS   uint64     `json:"handled_fs"`
	HandledNet  uint64     `json:"handled_net"`
	Scoped      uint64     `json:"scoped"`
	Paths       []PathRule `json:"paths"`
	ConnectTCP  []uint16   `json:"connect_tcp"`
	Seccomp     Seccomp    `json:"seccomp"`
}

// Config is the sandbox a Spec is planned for.
type Config struct {
	Ceiling policy.KernelCeiling
	Host    coverage.HostMechanisms
	// WriteRoots: with write=false, absolute directory paths beneath which
	// writes stay allowed.
	WriteRoots []string
	// Exec: with shell=none, the files that may be executed (the
	// entrypoint and the exec allow list); the program interpreter of a
	// dynamic ELF among them is added.
	Exec []string
	// AllowConnect: with network=false, the allowed endpoints.
	AllowConnect []endpoint.Endpoint
}

// Plan is the Spec for cfg: what the host's mechanisms can apply of the
// ceiling (coverage.Of with the same HostMechanisms decides what
// that covers, and refuses first). Errors: write=false or shell=none
// without Landlock and seccomp (a second guard), a path cannot be
// stat'ed.
func Plan(cfg Config) (Spec, error) {
	c, h := cfg.Ceiling, cfg.Host
	var s Spec
	fs := !c.Write || c.Shell != policy.ShellFull
	if fs && !(h.Landlock() && h.Seccomp()) {
		return s, fmt.Errorf("%w: write/shell need Landlock (%s) and seccomp (%s)", coverage.ErrCannotEnforce, h.LandlockError, h.SeccompError)
	}
	s.LandlockABI = h.LandlockABI
	if !c.Write {
		if err := s.planWrite(cfg.WriteRoots); err != nil {
			return s, err
		}
	}
	if c.Shell == policy.ShellNone {
		if err := s.planExec(cfg.Exec); err != nil {
			return s, err
		}
	}
	if !c.Network && h.Seccomp() {
		// Without seccomp network=false is the cgroup-BPF layer's alone
		// (coverage.Of).
		s.planNetwork(cfg.AllowConnect)
	}
	return s, nil
}

// planWrite plans write=false: Landlock handles the write rights of the
// ABI, allowed beneath each writable root (roots) and, for writing
// files, on the writable devices that exist; seccomp refuses the file
// metadata calls and io_uring. Errors: a root cannot be stat'ed.
func (s *Spec) planWrite(roots []string) error {
	w := writeRights(s.LandlockABI)
	s.HandledFS |= w
	for _, r := range roots {
		if err := s.add(r, w, true); err != nil {
			return fmt.Errorf("writable root: %w", err)
		}
	}
	for _, d := range writableDevices {
		if err := s.add(d, (llsys.AccessFSWriteFile|llsys.AccessFSTruncate)&w, false); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	s.Seccomp.FileMeta, s.Seccomp.IOURing = true, true
	return nil
}

// planExec plans shell=none: Landlock allows execution of the files exe
// and of the program interpreter of each dynamic ELF among them only;
// seccomp refuses memfd_create. Errors: a file cannot be read or
// stat'ed.
func (s *Spec) planExec(exe []string) error {
	s.HandledFS |= llsys.AccessFSExecute
	files := append([]string(nil), exe...)
	for _, f := range exe {
		interp, err := progcheck.ELFInterp(f)
		if err != nil {
			return err
		}
		if interp != "" {
			files = append(files, interp)
		}
	}
	for _, f := range files {
		if err := s.add(f, llsys.AccessFSExecute, true); err != nil {
			return fmt.Errorf("exec allow list: %w", err)
		}
	}
	s.Seccomp.Memfd = true
	return nil
}

// planNetwork plans network=false on a host with seccomp: seccomp
// refuses sockets (inet ones allowed when an endpoint of allow is TCP
// or UDP) and io_uring; Landlock ABI 4 handles TCP connect and bind,
// allowing connect to the TCP endpoints' ports; ABI 6 scopes abstract
// unix sockets.
func (s *Spec) planNetwork(allow []endpoint.Endpoint) {
	s.Seccomp.Sockets, s.Seccomp.IOURing = true, true
	for _, ep := range allow {
		if ep.Kind == endpoint.TCP || ep.Kind == endpoint.UDP {
			s.Seccomp.AllowInet = true
		}
	}
	if s.LandlockABI >= 4 {
		s.HandledNet = llsys.AccessNetConnectTCP | llsys.AccessNetBindTCP
		for _, ep := range allow {
			if ep.Kind == endpoint.TCP {
				s.ConnectTCP = append(s.ConnectTCP, ep.Port)
			}
		}
	}
	if s.LandlockABI >= 6 {
		s.Scoped = llsys.ScopeAbstractUnixSocket
	}
}

// add appends a rule for path with the rights of access that a rule on
// its file type may hold (all for a directory, fileRights otherwise),
// recording its identity when pin.
func (s *Spec) add(path string, access uint64, pin bool) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	r := PathRule{Path: path, Access: access}
	if pin {
		r.Dev, r.Ino = st.Dev, st.Ino
	}
	s.Paths = append(s.Paths, r)
	return nil
}
