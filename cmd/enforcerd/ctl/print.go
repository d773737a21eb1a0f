package ctl

// The readable output of enforcerd ctl: tables (text/tabwriter) of the
// daemon's answers. The JSON output (--json) is the API's own; these are
// for people and may change.

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/policy"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// printStatus prints GET /v1/status: the settings, the coverage of each
// field and the programs' attachment per layer, each reason a program is
// not attached once with the number of programs (cli.GroupHooks); with
// verbose every program's row too.
func printStatus(w io.Writer, st api.Status, verbose bool) error {
	tw := newTable(w)
	fmt.Fprintf(tw, "version:\t%s\n", cli.OrDash(st.Version))
	fmt.Fprintf(tw, "pid:\t%d\n", st.PID)
	fmt.Fprintf(tw, "pin dir:\t%s\n", cli.OrDash(st.PinDir))
	fmt.Fprintf(tw, "containers:\t%d\n", st.Containers)
	fmt.Fprintf(tw, "allow partial:\t%t\n", st.AllowPartial)
	fmt.Fprintf(tw, "activate at exec:\t%t\n", st.ActivateAtExec)
	fmt.Fprintf(tw, "lost records:\t%d\n", st.LostRecords)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nCoverage (each field restricted alone):")
	tw = newTable(w)
	fmt.Fprintln(tw, "FIELD\tSTATE\tBY\tNOT ENFORCED")
	for _, c := range st.Coverage {
		var gaps []string
		for _, g := range c.Gaps {
			gaps = append(gaps, g.Code)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Field, c.State, cli.OrDash(c.By), cli.OrDash(strings.Join(gaps, ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nHooks:")
	for _, l := range cli.GroupHooks(st.Hooks) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if !verbose {
		return nil
	}
	fmt.Fprintln(w)
	return cli.PrintHookTable(w, st.Hooks)
}

// coverageOf is how much of a container's kernel ceiling the host
// enforces: "full", "audit-only" (nothing is denied) or "partial (N not
// enforced)".
func coverageOf(c api.Container) string {
	switch {
	case c.AuditOnly:
		return "audit-only"
	case len(c.Unenforced) > 0:
		return fmt.Sprintf("partial (%d not enforced)", len(c.Unenforced))
	}
	return "full"
}

// printList prints the containers, one row each, then every gap of the
// ones with partial coverage.
func printList(w io.Writer, list []api.Container) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tSTATE\tCGROUP\tCGROUP-ID\tROLE\tKERNEL\tCOVERAGE\tPARENT")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", c.ID, cli.OrDash(c.State), c.Cgroup, c.CgroupID,
			cli.OrDash(c.Role), c.Kernel, coverageOf(c), cli.OrDash(c.Parent))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var gaps []string
	for _, c := range list {
		for _, g := range c.Unenforced {
			gaps = append(gaps, fmt.Sprintf("  %s: %s (%s): %s\n", c.ID, g.Code, g.Field, g.Detail))
		}
	}
	if len(gaps) > 0 {
		fmt.Fprintln(w, "\nNot enforced:")
		fmt.Fprint(w, strings.Join(gaps, ""))
	}
	return nil
}

// printContainerText prints one container, a field per line.
func printContainerText(w io.Writer, c api.Container) error {
	tw := newTable(w)
	fmt.Fprintf(tw, "id:\t%s\n", c.ID)
	fmt.Fprintf(tw, "state:\t%s\n", cli.OrDash(c.State))
	act := cli.OrDash(c.Activation)
	if c.ActivationReason != "" {
		act += ": " + c.ActivationReason
	}
	fmt.Fprintf(tw, "activation:\t%s\n", act)
	if c.PendingDeadline != nil {
		fmt.Fprintf(tw, "pending deadline:\t%s\n", c.PendingDeadline.Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "cgroup:\t%s (id %d)\n", c.Cgroup, c.CgroupID)
	role := c.Role
	if role == "" {
		role = "general (none given)"
	}
	fmt.Fprintf(tw, "role:\t%s\n", role)
	fmt.Fprintf(tw, "session:\t%s\n", c.Session)
	fmt.Fprintf(tw, "ceiling:\t%s\n", c.Ceiling)
	fmt.Fprintf(tw, "kernel:\t%s\n", c.Kernel)
	fmt.Fprintf(tw, "coverage:\t%s\n", coverageOf(c))
	fmt.Fprintf(tw, "audit only:\t%t\n", c.AuditOnly)
	fmt.Fprintf(tw, "parent:\t%s\n", cli.OrDash(c.Parent))
	fmt.Fprintf(tw, "tool groups:\t%s\n", cli.OrDash(c.ToolGroups))
	fmt.Fprintf(tw, "fingerprint:\t%s\n", c.Fingerprint)
	fmt.Fprintf(tw, "registered:\t%s\n", c.Registered.Format(time.RFC3339))
	if c.InitPID != 0 {
		fmt.Fprintf(tw, "init pid:\t%d\n", c.InitPID)
	}
	if e := c.Entrypoint; e != nil {
		fmt.Fprintf(tw, "entrypoint:\t%s (root %s, PATH %s, cwd %s)\n", e.Path, e.Root, cli.OrDash(e.EnvPath), cli.OrDash(e.Cwd))
	}
	if len(c.ExecAllow) > 0 || c.Kernel.Shell == policy.ShellNone {
		// Paths come from the registration (a container's files): quoted
		// when they could forge a line.
		fmt.Fprintf(tw, "exec allow:\t%s\n", cli.OrDash(cells(c.ExecAllow)))
		fmt.Fprintf(tw, "exec interpreters:\t%s\n", cli.OrDash(cells(c.ExecInterp)))
	}
	if len(c.AllowConnect) > 0 || !c.Kernel.Network {
		fmt.Fprintf(tw, "allow connect:\t%s\n", cli.OrDash(cells(c.AllowConnect)))
	}
	if len(c.WriteRoots) > 0 || !c.Kernel.Write {
		fmt.Fprintf(tw, "write roots:\t%s\n", cli.OrDash(cells(c.WriteRoots)))
	}
	// Every ceiling decides devices: the lists are always shown.
	fmt.Fprintf(tw, "allow devices:\t%s\n", cli.OrDash(cells(c.AllowDevices)))
	fmt.Fprintf(tw, "own terminals:\t%s\n", cli.OrDash(strings.Join(c.Terminals, ", ")))
	if c.DenyConsoleEgress {
		fmt.Fprintf(tw, "console egress:\tdenied under network=false\n")
	}
	for _, g := range c.Unenforced {
		fmt.Fprintf(tw, "NOT enforced:\t%s (%s): %s\n", g.Code, g.Field, g.Detail)
	}
	return tw.Flush()
}

// The columns of a denial record.
const denialHeader = "TIME\tCONTAINER\tCGROUP-ID\tPID\tCOMM\tHOOK\tRULE\tOPERATION\tFIELD\tDECISION\tERROR\tOBJECT"

// followWidths are the widths of the columns of denials --follow, which
// prints each record as it comes and cannot measure the rows to come: the
// longest a value of the column usually is (a time with nanoseconds, a
// comm of 15 bytes, the longest hook, rule and operation of this build's
// vocabulary). A longer value (a long container id, a quoted comm) pushes
// the rest of its row right; OBJECT, last, is not padded.
var followWidths = []int{len("2006-01-02T15:04:05.000000000Z"), 16, 10, 7, 15,
	longestHook(), longestRule(), longestOperation(), len("network"), len("audited+1000"), len("EACCES")}

// longestHook is the length of the longest hook name.
func longestHook() int {
	n := 0
	for _, h := range denial.AllHooks {
		n = max(n, len(h.String()))
	}
	return n
}

// longestRule is the length of the longest rule name.
func longestRule() int {
	n := 0
	for _, r := range denial.AllRules {
		n = max(n, len(string(r)))
	}
	return n
}

// longestOperation is the length of the longest operation a rule names at
// a hook.
func longestOperation() int {
	n := 0
	for _, r := range denial.AllRules {
		for _, h := range denial.AllHooks {
			n = max(n, len(r.Operation(h)))
		}
	}
	return n
}

// followRow joins the cells of one line of denials --follow, each padded
// to its column's width (followWidths) and two spaces apart.
func followRow(cells []string) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(c)
		if i < len(followWidths) && i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", max(0, followWidths[i]-utf8.RuneCountInString(c))))
		}
	}
	return b.String()
}

// denialHeaderFollow is the header line of denials --follow.
var denialHeaderFollow = followRow(strings.Split(denialHeader, "\t"))

// cell is a value of a table cell: "-" when empty, Go-quoted when it holds
// a control character or is not UTF-8. A record's comm and object come
// from the sandbox (prctl(PR_SET_NAME), file names), which must not be
// able to forge rows or columns with a newline or a tab.
func cell(v string) string {
	if v == "" {
		return "-"
	}
	if !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl) {
		return strconv.Quote(v)
	}
	return v
}

func denialFields(r audit.Record) []string {
	decision := r.Decision
	if r.Reason != "" {
		decision += " (" + r.Reason + ")"
	}
	pid, comm, obj := strconv.FormatUint(uint64(r.PID), 10), r.Comm, r.Object
	if r.Type == audit.TypeSummary { // the count of a distinct denial
		decision = fmt.Sprintf("%s+%d", decision, r.Count) // more than the records
		pid, comm = "-", "(summary)"
		if r.Overflow {
			obj = "(distinct denials not kept: table full)"
		}
	}
	out := []string{r.Time, r.Container, strconv.FormatUint(r.CgroupID, 10), pid,
		comm, r.Hook, r.Rule, r.Operation, r.Field, decision, r.Error, obj}
	for i, v := range out {
		out[i] = cell(v)
	}
	return out
}

// denialRow is a record as a tabwriter row.
func denialRow(r audit.Record) string { return strings.Join(denialFields(r), "\t") }

// denialRowFollow is a record as a line of the stream, in the columns of
// denialHeaderFollow.
func denialRowFollow(r audit.Record) string { return followRow(denialFields(r)) }

// cells joins untrusted strings (paths, endpoints of a registration) with
// spaces, each quoted by cell when it could forge a line.
func cells(ss []string) string {
	out := make([]string, len(ss))
	for i, x := range ss {
		out[i] = cell(x)
	}
	return strings.Join(out, " ")
}
