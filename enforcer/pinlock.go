package enforcer

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrPinDirLocked: another process (a daemon) holds the pin directory's
// lock.
var ErrPinDirLocked = errors.New("pin directory in use by another enforcerd daemon")

// LockPinDir takes an exclusive flock on the pin directory itself (bpffs
// holds no regular files, so the lock is on an O_RDONLY|O_DIRECTORY fd of
// the directory), creating the directory (and mounting bpffs at
// /sys/fs/bpf, as Open does) when missing. One daemon per pin directory:
// the lock is held until unlock, or until the process exits or is killed
// (the kernel drops it with the fd). Errors: the directory cannot be made
// or opened; ErrPinDirLocked when another process holds the lock, naming
// the daemon pid recorded in its host policy when there is one.
func LockPinDir(pinDir string) (unlock func(), err error) {
	if pinDir == "" {
		pinDir = DefaultPinDir
	}
	if err := ensureBPFFS(pinDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(pinDir, 0o700); err != nil {
		return nil, fmt.Errorf("pin dir %s: %w", pinDir, err)
	}
	fd, err := unix.Open(pinDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pin dir %s: %w", pinDir, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock pin dir %s: %w", pinDir, err)
		}
		who := "another process"
		if p, recorded, rerr := readHostPolicy(MapPinPath(pinDir, HostPolicyPin)); rerr == nil && recorded && p.DaemonPID > 0 {
			who = fmt.Sprintf("the daemon with pid %d", p.DaemonPID)
		}
		return nil, fmt.Errorf("pin dir %s: %w: %s holds its lock; stop it, or give this one another pin_dir", pinDir, ErrPinDirLocked, who)
	}
	return func() { unix.Close(fd) }, nil
}

// ClearDaemonPID clears the daemon pid recorded in the host policy, only
// when it is still pid (a daemon that stops never clears another's).
// Errors: the host policy cannot be read or written.
func (e *Enforcer) ClearDaemonPID(pid int) error {
	p, recorded, err := e.HostPolicy()
	if err != nil || !recorded || p.DaemonPID != pid {
		return err
	}
	p.DaemonPID = 0
	return e.SetHostPolicy(p)
}
