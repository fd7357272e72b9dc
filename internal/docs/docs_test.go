package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is where README.md lives, two folders up from this package.
const repoRoot = "../.."

// readmeMaxLines is how long README.md may grow: the exporters users like
// keep theirs at 80-400 lines and put the rest in docs/.
const readmeMaxLines = 420

func read(t *testing.T, rel string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestREADMEIsAMap(t *testing.T) {
	if n := strings.Count(read(t, "README.md"), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move a topic to a page of docs/ and link it", n, readmeMaxLines)
	}
}

// skipDir is a folder the code map need not name: hidden folders (.git,
// .ci), test fixtures, vendored code and build output.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules" || name == "build"
}

// goFolders are the folders, relative to the root with a trailing slash,
// that hold a non-test .go file; the root itself is "main.go".
func goFolders(t *testing.T) []string {
	t.Helper()
	var folders []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != repoRoot && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".go") || strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(repoRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		folder := "main.go"
		if rel != "." {
			folder = filepath.ToSlash(rel) + "/"
		}
		if !slices.Contains(folders, folder) {
			folders = append(folders, folder)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return folders
}

// codeMap is the first field of each line of the code block under
// docs/development.md's "## Code map" heading: the folders (and main.go)
// it names. Continuation lines, which start with spaces, name nothing.
func codeMap(t *testing.T) []string {
	t.Helper()
	text := read(t, "docs/development.md")
	_, section, ok := strings.Cut(text, "\n## Code map\n")
	if !ok {
		t.Fatal(`docs/development.md has no "## Code map" section`)
	}
	_, block, ok := strings.Cut(section, "```\n")
	if !ok {
		t.Fatal("the code map section has no code block")
	}
	block, _, _ = strings.Cut(block, "```")
	var named []string
	for _, line := range strings.Split(block, "\n") {
		if line == "" || strings.HasPrefix(line, " ") {
			continue
		}
		named = append(named, strings.Fields(line)[0])
	}
	if len(named) == 0 {
		t.Fatal("the code map names nothing")
	}
	return named
}

// TestCodeMapNamesEveryPackage: every folder holding Go code is in the code
// map, and every folder or file the map names exists, so that moving a
// package moves its line.
func TestCodeMapNamesEveryPackage(t *testing.T) {
	named := codeMap(t)
	for _, folder := range goFolders(t) {
		if !slices.Contains(named, folder) {
			t.Errorf("the code map of docs/development.md does not name %s, which holds Go code: add one line for it", folder)
		}
	}
	for _, entry := range named {
		info, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(entry)))
		switch {
		case err != nil:
			t.Errorf("the code map of docs/development.md names %s, which does not exist", entry)
		case strings.HasSuffix(entry, "/") != info.IsDir():
			t.Errorf("the code map of docs/development.md names %s: a folder ends in /, a file does not", entry)
		}
	}
}

// TestAddingASystemNamesSpecFields: the recipe of docs/development.md
// lists system.Spec's fields as collector/system/system.go defines them,
// no more and no fewer.
func TestAddingASystemNamesSpecFields(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot, "collector", "system", "system.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.TypeSpec)
		if !ok || spec.Name.Name != "Spec" {
			return true
		}
		for _, f := range spec.Type.(*ast.StructType).Fields.List {
			for _, name := range f.Names {
				fields = append(fields, name.Name)
			}
		}
		return false
	})
	if len(fields) == 0 {
		t.Fatal("found no fields of system.Spec")
	}
	_, recipe, ok := strings.Cut(read(t, "docs/development.md"), "\n## Adding a system\n")
	if !ok {
		t.Fatal(`docs/development.md has no "## Adding a system" section`)
	}
	_, list, ok := strings.Cut(recipe, "today\nthey are ")
	if !ok {
		_, list, ok = strings.Cut(recipe, "today they are ")
	}
	if !ok {
		t.Fatal(`the recipe does not list the fields of system.Spec ("today they are ...")`)
	}
	list, _, _ = strings.Cut(list, ".")
	listed := regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(list, -1)
	var names []string
	for _, m := range listed {
		names = append(names, m[1])
	}
	if !slices.Equal(names, fields) {
		t.Errorf("docs/development.md lists the fields of system.Spec as\n\t%v\ncollector/system/system.go defines\n\t%v", names, fields)
	}
}

// markdownPages are the pages whose links are checked: README.md, the
// other Markdown files at the root and beside the rules and the mixin, and
// every page of docs/.
func markdownPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "METRICS.md", "BENCHMARKS.md", "prometheus/README.md", "mixin/README.md"}
	matches, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		pages = append(pages, "docs/"+filepath.Base(m))
	}
	return pages
}

var (
	// linkTarget is the target of an inline link or image, [text](target).
	linkTarget = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// proseLine is a line of a page outside fenced code blocks, with its
// number in the page.
type proseLine struct {
	number int
	text   string
}

// proseLines are a page's lines outside fenced code blocks.
func proseLines(page string) []proseLine {
	var lines []proseLine
	fenced := false
	for i, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, proseLine{i + 1, line})
		}
	}
	return lines
}

// anchor is GitHub's anchor of a heading: its text as rendered (a link
// is its text), lowercased, punctuation other than '-' and '_' dropped,
// spaces turned into '-'.
func anchor(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors of a Markdown page's headings, with GitHub's
// -1, -2 suffixes for repeated ones.
func anchors(text string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for _, prose := range proseLines(text) {
		line := prose.text
		trimmed := strings.TrimLeft(line, "#")
		if len(trimmed) == len(line) || len(line)-len(trimmed) > 6 || !strings.HasPrefix(trimmed, " ") {
			continue
		}
		a := anchor(trimmed)
		if n := seen[a]; n > 0 {
			set[a+"-"+strconv.Itoa(n)] = true
		} else {
			set[a] = true
		}
		seen[a]++
	}
	return set
}

// TestRelativeLinksResolve: every relative link of the pages above
// reaches a file or folder of the repository, and a #fragment into a
// Markdown page names one of its headings.
func TestRelativeLinksResolve(t *testing.T) {
	for _, page := range markdownPages(t) {
		for _, prose := range proseLines(read(t, page)) {
			line := codeSpan.ReplaceAllString(prose.text, "")
			for _, m := range linkTarget.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if scheme.MatchString(target) {
					continue
				}
				path, fragment, _ := strings.Cut(target, "#")
				resolved := page
				if path != "" {
					resolved = filepath.ToSlash(filepath.Join(filepath.Dir(page), path))
				}
				if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(resolved))); err != nil {
					t.Errorf("%s:%d: link %s: %s does not exist", page, prose.number, target, resolved)
					continue
				}
				if fragment == "" || !strings.HasSuffix(resolved, ".md") {
					continue
				}
				if !anchors(read(t, resolved))[fragment] {
					t.Errorf("%s:%d: link %s: %s has no heading with anchor #%s", page, prose.number, target, resolved, fragment)
				}
			}
		}
	}
}
