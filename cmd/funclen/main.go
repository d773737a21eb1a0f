// Command funclen is the function length gate of `make lint`: it prints
// every function of the Go files it is given that is longer than -over
// lines (package tools/funclen counts them) and exits 1 if there is one,
// 2 on a file it cannot read or parse.
//
//	funclen [-over 80] FILE.go...
//
// Layering (docs/design.md): a tool's main; it may import anything, and
// nothing imports it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/enforcerd/enforcerd/tools/funclen"
)

func main() {
	over := flag.Int("over", 80, "report functions longer than `N` lines")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: funclen [-over N] FILE.go...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *over < 1 {
		flag.Usage()
		os.Exit(2)
	}
	found := false
	for _, name := range flag.Args() {
		long, err := funclen.Long(name, nil, *over)
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(2)
		}
		for _, f := range long {
			fmt.Printf("%s (over %d)\n", f, *over)
			found = true
		}
	}
	if found {
		os.Exit(1)
	}
}
