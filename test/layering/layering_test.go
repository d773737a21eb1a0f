package layering

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const cilium = "github.com/cilium/ebpf"

// kind is what a row holds: product code, a test harness, or a tool.
type kind int

const (
	product kind = iota
	harness
	tool
)

// outside bounds a row's imports of other modules.
type outside int

const (
	stdOnly        outside = iota // standard library (also through the module's packages)
	noCilium                      // any but cilium/ebpf (direct imports)
	noCiliumLinked                // any but cilium/ebpf, even indirectly
	anyModule                     // any
)

var outsideNames = map[string]outside{
	"standard library":                     stdOnly,
	"any but cilium/ebpf":                  noCilium,
	"any but cilium/ebpf, even indirectly": noCiliumLinked,
	"any":                                  anyModule,
}

// row is one row of docs/design.md's layering table.
type row struct {
	folder  string // "policy/harness", or "**/*test" (a pattern)
	kind    kind
	layer   int    // product rows: 0..5
	mayCell string // the "may import" cell, resolved into allowed
	allowed map[int]bool
	outside outside
	line    int // in docs/design.md
}

func (r *row) pattern() bool { return strings.HasPrefix(r.folder, "**/") }

// under reports whether the row's folder is dir or lies beneath it.
func (r *row) under(dir string) bool {
	return r.folder == dir || strings.HasPrefix(r.folder, dir+"/")
}

func (r *row) String() string { return "`" + r.folder + "/`" }

// pkg is one package of the module, as go list -deps reports it.
type pkg struct {
	rel     string   // path inside the module: "daemon/state"
	imports []string // non-test imports, full import paths
	deps    []string // every non-test dependency, full import paths
}

// module is what the tests read once: the table, the map of the code and
// the module's packages.
type module struct {
	path     string // module path
	rows     []*row
	mapNames []string // backquoted names in the first column of the map of the code
	pkgs     map[string]*pkg
	std      map[string]bool
}

var (
	loadOnce sync.Once
	loaded   *module
	loadErr  error
)

func load(t *testing.T) *module {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = readModule() })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

func readModule() (*module, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return nil, errors.New("go env GOMOD: not inside the module")
	}
	root := filepath.Dir(gomod)
	m := &module{pkgs: map[string]*pkg{}, std: map[string]bool{}}
	if m.path, err = modulePath(gomod); err != nil {
		return nil, err
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		return nil, err
	}
	if m.rows, err = parseTable(doc); err != nil {
		return nil, fmt.Errorf("docs/design.md: %w", err)
	}
	if m.mapNames, err = parseMap(doc); err != nil {
		return nil, fmt.Errorf("docs/design.md: %w", err)
	}
	return m, m.list(root)
}

func modulePath(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}

// list reads every package of the module and of its dependencies
// (non-test imports only) from go list -deps.
func (m *module) list(root string) error {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports,Deps,Module", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list -deps ./...: %w\n%s", err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Standard   bool
			Imports    []string
			Deps       []string
			Module     *struct{ Main bool }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("go list -deps: %w", err)
		}
		switch {
		case p.Standard:
			m.std[p.ImportPath] = true
		case p.Module != nil && p.Module.Main:
			rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, m.path), "/")
			m.pkgs[rel] = &pkg{rel: rel, imports: p.Imports, deps: p.Deps}
		}
	}
	if len(m.pkgs) == 0 {
		return errors.New("go list -deps ./...: no package of the module")
	}
	return nil
}

// rel returns an import path's path inside the module, or false.
func (m *module) rel(importPath string) (string, bool) {
	if importPath == m.path {
		return "", true
	}
	r, ok := strings.CutPrefix(importPath, m.path+"/")
	return r, ok
}

// section returns the lines of the "## title" section of doc, each with
// its line number.
func section(doc []byte, title string) ([]string, int, error) {
	var lines []string
	start, in := 0, false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			if in = line == "## "+title; in {
				start = n + 1
			}
			continue
		}
		if in {
			lines = append(lines, line)
		}
	}
	if start == 0 {
		return nil, 0, fmt.Errorf("no section %q", "## "+title)
	}
	return lines, start, sc.Err()
}

// table returns the cells of the first table in lines whose header starts
// with header, one slice per row, with each row's line number.
func table(lines []string, first int, header string) ([][]string, []int, error) {
	var rows [][]string
	var nums []int
	in := false
	for i, line := range lines {
		if !in {
			in = strings.HasPrefix(line, "| "+header+" |")
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
		nums = append(nums, first+i)
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("no table with a %q column", header)
	}
	return rows, nums, nil
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// parseTable reads the layering table: folder | layer | may import |
// outside the module.
func parseTable(doc []byte) ([]*row, error) {
	lines, first, err := section(doc, "Layering")
	if err != nil {
		return nil, err
	}
	cells, nums, err := table(lines, first, "folder")
	if err != nil {
		return nil, fmt.Errorf("Layering: %w", err)
	}
	var rows []*row
	seen := map[string]bool{}
	for i, c := range cells {
		if len(c) != 4 {
			return nil, fmt.Errorf("line %d: %d cells, want 4 (folder | layer | may import | outside the module)", nums[i], len(c))
		}
		f := codeSpan.FindStringSubmatch(c[0])
		if f == nil || len(codeSpan.FindAllString(c[0], -1)) != 1 || !strings.HasSuffix(f[1], "/") {
			return nil, fmt.Errorf("line %d: folder %q: want one `folder/`", nums[i], c[0])
		}
		r := &row{folder: strings.TrimSuffix(f[1], "/"), mayCell: c[2], line: nums[i]}
		if seen[r.folder] {
			return nil, fmt.Errorf("line %d: a second row for %s", nums[i], r)
		}
		seen[r.folder] = true
		switch c[1] {
		case "harness":
			r.kind = harness
		case "tool":
			r.kind = tool
		default:
			if r.layer, err = strconv.Atoi(c[1]); err != nil || r.layer < 0 || r.layer > 5 {
				return nil, fmt.Errorf("line %d: layer %q: want 0 to 5, harness or tool", nums[i], c[1])
			}
		}
		var ok bool
		if r.outside, ok = outsideNames[c[3]]; !ok {
			return nil, fmt.Errorf("line %d: outside the module %q: want one of %q", nums[i], c[3], slices.Sorted(maps.Keys(outsideNames)))
		}
		rows = append(rows, r)
	}
	for _, r := range rows {
		if r.allowed, err = resolve(rows, r.mayCell); err != nil {
			return nil, fmt.Errorf("line %d: may import: %w", r.line, err)
		}
	}
	return rows, nil
}

var layerRange = regexp.MustCompile(`^layers? (\d)(?:[–-](\d))?$`)

// resolve turns a "may import" cell into the rows it names: `folder/`,
// layer N, layers N–M, harness, tools; "—" names none.
func resolve(rows []*row, cell string) (map[int]bool, error) {
	allowed := map[int]bool{}
	if cell == "—" || cell == "" {
		return allowed, nil
	}
	for item := range strings.SplitSeq(cell, ",") {
		item = strings.TrimSpace(item)
		switch m := layerRange.FindStringSubmatch(item); {
		case m != nil:
			lo, _ := strconv.Atoi(m[1])
			hi := lo
			if m[2] != "" {
				hi, _ = strconv.Atoi(m[2])
			}
			for i, r := range rows {
				if r.kind == product && r.layer >= lo && r.layer <= hi {
					allowed[i] = true
				}
			}
		case item == "harness" || item == "tools":
			k := map[string]kind{"harness": harness, "tools": tool}[item]
			for i, r := range rows {
				if r.kind == k {
					allowed[i] = true
				}
			}
		case strings.HasPrefix(item, "`") && strings.HasSuffix(item, "/`"):
			f := strings.TrimSuffix(strings.Trim(item, "`"), "/")
			i := slices.IndexFunc(rows, func(r *row) bool { return r.folder == f })
			if i < 0 {
				return nil, fmt.Errorf("%s names no row", item)
			}
			allowed[i] = true
		default:
			return nil, fmt.Errorf("%q: want `folder/`, layer N, layers N–M, harness or tools", item)
		}
	}
	return allowed, nil
}

// rowOf returns the index of the row a package (path inside the module)
// belongs to: the row matching the most leading elements of its path; a
// folder wins over a pattern matching as many. -1: none.
func rowOf(rows []*row, rel string) int {
	elems := strings.Split(rel, "/")
	best, bestDepth, bestPattern := -1, 0, false
	for i, r := range rows {
		depth := 0
		if g, ok := strings.CutPrefix(r.folder, "**/"); ok {
			for j, e := range elems {
				if ok, _ := path.Match(g, e); ok {
					depth = j + 1
				}
			}
		} else if rel == r.folder || strings.HasPrefix(rel, r.folder+"/") {
			depth = strings.Count(r.folder, "/") + 1
		}
		if depth > bestDepth || depth == bestDepth && depth > 0 && bestPattern && !r.pattern() {
			best, bestDepth, bestPattern = i, depth, r.pattern()
		}
	}
	return best
}

// parseMap returns the backquoted names of the first column of the "Map
// of the code" table.
func parseMap(doc []byte) ([]string, error) {
	lines, first, err := section(doc, "Map of the code")
	if err != nil {
		return nil, err
	}
	cells, _, err := table(lines, first, "where")
	if err != nil {
		return nil, fmt.Errorf("Map of the code: %w", err)
	}
	var names []string
	for _, c := range cells {
		for _, m := range codeSpan.FindAllStringSubmatch(c[0], -1) {
			names = append(names, strings.TrimSuffix(m[1], "/"))
		}
	}
	return names, nil
}

// TestLayering checks docs/design.md's layering table against the rules
// every version of it keeps, and the module's non-test imports against
// the table.
func TestLayering(t *testing.T) {
	m := load(t)
	t.Run("table", func(t *testing.T) {
		for _, p := range tableProblems(m.rows) {
			t.Error(p)
		}
	})
	t.Run("every package has a row", func(t *testing.T) {
		for _, rel := range slices.Sorted(maps.Keys(m.pkgs)) {
			if rowOf(m.rows, rel) < 0 {
				t.Errorf("package %s has no row in docs/design.md's layering table: add a row for its folder (folder | layer | may import | outside the module)", rel)
			}
		}
	})
	for _, rel := range slices.Sorted(maps.Keys(m.pkgs)) {
		t.Run("imports/"+rel, func(t *testing.T) { checkImports(t, m, m.pkgs[rel]) })
	}
	t.Run("no cycle between folders", func(t *testing.T) {
		edges := map[int]map[int]bool{}
		for _, p := range m.pkgs {
			from := rowOf(m.rows, p.rel)
			for _, imp := range p.imports {
				if rel, ok := m.rel(imp); ok {
					if to := rowOf(m.rows, rel); from >= 0 && to >= 0 && to != from {
						if edges[from] == nil {
							edges[from] = map[int]bool{}
						}
						edges[from][to] = true
					}
				}
			}
		}
		if c := cycle(len(m.rows), edges); c != nil {
			t.Errorf("the module's imports cycle between folders: %s", names(m.rows, c))
		}
	})
}

// tableProblems checks the table itself: every edge goes to the same or a
// lower layer, no product row may import a harness or a tool, only rows
// under cmd/ and tools/ may import tools, and the rules the table must
// keep whatever else changes.
func tableProblems(rows []*row) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	edges := map[int]map[int]bool{}
	for i, r := range rows {
		for j := range r.allowed {
			to := rows[j]
			switch {
			case to.kind == tool && !r.under("cmd") && !r.under("tools"):
				add("line %d: %s may import %s, a tool: only cmd/ and tools/ import the tools", r.line, r, to)
			case r.kind == product && to.kind != product:
				add("line %d: %s (product) may import %s, a harness or tool: the product never imports them", r.line, r, to)
			case r.kind == product && to.layer > r.layer:
				add("line %d: %s (layer %d) may import %s (layer %d): an edge goes to the same or a lower layer", r.line, r, r.layer, to, to.layer)
			case r.under("policy") && !to.under("policy"):
				add("line %d: %s may import %s: policy/ imports only the standard library", r.line, r, to)
			case (r.under("policy") || r.under("oci")) && to.under("daemon"):
				add("line %d: %s may import %s: oci/ and policy/ import nothing under daemon/", r.line, r, to)
			}
			// Harnesses and tools may import each other; the product's
			// edges must not cycle.
			if i != j && r.kind == product {
				if edges[i] == nil {
					edges[i] = map[int]bool{}
				}
				edges[i][j] = true
			}
		}
		if r.under("policy") && r.outside != stdOnly {
			add("line %d: %s: outside the module must be \"standard library\": policy/ imports only the standard library", r.line, r)
		}
		if r.kind == product && r.outside == anyModule && !r.under("bpf") && !r.under("enforcer") {
			add("line %d: %s may import cilium/ebpf: among product packages only bpf/ and enforcer/ do", r.line, r)
		}
	}
	// The leaves that name what the kernel does (a registration, its
	// coverage, a denial) and the packages that only store, count or log
	// them do not link the BPF loader.
	for _, f := range []string{"entry", "coverage", "denial", "daemon/state", "daemon/metrics", "daemon/audit", "oci/speccheck"} {
		i := slices.IndexFunc(rows, func(r *row) bool { return r.folder == f })
		if i < 0 {
			add("no row for %s/: it must be there, marked \"any but cilium/ebpf, even indirectly\"", f)
		} else if o := rows[i].outside; o != noCiliumLinked && o != stdOnly {
			add("line %d: %s must be marked \"any but cilium/ebpf, even indirectly\" (or \"standard library\")", rows[i].line, rows[i])
		}
	}
	if c := cycle(len(rows), edges); c != nil {
		add("the table's product edges cycle: %s", names(rows, c))
	}
	return problems
}

// checkImports checks one package's non-test imports against its row.
func checkImports(t *testing.T, m *module, p *pkg) {
	i := rowOf(m.rows, p.rel)
	if i < 0 {
		return // reported once, by "every package has a row"
	}
	r := m.rows[i]
	for _, imp := range p.imports {
		rel, ok := m.rel(imp)
		if !ok {
			if r.outside != anyModule && (imp == cilium || strings.HasPrefix(imp, cilium+"/")) {
				t.Errorf("%s imports %s; its row %s (docs/design.md line %d) does not allow cilium/ebpf", p.rel, imp, r, r.line)
			}
			continue
		}
		j := rowOf(m.rows, rel)
		if j < 0 || j == i || r.allowed[j] {
			continue
		}
		t.Errorf("%s imports %s (row %s), which its row %s (docs/design.md line %d) does not allow", p.rel, rel, m.rows[j], r, r.line)
	}
	if r.outside == stdOnly {
		var other []string
		for _, d := range p.deps {
			if _, ok := m.rel(d); !ok && !m.std[d] {
				other = append(other, d)
			}
		}
		if len(other) > 0 {
			t.Errorf("%s depends on %d packages outside the standard library (%s…): its row %s (docs/design.md line %d) allows only the standard library",
				p.rel, len(other), other[0], r, r.line)
		}
	}
}

// TestLayeringLeavesLinkNoCilium checks the rows marked "any but
// cilium/ebpf, even indirectly" (and "standard library"): no package of
// theirs has a cilium/ebpf package among its dependencies.
func TestLayeringLeavesLinkNoCilium(t *testing.T) {
	m := load(t)
	for _, rel := range slices.Sorted(maps.Keys(m.pkgs)) {
		p := m.pkgs[rel]
		i := rowOf(m.rows, rel)
		if i < 0 || m.rows[i].outside != noCiliumLinked && m.rows[i].outside != stdOnly {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			n := countCilium(p.deps)
			if n == 0 {
				return
			}
			var via []string
			for _, imp := range p.imports {
				if rel, ok := m.rel(imp); ok && m.pkgs[rel] != nil && countCilium(m.pkgs[rel].deps) > 0 {
					via = append(via, rel)
				}
			}
			t.Errorf("%s links %d cilium/ebpf packages (through %s); its row %s (docs/design.md line %d) says not even indirectly",
				rel, n, strings.Join(via, ", "), m.rows[i], m.rows[i].line)
		})
	}
}

func countCilium(deps []string) int {
	n := 0
	for _, d := range deps {
		if d == cilium || strings.HasPrefix(d, cilium+"/") {
			n++
		}
	}
	return n
}

// TestLayeringMapListsEveryPackage checks that docs/design.md's map of
// the code names every package of the module: by its path, or by a
// `parent/*` row.
func TestLayeringMapListsEveryPackage(t *testing.T) {
	m := load(t)
	for _, rel := range slices.Sorted(maps.Keys(m.pkgs)) {
		named := slices.ContainsFunc(m.mapNames, func(n string) bool {
			parent, ok := strings.CutSuffix(n, "/*")
			return n == rel || ok && path.Dir(rel) == parent
		})
		if !named {
			t.Errorf("docs/design.md's map of the code has no row for %s", rel)
		}
	}
}

// cycle returns a cycle in the graph of n nodes, or nil.
func cycle(n int, edges map[int]map[int]bool) []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, n)
	var stack []int
	var visit func(int) []int
	visit = func(u int) []int {
		color[u] = grey
		stack = append(stack, u)
		for _, v := range slices.Sorted(maps.Keys(edges[u])) {
			switch color[v] {
			case grey:
				return append(slices.Clone(stack[slices.Index(stack, v):]), v)
			case white:
				if c := visit(v); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[u] = black
		return nil
	}
	for u := range n {
		if color[u] == white {
			if c := visit(u); c != nil {
				return c
			}
		}
	}
	return nil
}

func names(rows []*row, idx []int) string {
	s := make([]string, len(idx))
	for i, j := range idx {
		s[i] = rows[j].String()
	}
	return strings.Join(s, " → ")
}

// TestLayeringRowOf pins how a package finds its row: the deepest match,
// a folder over a pattern as deep, a new package inheriting its folder's.
func TestLayeringRowOf(t *testing.T) {
	rows, err := parseTable([]byte("## Layering\n\n| folder | layer | may import | outside the module |\n|---|---|---|---|\n" +
		"| `daemon/` | 4 | `daemon/state/` | any but cilium/ebpf |\n" +
		"| `daemon/state/` | 4 | — | any but cilium/ebpf, even indirectly |\n" +
		"| `**/*test/` | harness | layers 0–4, harness | any |\n" +
		"| `test/` | harness | layer 4 | any |\n" +
		"| `cmd/` | tool | layers 0-5, harness, tools | any |\n" +
		"| `cmd/enforcerd/` | 5 | layers 0–4 | any but cilium/ebpf |\n\n## Next\n"))
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"daemon":                 "daemon",
		"daemon/new":             "daemon",
		"daemon/state":           "daemon/state",
		"daemon/state/sub":       "daemon/state",
		"daemon/api/apitest":     "**/*test",
		"daemon/state/statetest": "**/*test",
		"test/vmtest":            "**/*test",
		"test/kerneltestx":       "test",
		"test/probe":             "test",
		"cmd/bpfsum":             "cmd",
		"cmd/enforcerd":          "cmd/enforcerd",
		"cmd/enforcerd/ctl":      "cmd/enforcerd",
		"policy":                 "",
		"daemonx":                "",
	} {
		got := ""
		if i := rowOf(rows, rel); i >= 0 {
			got = rows[i].folder
		}
		if got != want {
			t.Errorf("rowOf(%q) = %q, want %q", rel, got, want)
		}
	}
	if got := len(rows[4].allowed); got != 6 {
		t.Errorf("`cmd/` may import %d rows, want 6 (every row)", got)
	}
	for _, bad := range []string{"`nowhere/`", "layer 9x", "stdlib"} {
		if _, err := resolve(rows, bad); err == nil {
			t.Errorf("resolve(%q): no error", bad)
		}
	}
}

// TestLayeringTableRules feeds tables that break each rule the table must
// keep, and expects the rule's complaint.
func TestLayeringTableRules(t *testing.T) {
	const head = "## Layering\n\n| folder | layer | may import | outside the module |\n|---|---|---|---|\n"
	const leaves = "| `entry/` | 1 | — | any but cilium/ebpf, even indirectly |\n" +
		"| `coverage/` | 1 | — | any but cilium/ebpf, even indirectly |\n" +
		"| `denial/` | 0 | — | standard library |\n" +
		"| `daemon/state/` | 4 | — | any but cilium/ebpf, even indirectly |\n" +
		"| `daemon/metrics/` | 4 | — | any but cilium/ebpf, even indirectly |\n" +
		"| `daemon/audit/` | 4 | — | any but cilium/ebpf, even indirectly |\n" +
		"| `oci/speccheck/` | 3 | — | any but cilium/ebpf, even indirectly |\n"
	for _, c := range []struct{ name, rows, want string }{
		{"fine", "| `policy/` | 0 | — | standard library |\n", ""},
		{"upward edge", "| `cgroup/` | 1 | `oci/` | any but cilium/ebpf |\n| `oci/` | 3 | — | any but cilium/ebpf |\n", "same or a lower layer"},
		{"policy imports daemon", "| `policy/` | 0 | `daemon/` | standard library |\n| `daemon/` | 0 | — | any but cilium/ebpf |\n", "policy/ imports only the standard library"},
		{"oci imports daemon", "| `oci/` | 3 | `daemon/x/` | any but cilium/ebpf |\n| `daemon/x/` | 2 | — | any but cilium/ebpf |\n", "import nothing under daemon/"},
		{"policy outside", "| `policy/harness/` | 0 | — | any but cilium/ebpf |\n", "policy/ imports only the standard library"},
		{"cilium", "| `sandbox/` | 3 | — | any |\n", "only bpf/ and enforcer/"},
		{"product imports harness", "| `sandbox/` | 3 | harness | any but cilium/ebpf |\n| `test/` | harness | — | any |\n", "never imports them"},
		{"harness imports tools", "| `test/` | harness | tools | any |\n| `tools/` | tool | — | any |\n", "only cmd/ and tools/ import the tools"},
		{"cycle", "| `a/` | 1 | `b/` | any but cilium/ebpf |\n| `b/` | 1 | `a/` | any but cilium/ebpf |\n", "cycle"},
		{"leaf links cilium", strings.Replace(leaves, "| `entry/` | 1 | — | any but cilium/ebpf, even indirectly |", "| `entry/` | 1 | — | any but cilium/ebpf |", 1), "`entry/` must be marked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := c.rows
			if c.name != "leaf links cilium" {
				rows += leaves
			}
			parsed, err := parseTable([]byte(head + rows))
			if err != nil {
				t.Fatal(err)
			}
			problems := strings.Join(tableProblems(parsed), "\n")
			if c.want == "" && problems != "" || !strings.Contains(problems, c.want) {
				t.Errorf("problems %q, want one containing %q", problems, c.want)
			}
		})
	}
}
