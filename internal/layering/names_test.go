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
	"internal/contract", "internal/chart", "internal/mixin", "internal/deploy", "internal/metricsdoc", "internal/layering", "internal/certs"}

// pendingNamers are the shared production files that still name a system,
// each with what keeps it (issue 43): the allow-list's example host name,
// the convenience flags, the slot command. The list only
// shrinks: the test fails when a file listed names no system any more
// (remove its line) and when a file not listed starts to.
var pendingNamers = map[string]string{
	"config/allowlist.go": "the allow-list's messages give kafka-1.prod.internal as an example host name (changing them changes the messages)",
	"commands.go":         "the commands' help names the server's Kafka and Redis flags",
	"slot.go":             "the slot command is Redis's",
}

// TestSharedCodeNamesNoSystem walks the identifiers and string literals of
// every shared production Go file (comments aside): none names a system
// but those pendingNamers lists.
func TestSharedCodeNamesNoSystem(t *testing.T) {
	namers := map[string]int{}
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
		if n, err := namesOfSystems(path); err != nil {
			return err
		} else if n > 0 {
			namers[rel] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(namers) == 0 {
		t.Fatal("no shared file names a system: the walk found nothing, or the list is done (then delete pendingNamers)")
	}
	for file, n := range namers {
		if _, ok := pendingNamers[file]; !ok {
			t.Errorf("%s names a system %d times in identifiers or strings; a system's code lives in systems/<name>/, and the engine learns it from the Spec", file, n)
		}
	}
	for file, why := range pendingNamers {
		if namers[file] == 0 {
			t.Errorf("%s names no system any more; remove it from pendingNamers (it was there because %s)", file, why)
		}
	}
	t.Logf("shared production files naming a system: %d", len(namers))
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
