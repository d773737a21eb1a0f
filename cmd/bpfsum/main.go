// Command bpfsum writes and checks bpf/objects.sum, the record of what the
// committed eBPF objects were generated from (see package
// tools/bpfsum).
//
//	bpfsum write [DIR]   record DIR's inputs, outputs and toolchain
//	bpfsum check [DIR]   verify the record without clang
//	bpfsum regen [DIR]   regenerate in a scratch copy and compare the bytes
//
// DIR is the bpf directory, "." by default. write is the bpf package's last
// go generate step (make generate); check is what bpf/objects_test.go does
// in make unit; regen is make generate-check and needs the recorded clang.
//
// Layering (docs/design.md): a tool's main; it may import anything, and
// nothing imports it.
package main

import (
	"fmt"
	"os"

	"github.com/enforcerd/enforcerd/tools/bpfsum"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: bpfsum write|check|regen [DIR]")
		os.Exit(2)
	}
	dir := "."
	if len(os.Args) == 3 {
		dir = os.Args[2]
	}
	var err error
	switch os.Args[1] {
	case "write":
		err = bpfsum.Write(dir)
	case "check":
		err = bpfsum.Check(dir)
	case "regen":
		err = bpfsum.Regen(dir, func(s string) { fmt.Fprintln(os.Stderr, "bpfsum:", s) })
	default:
		fmt.Fprintln(os.Stderr, "usage: bpfsum write|check|regen [DIR]")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bpfsum:", err)
		os.Exit(1)
	}
}
