package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is how long a production function may be, from its func
// line to its closing brace, before it needs a reason (issue 29).
const maxFuncLines = 80

// TestNoLongFunctions keeps production functions short: one over
// maxFuncLines lines needs a line starting "// long:" in its doc comment
// that says why it is not split. Test files, testdata and hidden
// directories are not read.
func TestNoLongFunctions(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.Body.Rbrace)
			lines := end.Line - start.Line + 1
			if lines <= maxFuncLines || hasLongReason(fn.Doc) {
				continue
			}
			t.Errorf("%s:%d: %s is %d lines (over %d): split it into named steps, or say why not in a \"// long:\" line of its doc comment",
				path, start.Line, funcName(fn), lines, maxFuncLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func hasLongReason(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if reason, ok := strings.CutPrefix(c.Text, "// long:"); ok && strings.TrimSpace(reason) != "" {
			return true
		}
	}
	return false
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	recv := fn.Recv.List[0].Type
	if star, ok := recv.(*ast.StarExpr); ok {
		recv = star.X
	}
	switch r := recv.(type) {
	case *ast.IndexExpr:
		recv = r.X
	case *ast.IndexListExpr:
		recv = r.X
	}
	if id, ok := recv.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
