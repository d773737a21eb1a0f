package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// coreLimit is RLIMIT_CORE (soft and hard) of every sandboxed command: at
// exactly 1 the kernel aborts a core dump to a pipe helper (core_pattern
// "|..."), a program it would otherwise run as root outside the sandbox.
// The kernel programs refuse the sandbox any change of it.
const coreLimit = 1

// prlimit is unix.Prlimit (tests substitute it).
var prlimit = unix.Prlimit

// limitCore sets pid's RLIMIT_CORE to coreLimit/coreLimit (pid 0: this
// process, whose children inherit it) and checks that it took.
func limitCore(pid int) error {
	want := unix.Rlimit{Cur: coreLimit, Max: coreLimit}
	if err := prlimit(pid, unix.RLIMIT_CORE, &want, nil); err != nil {
		return fmt.Errorf("set RLIMIT_CORE of pid %d to %d: %w", pid, coreLimit, err)
	}
	var got unix.Rlimit
	if err := prlimit(pid, unix.RLIMIT_CORE, nil, &got); err != nil {
		return fmt.Errorf("read RLIMIT_CORE of pid %d: %w", pid, err)
	}
	if got != want {
		return fmt.Errorf("RLIMIT_CORE of pid %d is %d/%d, want %d/%d", pid, got.Cur, got.Max, want.Cur, want.Max)
	}
	return nil
}
