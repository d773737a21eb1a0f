// Package procid tells processes apart across pid reuse: a process is its
// pid plus its start time (clock ticks after boot, /proc/PID/stat field
// 22), a pair the kernel never hands out twice.
//
// Layering (docs/design.md): layer 0; it may import nothing else of the
// module, and of other modules no cilium/ebpf, not even through its
// imports.
package procid

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// TicksPerSecond is USER_HZ, the unit of /proc/PID/stat times (100 on
// every Linux architecture Go supports).
const TicksPerSecond = 100

// ErrMalformed: /proc/PID/stat could not be parsed.
var ErrMalformed = errors.New("malformed /proc stat")

// StartTime returns the start time of process pid in clock ticks after
// boot. Errors: the process does not exist (wraps os.ErrNotExist) or its
// stat line is malformed (ErrMalformed).
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("start time of pid %d: %w", pid, err)
	}
	return ParseStartTime(b)
}

// ParseStartTime reads field 22 (starttime) of a /proc/PID/stat line. The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted after its last ')'.
func ParseStartTime(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no ')'", ErrMalformed)
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("%w: %d fields after the command", ErrMalformed, len(f))
	}
	v, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: starttime %q", ErrMalformed, f[19])
	}
	return v, nil
}

// Now is the current time in the unit of StartTime: clock ticks of
// CLOCK_BOOTTIME (the clock process start times are taken from since
// Linux 5.3). Errors: clock_gettime failed.
func Now() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("boot time clock: %w", err)
	}
	return uint64(ts.Sec)*TicksPerSecond + uint64(ts.Nsec)/(1e9/TicksPerSecond), nil
}

// Parent returns the parent pid of process pid (/proc/PID/stat field 4).
// Errors: the process does not exist (wraps os.ErrNotExist) or its stat
// line is malformed (ErrMalformed).
func Parent(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("parent of pid %d: %w", pid, err)
	}
	return ParseParent(b)
}

// ParseParent reads field 4 (ppid) of a /proc/PID/stat line, counting
// fields after the command name's last ')' as ParseStartTime does.
func ParseParent(stat []byte) (int, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no ')'", ErrMalformed)
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state); ppid is field 4.
	if len(f) < 2 {
		return 0, fmt.Errorf("%w: %d fields after the command", ErrMalformed, len(f))
	}
	v, err := strconv.Atoi(string(f[1]))
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: ppid %q", ErrMalformed, f[1])
	}
	return v, nil
}
