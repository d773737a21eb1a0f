// Package cgroup finds the cgroup v2 hierarchy, names cgroups by path and id,
// and creates, enters and removes the transient cgroups enforcerd runs
// workloads in. Creation, kill and removal go through containerd/cgroups/v3.
//
// The cgroup2 mount is read from /proc/self/mountinfo, never assumed: hosts
// in hybrid mode (v1 controllers, as on this project's development VMs)
// mount it at /sys/fs/cgroup/unified, unified hosts at /sys/fs/cgroup.
//
// Layering (docs/design.md): layer 1; it may import nothing else of the
// module, and of other modules no cilium/ebpf.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"
)

// ErrNoCgroup2 means no cgroup2 filesystem is mounted.
var ErrNoCgroup2 = errors.New("no cgroup2 filesystem mounted")

// Mountpoint returns the mount point of the cgroup2 filesystem, read from
// /proc/self/mountinfo. Errors: ErrNoCgroup2 when none is mounted.
func Mountpoint() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("cgroup2 mount: %w", err)
	}
	defer f.Close()
	return ParseMountinfo(f)
}

// ParseMountinfo returns the first cgroup2 mount point in a
// /proc/<pid>/mountinfo stream (proc(5): the filesystem type follows the
// " - " separator; the mount point is field 5, octal-escaped).
func ParseMountinfo(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		post1 := strings.Fields(post)
		if len(post1) < 1 || post1[0] != "cgroup2" {
			continue
		}
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		return unescapeOctal(f[4]), nil
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("cgroup2 mount: %w", err)
	}
	return "", ErrNoCgroup2
}

// unescapeOctal undoes mountinfo's \ooo escaping of spaces, tabs, newlines
// and backslashes.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			v := (s[i+1]-'0')*64 + (s[i+2]-'0')*8 + (s[i+3] - '0')
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return s[0] <= '3'
}

// Cgroup names one cgroup v2 directory.
type Cgroup struct {
	// Mountpoint of the cgroup2 filesystem, e.g. /sys/fs/cgroup/unified.
	Mountpoint string
	// Group is the path below the mount point, as in /proc/<pid>/cgroup
	// ("/" for the root, "/enforcerd/run-42").
	Group string
	// ID is the cgroup id the kernel reports to BPF programs
	// (bpf_get_current_cgroup_id): the inode number of the directory.
	ID uint64
	// Level is the depth below the root (root = 0), the index
	// bpf_get_current_ancestor_cgroup_id takes.
	Level int
}

// Path is the directory of the cgroup in the filesystem.
func (c Cgroup) Path() string { return filepath.Join(c.Mountpoint, c.Group) }

func (c Cgroup) String() string { return fmt.Sprintf("%s (id %d)", c.Group, c.ID) }

// Level returns the depth of a group path ("/" = 0, "/a/b" = 2).
func Level(group string) int {
	g := strings.Trim(filepath.Clean(group), "/")
	if g == "" || g == "." {
		return 0
	}
	return strings.Count(g, "/") + 1
}

// Open names an existing cgroup. Errors if group is not a clean absolute path
// or the directory does not exist.
func Open(mountpoint, group string) (Cgroup, error) {
	if group != "/" {
		if err := cgroup2.VerifyGroupPath(group); err != nil {
			return Cgroup{}, fmt.Errorf("cgroup %q: %w", group, err)
		}
	}
	c := Cgroup{Mountpoint: mountpoint, Group: group, Level: Level(group)}
	var st unix.Stat_t
	if err := unix.Stat(c.Path(), &st); err != nil {
		return Cgroup{}, fmt.Errorf("cgroup %s: %w", c.Path(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return Cgroup{}, fmt.Errorf("cgroup %s: not a directory", c.Path())
	}
	c.ID = st.Ino
	return c, nil
}

// Create makes a new cgroup (and any missing parents) with no controllers
// enabled and returns it. Errors if it cannot be created.
func Create(mountpoint, group string) (Cgroup, error) {
	if _, err := cgroup2.NewManager(mountpoint, group, &cgroup2.Resources{}); err != nil {
		return Cgroup{}, fmt.Errorf("create cgroup %s: %w", group, err)
	}
	return Open(mountpoint, group)
}

// Remove kills every process left in the cgroup subtree and removes it,
// waiting up to timeout for the processes to exit.
func (c Cgroup) Remove(timeout time.Duration) error {
	m, err := cgroup2.Load(c.Group, cgroup2.WithMountpoint(c.Mountpoint))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", c.Group, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		procs, err := m.Procs(true)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cgroup %s: %w", c.Group, err)
		}
		if len(procs) == 0 {
			break
		}
		_ = m.Kill()
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: %d processes still running", c.Group, len(procs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Remove sub-cgroups bottom-up (a child may have created some).
	var dirs []string
	_ = filepath.WalkDir(c.Path(), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove cgroup %s: %w", dirs[i], err)
		}
	}
	return nil
}

// OpenDir opens the cgroup directory for CLONE_INTO_CGROUP
// (syscall.SysProcAttr.CgroupFD). The caller closes the file.
func (c Cgroup) OpenDir() (*os.File, error) {
	fd, err := unix.Open(c.Path(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open cgroup %s: %w", c.Path(), err)
	}
	return os.NewFile(uintptr(fd), c.Path()), nil
}

// SysProcAttr returns process attributes that start a child directly inside
// the cgroup (clone3 CLONE_INTO_CGROUP, Linux >= 5.7), so it never runs a
// single instruction outside it. dir must stay open until the child started.
func SysProcAttr(dir *os.File) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
}

// PidGroup returns the cgroup v2 group path of a process, from
// /proc/<pid>/cgroup.
func PidGroup(pid int) (string, error) {
	g, err := cgroup2.PidGroupPath(pid)
	if err != nil {
		return "", fmt.Errorf("cgroup of pid %d: %w", pid, err)
	}
	return g, nil
}

// ErrNotFrozen: the cgroup did not reach the frozen state in time.
var ErrNotFrozen = errors.New("cgroup did not freeze")

func (c Cgroup) manager() (*cgroup2.Manager, error) {
	m, err := cgroup2.Load(c.Group, cgroup2.WithMountpoint(c.Mountpoint))
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", c.Group, err)
	}
	return m, nil
}

// Procs returns the pids (thread group ids) of every process in the cgroup
// and its descendants, from cgroup.procs. Exited processes are not listed.
func (c Cgroup) Procs() ([]int, error) {
	m, err := c.manager()
	if err != nil {
		return nil, err
	}
	ps, err := m.Procs(true)
	if err != nil {
		return nil, fmt.Errorf("processes of cgroup %s: %w", c.Group, err)
	}
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = int(p)
	}
	return out, nil
}

// Freeze writes cgroup.freeze (the whole subtree stops) and waits up to
// timeout for cgroup.events to report "frozen 1". Errors: the write failed;
// ErrNotFrozen when the kernel did not finish freezing in time.
func (c Cgroup) Freeze(timeout time.Duration) error {
	m, err := c.manager()
	if err != nil {
		return err
	}
	if err := m.Freeze(); err != nil {
		return fmt.Errorf("freeze cgroup %s: %w", c.Group, err)
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(5 * time.Millisecond) {
		frozen, err := c.Frozen()
		if err != nil {
			return fmt.Errorf("freeze cgroup %s: %w", c.Group, err)
		}
		if frozen {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freeze cgroup %s: %w within %v", c.Group, ErrNotFrozen, timeout)
		}
	}
}

// Frozen reports whether cgroup.events says "frozen 1": every process of
// the subtree is stopped.
func (c Cgroup) Frozen() (bool, error) {
	b, err := os.ReadFile(filepath.Join(c.Path(), "cgroup.events"))
	if err != nil {
		return false, fmt.Errorf("cgroup %s: %w", c.Group, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "frozen" {
			return strings.TrimSpace(v) == "1", nil
		}
	}
	return false, fmt.Errorf("cgroup %s: cgroup.events has no frozen key", c.Group)
}

// Thaw writes 0 to cgroup.freeze.
func (c Cgroup) Thaw() error {
	m, err := c.manager()
	if err != nil {
		return err
	}
	if err := m.Thaw(); err != nil {
		return fmt.Errorf("thaw cgroup %s: %w", c.Group, err)
	}
	return nil
}

// Kill sends SIGKILL to every process of the subtree (cgroup.kill, or
// freeze, signal each process, thaw on kernels before 5.14).
func (c Cgroup) Kill() error {
	m, err := c.manager()
	if err != nil {
		return err
	}
	if err := m.Kill(); err != nil {
		return fmt.Errorf("kill cgroup %s: %w", c.Group, err)
	}
	return nil
}

// Groups walks the cgroup2 hierarchy at mountpoint and returns every
// cgroup that exists now, by id (the directory's inode number), as its
// group path ("/" for the root). A cgroup removed during the walk is left
// out. Errors: the walk fails (e.g. mountpoint unreadable).
func Groups(mountpoint string) (map[uint64]string, error) {
	ids := map[uint64]string{}
	err := filepath.WalkDir(mountpoint, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		rel, err := filepath.Rel(mountpoint, p)
		if err != nil {
			return err
		}
		ids[st.Ino] = filepath.Clean("/" + rel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk cgroups %s: %w", mountpoint, err)
	}
	return ids, nil
}
