package contract

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// Kafka's partition_metrics setting decides which per-partition series
// exist (issue 19). The alerts must work in every mode: these tests check
// it against kafka.ServedFamilies, the collector's own account of what each
// mode may serve.

// What each mode never serves is testdata/partition_metrics.txt, the
// contract from the issue, and exactly what kafka.ServedFamilies says.
func TestPartitionMetricsContract(t *testing.T) {
	contract := readSections(t, "partition_metrics.txt")
	kafkaNames := map[string]bool{}
	for _, n := range contractMetricNames(t)["kafka"] {
		kafkaNames[n] = true
	}
	for _, mode := range kafkasettings.PartitionMetricsModes {
		names, ok := contract[string(mode)]
		if !ok {
			t.Errorf("testdata/partition_metrics.txt has no section [%s]", mode)
			continue
		}
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
			if !kafkaNames[n] {
				t.Errorf("testdata/partition_metrics.txt [%s]: %s is not a [kafka] name of testdata/metric_names.txt", mode, n)
			}
		}
		got := map[string]bool{}
		for family, served := range kafka.ServedFamilies(mode) {
			if !served {
				got[family] = true
			}
		}
		for _, n := range sortedKeys(want) {
			if !got[n] {
				t.Errorf("partition_metrics %s: kafka.ServedFamilies serves %s, which the contract says it never does", mode, n)
			}
		}
		for _, n := range sortedKeys(got) {
			if !want[n] {
				t.Errorf("partition_metrics %s: kafka.ServedFamilies never serves %s, which the contract says it may", mode, n)
			}
		}
		delete(contract, string(mode))
	}
	for section := range contract {
		t.Errorf("testdata/partition_metrics.txt: [%s] is not a partition_metrics mode (have %v)", section, kafkasettings.PartitionMetricsModes)
	}
}

// modeTestFile is the promtool unit test file that feeds the alerts what
// mode serves.
func modeTestFile(mode kafkasettings.PartitionMetrics) string {
	return fmt.Sprintf("prometheus/tests/alerts_%s_test.yml", mode)
}

// servedIn returns, for mode, whether a metric name a query selects may be
// served: names of the Kafka collector (a histogram's _bucket, _sum and
// _count as their family) as kafka.ServedFamilies says, any other name yes
// (partition_metrics does not govern it).
func servedIn(mode kafkasettings.PartitionMetrics) func(name string) bool {
	families := kafka.ServedFamilies(mode)
	return func(name string) bool {
		family, ok := kafkaFamily(families, name)
		return !ok || families[family]
	}
}

// kafkaFamily returns the Kafka collector family a series name belongs to.
func kafkaFamily(families map[string]bool, name string) (string, bool) {
	if _, ok := families[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, cut := strings.CutSuffix(name, suffix); cut {
			if _, ok := families[base]; ok {
				return base, true
			}
		}
	}
	return "", false
}

// kafkaAlerts returns the alerts that read a Kafka collector family, and of
// those the ones that read a family some mode does not serve.
func kafkaAlerts(t *testing.T) (all []Rule, modeDependent map[string]bool) {
	t.Helper()
	modeDependent = map[string]bool{}
	families := kafka.ServedFamilies(kafkasettings.PartitionMetricsFull)
	for _, a := range alertRules(t) {
		kafkaRule := false
		for _, name := range MetricNamesInExpr(a.Expr) {
			family, ok := kafkaFamily(families, name)
			if !ok {
				continue
			}
			kafkaRule = true
			for _, mode := range kafkasettings.PartitionMetricsModes {
				if !kafka.ServedFamilies(mode)[family] {
					modeDependent[a.Alert] = true
				}
			}
		}
		if kafkaRule {
			all = append(all, a)
		}
	}
	if len(all) == 0 {
		t.Fatal("no alert reads a family of the Kafka collector")
	}
	return all, modeDependent
}

// Every Kafka alert can fire in every partition_metrics mode: it reads a
// family the mode serves, and its expression is not empty by construction
// when only the mode's families exist (a branch of families the mode does
// not serve must be or'ed with one it does).
func TestKafkaAlertsWorkInEveryMode(t *testing.T) {
	alerts, modeDependent := kafkaAlerts(t)
	for _, mode := range kafkasettings.PartitionMetricsModes {
		served := servedIn(mode)
		families := kafka.ServedFamilies(mode)
		for _, a := range alerts {
			var read, servedFamilies []string
			for _, name := range MetricNamesInExpr(a.Expr) {
				if family, ok := kafkaFamily(families, name); ok {
					read = append(read, family)
					if families[family] {
						servedFamilies = append(servedFamilies, family)
					}
				}
			}
			if len(servedFamilies) == 0 {
				t.Errorf("partition_metrics %s: %s reads only %v, none of which this mode serves", mode, a.Alert, read)
				continue
			}
			ok, err := MayBeNonEmpty(a.Expr, served)
			if err != nil {
				t.Errorf("%s: %v", a.Alert, err)
			} else if !ok {
				t.Errorf("partition_metrics %s: %s can never fire: every branch of its expression needs a family this mode does not serve (it serves %v of %v)",
					mode, a.Alert, servedFamilies, read)
			}
		}
	}
	if len(modeDependent) == 0 {
		t.Error("no Kafka alert reads a per-partition family; the per-mode promtool tests check nothing")
	}
}

// The per-mode promtool tests (prometheus/tests/alerts_<mode>_test.yml) feed
// only series their mode may serve, and test every alert whose families
// depend on the mode firing there, fed by two exporters, and staying quiet.
func TestModeUnitTestsFeedWhatTheModeServes(t *testing.T) {
	type unitTests struct {
		Tests []struct {
			Name        string `yaml:"name"`
			InputSeries []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	_, modeDependent := kafkaAlerts(t)
	seriesName := regexp.MustCompile(`^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	instance := regexp.MustCompile(`instance="([^"]*)"`)
	root := lab.RepoRoot(t)
	for _, mode := range kafkasettings.PartitionMetricsModes {
		file := modeTestFile(mode)
		matched, err := filepath.Match(rulesTestGlob, file)
		if err != nil || !matched {
			t.Fatalf("%s is not among the promtool tests (%s) that check-rules.sh and TestRulesPassPromtool run", file, rulesTestGlob)
		}
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Errorf("partition_metrics %s has no promtool tests: %v", mode, err)
			continue
		}
		var ut unitTests
		if err := yaml.Unmarshal(raw, &ut); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		families := kafka.ServedFamilies(mode)
		fires, quiet := map[string]bool{}, map[string]bool{}
		for _, tc := range ut.Tests {
			instances := map[string]bool{}
			for _, s := range tc.InputSeries {
				m := seriesName.FindStringSubmatch(s.Series)
				if m == nil {
					t.Errorf("%s: test %q: series %q has no metric name", file, tc.Name, s.Series)
					continue
				}
				if family, ok := kafkaFamily(families, m[1]); ok && !families[family] {
					t.Errorf("%s: test %q feeds %s, which partition_metrics %s does not serve", file, tc.Name, m[1], mode)
				}
				if im := instance.FindStringSubmatch(s.Series); im != nil {
					instances[im[1]] = true
				}
			}
			for _, at := range tc.AlertRuleTest {
				if len(at.ExpAlerts) == 0 {
					quiet[at.Alertname] = true
				} else if len(instances) >= 2 {
					fires[at.Alertname] = true
				}
			}
		}
		for _, name := range sortedKeys(modeDependent) {
			if !fires[name] || !quiet[name] {
				t.Errorf("%s: %s reads families that depend on partition_metrics; it needs a test where it fires fed by two exporters (%v) and one where it stays quiet (%v)",
					file, name, fires[name], quiet[name])
			}
		}
	}
}

func TestMayBeNonEmpty(t *testing.T) {
	served := func(name string) bool { return !strings.HasPrefix(name, "gone") }
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{`max by (a) (here) == 1`, true},
		{`max by (a) (gone) == 1`, false},
		{`max by (a) (gone) == 1 or (max by (a) (here) > 0 unless on (a) gone)`, true},
		{`(gone == 1 unless on (a) here) or gone2`, false},
		{`here unless gone`, true},
		{`gone unless here`, false},
		{`here and on (a) gone`, false},
		{`here and gone or here2`, true},  // (here and gone) or here2
		{`gone or here and gone2`, false}, // gone or (here and gone2)
		{`sum by (c) (max by (c, t) (increase(gone_total[5m]))) > 0`, false},
		{`time() - max by (c) (here_seconds) > 120`, true},
		{`time() - max by (c) (gone_seconds) > 120`, false},
		{`absent(gone)`, true},
		{`vector(1)`, true},
		{`-gone ^ 2 + 1`, false},
		{`here - (gone or here * 0) > 0`, true},
		{`min_over_time(here[6h]) == 1 and on (a) here offset 6h == 1 unless on (a) (changes(gone[6h]) + changes(here[6h])) > 0`, true},
		{`max(here{a="b"} @ end()) by (a) > bool 0`, true},
		{`count_values("v", gone) + topk(3, here)`, false},
		{`label_replace(here, "dst", "$1", "src", "(.*)") * on (a) group_left (b) gone_info`, false},
		{`histogram_quantile(0.99, sum by (le) (max by (le, t) (rate(here_bucket[5m]))))`, true},
		{`{__name__="gone"}`, true},
		{`1e3 + 2e-3 * here`, true},
	} {
		got, err := MayBeNonEmpty(tc.expr, served)
		if err != nil || got != tc.want {
			t.Errorf("MayBeNonEmpty(%q) = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{`max by (a)`, `(here`, `here +`, `f(a b)`} {
		if _, err := MayBeNonEmpty(bad, served); err == nil {
			t.Errorf("MayBeNonEmpty(%q): no error", bad)
		}
	}
}

// The parser behind MayBeNonEmpty reads every rule and dashboard expression.
func TestMayBeNonEmptyParsesEveryQuery(t *testing.T) {
	all := ruleExpressions(t)
	for _, spec := range dashboards {
		all = append(all, dashboardExpressions(t, spec)...)
	}
	for _, e := range all {
		if _, err := MayBeNonEmpty(e.expr, func(string) bool { return true }); err != nil {
			t.Errorf("%s: %v in %q", e.origin, err, e.expr)
		}
	}
}
