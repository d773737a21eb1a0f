// Package ownterm declares a sandbox's own terminals at registration: the
// terminals a process holds as its standard input, output and error (file
// descriptors 0, 1, 2) and its controlling terminal, as device identities
// (entry.Terminal). Every other terminal is a host device under every
// ceiling (docs/design.md "Own terminals"). Who declares what:
//
//   - enforcerd run: its own (Self): CMD inherits its stdio and its
//     controlling terminal;
//   - the daemon, for `enforcerd run` registering through it: the
//     connecting client's (the API's own_terminals "client");
//   - the OCI hook: the container's init, the state's pid (runc's console
//     pty, or the pipes a runtime gives: no terminal), through the API's
//     own_terminals "init";
//   - the NRI plugin: the container's init where the runtime reports its
//     pid.
//
// Nothing is opened: each descriptor is only stat'ed through
// /proc/PID/fd (opening /dev/tty or /dev/ptmx again would make a
// terminal, not name one). A terminal is a character device of the tty
// class (/sys/dev/char/MAJ:MIN/subsystem), or a pty slave (majors
// 136–143, which sysfs does not list). The redirecting nodes are resolved
// to the terminal they reach: /dev/tty (5:0) to the process's controlling
// terminal (/proc/PID/stat tty_nr), /dev/console (5:1) to the console
// /dev/console opens (the last of /sys/class/tty/console/active) and
// /dev/tty0 (4:0) to the foreground virtual console
// (/sys/class/tty/tty0/active, as the kernel chose it at open). A pty
// master (/dev/ptmx, 5:2) is not declared. A pty slave carries its devpts
// instance (the descriptor's st_dev): the same pty number names another
// terminal in another devpts instance; a controlling pty that no stdio
// descriptor holds cannot be tied to its instance and is not declared
// (fail closed: a terminal left out is refused, never another one let
// through).
//
// Layering (docs/design.md): layer 1; it may import entry/, and of other
// modules no cilium/ebpf.
package ownterm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/entry"
)

// Device numbers (major, minor) the kernel fixes for terminals.
const (
	ttyMajor      = 4   // virtual consoles tty0–63 and serial ttyS*
	ttyAuxMajor   = 5   // /dev/tty, /dev/console, /dev/ptmx
	ptsMajorFirst = 136 // pty slaves (UNIX98_PTY_SLAVE_MAJOR) …
	ptsMajorLast  = 143 // … up to 136+UNIX98_PTY_MAJOR_COUNT-1
)

// Reader reads terminals through a procfs and a sysfs (tests point them
// at directories of their own).
type Reader struct {
	Proc string // "/proc"
	Sys  string // "/sys"
}

// Default reads the host's /proc and /sys.
var Default = Reader{Proc: "/proc", Sys: "/sys"}

// Of returns process pid's own terminals (Default.Of).
func Of(pid int) ([]entry.Terminal, error) { return Default.Of(pid) }

// Self returns the calling process's own terminals (Default.Self).
func Self() ([]entry.Terminal, error) { return Default.Self() }

// Of returns the terminals process pid holds as fds 0, 1 and 2 and its
// controlling terminal, deduplicated, in that order, at most
// entry.MaxTerminals (the package comment says which count). A closed
// descriptor, a pipe, a file or a socket adds nothing. Errors: the
// process cannot be read (gone, or no permission: the caller must not
// declare terminals for it). The caller keeps pid from being reused
// while this runs (its start time or a pidfd).
func (r Reader) Of(pid int) ([]entry.Terminal, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("own terminals: pid %d", pid)
	}
	return r.of(strconv.Itoa(pid))
}

// Self returns the calling process's own terminals, as Of.
func (r Reader) Self() ([]entry.Terminal, error) { return r.of("self") }

// fdStat is what one stdio descriptor is: its file's rdev and st_dev.
type fdStat struct {
	rdev, dev uint64
	chr       bool
}

func (r Reader) of(pid string) ([]entry.Terminal, error) {
	dir := filepath.Join(r.Proc, pid)
	ctty, err := r.controllingTTY(dir)
	if err != nil {
		return nil, err
	}
	var fds []fdStat
	for fd := 0; fd <= 2; fd++ {
		// AT_STATX_DONT_SYNC: cached attributes, so that a descriptor
		// on a network or FUSE file system cannot stall the caller.
		var st unix.Statx_t
		err := unix.Statx(unix.AT_FDCWD, filepath.Join(dir, "fd", strconv.Itoa(fd)), unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE, &st)
		if errors.Is(err, unix.ENOENT) {
			continue // closed
		}
		if err != nil {
			return nil, fmt.Errorf("own terminals of pid %s: fd %d: %w", pid, fd, err)
		}
		fds = append(fds, fdStat{
			rdev: unix.Mkdev(st.Rdev_major, st.Rdev_minor),
			dev:  unix.Mkdev(st.Dev_major, st.Dev_minor),
			chr:  uint32(st.Mode)&unix.S_IFMT == unix.S_IFCHR,
		})
	}
	var out []entry.Terminal
	add := func(t entry.Terminal, ok bool) {
		if ok && !slices.Contains(out, t) && len(out) < entry.MaxTerminals {
			out = append(out, t)
		}
	}
	for _, f := range fds {
		if f.chr {
			add(r.terminalOf(f, ctty, fds))
		}
	}
	if ctty != 0 {
		add(r.byNumber(ctty, fds))
	}
	return out, nil
}

// terminalOf is the terminal the stdio descriptor f reaches, if any.
func (r Reader) terminalOf(f fdStat, ctty uint64, fds []fdStat) (entry.Terminal, bool) {
	maj, min := unix.Major(f.rdev), unix.Minor(f.rdev)
	switch {
	case maj == ttyAuxMajor && min == 0: // /dev/tty: the controlling terminal
		if ctty == 0 {
			return entry.Terminal{}, false
		}
		return r.byNumber(ctty, fds)
	case maj == ttyAuxMajor && min == 1: // /dev/console
		return r.console()
	case maj == ttyAuxMajor && min == 2: // /dev/ptmx: a master, not declared
		return entry.Terminal{}, false
	case maj == ttyMajor && min == 0: // /dev/tty0: the foreground console
		return r.foregroundVT()
	case isPts(maj):
		return entry.Terminal{Dev: kdev(f.rdev), PtsDev: kdev(f.dev)}, true
	case r.isTTY(maj, min):
		return entry.Terminal{Dev: kdev(f.rdev)}, true
	}
	return entry.Terminal{}, false
}

// byNumber is the terminal of device number dev (the controlling
// terminal): a pty slave only when the stdio descriptors holding it name
// exactly one devpts instance; a redirecting node or a non-terminal is
// not declared.
func (r Reader) byNumber(dev uint64, fds []fdStat) (entry.Terminal, bool) {
	maj, min := unix.Major(dev), unix.Minor(dev)
	if isPts(maj) {
		var inst []uint64
		for _, f := range fds {
			if f.chr && f.rdev == dev && !slices.Contains(inst, f.dev) {
				inst = append(inst, f.dev)
			}
		}
		if len(inst) != 1 {
			return entry.Terminal{}, false
		}
		return entry.Terminal{Dev: kdev(dev), PtsDev: kdev(inst[0])}, true
	}
	if maj == ttyAuxMajor || (maj == ttyMajor && min == 0) || !r.isTTY(maj, min) {
		return entry.Terminal{}, false
	}
	return entry.Terminal{Dev: kdev(dev)}, true
}

// controllingTTY reads tty_nr, the 7th field of /proc/PID/stat (0: none),
// in the kernel's new_encode_dev form, which unix.Major/Minor read.
func (r Reader) controllingTTY(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, fmt.Errorf("own terminals: %w", err)
	}
	// comm (field 2) is in parentheses and may hold anything: the
	// fields after it start past the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("own terminals: %s/stat: no ')'", dir)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): tty_nr, field 7, is f[4].
	if len(f) < 5 {
		return 0, fmt.Errorf("own terminals: %s/stat: %d fields after comm", dir, len(f))
	}
	n, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("own terminals: %s/stat: tty_nr %q", dir, f[4])
	}
	return uint64(n), nil
}

// console is the terminal /dev/console opens: the last console of
// /sys/class/tty/console/active with a tty (tty0 resolved further).
func (r Reader) console() (entry.Terminal, bool) {
	names := r.activeNames("console")
	if len(names) == 0 {
		return entry.Terminal{}, false
	}
	name := names[len(names)-1]
	if name == "tty0" {
		return r.foregroundVT()
	}
	return r.named(name)
}

// foregroundVT is the virtual console /dev/tty0 reaches.
func (r Reader) foregroundVT() (entry.Terminal, bool) {
	names := r.activeNames("tty0")
	if len(names) != 1 || names[0] == "tty0" {
		return entry.Terminal{}, false
	}
	return r.named(names[0])
}

// activeNames reads /sys/class/tty/NAME/active (blank-separated names).
func (r Reader) activeNames(name string) []string {
	b, err := os.ReadFile(filepath.Join(r.Sys, "class", "tty", name, "active"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// named is the terminal /sys/class/tty/NAME is (its dev file, "4:64").
func (r Reader) named(name string) (entry.Terminal, bool) {
	if name == "" || strings.ContainsAny(name, "/.") {
		return entry.Terminal{}, false
	}
	b, err := os.ReadFile(filepath.Join(r.Sys, "class", "tty", name, "dev"))
	if err != nil {
		return entry.Terminal{}, false
	}
	ma, mi, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	maj, err1 := strconv.ParseUint(ma, 10, 32)
	min, err2 := strconv.ParseUint(mi, 10, 32)
	if !ok || err1 != nil || err2 != nil || maj == ttyAuxMajor || (maj == ttyMajor && min == 0) {
		return entry.Terminal{}, false
	}
	return entry.Terminal{Dev: uint32(maj)<<20 | uint32(min)}, true
}

// isTTY reports whether character device maj:min is a terminal: of the
// tty class in sysfs; without sysfs, a major-4 device.
func (r Reader) isTTY(maj, min uint32) bool {
	link, err := os.Readlink(filepath.Join(r.Sys, "dev", "char", fmt.Sprintf("%d:%d", maj, min), "subsystem"))
	if err != nil {
		return errors.Is(err, os.ErrNotExist) && maj == ttyMajor && !r.hasSysfs()
	}
	return filepath.Base(link) == "tty"
}

// hasSysfs reports whether r.Sys lists character devices at all.
func (r Reader) hasSysfs() bool {
	_, err := os.Stat(filepath.Join(r.Sys, "dev", "char"))
	return err == nil
}

func isPts(maj uint32) bool { return maj >= ptsMajorFirst && maj <= ptsMajorLast }

// kdev is a stat dev_t in the kernel's encoding, major<<20|minor.
func kdev(d uint64) uint32 { return unix.Major(d)<<20 | unix.Minor(d) }

// String gives t for a reader: "c 136:3 (devpts 0:25)" or "c 4:64".
func String(t entry.Terminal) string {
	s := fmt.Sprintf("c %d:%d", t.Dev>>20, t.Dev&(1<<20-1))
	if t.PtsDev != 0 {
		s += fmt.Sprintf(" (devpts %d:%d)", t.PtsDev>>20, t.PtsDev&(1<<20-1))
	}
	return s
}

// Strings gives every terminal's String (nil for none).
func Strings(ts []entry.Terminal) []string {
	if len(ts) == 0 {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = String(t)
	}
	return out
}
