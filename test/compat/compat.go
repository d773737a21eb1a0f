// Package compat is the compatibility suite's harness: unmodified tools,
// each doing a realistic task in a workspace directory that is the write
// root, run under `enforcerd run` with the ceiling of each role, and the
// run's denial records compared with the set the cell expects.
//
// A cell is one tool × one role. Its expected outcome (Outcome) is either
// "works" (the task exits 0 and the run records no denial) or "denied on
// purpose" (the run records at least one denial, every one of them is in
// the expected set, Want); anything else is a failure, printed as one line
// (Result.Line):
//
//	compat: <tool>/<role> ok
//	compat: <tool>/<role> FAIL unexpected=<n> <first unexpected denial>
//
// The suite itself (compat_test.go) runs only in the Debian guest of
// scripts/vmtest --rootfs debian (testdata/needs-debian); cmd/compat-doc
// turns a run's lines into docs/compatibility.md (Doc).
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package compat

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/enforcerd/enforcerd/denial"
)

// Roles are the roles whose ceilings every tool runs under, in the table's
// column order (policy's role vocabulary; planner and custom are general's
// and explore's ceilings again).
var Roles = []string{"general", "implement", "explore", "reviewer", "test", "advisor"}

// Denied is one denial line of `enforcerd run` (its stderr, format in
// `enforcerd run --help`):
//
//	enforcerd: denied <operation> <object> (<hook>, rule <rule>)[ by ...] pid=N comm=NAME
type Denied struct {
	Operation string // the verb: open, exec, connect, ...
	Object    string // what it targeted: a file reads "PATH (dev M:N ino I)"
	Hook      string // the LSM hook (or cgroup-BPF attach point)
	Rule      denial.Rule
	Comm      string // the task's name
	Line      string // the line as printed
}

// Path is the file path of a file object ("" for other objects) and
// whether it is only the path's tail: a record names at most the last few
// components and prints "..." before them; a file that exists has its
// "(dev M:N ino I)" after the path, one being created has none. A file on a mount the record
// does not place is named from its file system's root (/dev/shm's
// "/sem.NAME").
func (d Denied) Path() (path string, tail bool) {
	p := d.Object
	if i := strings.Index(p, " (dev "); i >= 0 {
		p = p[:i]
	}
	if t := strings.TrimPrefix(p, "..."); t != p {
		p, tail = t, true
	}
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	return p, tail
}

// beneath reports whether path p (a tail when tail) can be dir or a file
// beneath it: for a tail, some trailing components of dir must be the
// tail's leading ones (the components before the tail are unknown).
func beneath(p string, tail bool, dir string) bool {
	dir = strings.TrimSuffix(dir, "/")
	if !tail {
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	dc := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	tc := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := range dc {
		rest := dc[i:]
		if len(rest) > len(tc) {
			continue
		}
		match := true
		for j := range rest {
			if rest[j] != tc[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// String is the denial in the form of the FAIL line: operation, object,
// hook, rule and comm.
func (d Denied) String() string {
	return fmt.Sprintf("%s %s (%s, rule %s) comm=%s", d.Operation, d.Object, d.Hook, d.Rule, d.Comm)
}

var deniedRE = regexp.MustCompile(`enforcerd: denied (\S+) (.*) \(([a-z0-9_/]+), rule ([a-z-]+)\)(?: by .*)? pid=\d+ comm=(.*)$`)

// ParseDenials returns the denial lines found in out, a run's combined
// output (the tool's own output interleaves with them: a line may start
// with the tool's text).
func ParseDenials(out string) []Denied {
	var ds []Denied
	for _, l := range strings.Split(out, "\n") {
		m := deniedRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		ds = append(ds, Denied{Operation: m[1], Object: m[2], Hook: m[3], Rule: denial.Rule(m[4]), Comm: m[5], Line: l[strings.Index(l, "enforcerd: denied"):]})
	}
	return ds
}

// Want is one kind of denial a cell expects: its rule, and when Under is
// set, a file object beneath that directory ("$WS" the workspace, "$FIX"
// the read-only fixtures, or an absolute path).
type Want struct {
	Rule  denial.Rule
	Under string
	// Object, when set, is how the denial's object starts (a socket's
	// "AF_INET6 SOCK_STREAM").
	Object string
}

// Matches reports whether d is of this kind; ws and fix replace "$WS" and
// "$FIX" in Under.
func (w Want) Matches(d Denied, ws, fix string) bool {
	if d.Rule != w.Rule || !strings.HasPrefix(d.Object, w.Object) {
		return false
	}
	if w.Under == "" {
		return true
	}
	p, tail := d.Path()
	return p != "" && beneath(p, tail, strings.NewReplacer("$WS", ws, "$FIX", fix).Replace(w.Under))
}

func (w Want) String() string {
	s := "rule " + string(w.Rule)
	if w.Object != "" {
		s += " of " + w.Object
	}
	if w.Under != "" {
		s += " under " + w.Under
	}
	return s
}

// Outcome is what a cell expects.
type Outcome struct {
	// Denied: the ceiling refuses the task on purpose (at least one
	// denial, all in Want); otherwise the task works: exit 0, and no
	// denial but those in Want (a probe the tool makes and survives, such
	// as a socket under network=false).
	Denied bool
	Want   []Want
	// Why says why the denial is on purpose, or (for a cell that works
	// only with a workaround) what the workaround is; the table prints it.
	Why string
}

// Result is one cell's run.
type Result struct {
	Tool, Role string
	// Variant is "" for a cell of `enforcerd run`, OCIVariant for one run
	// through the daemon and the OCI hook (runc).
	Variant    string
	OK         bool
	Unexpected []Denied
	// Problem says why a cell without unexpected denials failed (the task
	// exited non-zero without a denial, or an expected denial did not
	// happen).
	Problem string
}

// Judge compares a run (its exit status and combined output) with the
// expected outcome; ws and fix are the cell's workspace and fixtures
// directories.
func Judge(tool, role string, o Outcome, exit int, out, ws, fix string) Result {
	return JudgeDenials(tool, role, o, exit, ParseDenials(out), out, ws, fix)
}

// JudgeDenials is Judge with the run's denials given (ds: from the
// daemon's audit log, for a cell run through the OCI hook); out is the
// task's output, for the failure's last line.
func JudgeDenials(tool, role string, o Outcome, exit int, ds []Denied, out, ws, fix string) Result {
	r := Result{Tool: tool, Role: role}
	for _, d := range ds {
		if !wanted(o.Want, d, ws, fix) {
			r.Unexpected = append(r.Unexpected, d)
		}
	}
	switch {
	case len(r.Unexpected) > 0:
	case o.Denied && len(ds) == 0:
		r.Problem = fmt.Sprintf("no denial (exit %d), want %s", exit, wantList(o.Want))
	case !o.Denied && exit != 0:
		r.Problem = fmt.Sprintf("exit %d without a denial: %s", exit, lastLine(out))
	default:
		r.OK = true
	}
	return r
}

func wanted(ws []Want, d Denied, wsDir, fix string) bool {
	for _, w := range ws {
		if w.Matches(d, wsDir, fix) {
			return true
		}
	}
	return false
}

func wantList(ws []Want) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.String()
	}
	return strings.Join(s, " or ")
}

func lastLine(out string) string {
	ls := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return ls[len(ls)-1]
}

// Line is the cell's one output line (the role followed by "@oci" for
// a cell run through the OCI hook).
func (r Result) Line() string {
	role := r.Role
	if r.Variant != "" {
		role += "@" + r.Variant
	}
	switch {
	case r.OK:
		return fmt.Sprintf("compat: %s/%s ok", r.Tool, role)
	case len(r.Unexpected) > 0:
		return fmt.Sprintf("compat: %s/%s FAIL unexpected=%d %s", r.Tool, role, len(r.Unexpected), r.Unexpected[0])
	default:
		return fmt.Sprintf("compat: %s/%s FAIL unexpected=0 %s", r.Tool, role, r.Problem)
	}
}

var lineRE = regexp.MustCompile(`compat: ([a-z0-9-]+)/([a-z]+(?:@[a-z]+)?) (ok|FAIL)(?: (.*))?$`)

// ParseLine reads a Line back (from a console log, where a line may carry
// a prefix); ok false when s holds none. A cell run through the OCI hook
// has role "ROLE@oci".
func ParseLine(s string) (tool, role string, pass bool, detail string, ok bool) {
	m := lineRE.FindStringSubmatch(strings.TrimRight(s, "\r"))
	if m == nil {
		return "", "", false, "", false
	}
	return m[1], m[2], m[3] == "ok", m[4], true
}
