package compat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/denial"
)

// OCIVariant names the cells run a second time through the daemon: each a
// `runc run` of an OCI bundle whose createRuntime and poststop hooks call
// `enforcerd hook`, the role in the enforcerd.io/role annotation and,
// under write=false, the workspace in enforcerd.io/write-roots. Their
// lines read "compat: <tool>/<role>@oci ok|FAIL ...".
const OCIVariant = "oci"

// OCITools and OCIRoles are the OCI variant's cells: tools whose rules
// the OCI path reaches in other ways than `enforcerd run` (the
// container's own cgroup and namespaces, write roots resolved in its
// root, a pty opened in its process tree, POSIX semaphores), under the
// role that allows everything, one with write=false and network=false,
// and one that also has shell=read_only (whose writing tasks are denied:
// the ceiling is in force through the hook).
// Their expected outcomes are the same cells' of `enforcerd run`
// (Expect).
var (
	OCITools = []string{"git", "python-mp", "pty", "sqlite-write", "sqlite-read"}
	OCIRoles = []string{"general", "test", "reviewer"}
)

// OCICell is the key of a cell of the OCI variant in Run.Cells.
func OCICell(tool, role string) string { return tool + "/" + role + "@" + OCIVariant }

// Registered reports whether an audit log has the daemon's record of
// container's registration (operation "registration", decision
// "registered" or "narrowed"): the hook reached the daemon and the
// ceiling is in force.
// Lines that are not records are left to AuditDenials to report.
func Registered(log []byte, container string) bool {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r audit.Record
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Container == container && r.Type == audit.TypeDaemon &&
			r.Operation == "registration" && (r.Decision == "registered" || r.Decision == "narrowed") {
			return true
		}
	}
	return false
}

// AuditDenials returns the kernel's denials of container in an audit log
// (the daemon's JSON lines, docs/audit.md), as Denied values whose Line
// is the form `enforcerd run` prints. A summary record stands for its
// distinct denial (its object); an overflow summary (no object: denials
// the kernel's tally had no room for) is a denial of operation
// "overflow", which no cell expects. Errors: a line that is not a record.
func AuditDenials(log []byte, container string) ([]Denied, error) {
	var ds []Denied
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("audit log line %d: %w", n, err)
		}
		if r.Container != container || (r.Type != audit.TypeDenial && r.Type != audit.TypeSummary) {
			continue
		}
		d := Denied{Operation: r.Operation, Object: r.Object, Hook: r.Hook, Rule: denial.Rule(r.Rule), Comm: r.Comm}
		if r.Overflow {
			d.Operation, d.Object = "overflow", fmt.Sprintf("(%d denials)", r.Count)
		}
		d.Line = fmt.Sprintf("enforcerd: denied %s %s (%s, rule %s) pid=%d comm=%s", d.Operation, d.Object, d.Hook, d.Rule, r.PID, d.Comm)
		ds = append(ds, d)
	}
	return ds, sc.Err()
}

// toolNamed is the tool of Tools named name.
func toolNamed(name string) (Tool, bool) {
	for _, t := range Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}
