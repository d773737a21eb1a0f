// Package vocabtest checks closed vocabularies in tests: Go has no
// exhaustive switch, so Exhaustive type-checks the package under test from
// its own source and compares every declared constant of a vocabulary's
// type with the vocabulary's All list. Adding a constant without listing
// it (or listing a value twice) fails the test, which is the Go form of
// seed 004's all_covers_every_variant.
//
// It is test harness: it may import product packages and the standard
// library; no product package imports it.
package vocabtest

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

var (
	declaredOnce sync.Once
	declaredPkg  *types.Package
	declaredErr  error
)

// packageTypes type-checks the non-test Go files of the working directory
// (go test runs a package's tests in its directory) once per test binary.
// Imports are type-checked from source.
func packageTypes(t testing.TB) *types.Package {
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
		if len(files) == 0 {
			declaredErr = fmt.Errorf("no Go files in the working directory")
			return
		}
		conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
		declaredPkg, declaredErr = conf.Check(files[0].Name.Name, fset, files, nil)
	})
	if declaredErr != nil {
		t.Fatalf("type-check the package under test: %v", declaredErr)
	}
	return declaredPkg
}

// declaredValues returns the exact values of every package-level constant
// whose type is the named type typeName, rendered with constant.Value's
// String (strings quoted), sorted.
func declaredValues(t testing.TB, typeName string) []string {
	t.Helper()
	pkg := packageTypes(t)
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

// Exhaustive fails t unless all holds wantLen distinct entries and they
// are exactly the constants of type typeName declared in the package
// under test (its non-test source in the working directory).
func Exhaustive[T comparable](t testing.TB, typeName string, all []T, wantLen int) {
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
