package enforcer

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestCoarseTickIsAfterEverythingBefore: the registration time is strictly
// later than any inode time the kernel could have stamped before Register
// began (inode times come from CLOCK_REALTIME_COARSE), and not later than
// what it stamps afterwards.
func TestCoarseTickIsAfterEverythingBefore(t *testing.T) {
	var before unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &before); err != nil {
		t.Fatal(err)
	}
	got, err := coarseTick()
	if err != nil {
		t.Fatal(err)
	}
	if got <= uint64(before.Nano()) {
		t.Fatalf("coarseTick() = %d, not after the coarse time %d read before it", got, before.Nano())
	}
	var after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &after); err != nil {
		t.Fatal(err)
	}
	if got > uint64(after.Nano()) {
		t.Fatalf("coarseTick() = %d, later than the coarse time %d read after it: a change made right after registration would look older", got, after.Nano())
	}
}
