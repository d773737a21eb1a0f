// Command compat-doc writes docs/compatibility.md from the compatibility
// suite's output (test/compat): each argument is KERNEL=LOG, a console
// log of scripts/vmtest --rootfs debian --pkg test/compat on that kernel
// (the first one's results make the table; the others are named where
// they differ). The document goes to stdout, or to -o FILE. Exit 1 when a
// log cannot be read or holds no compat line, 2 on a usage error.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/enforcerd/enforcerd/test/compat"
)

func main() {
	out := flag.String("o", "", "write the document to this file instead of stdout")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: compat-doc [-o FILE] KERNEL=LOG...")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var runs []compat.Run
	for _, a := range flag.Args() {
		k, log, ok := strings.Cut(a, "=")
		if !ok || k == "" || log == "" {
			fmt.Fprintf(os.Stderr, "compat-doc: %q: want KERNEL=LOG\n", a)
			os.Exit(2)
		}
		r, err := readRun(k, log)
		if err != nil {
			fmt.Fprintf(os.Stderr, "compat-doc: %v\n", err)
			os.Exit(1)
		}
		runs = append(runs, r)
	}
	w := os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintf(os.Stderr, "compat-doc: %v\n", err)
			os.Exit(1)
		}
		defer f.Close()
		w = f
	}
	if err := compat.Doc(w, runs); err != nil {
		fmt.Fprintf(os.Stderr, "compat-doc: %v\n", err)
		os.Exit(1)
	}
}

func readRun(kernel, path string) (compat.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return compat.Run{}, err
	}
	defer f.Close()
	r, err := compat.ReadRun(kernel, f)
	if err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Cells) == 0 {
		return r, fmt.Errorf("%s: no \"compat: \" line (not a run of test/compat?)", path)
	}
	return r, nil
}
