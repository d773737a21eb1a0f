// Package bench is the driver of `make bench`: syscall
// microbenchmarks, a file-heavy macro workload, scale, registration latency,
// memory and an audit flood, each measured without enforcerd, with its
// programs loaded, under an enforced ceiling, on the denied path, and under
// the same intent expressed with Landlock. Figures are ratios against the
// no-program baseline of the same run (TCG timings mean nothing absolute).
//
// The measured work runs in worker processes (this binary re-executed with
// "worker") started directly inside the phase's cgroup with
// CLONE_INTO_CGROUP, so the parent (the driver, in an unregistered cgroup)
// never runs under a ceiling.
package bench

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Op names one microbenchmark operation.
type Op string

// The measured operations (docs/performance.md says why each).
const (
	OpOpenRead    Op = "open_read"      // open(O_RDONLY) + close of an existing file
	OpCreateWrite Op = "create_unlink"  // open(O_CREAT|O_WRONLY) + write 64 B + close + unlink
	OpStat        Op = "stat"           // stat of an existing file
	OpRename      Op = "rename"         // rename within one directory
	OpExec        Op = "exec"           // fork + exec of a static binary + wait
	OpSocket      Op = "socket_close"   // socket(AF_INET, SOCK_STREAM) + close
	OpConnect     Op = "connect"        // socket + connect to a loopback listener + close (RST)
	OpMacro       Op = "macro_untar"    // unpack a source tree, walk + stat + read it, remove it
	OpFlood       Op = "flood"          // audit flood: denied socket() in a loop
	OpLatency     Op = "latency_socket" // registration latency probe
)

// MicroOps is every microbenchmark in table order.
var MicroOps = []Op{OpOpenRead, OpCreateWrite, OpStat, OpRename, OpExec, OpSocket, OpConnect}

// NetOps are the operations the cgroup-BPF layer sees (the native part).
var NetOps = []Op{OpSocket, OpConnect}

// Deniable reports whether an enforced ceiling (network=deny, write=deny,
// shell=none) can deny op: reads and stats are never denied by enforcerd.
func Deniable(op Op) bool {
	switch op {
	case OpCreateWrite, OpRename, OpExec, OpSocket, OpConnect:
		return true
	}
	return false
}

// LandlockExpresses reports whether Landlock at ABI abi mediates op (so that
// a Landlock figure is a comparison of like with like). Landlock has no rule
// for socket creation or stat; TCP connect needs ABI 4.
func LandlockExpresses(op Op, abi int) bool {
	switch op {
	case OpOpenRead, OpCreateWrite, OpRename, OpExec, OpMacro:
		return true
	case OpConnect:
		return abi >= 4
	}
	return false
}

// env is what a worker's operations act on, prepared before the worker
// reports ready (so setup is never measured and never under a ceiling).
type env struct {
	dir      string // scratch directory (tmpfs in the guest)
	readPath string // an existing file
	tmpPath  string // created and unlinked by OpCreateWrite
	renameA  string
	renameB  string
	renamed  bool
	execPath string
	port     int    // loopback listener
	connFD   int    // pre-created socket for the denied connect
	tarData  []byte // OpMacro input
	payload  []byte
	deny     bool // the denied path: every operation must fail with EPERM
}

func newEnv(dir string, port int, tarPath, execPath string, deny bool) (*env, error) {
	e := &env{dir: dir, port: port, connFD: -1, execPath: execPath, deny: deny, payload: bytes.Repeat([]byte("x"), 64)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e.readPath = filepath.Join(dir, "read")
	e.tmpPath = filepath.Join(dir, "tmp")
	e.renameA = filepath.Join(dir, "ren-a")
	e.renameB = filepath.Join(dir, "ren-b")
	if err := os.WriteFile(e.readPath, e.payload, 0o644); err != nil {
		return nil, err
	}
	_ = os.Remove(e.renameB)
	if err := os.WriteFile(e.renameA, e.payload, 0o644); err != nil {
		return nil, err
	}
	if port > 0 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("socket: %w", err)
		}
		e.connFD = fd
	}
	if tarPath != "" {
		b, err := os.ReadFile(tarPath)
		if err != nil {
			return nil, err
		}
		e.tarData = b
	}
	return e, nil
}

// errWrongOutcome: an allowed operation failed or a denied one succeeded.
// Fatal: a benchmark of broken enforcement measures nothing.
var errWrongOutcome = errors.New("wrong outcome")

// check turns one operation's error into the benchmark's verdict.
func (e *env) check(op Op, err error) error {
	if e.deny {
		if err == nil {
			return fmt.Errorf("%s: %w: succeeded on the denied path", op, errWrongOutcome)
		}
		if !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("%s: %w: denied with %v, want EPERM", op, errWrongOutcome, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %v", op, errWrongOutcome, err)
	}
	return nil
}

var loopback = &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}

// run performs op once.
func (e *env) run(op Op) error {
	switch op {
	case OpOpenRead:
		fd, err := unix.Open(e.readPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return e.check(op, err)
	case OpCreateWrite:
		fd, err := unix.Open(e.tmpPath, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return e.check(op, err)
		}
		_, werr := unix.Write(fd, e.payload)
		unix.Close(fd)
		uerr := unix.Unlink(e.tmpPath)
		return e.check(op, errors.Join(werr, uerr))
	case OpStat:
		var st unix.Stat_t
		return e.check(op, unix.Stat(e.readPath, &st))
	case OpRename:
		from, to := e.renameA, e.renameB
		if e.renamed {
			from, to = to, from
		}
		err := unix.Rename(from, to)
		if err == nil {
			e.renamed = !e.renamed
		}
		return e.check(op, err)
	case OpExec:
		pid, err := syscall.ForkExec(e.execPath, []string{e.execPath}, &syscall.ProcAttr{Env: []string{}})
		if err != nil {
			return e.check(op, err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return e.check(op, err)
		}
		if ws.ExitStatus() != 0 {
			return e.check(op, fmt.Errorf("%s exited %d", e.execPath, ws.ExitStatus()))
		}
		return e.check(op, nil)
	case OpSocket:
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return e.check(op, err)
	case OpConnect:
		sa := *loopback
		sa.Port = e.port
		if e.deny {
			// The socket was created before the ceiling applied; the
			// denied connect leaves it unconnected, ready for the next.
			return e.check(op, unix.Connect(e.connFD, &sa))
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return e.check(op, err)
		}
		// Linger 0: close sends RST, so no TIME_WAIT piles up and the
		// ephemeral ports never run out.
		_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		err = unix.Connect(fd, &sa)
		unix.Close(fd)
		return e.check(op, err)
	case OpMacro:
		return e.check(op, e.macro())
	}
	return fmt.Errorf("unknown op %q", op)
}

// macro unpacks the tarball into a fresh tree, walks it (stat + read of
// every file), and removes it: the file-heavy shape of a build or a checkout.
func (e *env) macro() error {
	root := filepath.Join(e.dir, "tree")
	if err := untar(e.tarData, root); err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, err := os.Lstat(p); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			if _, err := f.Read(buf); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(root)
}

func untar(data []byte, root string) error {
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(root, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			cerr := f.Close()
			if err := errors.Join(err, cerr); err != nil {
				return err
			}
		}
	}
}
