// Package verdict decides the outcome of a scripts/vmtest boot on the host:
// it splits the guest's serial console log into one section per test
// binary, converts each section with test2json, counts passed, failed and
// skipped tests per package, and turns those counts, the guest's verdict
// byte and QEMU's exit status into the report operators read and the exit
// status of scripts/vmtest.
//
// The guest (scripts/vmtest-guest/init) runs every test binary with
// -test.v=test2json between two marker lines:
//
//	=== VMTEST BEGIN <package dir>
//	... the binary's framed -test.v output (stdout and stderr) ...
//	=== VMTEST END <package dir> status=<exit status>
//
// The guest has no Go toolchain, so the conversion to test2json events
// happens here, over the captured stream. The framing (a ^V before every
// line the testing package writes itself) keeps a test's own output that
// looks like "--- FAIL:" or lacks a final newline from being miscounted.
//
// Everything fails closed: a section without its end marker, a test that
// started and never finished, a panic, a skip, a missing package, no
// verdict byte or a timed out VM make the run fail.
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package verdict

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Markers written by the guest's /init around each test binary's output.
const (
	BeginMarker = "=== VMTEST BEGIN "
	EndMarker   = "=== VMTEST END "
	// VerdictMarker is the line /init prints before writing the verdict
	// byte: "VMTEST-VERDICT <status>" (the full status of --run's command,
	// which the byte caps at 127).
	VerdictMarker = "VMTEST-VERDICT "
)

// Section is one test binary's output in the console log.
type Section struct {
	// Package is the package directory relative to the module root, as
	// listed in the guest's /etc/vmtest/tests (e.g. "enforcer/escapetest").
	Package string
	// Output is the binary's output between the markers, one "\n" per line.
	Output []byte
	// Ended is true when the end marker was seen; Status is then the
	// binary's exit status. A section without an end marker belongs to a
	// binary that never returned (guest panic, timeout).
	Ended  bool
	Status int
}

// Console is what the host reads from the guest's console log.
type Console struct {
	Sections []Section
	// GuestStatus is the status of the last "VMTEST-VERDICT N" line, or -1.
	GuestStatus int
}

// ParseConsole splits a console log into per-binary sections. Carriage
// returns are dropped (the serial console writes "\r\n"). An end marker is
// recognised anywhere in a line, because a binary's last output may lack a
// newline; what precedes it on the line belongs to the section.
func ParseConsole(r io.Reader) (Console, error) {
	c := Console{GuestStatus: -1}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	var cur *Section
	var out bytes.Buffer
	flush := func() {
		if cur != nil {
			cur.Output = bytes.Clone(out.Bytes())
			c.Sections = append(c.Sections, *cur)
			cur = nil
			out.Reset()
		}
	}
	for sc.Scan() {
		line := strings.ReplaceAll(sc.Text(), "\r", "")
		if cur != nil {
			if i := strings.Index(line, EndMarker); i >= 0 {
				if i > 0 {
					out.WriteString(line[:i])
					out.WriteByte('\n')
				}
				pkg, status, ok := parseEnd(line[i+len(EndMarker):])
				if ok && pkg == cur.Package {
					cur.Ended, cur.Status = true, status
				}
				flush()
				continue
			}
			if strings.HasPrefix(line, BeginMarker) {
				// The previous binary never reached its end marker.
				flush()
			} else {
				out.WriteString(line)
				out.WriteByte('\n')
				continue
			}
		}
		if pkg, ok := strings.CutPrefix(line, BeginMarker); ok {
			cur = &Section{Package: strings.TrimSpace(pkg)}
			continue
		}
		if s, ok := strings.CutPrefix(line, VerdictMarker); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
				c.GuestStatus = n
			}
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("reading the console log: %w", err)
	}
	return c, nil
}

// parseEnd parses the rest of an end marker line: "<pkg> status=<n>".
func parseEnd(s string) (pkg string, status int, ok bool) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return "", 0, false
	}
	v, found := strings.CutPrefix(f[1], "status=")
	if !found {
		return "", 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return "", 0, false
	}
	return f[0], n, true
}
