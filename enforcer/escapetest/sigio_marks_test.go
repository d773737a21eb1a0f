package escapetest

// The marks of sigio.h (one per open file whose I/O signals an enforced
// process arranged) live in a map of 65,536 entries shared by every
// sandbox. A mark that cannot be stored refuses the arrangement (fail
// closed); the marks of files that are gone are purged when the map is
// full, so a sandbox that filled it and exited leaves nothing behind that
// refuses the next one.

import (
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// sigio-fill N: up to N eventfds, each F_SETOWN to the probe
		// itself (allowed: the owner is inside), until the first
		// refusal; Out: how many were arranged, Errno: the refusal's.
		"sigio-fill": func(r *probe.Result, a []string) {
			n, err := strconv.Atoi(a[0])
			if !r.Check(err, "count") {
				return
			}
			pid := unix.Getpid()
			done := 0
			for ; done < n; done++ {
				fd, err := unix.Eventfd(0, 0)
				if err != nil {
					r.Check(probe.Setupf("eventfd after %d: %v", done, err), "eventfd")
					break
				}
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETOWN, pid); !r.Check(err, "F_SETOWN") {
					break
				}
			}
			r.Out = strconv.Itoa(done)
		},
	})
}

// sigioMarks is bpf/sigio.h's SIGIO_MARKS.
const sigioMarks = 65536

func TestSigioMarksOfGoneFilesPurged(t *testing.T) {
	kt.Enforcer(t)
	// The filler's descriptors: more than the map holds.
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	raised := syscall.Rlimit{Cur: sigioMarks + 4096, Max: sigioMarks + 4096}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) }()

	// A sandbox fills the map with marks of files it holds open: its
	// next arrangement is refused and recorded.
	filler := kt.Sandbox(t, "sigio-filler")
	filler.Register(t, entry.Entry{Ceiling: tamperOnly})
	r := filler.Probe(t, "sigio-fill", strconv.Itoa(sigioMarks+1000))
	done, _ := strconv.Atoi(r.Out)
	if !r.Denied() || done == 0 || done > sigioMarks {
		t.Fatalf("filler: %v; want arrangements until the map is full (at most %d), then EPERM", r, sigioMarks)
	}
	if err := kerneltest.Match(filler.Records(t), kerneltest.Hooks(denial.HookFileFcntl).Rule(denial.RuleOwnerUnrecorded)); err != nil {
		t.Fatalf("filler refused after %d: %v", done, err)
	}
	t.Logf("filler: %d arrangements, then refused", done)

	// The filler has exited and its files are gone: another sandbox's
	// arrangements are stored, the first after a purge.
	next := kt.Sandbox(t, "sigio-next")
	next.Register(t, entry.Entry{Ceiling: tamperOnly})
	if r := next.Probe(t, "sigio-fill", "10"); r.Errno != 0 || r.Setup != "" || r.Out != "10" {
		t.Fatalf("after the filler exited: %v; want 10 arrangements (the marks of its files purged)", r)
	}
	if ds := next.Records(t); len(ds) != 0 {
		t.Fatalf("after the filler exited: records %v, want none", ds)
	}
}
