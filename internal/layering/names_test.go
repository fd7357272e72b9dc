package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// systemName matches what names a system in an identifier or a string
// literal: its name, or a server it stands for, as a word of its own or
// of a camel-case name (not "reDis" in ConfigureDiscovery).
var systemName = regexp.MustCompile(`(?:^|[^a-z])(?:kafka|redis|mirror|valkey)|Kafka|Redis|Mirror|Valkey|KAFKA|REDIS|MIRROR|VALKEY`)

// notShared are the folders whose code is not the shared production code:
// the systems' own, and the test harness.
var notShared = []string{"systems", "e2e", "examples", "scripts", "internal/lab", "internal/exportertest", "internal/promtest",
	"internal/contract", "internal/chart", "internal/mixin", "internal/deploy", "internal/metricsdoc", "internal/layering", "internal/certs",
	"internal/fakesystem", "internal/configtest"}

// TestSharedCodeNamesNoSystem walks the identifiers and string literals of
// every shared production Go file (comments aside): none names a system.
func TestSharedCodeNamesNoSystem(t *testing.T) {
	// The detector finds the names where they are: the registry names
	// every system.
	if n, err := namesOfSystems("../../systems/systems.go"); err != nil || n == 0 {
		t.Fatalf("the registry names %d systems (%v): the detector finds nothing", n, err)
	}
	walked := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || slices.Contains(notShared, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		walked++
		if n, err := namesOfSystems(path); err != nil {
			return err
		} else if n > 0 {
			t.Errorf("%s names a system %d times in identifiers or strings; a system's code lives in systems/<name>/, and the engine learns it from the Spec", rel, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if walked < 50 {
		t.Fatalf("the walk read %d shared production files; it lost its way", walked)
	}
	t.Logf("shared production files read: %d", walked)
}

// namesOfSystems counts the identifiers and string literals of a Go file
// that name a system; import paths into systems/ are not counted.
func namesOfSystems(path string) (int, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return 0, err
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		switch v := node.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.Ident:
			if systemName.MatchString(v.Name) {
				n++
			}
		case *ast.BasicLit:
			if v.Kind == token.STRING && systemName.MatchString(v.Value) {
				n++
			}
		}
		return true
	})
	return n, nil
}
