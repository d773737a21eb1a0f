package enforcer_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/test/probe"
)

// The workload of the upgrade-in-place test: the probe upgrade-loop
// SCRATCH OPS, this test binary re-executed by the previous build's
// `enforcerd run`. It attempts every operation of OPS (comma-separated
// loopOps names) over and over until the file "stop" appears in the
// scratch directory, and prints a loopStatus line on stdout (a pipe:
// writable under write=false) every loopReport and once more when it stops,
// then its probe result. It never writes anywhere else.
const (
	loopReport = 100 * time.Millisecond
	loopPause  = 2 * time.Millisecond
)

func init() { probe.Register("upgrade-loop", upgradeLoop) }

// loopOps are the operations the loop attempts; each returns nil when the
// operation succeeded (and had its effect), else its errno. Every one is
// denied by the ceiling the test registers.
var loopOps = map[string]func(dir string, i int) error{
	// write=false: creating a file (inode_create, file_open).
	"create": func(dir string, i int) error {
		fd, err := unix.Open(filepath.Join(dir, fmt.Sprintf("leak-%d", i)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	// network=false: an inet socket (LSM socket_create; cgroup
	// sock_create, the only layer in a boot without BPF LSM).
	"socket": func(dir string, i int) error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	// Every ceiling: bpf() (LSM bpf, one of two variants by kernel): a
	// one-element array map, closed again.
	"bpf": func(dir string, i int) error {
		attr := [4]uint32{unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1} // type, key and value size, max entries
		fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
		if errno != 0 {
			return errno
		}
		unix.Close(int(fd))
		return nil
	},
}

// loopStatus is one report of the loop.
type loopStatus struct {
	Time   int64  `json:"t"` // unix nanoseconds
	Pid    int    `json:"pid"`
	Cgroup string `json:"cgroup"`
	Iter   int    `json:"iter"` // completed iterations
	// Per operation: attempts denied (EPERM/EACCES), succeeded (a leak:
	// the ceiling was not in force), and failed otherwise (the last
	// errno: the loop could not tell).
	Denied    map[string]int    `json:"denied"`
	Leaks     map[string]int    `json:"leaks"`
	FirstLeak map[string]int64  `json:"first_leak,omitempty"`
	Other     map[string]string `json:"other,omitempty"`
	Final     bool              `json:"final,omitempty"`
}

// upgradeLoop is the probe upgrade-loop SCRATCH OPS.
func upgradeLoop(r *probe.Result, a []string) {
	dir := a[0]
	names := strings.Split(a[1], ",")
	st := loopStatus{Denied: map[string]int{}, Leaks: map[string]int{}, FirstLeak: map[string]int64{}, Other: map[string]string{}}
	st.Pid = os.Getpid()
	st.Cgroup, _ = cgroup.PidGroup(st.Pid)
	enc := json.NewEncoder(os.Stdout)
	report := func() {
		st.Time = time.Now().UnixNano()
		_ = enc.Encode(st)
	}
	last := time.Time{}
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			st.Final = true
			report()
			return
		}
		for _, n := range names {
			op, ok := loopOps[n]
			if !ok {
				st.Other[n] = "unknown operation"
				continue
			}
			var errno syscall.Errno
			switch err := op(dir, i); {
			case err == nil:
				st.Leaks[n]++
				if st.FirstLeak[n] == 0 {
					st.FirstLeak[n] = time.Now().UnixNano()
				}
			case errors.As(err, &errno) && (errno == unix.EPERM || errno == unix.EACCES):
				st.Denied[n]++
			default:
				st.Other[n] = err.Error()
			}
		}
		st.Iter = i + 1
		if time.Since(last) >= loopReport {
			report()
			last = time.Now()
		}
		time.Sleep(loopPause)
	}
}

// loopOutput collects the status lines of the upgrade loop.
type loopOutput struct {
	mu   sync.Mutex
	all  []loopStatus
	bad  string        // a line that is not a status
	more chan struct{} // a status arrived (or the output ended)
	eof  chan struct{}
}

func readLoop(f *os.File) *loopOutput {
	o := &loopOutput{more: make(chan struct{}, 1), eof: make(chan struct{})}
	go func() {
		defer close(o.eof)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			if _, err := probe.ParseResult(sc.Bytes()); err == nil {
				continue // the probe's own result, after the final status
			}
			var st loopStatus
			o.mu.Lock()
			if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
				o.bad = sc.Text()
			} else {
				o.all = append(o.all, st)
			}
			o.mu.Unlock()
			select {
			case o.more <- struct{}{}:
			default:
			}
		}
	}()
	return o
}

// wait returns the latest status once cond holds for it. It fails t at the
// timeout, or when the loop ended before (why says what was awaited).
func (o *loopOutput) wait(t *testing.T, why string, timeout time.Duration, cond func(loopStatus) bool, diag func() string) loopStatus {
	t.Helper()
	deadline := time.After(timeout)
	for {
		o.mu.Lock()
		if o.bad != "" {
			o.mu.Unlock()
			t.Fatalf("upgrade loop printed %q, not a status", o.bad)
		}
		if n := len(o.all); n > 0 && cond(o.all[n-1]) {
			st := o.all[n-1]
			o.mu.Unlock()
			return st
		}
		o.mu.Unlock()
		select {
		case <-o.more:
		case <-o.eof:
			o.mu.Lock()
			n := len(o.all)
			o.mu.Unlock()
			if n > 0 {
				o.mu.Lock()
				st := o.all[n-1]
				o.mu.Unlock()
				if cond(st) {
					return st
				}
			}
			t.Fatalf("upgrade loop ended while waiting for %s (%d statuses)\n%s", why, n, diag())
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %s\n%s", timeout, why, diag())
		}
	}
}

// iterAt is the number of iterations the loop had completed at time at (the
// last status at or before it).
func (o *loopOutput) iterAt(at time.Time) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, st := range o.all {
		if st.Time <= at.UnixNano() {
			n = st.Iter
		}
	}
	return n
}
