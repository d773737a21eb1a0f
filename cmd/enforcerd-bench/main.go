// Command enforcerd-bench is the driver of `make bench` (scripts/bench):
//
//	enforcerd-bench native [-out FILE]        cgroup-BPF figures on this host
//	enforcerd-bench vm -tar FILE              the guest part (inside scripts/vmtest)
//	enforcerd-bench report -md FILE LOG...    docs/benchmarks.md + summary lines
//	enforcerd-bench jit [-progs P] | -split LOG -dir D   the JIT's machine code of programs (a diagnosis)
//	enforcerd-bench worker|load ...           children of native and vm
//
// Layering (docs/design.md): a tool's main; it may import anything, and
// nothing imports it.
package main

import (
	"fmt"
	"os"

	"github.com/enforcerd/enforcerd/tools/bench"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: enforcerd-bench native|vm|report|jit|worker|load [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"native": bench.Native, "vm": bench.VM, "report": bench.Report,
		"worker": bench.Worker, "load": bench.Load, "jit": bench.JIT,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "enforcerd-bench: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := f(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "enforcerd-bench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
