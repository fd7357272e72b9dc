package model

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNothingOfTheExporter holds the view model to being a leaf:
// every system builds it, so it may import none of them.
func TestImportsNothingOfTheExporter(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(path, "github.com/failover-exporter/failover_exporter/") {
				t.Errorf("%s imports %s: status/model imports nothing of the exporter", name, path)
			}
		}
	}
}
