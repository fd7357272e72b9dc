package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/failover-exporter/failover_exporter"

// clientLibraries are the modules that talk to clusters; config must link
// none of them, so that reading and checking a config file needs no
// client.
var clientLibraries = []string{
	"github.com/IBM/sarama",
	"github.com/twmb/franz-go",
	"github.com/redis/rueidis",
}

// listedPackage is the part of `go list -json` this test reads.
type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Deps       []string
	Standard   bool
}

// goList runs `go list -deps -json` on patterns from the module's root and
// returns every package it lists, the patterns' own and their
// dependencies, by import path.
func goList(t *testing.T, patterns ...string) map[string]listedPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json"}, patterns...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// systems are the module's system packages: the packages under systems/
// that have a system.go (the file with the package's registry line).
func systems(pkgs map[string]listedPackage) []string {
	var out []string
	for path, p := range pkgs {
		if strings.HasPrefix(path, module+"/systems/") && slices.Contains(p.GoFiles, "system.go") {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}

// pendingSiblingImports are the sibling imports still to be undone, each
// with what keeps it. The test fails when one of them is gone too, so that
// the list only shrinks: remove the line when the import goes.
// None is left: the last, the Redis canary's slot map, moved to
// systems/redis/proto with the CLUSTER NODES parser and the merge rule.
var pendingSiblingImports = map[[2]string]string{}

func TestNoSystemImportsASibling(t *testing.T) {
	pkgs := goList(t, "./...")
	found := systems(pkgs)
	// The test must see the systems it guards; a rename that hides them
	// from it would make it pass for nothing.
	for _, want := range []string{"systems/kafka", "systems/redis", "systems/mirror", "systems/kafka/canary", "systems/redis/canary"} {
		if !slices.Contains(found, module+"/"+want) {
			t.Errorf("system %s not found among %v", want, found)
		}
	}
	seenPending := map[[2]string]bool{}
	for _, system := range found {
		for _, dep := range pkgs[system].Deps {
			if dep != system && slices.Contains(found, dep) {
				edge := [2]string{strings.TrimPrefix(system, module+"/"), strings.TrimPrefix(dep, module+"/")}
				if _, ok := pendingSiblingImports[edge]; ok {
					seenPending[edge] = true
					continue
				}
				t.Errorf("system %s imports system %s; move what they share to a client package (systems/kafka/client, systems/redis/proto)", strings.TrimPrefix(system, module+"/"), strings.TrimPrefix(dep, module+"/"))
			}
		}
	}
	for edge, why := range pendingSiblingImports {
		if !seenPending[edge] {
			t.Errorf("%s no longer imports %s; remove it from pendingSiblingImports (it was there because %s)", edge[0], edge[1], why)
		}
	}
}

// The config, the systems' settings and the status page are read by every
// system (and the settings by --config.check): they link no client
// library, so that a system's client stays its own.
func TestConfigLinksNoClientLibrary(t *testing.T) {
	for _, dir := range []string{"config", "systems/kafka/settings", "systems/redis/settings", "systems/mirror/settings", "status"} {
		pkgs := goList(t, "./"+dir+"/...")
		checked := 0
		for path, p := range pkgs {
			if path != module+"/"+dir && !strings.HasPrefix(path, module+"/"+dir+"/") {
				continue
			}
			checked++
			for _, lib := range clientLibraries {
				// One error per library, naming its first package that links it.
				if i := slices.IndexFunc(p.Deps, func(dep string) bool { return dep == lib || strings.HasPrefix(dep, lib+"/") }); i >= 0 {
					t.Errorf("%s links %s (via %s); %s must build without a client library", strings.TrimPrefix(path, module+"/"), lib, p.Deps[i], dir)
				}
			}
		}
		if checked == 0 {
			t.Fatalf("go list found no %s package", dir)
		}
	}
}

// floors are the engine's lowest packages, which every system builds on:
// they import no page, neither the status page nor its view model, so
// that the page can change without them (issue 43, 3). collector/system,
// the registry, links the view model by design: a system's Spec carries
// its views.
var floors = []string{"collector/watch", "collector/events", "collector/episode", "collector/exposition", "collector/histogram", "collector/budget", "config"}

func TestFloorsImportNoPage(t *testing.T) {
	patterns := make([]string, len(floors))
	for i, f := range floors {
		patterns[i] = "./" + f
	}
	pkgs := goList(t, patterns...)
	for _, floor := range floors {
		p, ok := pkgs[module+"/"+floor]
		if !ok {
			t.Errorf("go list found no package %s", floor)
			continue
		}
		for _, dep := range p.Deps {
			if dep == module+"/status" || strings.HasPrefix(dep, module+"/status/") {
				t.Errorf("%s imports %s: the engine's floors import no page; move what they share below them", floor, strings.TrimPrefix(dep, module+"/"))
			}
		}
	}
}
