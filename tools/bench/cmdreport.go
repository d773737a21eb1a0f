package bench

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Report is the "report" subcommand: collect the docs emitted into each log
// (host file or VM console), write the markdown table and print the summary.
func Report(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	md := fs.String("md", "docs/benchmarks.md", "markdown output")
	command := fs.String("cmd", "make bench", "the command that produced the run")
	wall := fs.Float64("wall", 0, "wall time of the whole run, seconds")
	verdicts := fs.String("verdicts", "", "also write the per-operation verdicts between the verdict markers of this file (docs/performance.md)")
	hooks := fs.String("hooks", "", "also write the table of attached hooks, their kinds and cost per run between the hook markers of this threat model (docs/threat-model.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var docs []*Doc
	for _, p := range fs.Args() {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		d, err := Collect(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return fmt.Errorf("no results given")
	}
	// Before anything is written: a file without its markers is an error
	// that leaves every file as it was.
	var withV, withH []byte
	if *verdicts != "" {
		var err error
		if withV, err = withVerdicts(*verdicts, docs); err != nil {
			return err
		}
	}
	if *hooks != "" {
		var err error
		if withH, err = withHooks(*hooks, docs); err != nil {
			return err
		}
	}
	f, err := os.Create(*md)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	Markdown(w, docs, *command, hostDescription(), *wall)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if *verdicts != "" {
		if err := writeFileAtomic(*verdicts, withV); err != nil {
			return err
		}
	}
	if *hooks != "" {
		if err := writeFileAtomic(*hooks, withH); err != nil {
			return err
		}
	}
	Summary(os.Stdout, docs)
	return nil
}

// hostDescription: kernel, CPU model and count of the machine running the report.
func hostDescription() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("Linux %s, %s, %d CPUs (shared, noisy VM); Go %s", uname(), model, runtime.NumCPU(), runtime.Version())
}
