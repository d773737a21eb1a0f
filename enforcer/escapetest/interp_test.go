package escapetest

// The program interpreter under shell=none (docs/threat-model.md X7): the
// kernel opens an ELF's PT_INTERP by path, in the process's own root, at
// every exec, and never checks it as a program. Only interpreters listed
// with the registration (vetted by the daemon as dynamic loaders) may be
// opened for exec after the program's check (bpf/exec.h exec_open): a
// sandbox that makes the path lead elsewhere (a symlink renamed over the
// loader, a chroot into a root of its own) gets EPERM from the exec.
//
// The fixture is real glibc (testelf.InterpFixture): the guest's loader
// (runc's, packed by scripts/vmtest) copied to a short path, and a copy
// of runc whose PT_INTERP names that copy.

import (
	"path/filepath"
	"testing"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/testelf"
)

func TestShellNoneProgramInterpreter(t *testing.T) {
	kt.Enforcer(t)
	var f testelf.InterpFixture
	prep := func(t *testing.T) { f = testelf.TestInterpFixture(t) }
	allow := func(t *testing.T) []entry.FileID { return []entry.FileID{fileID(t, f.Prog)} }
	interp := func(t *testing.T) []entry.FileID { return []entry.FileID{fileID(t, f.LD)} }
	want := kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleExecOpen)
	cases := []kerneltest.Case{
		{Name: "X7 a symlink to BusyBox renamed over the vetted interpreter", Prep: prep, Allow: allow, Interp: interp, Want: want,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				mark := kt.TmpPath("touched")
				return sb.Probe(t, "interp-swap-exec", f.Prog, f.LD, "/bin/busybox", mark), kerneltest.FileExists(mark)
			}},
		// The probe runs an allowed copy of itself to chroot and exec.
		{Name: "X7 chroot into a root whose interpreter path is BusyBox", Prep: prep, Interp: interp, Want: want,
			Allow: func(t *testing.T) []entry.FileID { return append(allow(t), fileID(t, fx.allowed)) },
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				return sb.Probe(t, "chroot-execveat", fx.allowed, f.Prog, f.Root, f.LD), kerneltest.FileExists(filepath.Join(f.Root, "mark"))
			}},
		// The rule is an allow list: an allowed program whose
		// interpreter was not vetted with the registration cannot start.
		{Name: "X7 an interpreter not listed with the registration", Prep: prep, Allow: allow, Want: want,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				return sb.Probe(t, "exec-as", f.Prog, "prog", "--version"), nil
			}},
	}
	for i := range cases {
		cases[i].Ceiling = shellNone
	}
	kt.Run(t, cases)
}

// An allowed dynamic program with its vetted interpreter runs under
// shell=none, and keeps running as often as it is exec'd.
func TestShellNoneVettedInterpreterRuns(t *testing.T) {
	kt.Enforcer(t)
	f := testelf.TestInterpFixture(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: shellNone, ExecAllow: []entry.FileID{fileID(t, f.Prog)}, ExecInterp: []entry.FileID{fileID(t, f.LD)}})
	for i := 0; i < 2; i++ {
		if r := sb.Probe(t, "exec-as", f.Prog, "prog", "--version"); r.Setup != "" || r.Errno != 0 || r.Exit != 0 {
			t.Fatalf("shell=none: exec %d of an allowed dynamic program with its vetted interpreter: %v, want success", i, r)
		}
	}
	// The interpreter itself is not a program on the list.
	if r := sb.Probe(t, "exec-as", f.LD, "ld.so", "--version"); !r.Denied() {
		t.Errorf("shell=none: exec of the listed interpreter as a program: %v, want EPERM", r)
	}
}
