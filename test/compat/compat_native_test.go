package compat

import (
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

const sampleOut = `fatal: cannot mkdir r: Operation not permitted
enforcerd: denied mkdir .../var/tmp/ws/r (dev 254:0 ino 12) (inode_mkdir, rule write) pid=367 comm=git
Traceback: xenforcerd: denied create /sem.Etdisp (dev 0:25 ino 3) (inode_create, rule write) pid=369 comm=python3
enforcerd: denied socket AF_INET6 SOCK_STREAM (socket_create, rule network) pid=425 comm=python3
enforcerd: denied exec /usr/bin/dash (dev 254:0 ino 7) (bprm_check_security, rule shell-none) by the ceiling of /x (id 9) pid=5 comm=compat.test
`

func TestNativeParseDenials(t *testing.T) {
	vmtest.NativeOnly(t)
	ds := ParseDenials(sampleOut)
	if len(ds) != 4 {
		t.Fatalf("got %d denials, want 4: %+v", len(ds), ds)
	}
	created := ParseDenials("enforcerd: denied create .../fix/repo/.git/index.lock (inode_create, rule write) pid=9 comm=git\n")
	if p, tail := created[0].Path(); p != "/fix/repo/.git/index.lock" || !tail {
		t.Errorf("a file being created: path %q tail %v", p, tail)
	}
	if !(Want{Rule: denial.RuleWrite, Under: "$FIX/repo/.git/index.lock"}).Matches(created[0], "/ws", "/var/tmp/c-1/fix") {
		t.Errorf("a file being created does not match its tolerated path")
	}
	if p, tail := ds[0].Path(); p != "/var/tmp/ws/r" || !tail {
		t.Errorf("first: path %q tail %v", p, tail)
	}
	if d := ds[0]; d.Operation != "mkdir" || d.Hook != "inode_mkdir" || d.Rule != denial.RuleWrite || d.Comm != "git" {
		t.Errorf("first: %+v", d)
	}
	if p, tail := ds[1].Path(); p != "/sem.Etdisp" || tail {
		t.Errorf("interleaved: path %q tail %v", p, tail)
	}
	if d := ds[1]; !strings.HasPrefix(d.Line, "enforcerd: denied create") {
		t.Errorf("interleaved: %+v", d)
	}
	if p, _ := ds[2].Path(); p != "" {
		t.Errorf("socket: path %q", p)
	}
	if d := ds[2]; d.Rule != denial.RuleNetwork || d.Object != "AF_INET6 SOCK_STREAM" {
		t.Errorf("socket: %+v", d)
	}
	if d := ds[3]; d.Rule != denial.RuleShellNone || d.Comm != "compat.test" {
		t.Errorf("outer: %+v", d)
	}
}

func TestNativeBeneath(t *testing.T) {
	vmtest.NativeOnly(t)
	for _, c := range []struct {
		p    string
		tail bool
		dir  string
		want bool
	}{
		{"/var/tmp/ws/r", false, "/var/tmp/ws", true},
		{"/var/tmp/ws", false, "/var/tmp/ws/", true},
		{"/var/tmp/wsx/r", false, "/var/tmp/ws", false},
		{"/fix/repo/.git/index.lock", true, "/var/tmp/c-1/fix/repo/.git/index.lock", true},
		{"/fix/repo/.git/index.lock", true, "/var/tmp/c-1/fix", true},
		{"/tmp/c-1/fix/ref.db", true, "/var/tmp/c-1/fix", true},
		{"/tmp/c-2/fix/ref.db", true, "/var/tmp/c-1/fix", false},
		{"/repo/.git/index.lock", true, "/var/tmp/c-1/fix", false},
		{"/fix", true, "/var/tmp/c-1/fix/repo", false},
	} {
		if got := beneath(c.p, c.tail, c.dir); got != c.want {
			t.Errorf("beneath(%q, %v, %q) = %v, want %v", c.p, c.tail, c.dir, got, c.want)
		}
	}
}

func TestNativeJudge(t *testing.T) {
	vmtest.NativeOnly(t)
	ws := "/var/tmp/ws"
	write := Outcome{Denied: true, Want: []Want{{Rule: denial.RuleWrite}}}
	inWS := Outcome{Denied: true, Want: []Want{{Rule: denial.RuleWrite, Under: "$WS"}}}
	probe := Outcome{Want: []Want{{Rule: denial.RuleNetwork}}}
	for _, c := range []struct {
		name string
		o    Outcome
		exit int
		out  string
		line string
	}{
		{"works", Outcome{}, 0, "fine\n", "compat: t/r ok"},
		{"works but exit 1", Outcome{}, 1, "x\nboom\n", "compat: t/r FAIL unexpected=0 exit 1 without a denial: boom"},
		{"works but denied", Outcome{}, 1, sampleOut, "compat: t/r FAIL unexpected=4 mkdir .../var/tmp/ws/r (dev 254:0 ino 12) (inode_mkdir, rule write) comm=git"},
		{"denied on purpose", write, 1, strings.Join(strings.Split(sampleOut, "\n")[:3], "\n"), "compat: t/r ok"},
		{"denied, one outside the set", inWS, 1, strings.Join(strings.Split(sampleOut, "\n")[:3], "\n"), "compat: t/r FAIL unexpected=1 create /sem.Etdisp (dev 0:25 ino 3) (inode_create, rule write) comm=python3"},
		{"denied but no denial", write, 1, "x\n", "compat: t/r FAIL unexpected=0 no denial (exit 1), want rule write"},
		{"works with a probe", probe, 0, strings.Split(sampleOut, "\n")[3], "compat: t/r ok"},
		{"probe but exit 1", probe, 1, strings.Split(sampleOut, "\n")[3], "compat: t/r FAIL unexpected=0 exit 1 without a denial: " + strings.Split(sampleOut, "\n")[3]},
	} {
		r := Judge("t", "r", c.o, c.exit, c.out, ws, "/fix")
		if got := r.Line(); got != c.line {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.line)
		}
		tool, role, pass, _, ok := ParseLine("console prefix " + r.Line() + "\r")
		if !ok || tool != "t" || role != "r" || pass != r.OK {
			t.Errorf("%s: ParseLine(%q) = %q %q %v %v", c.name, r.Line(), tool, role, pass, ok)
		}
	}
}

// TestNativeExpectCoversEveryCell: every tool × role has an outcome, and a
// denied one names what it expects and why.
func TestNativeExpectCoversEveryCell(t *testing.T) {
	vmtest.NativeOnly(t)
	seen := map[string]bool{}
	for _, tool := range Tools {
		if seen[tool.Name] {
			t.Errorf("tool %s twice", tool.Name)
		}
		seen[tool.Name] = true
		for role := range tool.Except {
			if !contains(Roles, role) {
				t.Errorf("%s: Except names no role %q", tool.Name, role)
			}
		}
		for _, role := range Roles {
			if o := Expect(tool, role); o.Denied && (len(o.Want) == 0 || o.Why == "") {
				t.Errorf("%s/%s: denied without the expected set or its reason: %+v", tool.Name, role, o)
			}
		}
	}
	for k := range Diagnoses {
		tool, role, ok := strings.Cut(k, "/")
		if !ok || !seen[tool] || !contains(Roles, role) {
			t.Errorf("Diagnoses: %q is no cell", k)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestNativeDoc(t *testing.T) {
	vmtest.NativeOnly(t)
	var lines []string
	for _, tool := range Tools {
		for _, role := range Roles {
			lines = append(lines, "compat: "+tool.Name+"/"+role+" ok")
		}
	}
	lines[1] = "compat: " + Tools[0].Name + "/" + Roles[1] + " FAIL unexpected=1 create /x (inode_create, rule write) comm=y"
	r612, err := ReadRun("6.12", strings.NewReader(strings.Join(lines, "\n")))
	if err != nil || len(r612.Missing()) != 0 {
		t.Fatalf("ReadRun: %v, missing %v", err, r612.Missing())
	}
	r61, _ := ReadRun("6.1", strings.NewReader(lines[0]))
	var b strings.Builder
	if err := Doc(&b, []Run{r612, r61}); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{
		"| git | ", "**FAIL**", "6.1: not run", "| denied, 6.1: not run [1] |", "## Failing cells",
		Tools[0].Name + "/" + Roles[1] + " on 6.12: unexpected=1 create /x",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("doc lacks %q:\n%s", want, doc)
		}
	}
}

func FuzzParseDenials(f *testing.F) {
	for _, l := range strings.Split(sampleOut, "\n") {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range ParseDenials(s) {
			if !strings.Contains(s, d.Line) || d.Rule == "" || d.Hook == "" {
				t.Fatalf("%q: %+v", s, d)
			}
		}
	})
}

func TestNativeAuditDenials(t *testing.T) {
	vmtest.NativeOnly(t)
	log := `{"schema_version":4,"type":"daemon","container":"git-test","hook":"enforcerd","operation":"registration","decision":"registered"}
{"schema_version":4,"type":"daemon","container":"other","hook":"enforcerd","operation":"registration","decision":"refused"}
{"schema_version":4,"type":"denial","container":"git-test","pid":42,"comm":"git","hook":"inode_create","rule":"write","operation":"create","object":".../fix/repo/.git/index.lock","decision":"denied"}
{"schema_version":4,"type":"denial","container":"other","pid":43,"comm":"sh","hook":"socket_create","rule":"network","operation":"socket","object":"AF_INET6 SOCK_STREAM","decision":"denied"}
{"schema_version":4,"type":"summary","container":"git-test","pid":44,"comm":"python3","hook":"socket_create","rule":"network","operation":"socket","object":"AF_INET6 SOCK_STREAM","decision":"denied","count":3}
{"schema_version":4,"type":"summary","container":"git-test","hook":"inode_create","rule":"write","operation":"","object":"","decision":"denied","count":9,"overflow":true}

`
	ds, err := AuditDenials([]byte(log), "git-test")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 {
		t.Fatalf("got %d denials, want 3 (the container's denial and summaries): %+v", len(ds), ds)
	}
	if !(Want{Rule: denial.RuleWrite, Under: "$FIX/repo/.git/index.lock"}).Matches(ds[0], "/ws", "/var/tmp/c-1/fix") {
		t.Errorf("the denial does not match its tolerated path: %+v", ds[0])
	}
	if re := ParseDenials(ds[0].Line); len(re) != 1 || re[0].Object != ds[0].Object || re[0].Rule != ds[0].Rule || re[0].Comm != "git" {
		t.Errorf("Line %q does not read back: %+v", ds[0].Line, re)
	}
	if d := ds[1]; d.Rule != denial.RuleNetwork || d.Object != "AF_INET6 SOCK_STREAM" {
		t.Errorf("summary: %+v", d)
	}
	if d := ds[2]; d.Operation != "overflow" || (Want{Rule: denial.RuleWrite, Under: "$WS"}).Matches(d, "/ws", "/fix") {
		t.Errorf("overflow: %+v, must match no path", d)
	}
	if !Registered([]byte(log), "git-test") || Registered([]byte(log), "other") {
		t.Error("Registered: want the registration of git-test, none of other")
	}
	if _, err := AuditDenials([]byte("{not json\n"), "x"); err == nil {
		t.Error("a line that is not a record: no error")
	}
}

func TestNativeOCILines(t *testing.T) {
	vmtest.NativeOnly(t)
	r := JudgeDenials("git", "test", Outcome{}, 0, nil, "", "/ws", "/fix")
	r.Variant = OCIVariant
	if r.Line() != "compat: git/test@oci ok" {
		t.Fatalf("Line: %q", r.Line())
	}
	tool, role, pass, _, ok := ParseLine("x " + r.Line() + "\r")
	if !ok || tool != "git" || role != "test@oci" || !pass {
		t.Fatalf("ParseLine: %q %q %v %v", tool, role, pass, ok)
	}
	for _, name := range OCITools {
		if _, ok := toolNamed(name); !ok {
			t.Errorf("OCITools: no tool %q", name)
		}
	}
	for _, role := range OCIRoles {
		if !contains(Roles, role) {
			t.Errorf("OCIRoles: no role %q", role)
		}
	}
	var lines []string
	for _, tool := range Tools {
		for _, role := range Roles {
			lines = append(lines, "compat: "+tool.Name+"/"+role+" ok")
		}
	}
	lines = append(lines, "compat: "+OCITools[0]+"/"+OCIRoles[0]+"@oci ok",
		"compat: python-mp/test@oci FAIL unexpected=1 create /sem.x (inode_create, rule write) comm=python3")
	run, err := ReadRun("6.12", strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if m := run.MissingOCI(); len(m) != len(OCITools)*len(OCIRoles)-2 {
		t.Errorf("MissingOCI: %v", m)
	}
	var b strings.Builder
	if err := Doc(&b, []Run{run}); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{"## Through the daemon and the OCI hook", "| " + OCITools[0] + " | works |", "python-mp/test@oci on 6.12: unexpected=1",
		OCICell(OCITools[1], OCIRoles[0]) + " on 6.12: no result"} {
		if !strings.Contains(doc, want) {
			t.Errorf("doc lacks %q:\n%s", want, doc)
		}
	}
	base, _ := ReadRun("6.1", strings.NewReader(lines[0]))
	b.Reset()
	Doc(&b, []Run{base})
	if strings.Contains(b.String(), "OCI hook") || strings.Contains(b.String(), "@oci") {
		t.Errorf("a run without OCI lines has the OCI section or missing OCI cells")
	}
}
