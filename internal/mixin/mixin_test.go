package mixin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/internal/contract"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

const (
	rulesFile     = "prometheus/alerts.yml"
	dashboardGlob = "grafana/dashboards/*.json"
	// selector is the non-default _config.selector the tests apply.
	selector = `job="failover-exporter"`
)

// asData decodes JSON into plain Go values, so that two documents compare
// as data: key order, spacing and number spelling do not matter.
func asData(t *testing.T, what string, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// yamlAsData reads a YAML file as the same plain values as asData.
func yamlAsData(t *testing.T, path string) any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return asData(t, path, j)
}

func fileAsData(t *testing.T, path string) any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return asData(t, path, raw)
}

// requireEqual fails with the first differing line of the two values as
// indented JSON.
func requireEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	gl, wl := strings.Split(string(g), "\n"), strings.Split(string(w), "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var a, b string
		if i < len(gl) {
			a = gl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if a != b {
			t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", what, i+1, a, b)
		}
	}
	t.Fatalf("%s differs", what)
}

func evaluate(t *testing.T, root string, config map[string]any) *Output {
	t.Helper()
	out, err := Evaluate(root, config)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dashboardFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, dashboardGlob))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboards match %s (err %v)", dashboardGlob, err)
	}
	files := map[string]string{}
	for _, p := range paths {
		files[filepath.Base(p)] = p
	}
	return files
}

func requireSameDashboardNames(t *testing.T, out *Output, files map[string]string) {
	t.Helper()
	var got, want []string
	for name := range out.Dashboards {
		got = append(got, name)
	}
	for name := range files {
		want = append(want, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("grafanaDashboards has %v, %s has %v: add each dashboard to mixin/dashboards.libsonnet", got, dashboardGlob, want)
	}
}

// With the default _config the mixin is the shipped rules and dashboards.
func TestDefaultConfigIsTheShippedFiles(t *testing.T) {
	root := lab.RepoRoot(t)
	out := evaluate(t, root, nil)

	requireEqual(t, "prometheusAlerts vs "+rulesFile, asData(t, "prometheusAlerts", out.Alerts), yamlAsData(t, filepath.Join(root, rulesFile)))
	requireEqual(t, "prometheusRules", asData(t, "prometheusRules", out.Rules), map[string]any{"groups": []any{}})

	files := dashboardFiles(t, root)
	requireSameDashboardNames(t, out, files)
	for name, path := range files {
		requireEqual(t, "grafanaDashboards["+name+"] vs "+path, asData(t, name, out.Dashboards[name]), fileAsData(t, path))
	}
}

// withoutSelector undoes what _config.selector does to JSON text: the
// matcher is dropped from every selector it was added to.
func withoutSelector(jsonText []byte) []byte {
	quoted, _ := json.Marshal(selector) // as it appears inside a JSON string
	sel := string(quoted[1 : len(quoted)-1])
	s := strings.ReplaceAll(string(jsonText), "{"+sel+",", "{")
	s = strings.ReplaceAll(s, "{"+sel+"}", "")
	return []byte(s)
}

// checkSelected: expr is original with the selector in every vector
// selector: every occurrence of every metric name is followed by it.
func checkSelected(t *testing.T, origin, original, expr string) {
	t.Helper()
	if expr == original {
		t.Errorf("%s: unchanged by the selector: %q", origin, expr)
		return
	}
	names := contract.MetricNamesInExpr(original)
	if len(names) == 0 {
		t.Errorf("%s: no metric name in %q", origin, original)
	}
	for _, name := range names {
		// The name, then its matchers or anything that cannot continue a name.
		occurrence := regexp.MustCompile(`(^|[^\w:])` + regexp.QuoteMeta(name) + `(\s*\{[^}]*\}|[^\w:]|$)`)
		for _, m := range occurrence.FindAllStringSubmatch(expr, -1) {
			if !strings.HasPrefix(strings.TrimSpace(m[2]), "{"+selector) {
				t.Errorf("%s: %s without %s in %q", origin, name, selector, expr)
			}
		}
	}
}

// A selector in _config goes into every vector selector of every alert and
// every dashboard query, changes nothing else, and the results parse.
func TestSelector(t *testing.T) {
	root := lab.RepoRoot(t)
	shipped := evaluate(t, root, nil)
	out := evaluate(t, root, map[string]any{"selector": selector})

	// Nothing but the selector changed.
	requireEqual(t, "prometheusAlerts without the selector", asData(t, "prometheusAlerts", withoutSelector(out.Alerts)), asData(t, "shipped", shipped.Alerts))
	requireSameDashboardNames(t, out, dashboardFiles(t, root))
	for name, raw := range out.Dashboards {
		requireEqual(t, name+" without the selector", asData(t, name, withoutSelector(raw)), asData(t, name, shipped.Dashboards[name]))
	}

	// Every alert expression has it in every selector.
	wantGroups, gotGroups := decodeRules(t, shipped.Alerts), decodeRules(t, out.Alerts)
	for gi, group := range gotGroups {
		for ri, rule := range group.Rules {
			checkSelected(t, "alert "+rule.Alert, wantGroups[gi].Rules[ri].Expr, rule.Expr)
		}
	}
	rulesPath := filepath.Join(t.TempDir(), "alerts.yml")
	if err := os.WriteFile(rulesPath, out.Alerts, 0o644); err != nil { // JSON is YAML
		t.Fatal(err)
	}
	promtool(t, "check", "rules", rulesPath)

	// Every dashboard query: panel targets, annotations and variables.
	var exprs []string
	for name, raw := range out.Dashboards {
		want := decodeDashboard(t, name, shipped.Dashboards[name])
		got := decodeDashboard(t, name, raw)
		wantPanels, gotPanels := want.AllPanels(), got.AllPanels()
		targets := 0
		for pi, panel := range gotPanels {
			for ti, target := range panel.Targets {
				origin := fmt.Sprintf("%s panel %d %q query %s", name, panel.ID, panel.Title, target.RefID)
				checkSelected(t, origin, wantPanels[pi].Targets[ti].Expr, target.Expr)
				exprs = append(exprs, target.Expr)
				targets++
			}
		}
		if targets == 0 {
			t.Errorf("%s: no panel targets", name)
		}
		for ai, a := range got.Annotations.List {
			if a.BuiltIn == 0 {
				checkSelected(t, name+" annotation "+a.Name, want.Annotations.List[ai].Expr, a.Expr)
				exprs = append(exprs, a.Expr)
			}
		}
		for vi, v := range got.Templating.List {
			if v.Type != "query" {
				continue
			}
			origin := name + " variable " + v.Name
			sel := contract.VariableSelector(v.QueryString())
			checkSelected(t, origin, contract.VariableSelector(want.Templating.List[vi].QueryString()), sel)
			if v.Definition != v.QueryString() {
				t.Errorf("%s: definition %q differs from query %q", origin, v.Definition, v.QueryString())
			}
			exprs = append(exprs, sel)
		}
	}
	checkParse(t, exprs)
}

func decodeRules(t *testing.T, raw []byte) []contract.RuleGroup {
	t.Helper()
	var file struct {
		Groups []contract.RuleGroup `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Groups) == 0 {
		t.Fatal("no rule groups")
	}
	return file.Groups
}

func decodeDashboard(t *testing.T, name string, raw []byte) *contract.Dashboard {
	t.Helper()
	var d contract.Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &d
}

// TestSelectorOnProbedTargets: with each cluster its own target (/probe),
// the clusters' series come from the probe job and the exporter's own from
// its /metrics job, so a job selector must match both (mixin/README.md).
// The mixin rendered with such a selector passes every promtool unit test
// with its input series moved to that layout.
func TestSelectorOnProbedTargets(t *testing.T) {
	root := lab.RepoRoot(t)
	probed := fmt.Sprintf(`job=~"failover_exporter|%s"`, contract.ProbeJob)
	out := evaluate(t, root, map[string]any{"selector": probed})
	dir := t.TempDir()
	tests, moved, err := contract.ProbedUnitTests(dir, filepath.Join(root, "prometheus/tests/*.yml"), out.Alerts) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	if moved == 0 {
		t.Fatal("no input series moved to a probed target")
	}
	args := []string{"test", "rules"}
	for _, name := range tests {
		args = append(args, filepath.Join(dir, name))
	}
	promtool(t, args...)
}

// checkParse runs dashboard expressions through promtool as recording
// rules, with Grafana's variables replaced by sample values.
func checkParse(t *testing.T, exprs []string) {
	t.Helper()
	vars := contract.BuiltinVariables()
	for _, v := range []string{"kafka_cluster", "redis_cluster"} {
		vars[v] = "lab"
	}
	vars["topic"] = "orders"
	type recording struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []recording
	for i, e := range exprs {
		rules = append(rules, recording{Record: fmt.Sprintf("mixin:expr_%d", i), Expr: contract.SubstituteVariables(e, vars)})
	}
	raw, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboards", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboards.rules.yml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", path)
}

func promtool(t *testing.T, args ...string) {
	t.Helper()
	name := os.Getenv("PROMTOOL")
	if name == "" {
		name = "promtool"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("promtool not found (%v): run scripts/install-deps.sh", err)
	}
	// A guard against a hung promtool, not a bound on its speed: testing every
	// rule file takes about 30 s of CPU, over two minutes on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, path, args...).CombinedOutput(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// The other _config settings: group labels, data source, runbook base,
// severities and extra alert labels.
func TestConfig(t *testing.T) {
	root := lab.RepoRoot(t)
	shipped := evaluate(t, root, nil)
	const runbookBase = "https://runbooks.example.com/failover#"
	out := evaluate(t, root, map[string]any{
		"groupLabels":     []string{"namespace"},
		"datasource":      "Thanos",
		"datasourceRegex": "Thanos|Prometheus",
		"runbookURLBase":  runbookBase,
		"severities":      map[string]string{"info": "none"},
		"alertLabels":     map[string]string{"team": "storage"},
	})

	wantGroups, gotGroups := decodeRules(t, shipped.Alerts), decodeRules(t, out.Alerts)
	grouping := regexp.MustCompile(`\b(by|on)\s*\(([^)]*)\)`)
	for gi, group := range gotGroups {
		for ri, rule := range group.Rules {
			want := wantGroups[gi].Rules[ri]
			lists := grouping.FindAllStringSubmatch(rule.Expr, -1)
			if len(lists) == 0 {
				t.Errorf("%s: no by/on list in %q", rule.Alert, rule.Expr)
			}
			for _, m := range lists {
				if !slices.Contains(strings.Split(strings.ReplaceAll(m[2], " ", ""), ","), "namespace") {
					t.Errorf("%s: %q does not keep namespace", rule.Alert, m[0])
				}
			}
			if stripped := strings.ReplaceAll(strings.ReplaceAll(rule.Expr, ", namespace)", ")"), "(namespace)", "()"); stripped != want.Expr {
				t.Errorf("%s: changed beyond the group labels:\n got %q\nwant %q", rule.Alert, rule.Expr, want.Expr)
			}
			wantSeverity := want.Labels["severity"]
			if wantSeverity == "info" {
				wantSeverity = "none"
			}
			if rule.Labels["severity"] != wantSeverity || rule.Labels["team"] != "storage" || len(rule.Labels) != len(want.Labels)+1 {
				t.Errorf("%s: labels %v, want %v with severity %s and team storage", rule.Alert, rule.Labels, want.Labels, wantSeverity)
			}
			anchor, ok := strings.CutPrefix(want.Annotations["runbook_url"], "https://github.com/failover-exporter/failover_exporter/blob/main/docs/runbooks.md#")
			if !ok || rule.Annotations["runbook_url"] != runbookBase+anchor {
				t.Errorf("%s: runbook_url %q, want %s%s", rule.Alert, rule.Annotations["runbook_url"], runbookBase, anchor)
			}
		}
	}
	rulesPath := filepath.Join(t.TempDir(), "alerts.yml")
	if err := os.WriteFile(rulesPath, out.Alerts, 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", rulesPath)

	for name, raw := range out.Dashboards {
		var got, want map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(shipped.Dashboards[name], &want); err != nil {
			t.Fatal(err)
		}
		// Only the datasource variable changes.
		list := func(d map[string]any) []any { return d["templating"].(map[string]any)["list"].([]any) }
		found := false
		for i, v := range list(got) {
			v := v.(map[string]any)
			if v["type"] != "datasource" {
				continue
			}
			found = true
			current, _ := v["current"].(map[string]any)
			if current["text"] != "Thanos" || current["value"] != "Thanos" || v["regex"] != "Thanos|Prometheus" {
				t.Errorf("%s: datasource variable current %v regex %v, want Thanos and Thanos|Prometheus", name, current, v["regex"])
			}
			list(got)[i] = list(want)[i]
		}
		if !found {
			t.Errorf("%s: no datasource variable", name)
		}
		requireEqual(t, name+" but its datasource variable", got, want)
	}
}

// The release tarball holds everything the mixin imports: unpacked
// elsewhere, it evaluates to the same output.
func TestTarball(t *testing.T) {
	root := lab.RepoRoot(t)
	var buf bytes.Buffer
	modTime := time.Unix(1700000000, 0)
	if err := WriteTarball(&buf, root, "failover_exporter-mixin", modTime); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gz, err := gzip.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(hdr.Name, "failover_exporter-mixin/") || strings.Contains(hdr.Name, "..") {
			t.Fatalf("entry %q outside failover_exporter-mixin/", hdr.Name)
		}
		if !hdr.ModTime.Equal(modTime) {
			t.Errorf("%s: dated %v, want %v", hdr.Name, hdr.ModTime, modTime)
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			names = append(names, strings.TrimPrefix(hdr.Name, "failover_exporter-mixin/"))
			content, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s: unexpected type %c", hdr.Name, hdr.Typeflag)
		}
	}
	for _, want := range []string{"mixin/mixin.libsonnet", "mixin/README.md", "mixin/jsonnetfile.json", rulesFile, "LICENSE"} {
		if !slices.Contains(names, want) {
			t.Errorf("tarball lacks %s: %v", want, names)
		}
	}

	for _, config := range []map[string]any{nil, {"selector": selector}} {
		packed, inTree := evaluate(t, filepath.Join(dir, "failover_exporter-mixin"), config), evaluate(t, root, config)
		requireEqual(t, fmt.Sprintf("unpacked mixin with config %v", config), packed, inTree)
	}

	// Reproducible: the same files give the same bytes.
	var again bytes.Buffer
	if err := WriteTarball(&again, root, "failover_exporter-mixin", modTime); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two tarballs of the same tree differ")
	}
}

// goreleaser packs the mixin in a before hook and ships what the hook
// writes; the hook's file name and the globs must agree.
func TestGoreleaserShipsTheMixin(t *testing.T) {
	root := lab.RepoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, ".goreleaser.yml"))
	if err != nil {
		t.Fatal(err)
	}
	type extraFile struct {
		Glob string `yaml:"glob"`
	}
	var cfg struct {
		Before struct {
			Hooks []string `yaml:"hooks"`
		} `yaml:"before"`
		Checksum struct {
			ExtraFiles []extraFile `yaml:"extra_files"`
		} `yaml:"checksum"`
		Release struct {
			ExtraFiles []extraFile `yaml:"extra_files"`
		} `yaml:"release"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	hook := regexp.MustCompile(`^go run \./internal/mixin/cmd/mixin-tarball .*-version \{\{ *\.Version *\}\}.* -out (\S+)`)
	var outDir string
	for _, h := range cfg.Before.Hooks {
		if m := hook.FindStringSubmatch(h); m != nil {
			outDir = m[1]
		}
	}
	if outDir == "" {
		t.Fatalf("before.hooks %q do not run internal/mixin/cmd/mixin-tarball -version {{ .Version }} -out <dir>", cfg.Before.Hooks)
	}
	file := outDir + "/failover_exporter-mixin-1.2.3.tar.gz" // what the hook writes for version 1.2.3
	shipped := func(section string, files []extraFile) {
		for _, f := range files {
			if ok, _ := filepath.Match(f.Glob, file); ok {
				return
			}
		}
		t.Errorf("%s.extra_files %v do not match %s", section, files, file)
	}
	shipped("release", cfg.Release.ExtraFiles)
	shipped("checksum", cfg.Checksum.ExtraFiles)
}
