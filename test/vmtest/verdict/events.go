package verdict

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Event is one test2json event (see `go doc test2json`); only the fields
// the verdict reads.
type Event struct {
	Action string
	Test   string `json:",omitempty"`
	Output string `json:",omitempty"`
}

// Test2JSON is the default converter command: the Go toolchain's test2json
// reading a test binary's -test.v=test2json stream on stdin.
var Test2JSON = []string{"go", "tool", "test2json"}

// Convert runs the converter command argv (Test2JSON unless overridden)
// with "-p pkg" over one section's output and returns its events.
func Convert(ctx context.Context, argv []string, pkg string, output []byte) ([]Event, error) {
	if len(argv) == 0 {
		argv = Test2JSON
	}
	args := append(append([]string{}, argv[1:]...), "-p", pkg)
	cmd := exec.CommandContext(ctx, argv[0], args...)
	cmd.Stdin = bytes.NewReader(output)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s over the output of %s: %w: %s", strings.Join(argv, " "), pkg, err, strings.TrimSpace(stderr.String()))
	}
	return ReadEvents(bytes.NewReader(out))
}

// ReadEvents decodes a stream of test2json events, one JSON object a line.
func ReadEvents(r io.Reader) ([]Event, error) {
	var evs []Event
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var e Event
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, fmt.Errorf("decoding test2json events: %w", err)
		}
		evs = append(evs, e)
	}
}

// Package is the outcome of one test binary.
type Package struct {
	Name string
	// Passed, Failed and Skipped count tests and subtests by their final
	// action. A test that started and never finished (the binary panicked
	// or timed out, or the guest died) counts as failed and is named in
	// Unfinished too.
	Passed, Failed, Skipped int
	// PassedTests, FailedTests, SkippedTests and Unfinished name the
	// tests, in the order they ended (started, for Unfinished).
	PassedTests, FailedTests, SkippedTests, Unfinished []string
	// Panicked is true when a line of the binary's output starts with
	// "panic: " (a test's panic, or -test.timeout's).
	Panicked bool
	// FailureOutput holds, for each failed test, the last lines it
	// printed (at most FailureOutputLines), so that a failure can be
	// diagnosed from the summary alone.
	FailureOutput map[string][]string
	// Ended and Status come from the section (Section.Ended, .Status).
	Ended  bool
	Status int
}

// FailureOutputLines bounds Package.FailureOutput per test.
const FailureOutputLines = 25

// StatusText is the table's STATUS column: "ok", "exit N", or "crashed"
// when the binary never reached its end marker.
func (p Package) StatusText() string {
	switch {
	case !p.Ended:
		return "crashed"
	case p.Status == 0:
		return "ok"
	default:
		return fmt.Sprintf("exit %d", p.Status)
	}
}

// Summarize counts a section's test2json events.
func Summarize(s Section, events []Event) Package {
	p := Package{Name: s.Package, Ended: s.Ended, Status: s.Status}
	running := map[string]bool{}
	output := map[string][]string{}
	var started []string
	for _, e := range events {
		if e.Action == "output" && strings.HasPrefix(e.Output, "panic: ") {
			p.Panicked = true
		}
		if e.Test == "" {
			continue // package-level events: the end marker's status decides
		}
		switch e.Action {
		case "output":
			line := strings.TrimRight(e.Output, "\n")
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "=== ") {
				break
			}
			o := append(output[e.Test], line)
			if len(o) > FailureOutputLines {
				o = o[len(o)-FailureOutputLines:]
			}
			output[e.Test] = o
		case "run":
			if !running[e.Test] {
				started = append(started, e.Test)
			}
			running[e.Test] = true
		case "pass":
			p.Passed++
			p.PassedTests = append(p.PassedTests, e.Test)
			delete(running, e.Test)
		case "fail":
			p.Failed++
			p.FailedTests = append(p.FailedTests, e.Test)
			if p.FailureOutput == nil {
				p.FailureOutput = map[string][]string{}
			}
			p.FailureOutput[e.Test] = output[e.Test]
			delete(running, e.Test)
		case "skip":
			p.Skipped++
			p.SkippedTests = append(p.SkippedTests, e.Test)
			delete(running, e.Test)
		}
	}
	for _, t := range started {
		if running[t] {
			p.Unfinished = append(p.Unfinished, t)
			p.Failed++
		}
	}
	return p
}
