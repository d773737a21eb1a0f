package bench

import (
	"bufio"
	"flag"
	"fmt"
	"io"
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
	since := fs.String("since", "", "the raw results of an earlier run, comma-separated: also write how the figures moved since it between the since markers of the -verdicts file")
	sinceLabel := fs.String("since-label", "", "what the text calls the earlier run of -since (for example its date and commit); required with -since")
	hooks := fs.String("hooks", "", "also write the table of attached hooks, their kinds and cost per run between the hook markers of this threat model (docs/threat-model.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *since != "" && (*verdicts == "" || *sinceLabel == "") {
		return fmt.Errorf("-since needs -verdicts (the file with the since markers) and -since-label (what the text calls the earlier run)")
	}
	docs, err := collectFiles(fs.Args())
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return fmt.Errorf("no results given")
	}
	var old []*Doc
	if *since != "" {
		if old, err = collectFiles(strings.Split(*since, ",")); err != nil {
			return fmt.Errorf("-since: %w", err)
		}
	}
	// Before anything is written: a file without its markers is an error
	// that leaves every file as it was.
	pages, err := analysisPages(*verdicts, *hooks, docs, old, *sinceLabel)
	if err != nil {
		return err
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
	for _, pg := range pages {
		if err := writeFileAtomic(pg.path, pg.content); err != nil {
			return err
		}
	}
	Summary(os.Stdout, docs)
	return nil
}

// page is an analysis page with its generated blocks rewritten.
type page struct {
	path    string
	content []byte
}

// analysisPages are the pages Report rewrites, read and rewritten in
// memory: the verdicts file (empty: none) with VerdictTables and, when old
// is not nil, SinceTables against old; the threat model (empty: none) with
// the table of hooks. Errors: a page that cannot be read or lacks a
// block's markers.
func analysisPages(verdicts, hooks string, docs, old []*Doc, sinceLabel string) ([]page, error) {
	var out []page
	if verdicts != "" {
		b, err := withVerdicts(verdicts, docs)
		if err != nil {
			return nil, err
		}
		if old != nil {
			b, err = replaceBlock(verdicts, b, SinceBegin, SinceEnd, func(w io.Writer) { SinceTables(w, old, docs, sinceLabel) })
			if err != nil {
				return nil, err
			}
		}
		out = append(out, page{verdicts, b})
	}
	if hooks != "" {
		b, err := withHooks(hooks, docs)
		if err != nil {
			return nil, err
		}
		out = append(out, page{hooks, b})
	}
	return out, nil
}

// collectFiles collects the doc of each raw result file (Collect); an
// error names the file.
func collectFiles(paths []string) ([]*Doc, error) {
	var docs []*Doc
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		d, err := Collect(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		docs = append(docs, d)
	}
	return docs, nil
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
