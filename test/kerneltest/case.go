package kerneltest

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/probe"
)

// Effect observes a side effect from outside the sandbox: whether it
// happened, and what it is.
type Effect func() (happened bool, what string)

// Attempt performs a case's operation once in sb (a fresh cgroup for each
// run) and returns the probe's result and how to see the side effect (nil:
// only the result, and the effect the probe itself saw, count).
type Attempt func(t *testing.T, sb *Sandbox) (probe.Result, Effect)

// Op is the common Attempt: one probe operation with fixed arguments.
func Op(name string, args ...string) Attempt {
	return func(t *testing.T, sb *Sandbox) (probe.Result, Effect) {
		return sb.Probe(t, name, args...), nil
	}
}

// Where a case's probe runs relative to the registered cgroup.
type Where int

const (
	InSandbox  Where = iota
	InTestSub        // a sub-cgroup the test created below it (E1)
	InChildSub       // a sub-cgroup the probe itself creates and enters (E1)
)

// Case is one threat-model case.
type Case struct {
	Name    string
	Ceiling policy.KernelCeiling
	// Prep runs before each run (control and ceiling), before Allow.
	Prep func(t *testing.T)
	// Allow gives the shell=none allow list (called after Prep).
	Allow func(t *testing.T) []entry.FileID
	// Interp gives the shell=none program interpreters
	// (entry.Entry.ExecInterp; called after Prep).
	Interp func(t *testing.T) []entry.FileID
	// Endpoints gives the entry's allowed endpoints under network=false
	// (entry.Entry.AllowConnect; called after Prep).
	Endpoints func(t *testing.T) []endpoint.Endpoint
	// ShmDir gives the entry's POSIX shared memory directory
	// (entry.Entry.ShmDir; called after Prep).
	ShmDir  func(t *testing.T) entry.FileID
	Attempt Attempt
	At      Where
	// Nested: the denied operation is one a program the probe ran makes
	// (awk's system(), a shell's redirect): the probe's own result is not
	// judged, only the side effect and the record.
	Nested bool
	// Delivered: the kernel refuses later, where it acts on what the
	// probe arranged (a signal delivered on I/O, file_send_sigiotask),
	// so the probe's own calls may succeed: only the side effect and the
	// record are judged, and the record is required (Want.Hooks).
	Delivered bool
	// Want is the record the ceiling run must leave (Want.Hooks empty: none
	// is checked). WantAt, when set, gives it when the case runs (for
	// what depends on the kernel, which probe children must not compute).
	Want   Want
	WantAt func() Want
	// Absent: the control may fail with this errno because the guest
	// kernel lacks the family without modules (EAFNOSUPPORT); the LSM
	// hook runs before the family lookup, so the ceiling must still deny.
	Absent syscall.Errno
}

// Run runs every case as a subtest (TriState).
func (h *Harness) Run(t *testing.T, cases []Case) {
	t.Helper()
	h.Enforcer(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { h.TriState(t, c) })
	}
}

// place is where a run of c happens for sandbox sb.
func (c Case) place(t *testing.T, sb *Sandbox) *Sandbox {
	switch c.At {
	case InTestSub:
		return sb.Sub(t)
	case InChildSub:
		return sb.ChildSub()
	}
	return sb
}

func happened(r probe.Result, eff Effect) (bool, string) {
	if eff == nil {
		return r.Effect, "probe-observed effect"
	}
	return eff()
}

// TriState runs c in an unregistered cgroup, then under c.Ceiling in a
// fresh one.
func (h *Harness) TriState(t *testing.T, c Case) {
	t.Helper()
	h.Enforcer(t)
	// (a) control: an unregistered cgroup.
	ctl := h.Sandbox(t, "control")
	if c.Prep != nil {
		c.Prep(t)
	}
	r, eff := c.Attempt(t, c.place(t, ctl))
	if r.Setup != "" {
		t.Fatalf("control: probe could not attempt the operation (a test bug, not a pass): %v", r)
	}
	switch {
	case r.Errno != 0 && c.Absent != 0 && r.Errno == c.Absent:
		t.Logf("%s control: %v: family not built into this kernel (a module); the ceiling must still deny at the LSM hook, which runs before the family lookup", c.Name, r)
	case r.Errno != 0 || r.Exit > 0:
		t.Fatalf("control (no ceiling): %v, want success", r)
	case eff != nil || c.Nested || c.Delivered:
		if ok, what := happened(r, eff); !ok {
			t.Fatalf("control (no ceiling): %v but no side effect (%s): the probe proves nothing", r, what)
		}
	}

	// (b), (c): under the ceiling.
	sb := h.Sandbox(t, "case")
	if c.Prep != nil {
		c.Prep(t)
	}
	en := entry.Entry{Ceiling: c.Ceiling}
	if c.Allow != nil {
		en.ExecAllow = c.Allow(t)
	}
	if c.Interp != nil {
		en.ExecInterp = c.Interp(t)
	}
	if c.Endpoints != nil {
		en.AllowConnect = c.Endpoints(t)
	}
	if c.ShmDir != nil {
		en.ShmDir = c.ShmDir(t)
	}
	sb.Register(t, en)
	r, eff = c.Attempt(t, c.place(t, sb))
	if r.Setup != "" {
		t.Fatalf("ceiling: probe could not attempt the operation (a test bug, not a pass): %v", r)
	}
	switch {
	case c.Nested, c.Delivered:
	case !r.Denied():
		t.Errorf("BYPASS %s under %v: %v, want EPERM or EACCES", c.Name, c.Ceiling, r)
	case r.Errno != unix.EPERM:
		t.Logf("denied with %v (EACCES: the kernel path's own errno)", r)
	}
	if eff != nil || c.Nested || c.Delivered || r.Effect {
		if ok, what := happened(r, eff); ok {
			t.Errorf("BYPASS %s under %v: side effect happened: %s (%v)", c.Name, c.Ceiling, what, r)
		}
	}
	w := c.Want
	if c.WantAt != nil {
		w = c.WantAt()
	}
	if c.Delivered && len(w.Hooks) == 0 {
		t.Fatalf("%s: a Delivered case names the record of its refusal (Want.Hooks): the probe's result says nothing", c.Name)
	}
	if len(w.Hooks) > 0 {
		h.Expect(t, sb.Cg.ID, w)
	}
}

// Want is a record a run must leave.
type Want struct {
	Hooks   []denial.Hook // by any of these hooks
	Audited bool          // audited (allowed) rather than denied
	// Cap, when set, is the capability the record must name.
	Cap *int
	// Rules, when set: the record's rule must be one of them.
	Rules []denial.Rule
}

// Hooks is the Want of a denial by any of hooks.
func Hooks(hooks ...denial.Hook) Want { return Want{Hooks: hooks} }

// Rule returns w that also wants the record's rule to be one of rules.
func (w Want) Rule(rules ...denial.Rule) Want {
	w.Rules = append(append([]denial.Rule(nil), w.Rules...), rules...)
	return w
}

// Cap is a capability number for Want.Cap.
func Cap(n int) *int { return &n }

func (w Want) String() string {
	var hs []string
	for _, h := range w.Hooks {
		hs = append(hs, h.String())
	}
	s := strings.Join(hs, " or ")
	if w.Audited {
		s += " (audited)"
	}
	if w.Cap != nil {
		s += fmt.Sprintf(" naming capability %d", *w.Cap)
	}
	if len(w.Rules) > 0 {
		s += fmt.Sprintf(" by rule %v", w.Rules)
	}
	return s
}

func (w Want) matches(d denial.Denial) bool {
	if d.Audited != w.Audited {
		return false
	}
	if w.Cap != nil && (d.Object.Kind != denial.ObjectCap || d.Object.ID != uint64(*w.Cap)) {
		return false
	}
	if len(w.Rules) > 0 && !slices.Contains(w.Rules, d.Rule) {
		return false
	}
	for _, h := range w.Hooks {
		if d.Hook == h {
			return true
		}
	}
	return false
}

// Expect reads the records the ceiling of cgroup id ceiling decided since
// the last read and fails t unless one matches w; every matching denial
// must carry EPERM (audited ones: no errno).
func (h *Harness) Expect(t testing.TB, ceiling uint64, w Want) {
	t.Helper()
	if err := Match(h.Records(t, ceiling), w); err != nil {
		t.Errorf("ceiling cgroup %d: %v", ceiling, err)
	}
}

// Match checks ds for a record that matches w (see Expect).
func Match(ds []denial.Denial, w Want) error {
	var seen []string
	found := false
	var errs []error
	for _, d := range ds {
		seen = append(seen, fmt.Sprintf("%s/%s/%s %s", d.Hook, d.Rule, d.Decision(), d.Object))
		if !w.matches(d) {
			continue
		}
		found = true
		want := unix.EPERM
		if w.Audited {
			want = 0
		}
		if d.Errno != want {
			errs = append(errs, fmt.Errorf("record %s: errno %v, want %v", d.Hook, d.Errno, want))
		}
	}
	if !found {
		errs = append(errs, fmt.Errorf("no %s record; records: %v", w, seen))
	}
	return errors.Join(errs...)
}

// FileExists is the effect "path exists".
func FileExists(path string) Effect {
	return func() (bool, string) {
		_, err := os.Lstat(path)
		return err == nil, path + " exists"
	}
}

// FileGone is the effect "path was removed".
func FileGone(path string) Effect {
	return func() (bool, string) {
		_, err := os.Lstat(path)
		return errors.Is(err, os.ErrNotExist), path + " removed"
	}
}
