package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// CoreLimit is RLIMIT_CORE (soft and hard) of every sandboxed command: at
// exactly 1 the kernel aborts a core dump to a pipe helper (core_pattern
// "|..."), a program it would otherwise run as root outside the sandbox.
// The kernel programs refuse the sandbox any change of it.
const CoreLimit = 1

// prlimit is unix.Prlimit (tests substitute it).
var prlimit = unix.Prlimit

// LimitCore sets pid's RLIMIT_CORE to CoreLimit/CoreLimit (pid 0: this
// process, whose children inherit it) and reads it back; a limit already
// at CoreLimit/CoreLimit is left alone. It returns a function that puts
// the previous limit back (a no-op when nothing was changed), for a caller whose next step
// may still refuse the workload (nothing half-applied); restoring is best
// effort and reports its error. Errors: the limit cannot be read or set,
// or reads back as anything else (it is then put back first). The caller
// must refuse the workload on error: its core dumps could reach a pipe
// helper outside.
func LimitCore(pid int) (restore func() error, err error) {
	var old unix.Rlimit
	if err := prlimit(pid, unix.RLIMIT_CORE, nil, &old); err != nil {
		return nil, fmt.Errorf("read RLIMIT_CORE of pid %d: %w", pid, err)
	}
	want := unix.Rlimit{Cur: CoreLimit, Max: CoreLimit}
	if old == want {
		// Nothing to change, nothing to put back.
		return func() error { return nil }, nil
	}
	restore = func() error {
		if err := prlimit(pid, unix.RLIMIT_CORE, &old, nil); err != nil {
			return fmt.Errorf("restore RLIMIT_CORE of pid %d to %d/%d: %w", pid, old.Cur, old.Max, err)
		}
		return nil
	}
	if err := prlimit(pid, unix.RLIMIT_CORE, &want, nil); err != nil {
		return nil, fmt.Errorf("set RLIMIT_CORE of pid %d to %d: %w", pid, CoreLimit, err)
	}
	var got unix.Rlimit
	if err := prlimit(pid, unix.RLIMIT_CORE, nil, &got); err != nil {
		_ = restore()
		return nil, fmt.Errorf("read RLIMIT_CORE of pid %d: %w", pid, err)
	}
	if got != want {
		_ = restore()
		return nil, fmt.Errorf("RLIMIT_CORE of pid %d is %d/%d, want %d/%d", pid, got.Cur, got.Max, want.Cur, want.Max)
	}
	return restore, nil
}
