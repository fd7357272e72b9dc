package contract

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/collector"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/internal/fakesystem"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/metricsdoc"
	"github.com/failover-exporter/failover_exporter/systems"
)

const (
	rulesFile     = "prometheus/alerts.yml"
	rulesTestGlob = "prometheus/tests/*.yml"
	runbooksFile  = "docs/runbooks.md"
	runbookBase   = "https://github.com/failover-exporter/failover_exporter/blob/main/docs/runbooks.md#"
)

// dashboards are the registry's: each system's Spec names the dashboards
// it ships and what each must be (its uid, cluster variable, the
// dashboard it links to and the counters its failover annotations may
// come from).
var dashboards = dashboardsOf(systems.All)

func dashboardsOf(list []system.System) []system.Dashboard {
	var out []system.Dashboard
	for _, s := range list {
		out = append(out, s.Dashboards()...)
	}
	return out
}

// sampleVariables are the values substituted for dashboard variables before
// the expressions are parsed.
func sampleVariables() map[string]string {
	vars := BuiltinVariables()
	vars["datasource"] = "prometheus"
	vars["kafka_cluster"] = "lab"
	vars["redis_cluster"] = "lab"
	vars["sentinel_cluster"] = "lab"
	vars["master"] = "mymaster"
	vars["topic"] = "orders"
	vars["mirror"] = "eu-us"
	vars["source_cluster"] = "eu"
	vars["target_cluster"] = "us"
	return vars
}

func promtool(t *testing.T) string {
	t.Helper()
	name := os.Getenv("PROMTOOL")
	if name == "" {
		name = "promtool"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("promtool not found (%v): run scripts/install-deps.sh", err)
	}
	return path
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	// A guard against a hung promtool, not a bound on its speed: testing every
	// rule file takes about 30 s of CPU, over two minutes on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func loadRules(t *testing.T) []RuleGroup {
	t.Helper()
	groups, err := LoadRules(filepath.Join(lab.RepoRoot(t), rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	return groups
}

func alertRules(t *testing.T) []Rule {
	t.Helper()
	var alerts []Rule
	for _, g := range loadRules(t) {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatalf("%s has no alerts", rulesFile)
	}
	return alerts
}

func loadDashboard(t *testing.T, spec system.Dashboard) (*Dashboard, any) {
	t.Helper()
	path := filepath.Join(lab.RepoRoot(t), spec.File)
	d, err := LoadDashboard(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	return d, generic
}

// expression is a PromQL expression found in a dashboard or a rules file,
// with where it came from for messages.
type expression struct {
	origin string
	raw    string // as written, with Grafana variables
	expr   string // variables substituted
}

func dashboardExpressions(t *testing.T, spec system.Dashboard) []expression {
	t.Helper()
	d, _ := loadDashboard(t, spec)
	vars := sampleVariables()
	var out []expression
	add := func(origin, raw string) {
		out = append(out, expression{origin: spec.File + ": " + origin, raw: raw, expr: SubstituteVariables(raw, vars)})
	}
	for _, p := range d.AllPanels() {
		for _, tg := range p.Targets {
			add(fmt.Sprintf("panel %d %q query %s", p.ID, p.Title, tg.RefID), tg.Expr)
		}
	}
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 0 {
			add(fmt.Sprintf("annotation %q", a.Name), a.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		sel := VariableSelector(v.QueryString())
		if sel == "" {
			t.Errorf("%s: variable %q: query %q is not label_values(selector, label) or query_result(...)", spec.File, v.Name, v.QueryString())
			continue
		}
		add(fmt.Sprintf("variable %q", v.Name), sel)
	}
	return out
}

func ruleExpressions(t *testing.T) []expression {
	t.Helper()
	var out []expression
	for _, g := range loadRules(t) {
		for _, r := range g.Rules {
			out = append(out, expression{origin: rulesFile + ": " + r.Alert + r.Record, raw: r.Expr, expr: r.Expr})
		}
	}
	return out
}

// (1) The rules load and their unit tests pass.
func TestRulesPassPromtool(t *testing.T) {
	root := lab.RepoRoot(t)
	runPromtool(t, root, "check", "rules", rulesFile)
	tests, err := filepath.Glob(filepath.Join(root, rulesTestGlob))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool unit tests match %s (err %v)", rulesTestGlob, err)
	}
	for i := range tests {
		tests[i], _ = filepath.Rel(root, tests[i])
	}
	runPromtool(t, root, append([]string{"test", "rules"}, tests...)...)
}

// (2) Every metric a dashboard or rule uses is one the exporter exposes.
func TestQueriesUseExposedMetrics(t *testing.T) {
	exposed := exposedMetricNames(t)
	all := ruleExpressions(t)
	for _, spec := range dashboards {
		all = append(all, dashboardExpressions(t, spec)...)
	}
	for _, e := range all {
		names := MetricNamesInExpr(e.expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric name found in %q", e.origin, e.expr)
		}
		for _, name := range names {
			if !exposed[name] {
				t.Errorf("%s: metric %q is not exposed by failover_exporter", e.origin, name)
			}
		}
	}
}

// exposedMetricNames returns what the exporter exposes, from the
// collectors themselves, and checks that the metric contract the issues set
// (testdata/metric_names.txt) is all there.
func exposedMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	// Every system of the registry, by its name (the sections of
	// testdata/metric_names.txt). Queries select series names: a
	// histogram's _bucket, _sum and _count.
	fromCollectors := map[string][]string{}
	exposed := map[string]bool{}
	for _, s := range systems.All {
		fromCollectors[s.Name()] = exposition.Names(s.Sets()...)
		for _, n := range exposition.SeriesNames(s.Sets()...) {
			exposed[n] = true
		}
	}
	selfMetrics, err := metricsdoc.FromCollectors(collector.NewSelfMetrics(systems.All).Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	var self []string
	for _, m := range selfMetrics {
		self = append(self, m.Name)
		exposed[m.Name] = true
	}
	fromCollectors["exporter"] = self
	for section, names := range contractMetricNames(t) {
		got := map[string]bool{}
		for _, n := range fromCollectors[section] {
			got[n] = true
		}
		for _, n := range names {
			if !got[n] {
				t.Errorf("%s: the exporter does not expose %q from the metric contract (testdata/metric_names.txt)", section, n)
			}
		}
	}
	return exposed
}

func contractMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	return readSections(t, "metric_names.txt")
}

// readSections reads a testdata file of [section] headers, each followed by
// names one a line; # starts a comment line. A section may be empty.
func readSections(t *testing.T, name string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sections := map[string][]string{}
	section := ""
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			if _, dup := sections[section]; dup {
				t.Fatalf("testdata/%s: section [%s] twice", name, section)
			}
			sections[section] = nil
		default:
			if section == "" {
				t.Fatalf("testdata/%s: %q is outside a [section]", name, line)
			}
			sections[section] = append(sections[section], line)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return sections
}

// (3) Every dashboard expression parses. promtool checks them as recording
// rules, one per expression, named after the panel and query.
func TestDashboardExpressionsParse(t *testing.T) {
	type recording struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	type group struct {
		Name  string      `yaml:"name"`
		Rules []recording `yaml:"rules"`
	}
	var groups []group
	var index []string
	leftover := regexp.MustCompile(`\$[A-Za-z_{]|\[\[`)
	for _, spec := range dashboards {
		g := group{Name: filepath.Base(spec.File)}
		for _, e := range dashboardExpressions(t, spec) {
			if leftover.MatchString(e.expr) {
				t.Errorf("%s: unsubstituted variable in %q", e.origin, e.expr)
			}
			name := fmt.Sprintf("contract:expr_%d", len(index))
			index = append(index, name+" = "+e.origin)
			g.Rules = append(g.Rules, recording{Record: name, Expr: e.expr})
		}
		groups = append(groups, g)
	}
	raw, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboards.rules.yml"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool(t), "check", "rules", "dashboards.rules.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dashboard expressions do not parse: %v\n%s\nrecord names:\n%s", err, out, strings.Join(index, "\n"))
	}
}

// Several exporters may scrape one cluster: copies must be de-duplicated
// with max/min by the identifying labels before anything sums them.
func TestQueriesDeduplicateExporters(t *testing.T) {
	summing := regexp.MustCompile(`\b(sum|avg|count)\s*(?:(?:by|without)\s*\([^)]*\)\s*)?\(\s*`)
	dedup := regexp.MustCompile(`^(max|min)\s*(by|without|\()`)
	targetLabel := regexp.MustCompile(`\b(instance|pod)\b`)
	all := ruleExpressions(t)
	for _, spec := range dashboards {
		all = append(all, dashboardExpressions(t, spec)...)
	}
	for _, e := range all {
		for _, loc := range summing.FindAllStringIndex(e.expr, -1) {
			if !dedup.MatchString(e.expr[loc[1]:]) {
				t.Errorf("%s: %q aggregates copies from several exporters; wrap its argument in max by (...) first", e.origin, e.expr[loc[0]:])
			}
		}
	}
	for _, e := range ruleExpressions(t) {
		if targetLabel.MatchString(e.expr) {
			t.Errorf("%s: an alert must not keep or group by instance/pod: %q", e.origin, e.expr)
		}
	}
}

// (4) Each dashboard is importable Grafana JSON that follows our conventions.
func TestDashboardsAreValid(t *testing.T) {
	for _, spec := range dashboards {
		t.Run(filepath.Base(spec.File), func(t *testing.T) { checkDashboard(t, spec) })
	}
}

// Every dashboard shipped is a system's, and so held to the checks above.
func TestEveryShippedDashboardIsASystems(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(lab.RepoRoot(t), "grafana", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in grafana/dashboards (%v)", err)
	}
	for _, f := range files {
		rel := "grafana/dashboards/" + filepath.Base(f)
		if !slices.ContainsFunc(dashboards, func(d system.Dashboard) bool { return d.File == rel }) {
			t.Errorf("%s is no system's dashboard: name it in the Dashboards of its system's Spec", rel)
		}
	}
}

// A system's dashboard is held to the same checks as the shipped ones
// when the system is not the registry's: the fake system's
// (internal/fakesystem), whose queries use only the series it serves.
func TestAFakeSystemsDashboardIsHeldToTheContract(t *testing.T) {
	sys := fakesystem.System(&fakesystem.Sources{})
	specs := dashboardsOf([]system.System{sys})
	if len(specs) != 1 {
		t.Fatalf("the fake system ships %d dashboards, want 1", len(specs))
	}
	checkDashboard(t, specs[0])
	served := map[string]bool{}
	for _, n := range exposition.SeriesNames(sys.Sets()...) {
		served[n] = true
	}
	for _, e := range dashboardExpressions(t, specs[0]) {
		names := MetricNamesInExpr(e.expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric name found in %q", e.origin, e.expr)
		}
		for _, name := range names {
			if !served[name] {
				t.Errorf("%s: metric %q is not served by the fake system", e.origin, name)
			}
		}
	}
}

func checkDashboard(t *testing.T, spec system.Dashboard) {
	t.Helper()
	d, generic := loadDashboard(t, spec)
	if d.UID != spec.UID {
		t.Errorf("uid = %q, want %q", d.UID, spec.UID)
	}
	if d.Title == "" || len(d.Tags) == 0 {
		t.Errorf("title %q and tags %v must be set", d.Title, d.Tags)
	}
	if d.SchemaVersion != 39 {
		t.Errorf("schemaVersion = %d, want 39", d.SchemaVersion)
	}
	if d.Time.From != "now-30m" || d.Time.To != "now" || d.Refresh != "5s" {
		t.Errorf("time %s..%s refresh %q, want now-30m..now refresh 5s", d.Time.From, d.Time.To, d.Refresh)
	}
	checkVariables(t, d, spec)
	checkDatasources(t, generic, "$")
	checkPanels(t, d)
	checkAnnotations(t, d, spec)
	checkLinks(t, d, spec)
	for _, e := range dashboardExpressions(t, spec) {
		for _, m := range regexp.MustCompile(`\[([^\]]*)\]`).FindAllStringSubmatch(e.raw, -1) {
			if m[1] != "$__rate_interval" && m[1] != "$__range" {
				t.Errorf("%s: range [%s] should be [$__rate_interval]", e.origin, m[1])
			}
		}
	}
}

func checkVariables(t *testing.T, d *Dashboard, spec system.Dashboard) {
	t.Helper()
	vars := map[string]Variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	ds, ok := vars["datasource"]
	if !ok || ds.Type != "datasource" || ds.QueryString() != "prometheus" {
		t.Errorf("templating needs a variable datasource of type datasource querying prometheus, got %+v", ds)
	}
	cluster, ok := vars[spec.ClusterVar]
	if !ok || cluster.Type != "query" || !strings.HasPrefix(strings.TrimSpace(cluster.QueryString()), "label_values(") ||
		!strings.HasSuffix(strings.TrimSpace(cluster.QueryString()), spec.ClusterVar+")") {
		t.Errorf("templating needs a variable %s from label_values(..., %s), got %q", spec.ClusterVar, spec.ClusterVar, cluster.QueryString())
	}
}

// checkDatasources walks the whole JSON: every "datasource" must be the
// Prometheus data source chosen by the datasource variable.
func checkDatasources(t *testing.T, node any, path string) {
	t.Helper()
	switch v := node.(type) {
	case map[string]any:
		for key, child := range v {
			if key == "datasource" {
				ref, ok := child.(map[string]any)
				if !ok || ref["type"] != "prometheus" || ref["uid"] != "${datasource}" {
					t.Errorf("%s.datasource = %v, want {\"type\":\"prometheus\",\"uid\":\"${datasource}\"}", path, child)
				}
				continue
			}
			checkDatasources(t, child, path+"."+key)
		}
	case []any:
		for i, child := range v {
			checkDatasources(t, child, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

func checkPanels(t *testing.T, d *Dashboard) {
	t.Helper()
	ids := map[int]string{}
	var types []string
	for _, p := range d.AllPanels() {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID <= 0 {
			t.Errorf("%s: id must be positive", where)
		}
		if other, dup := ids[p.ID]; dup {
			t.Errorf("%s: id also used by %q", where, other)
		}
		ids[p.ID] = p.Title
		if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("%s: gridPos %+v must fit the 24 column grid", where, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		types = append(types, p.Type)
		if p.Type == "" || strings.TrimSpace(p.Title) == "" || strings.TrimSpace(p.Description) == "" {
			t.Errorf("%s: type, title and description are required", where)
		}
		if p.Datasource == nil {
			t.Errorf("%s: no datasource", where)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no queries", where)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] || strings.TrimSpace(tg.Expr) == "" || tg.Datasource == nil {
				t.Errorf("%s: query %q needs a unique refId, an expr and a datasource", where, tg.RefID)
			}
			refs[tg.RefID] = true
		}
		if (p.Type == "timeseries" || p.Type == "stat") && p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("%s: set a unit", where)
		}
		if p.Type == "table" && len(p.Targets) > 1 {
			merged := false
			for _, tr := range p.Transformations {
				merged = merged || tr.ID == "merge" || tr.ID == "joinByField"
			}
			if !merged {
				t.Errorf("%s: a table of several queries must join them with a merge transformation", where)
			}
		}
	}
	for _, want := range []string{"stat", "timeseries", "state-timeline", "table"} {
		if !contains(types, want) {
			t.Errorf("no %s panel", want)
		}
	}
	// Top-level panels must not overlap (rows' collapsed children are laid
	// out when the row opens).
	for i, a := range d.Panels {
		for _, b := range d.Panels[i+1:] {
			if a.GridPos != nil && b.GridPos != nil && overlap(*a.GridPos, *b.GridPos) {
				t.Errorf("panels %d %q and %d %q overlap", a.ID, a.Title, b.ID, b.Title)
			}
		}
	}
}

func overlap(a, b GridPos) bool {
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
}

func checkAnnotations(t *testing.T, d *Dashboard, spec system.Dashboard) {
	t.Helper()
	failover := false
	for _, a := range d.Annotations.List {
		if a.BuiltIn != 0 {
			continue
		}
		if strings.TrimSpace(a.Expr) == "" || a.Name == "" {
			t.Errorf("annotation %q needs a name and an expr", a.Name)
		}
		if len(a.Filter) > 0 && string(a.Filter) != "null" {
			t.Errorf("annotation %q is filtered to some panels; failovers must show on every panel", a.Name)
		}
		for _, counter := range spec.FailoverCounters {
			if a.Enable && strings.Contains(a.Expr, counter) {
				failover = true
			}
		}
	}
	if !failover {
		t.Errorf("no enabled annotation marks failovers from %s", strings.Join(spec.FailoverCounters, " or "))
	}
}

func checkLinks(t *testing.T, d *Dashboard, spec system.Dashboard) {
	t.Helper()
	for _, l := range d.Links {
		if strings.Contains(l.URL, "/d/"+spec.LinksTo+"/") || strings.HasSuffix(l.URL, "/d/"+spec.LinksTo) {
			return
		}
	}
	t.Errorf("no dashboard link to /d/%s", spec.LinksTo)
}

// (5) Every alert is documented, labelled and tested.
func TestAlertsAreDocumented(t *testing.T) {
	anchors := runbookAnchors(t)
	for _, a := range alertRules(t) {
		for _, key := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(a.Annotations[key]) == "" {
				t.Errorf("%s: annotation %s is required", a.Alert, key)
			}
		}
		switch a.Labels["severity"] {
		case "critical", "warning", "info":
		default:
			t.Errorf("%s: severity label %q must be critical, warning or info", a.Alert, a.Labels["severity"])
		}
		url := a.Annotations["runbook_url"]
		if !strings.HasPrefix(url, runbookBase) {
			t.Errorf("%s: runbook_url %q must start with %s", a.Alert, url, runbookBase)
		} else if anchor := strings.TrimPrefix(url, runbookBase); !anchors[anchor] {
			t.Errorf("%s: runbook_url anchor #%s is not a heading of %s (have %v)", a.Alert, anchor, runbooksFile, sortedKeys(anchors))
		}
		if !strings.Contains(a.Annotations["description"], "$labels.") {
			t.Errorf("%s: the description must name what is affected with {{ $labels.... }}", a.Alert)
		}
	}
}

// runbookAnchors returns the anchors GitHub generates for the headings of the runbooks.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(lab.RepoRoot(t), runbooksFile))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	inCode := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		anchors[githubAnchor(strings.TrimLeft(line, "#"))] = true
	}
	return anchors
}

// githubAnchor slugs a heading like GitHub: lower case, punctuation dropped,
// spaces to hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Every alert has a promtool test where it fires, one where it does not, and
// a firing test fed by two exporters.
func TestEveryAlertIsUnitTested(t *testing.T) {
	type unitTests struct {
		Tests []struct {
			InputSeries []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	fires, quiet, twoExporters := map[string]bool{}, map[string]bool{}, map[string]bool{}
	instance := regexp.MustCompile(`instance="([^"]*)"`)
	files, _ := filepath.Glob(filepath.Join(lab.RepoRoot(t), rulesTestGlob))
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ut unitTests
		if err := yaml.Unmarshal(raw, &ut); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, tc := range ut.Tests {
			instances := map[string]bool{}
			for _, s := range tc.InputSeries {
				if m := instance.FindStringSubmatch(s.Series); m != nil {
					instances[m[1]] = true
				}
			}
			for _, at := range tc.AlertRuleTest {
				if len(at.ExpAlerts) == 0 {
					quiet[at.Alertname] = true
					continue
				}
				fires[at.Alertname] = true
				if len(instances) >= 2 {
					twoExporters[at.Alertname] = true
				}
			}
		}
	}
	for _, a := range alertRules(t) {
		if !fires[a.Alert] || !quiet[a.Alert] || !twoExporters[a.Alert] {
			t.Errorf("%s: needs promtool tests where it fires (fed by two exporters: %v), fires: %v, stays quiet: %v",
				a.Alert, twoExporters[a.Alert], fires[a.Alert], quiet[a.Alert])
		}
	}
}

func TestMetricNamesInExpr(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`max by (kafka_cluster, topic) (kafka_partition_leader{topic="a{b}"}) == 1`, []string{"kafka_partition_leader"}},
		{`sum(rate(a_total[5m] offset 1m)) by (x) / on (x) group_left (y) b_info`, []string{"a_total", "b_info"}},
		{`time() - max(ts_seconds) > 1e3 and bool c unless d or label_replace(e, "dst", "$1", "src", "(.*)")`, []string{"ts_seconds", "c", "d", "e"}},
		{`count_values("v", x) + topk(3, y) + vector(0) + z[1m:30s]`, []string{"x", "y", "z"}},
	} {
		got := MetricNamesInExpr(tc.expr)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("MetricNamesInExpr(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestSubstituteVariables(t *testing.T) {
	vars := map[string]string{"topic": "orders", "__rate_interval": "1m", "kafka_cluster": "lab"}
	in := `x{topic="$topic",c="${kafka_cluster}",d="[[kafka_cluster]]",e="${kafka_cluster:raw}",f="$topics",g="$1"}[$__rate_interval]`
	want := `x{topic="orders",c="lab",d="lab",e="lab",f="$topics",g="$1"}[1m]`
	if got := SubstituteVariables(in, vars); got != want {
		t.Errorf("SubstituteVariables = %s, want %s", got, want)
	}
}

func TestLoadDashboardQueries(t *testing.T) {
	for _, spec := range dashboards {
		panels, err := LoadDashboardQueries(filepath.Join(lab.RepoRoot(t), spec.File))
		if err != nil {
			t.Fatal(err)
		}
		if len(panels) == 0 {
			t.Fatalf("%s: no panels with queries", spec.File)
		}
		for _, p := range panels {
			if p.Title == "" || len(p.Queries) == 0 || p.Queries[0].RefID == "" {
				t.Errorf("%s: panel %d %q: incomplete %+v", spec.File, p.PanelID, p.Title, p)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// sortedKeys returns the keys of a set in order, for stable messages.
func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Every event kind a system of the registry can record is documented in
// the event log section of docs/outage-clock.md, where users look up what
// a kind means.
func TestEventKindsAreDocumented(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "outage-clock.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	start := strings.Index(text, "**Event log.**")
	if start < 0 {
		t.Fatal("docs/outage-clock.md has no **Event log.** section")
	}
	section := text[start:]
	if end := strings.Index(section, "\n## "); end > 0 {
		section = section[:end]
	}
	for _, s := range systems.All {
		if len(s.EventKinds()) == 0 {
			t.Errorf("system %s lists no event kinds", s.Name())
		}
		for _, kind := range s.EventKinds() {
			if !strings.Contains(section, "`"+string(kind)+"`") {
				t.Errorf("event kind %s of system %s is not in the event log section of docs/outage-clock.md", kind, s.Name())
			}
		}
	}
}
