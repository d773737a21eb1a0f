// Package funclen finds Go functions longer than a limit: the function
// length gate of `make lint` (no product function over 80 lines; product
// is the Makefile's PRODUCT_GO). A function's length counts the lines
// from its func keyword to its closing brace, both included; its doc
// comment does not count. Function literals count inside the function
// that holds them; a literal at package level counts on its own.
//
// Layering (docs/design.md): a tool; it may import anything, and only cmd/
// and tools/ import it.
package funclen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
)

// Func is one function over the limit.
type Func struct {
	Pos   token.Position // of the func keyword
	Name  string         // "Run", "(*Registry).Register", "init.func1"
	Lines int
}

func (f Func) String() string {
	return fmt.Sprintf("%s: %s is %d lines", f.Pos, f.Name, f.Lines)
}

// Long parses the Go file filename (src as for go/parser.ParseFile: nil
// reads the file) and returns its functions longer than max lines, in
// source order. A generated file ("Code generated ... DO NOT EDIT.")
// has none. Errors: the file cannot be read or parsed.
func Long(filename string, src any, max int) ([]Func, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var long []Func
	add := func(name string, n ast.Node) {
		from, to := fset.Position(n.Pos()), fset.Position(n.End())
		if lines := to.Line - from.Line + 1; lines > max {
			long = append(long, Func{Pos: from, Name: name, Lines: lines})
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(funcName(d), d)
		case *ast.GenDecl:
			lit := 0
			ast.Inspect(d, func(n ast.Node) bool {
				if fl, ok := n.(*ast.FuncLit); ok {
					lit++
					add(fmt.Sprintf("package-level func literal %d", lit), fl)
					return false
				}
				return true
			})
		}
	}
	return long, nil
}

// funcName names a function as gocyclo does: Name, or (T).Name and
// (*T).Name for methods.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return fmt.Sprintf("(%s%s).%s", star, id.Name, d.Name.Name)
	}
	return d.Name.Name
}
