package contract

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/collector"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/metricsdoc"
	"github.com/failover-exporter/failover_exporter/systems"
)

// TestOwnSeriesAreWhatTheChartKeeps checks the split the probed layout rests
// on: the chart keeps exactly the exporter's own series on /metrics, and no
// system's series look like them (they would be scraped twice, or dropped).
func TestOwnSeriesAreWhatTheChartKeeps(t *testing.T) {
	template, err := os.ReadFile(filepath.Join(lab.RepoRoot(t), "charts/failover-exporter/templates/monitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(template), "regex: "+OwnSeries) {
		t.Fatalf("the chart's ServiceMonitor no longer keeps %s of /metrics when clusters are probed; update OwnSeries", OwnSeries)
	}
	own := regexp.MustCompile("^" + OwnSeries + "$")
	self, err := metricsdoc.FromCollectors(collector.NewSelfMetrics(systems.All).Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range self {
		if !own.MatchString(m.Name) {
			t.Errorf("the exporter's own %s is not kept by the chart's %s: lost when clusters are probed", m.Name, OwnSeries)
		}
	}
	for _, s := range systems.All {
		for _, n := range exposition.SeriesNames(s.Sets()...) {
			if own.MatchString(n) {
				t.Errorf("%s serves %s, which the chart keeps from /metrics too: scraped twice when clusters are probed", s.Name(), n)
			}
		}
	}
}

// TestAlertUnitTestsPassOnProbedTargets runs every promtool unit test of
// prometheus/tests with its input series moved to probed targets: the same
// alerts must fire, with the same labels.
func TestAlertUnitTestsPassOnProbedTargets(t *testing.T) {
	root := lab.RepoRoot(t)
	rules, err := os.ReadFile(filepath.Join(root, rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests, moved, err := ProbedUnitTests(dir, filepath.Join(root, rulesTestGlob), rules)
	if err != nil {
		t.Fatal(err)
	}
	if moved == 0 {
		t.Fatal("no input series moved to a probed target: the test checks nothing")
	}
	t.Logf("%d input series of %d files moved to probed targets", moved, len(tests))
	runPromtool(t, dir, append([]string{"test", "rules"}, tests...)...)
}

// TestQueriesDoNotJoinAcrossTargets: on probed targets a cluster's series
// and the exporter's own come from different targets, and instance is the
// cluster's name. No alert or dashboard query may select or join by job or
// instance, or combine the exporter's own series with a cluster's.
func TestQueriesDoNotJoinAcrossTargets(t *testing.T) {
	own := regexp.MustCompile("^" + OwnSeries + "$")
	byTarget := regexp.MustCompile(`\{[^}]*\b(job|instance)\s*(=|!=|=~|!~)|\b(on|ignoring)\s*\([^)]*\b(job|instance)\b`)
	all := ruleExpressions(t)
	for _, spec := range dashboards {
		all = append(all, dashboardExpressions(t, spec)...)
	}
	for _, e := range all {
		if byTarget.MatchString(e.expr) {
			t.Errorf("%s: selects or joins by a target label, which differs between /metrics and /probe: %q", e.origin, e.expr)
		}
		var ownNames, clusterNames []string
		for _, n := range MetricNamesInExpr(e.expr) {
			if own.MatchString(n) {
				ownNames = append(ownNames, n)
			} else {
				clusterNames = append(clusterNames, n)
			}
		}
		if len(ownNames) > 0 && len(clusterNames) > 0 {
			t.Errorf("%s: combines the exporter's own %v with cluster series %v, which come from different targets when clusters are probed: %q", e.origin, ownNames, clusterNames, e.expr)
		}
	}
}
