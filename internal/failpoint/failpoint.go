//go:build failpoint

package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Enabled: this build has failpoints (the failpoint build tag).
const Enabled = true

var (
	mu    sync.Mutex
	armed string
	nth   int
	hits  int
)

// Arm makes the nth (from 1) Hit of name kill the process with SIGKILL;
// spec is "name" (the first hit) or "name@n". An empty spec disarms.
// Errors: a malformed spec.
func Arm(spec string) error {
	mu.Lock()
	defer mu.Unlock()
	armed, nth, hits = "", 0, 0
	if spec == "" {
		return nil
	}
	name, count, ok := strings.Cut(spec, "@")
	n := 1
	if ok {
		var err error
		if n, err = strconv.Atoi(count); err != nil || n < 1 {
			return fmt.Errorf("failpoint %q: want name or name@N with N >= 1", spec)
		}
	}
	armed, nth = name, n
	return nil
}

// Hit kills the process (SIGKILL, no deferred function runs) when name
// is armed and this is its nth hit.
func Hit(name string) {
	mu.Lock()
	if armed == "" || name != armed {
		mu.Unlock()
		return
	}
	hits++
	kill := hits == nth
	mu.Unlock()
	if kill {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
