package kerneltest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/probe"
)

// Sandbox is one cgroup a test made for its probes, below the binary's
// cgroup; it is unregistered and removed when the test ends.
type Sandbox struct {
	h   *Harness
	Cg  cgroup.Cgroup
	Dir *os.File // open for CLONE_INTO_CGROUP
	// childSub: every probe first creates and enters this sub-cgroup
	// (ChildSub).
	childSub string
}

// Sandbox creates a fresh cgroup <root>/<kind>-<n>.
func (h *Harness) Sandbox(t testing.TB, kind string) *Sandbox {
	t.Helper()
	return h.SandboxAt(t, fmt.Sprintf("%s/%s-%d", h.root.Group, kind, h.seq.Add(1)))
}

// SandboxAt creates the cgroup group, which must be below Root (nested
// sandboxes: a group below another sandbox's).
func (h *Harness) SandboxAt(t testing.TB, group string) *Sandbox {
	t.Helper()
	if h.root.ID == 0 {
		t.Fatal("kerneltest: a sandbox before the harness opened (call Enforcer first)")
	}
	cg, err := cgroup.Create(h.mount, group)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cg.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dir.Close()
		if h.enf != nil {
			_ = h.enf.Unregister(cg.ID)
		}
		if err := cg.Remove(5 * time.Second); err != nil {
			t.Errorf("remove %s: %v", cg, err)
		}
	})
	return &Sandbox{h: h, Cg: cg, Dir: dir}
}

// Register registers en for the sandbox (pending when the harness says
// so) and drops every older record.
func (sb *Sandbox) Register(t testing.TB, en entry.Entry) {
	t.Helper()
	en.Pending = en.Pending || sb.h.cfg.Pending
	if err := sb.h.enf.Register(sb.Cg, en); err != nil {
		t.Fatal(err)
	}
	sb.h.Records(t, 0)
}

// Sub returns the sub-cgroup e1 below the sandbox, created by the test
// (under write=false a child cannot mkdir in cgroupfs itself; E1).
func (sb *Sandbox) Sub(t testing.TB) *Sandbox {
	t.Helper()
	cg, err := cgroup.Create(sb.h.mount, sb.Cg.Group+"/e1")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cg.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() }) // removed with the sandbox
	return &Sandbox{h: sb.h, Cg: cg, Dir: dir}
}

// ChildSub returns the sandbox as seen by probes that first create the
// sub-cgroup e1 below it themselves and move into it, as a hostile child
// would (E1).
func (sb *Sandbox) ChildSub() *Sandbox {
	c := *sb
	c.childSub = filepath.Join(sb.Cg.Path(), "e1")
	return &c
}

// Run runs the probe c directly inside the sandbox and returns its result
// (failing t when it reports none).
func (sb *Sandbox) Run(t testing.TB, c probe.Cmd) probe.Result {
	t.Helper()
	if sb.childSub != "" {
		c.SubCgroup = sb.childSub
	}
	return probe.Run(t, sb.Dir, c)
}

// Probe runs op with args inside the sandbox.
func (sb *Sandbox) Probe(t testing.TB, op string, args ...string) probe.Result {
	t.Helper()
	return sb.Run(t, probe.Cmd{Op: op, Args: args})
}

// ProbeFiles runs op with files as its fd 3, 4, ... (closed once it
// started).
func (sb *Sandbox) ProbeFiles(t testing.TB, files []*os.File, op string, args ...string) probe.Result {
	t.Helper()
	return sb.Run(t, probe.Cmd{Op: op, Args: args, Files: files})
}

// Records returns the records the sandbox's ceiling decided since the last
// read (see Harness.Records).
func (sb *Sandbox) Records(t testing.TB) []denial.Denial {
	t.Helper()
	return sb.h.Records(t, sb.Cg.ID)
}

// Records returns the records decided by the ceiling of cgroup id ceiling
// (0: by any) since the last call, and drops the others: every probe has
// exited, so all of its records are in the ring.
func (h *Harness) Records(t testing.TB, ceiling uint64) []denial.Denial {
	t.Helper()
	if err := h.rd.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	var out []denial.Denial
	for {
		d, err := h.rd.Read()
		if errors.Is(err, enforcer.ErrFlushed) {
			return out
		}
		if err != nil {
			t.Fatalf("read records: %v", err)
		}
		if ceiling == 0 || d.CeilingCgroupID == ceiling {
			out = append(out, d)
		}
	}
}
