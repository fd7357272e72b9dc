package status

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// systemWord is a system's name in any case.
var systemWord = regexp.MustCompile(`(?i)kafka|redis|mirror`)

// TestPageNamesNoSystem: the page's Go code and its template's actions
// render what the view model says and name no system, so that a new
// system needs no change here. Comments and template text may.
func TestPageNamesNoSystem(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var word string
			switch n := n.(type) {
			case *ast.Ident:
				word = n.Name
			case *ast.BasicLit:
				word = n.Value
			case *ast.ImportSpec:
				return false // import paths name packages, not systems
			}
			if systemWord.MatchString(word) {
				t.Errorf("%s: %s names a system", name, word)
			}
			return true
		})
	}
	page, err := os.ReadFile("page.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, action := range regexp.MustCompile(`\{\{.*?\}\}`).FindAllString(string(page), -1) {
		for _, word := range regexp.MustCompile(`\w+`).FindAllString(action, -1) {
			if systemWord.MatchString(word) {
				t.Errorf("page.html: %s names a system", action)
			}
		}
	}
}
