package policy

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Closed vocabularies: Go has no exhaustive switch, so each test below
// type-checks this package's own source and compares every declared
// constant of the vocabulary's type with its All list. Adding a constant
// without listing it (or listing a value twice) fails the test, which is
// the Go form of seed 004's all_covers_every_variant.

var (
	declaredOnce sync.Once
	declaredPkg  *types.Package
	declaredErr  error
)

func policyTypes(t *testing.T) *types.Package {
	t.Helper()
	declaredOnce.Do(func() {
		fset := token.NewFileSet()
		paths, err := filepath.Glob("*.go")
		if err != nil {
			declaredErr = err
			return
		}
		var files []*ast.File
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			src, err := os.ReadFile(p)
			if err != nil {
				declaredErr = err
				return
			}
			f, err := parser.ParseFile(fset, p, src, 0)
			if err != nil {
				declaredErr = err
				return
			}
			files = append(files, f)
		}
		conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
		declaredPkg, declaredErr = conf.Check("github.com/enforcerd/enforcerd/policy", fset, files, nil)
	})
	if declaredErr != nil {
		t.Fatalf("type-check policy: %v", declaredErr)
	}
	return declaredPkg
}

// declaredValues returns the exact values of every package-level constant
// whose type is the named type typeName, rendered with constant.Value's
// String (strings quoted).
func declaredValues(t *testing.T, typeName string) []string {
	t.Helper()
	pkg := policyTypes(t)
	var out []string
	for _, name := range pkg.Scope().Names() {
		c, ok := pkg.Scope().Lookup(name).(*types.Const)
		if !ok {
			continue
		}
		named, ok := c.Type().(*types.Named)
		if !ok || named.Obj().Name() != typeName {
			continue
		}
		v := c.Val()
		if v.Kind() == constant.String {
			out = append(out, fmt.Sprintf("%q", constant.StringVal(v)))
		} else {
			out = append(out, v.ExactString())
		}
	}
	sort.Strings(out)
	return out
}

func render(v any) string {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return fmt.Sprintf("%q", rv.String())
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprint(rv.Uint())
	default:
		return fmt.Sprint(rv.Int())
	}
}

func checkExhaustive[T comparable](t *testing.T, typeName string, all []T, wantLen int) {
	t.Helper()
	if len(all) != wantLen {
		t.Errorf("%s: All list has %d entries, want %d (a variant was added or removed: update the list, its docs and this count)", typeName, len(all), wantLen)
	}
	seen := map[T]bool{}
	var got []string
	for _, v := range all {
		if seen[v] {
			t.Errorf("%s: All list repeats %v", typeName, v)
		}
		seen[v] = true
		got = append(got, render(v))
	}
	sort.Strings(got)
	want := declaredValues(t, typeName)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: All list %v != declared constants %v", typeName, got, want)
	}
}

func TestAllListsCoverEveryVariant(t *testing.T) {
	checkExhaustive(t, "Shell", AllShells, 3)
	checkExhaustive(t, "Role", AllRoles, 8)
	checkExhaustive(t, "RoleSource", AllRoleSources, 5)
	checkExhaustive(t, "DenyList", AllDenyLists, 5)
	checkExhaustive(t, "WriteAuthority", AllWriteAuthorities, 2)
	checkExhaustive(t, "ToolGroup", AllToolGroups, 9)
	checkExhaustive(t, "AgentCapability", AllAgentCapabilities, 1)
	checkExhaustive(t, "Capability", AllCapabilities, 5)
	checkExhaustive(t, "ToolOrigin", AllToolOrigins, 5)
	checkExhaustive(t, "TaintState", AllTaintStates, 2)
	checkExhaustive(t, "TransformKind", AllTransformKinds, 3)
	checkExhaustive(t, "OutcomeKind", AllOutcomeKinds, 5)
	checkExhaustive(t, "ApprovalOutcome", AllApprovalOutcomes, 3)
	checkExhaustive(t, "RuleDecision", AllRuleDecisions, 3)
	checkExhaustive(t, "ExtensionPermission", AllExtensionPermissions, 15)
	checkExhaustive(t, "HookKind", AllHookKinds, 4)
}

// Every variant must have its name/description/behaviour defined: the
// per-variant switches are the other place a new variant must be added.
func TestEveryVariantIsDescribed(t *testing.T) {
	for _, s := range AllShells {
		if !s.Valid() {
			t.Errorf("shell %q not Valid", s)
		}
	}
	for _, r := range AllRoles {
		if !r.Valid() || r.Description() == "" {
			t.Errorf("role %q not Valid or undescribed", r)
		}
	}
	for _, d := range AllDenyLists {
		if len(d.Entries()) == 0 {
			t.Errorf("deny list %q has no entries", d)
		}
	}
	for _, g := range AllToolGroups {
		if !g.Valid() || g.Description() == "" {
			t.Errorf("tool group %q not Valid or undescribed", g)
		}
	}
	for _, c := range AllAgentCapabilities {
		if c.Description() == "" {
			t.Errorf("agent capability %q undescribed", c)
		}
	}
	for _, c := range AllCapabilities {
		if c.String() == "" {
			t.Errorf("capability %d has no wire name", c)
		}
	}
	for _, p := range AllExtensionPermissions {
		if p.String() == "" {
			t.Errorf("extension permission %d has no wire name", p)
		}
	}
	for _, h := range AllHookKinds {
		if _, ok := h.RequiredPermission(); !ok {
			t.Errorf("hook %q has no required permission", h)
		}
	}
}
