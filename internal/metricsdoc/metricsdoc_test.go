package metricsdoc

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector"
	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/systems"
)

var update = flag.Bool("update", false, "rewrite METRICS.md from the collectors")

func sections(t *testing.T) []Section {
	t.Helper()
	// One window open, for the maintenance series to be gathered.
	windows := maintenance.NewRegistry(safeAsker{}, nil)
	if _, _, err := windows.Open("kafka", "lab", budget.Question{Scope: "broker", ID: "1"}, time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	self := append(collector.NewSelfMetrics(systems.All).Collectors(), maintenance.NewCollector(windows, collector.ExporterName))
	out, err := Sections(systems.All, self...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// safeAsker calls every stop safe.
type safeAsker struct{}

func (safeAsker) Budget(system, cluster string, q budget.Question, _ time.Time) (budget.Answer, error) {
	return budget.Answer{System: system, Cluster: cluster, Scope: q.Scope, ID: q.ID, Safe: true}, nil
}

func (safeAsker) BudgetSystems() []budget.System { return nil }

func TestMetricsDocIsUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "METRICS.md")
	want := Markdown(sections(t))
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("METRICS.md is out of date: run go test ./internal/metricsdoc -update")
	}
}

func TestEveryMetricIsDocumentedWithHelpAndLabels(t *testing.T) {
	for _, s := range sections(t) {
		if len(s.Metrics) < 3 {
			t.Errorf("%s: only %d metrics described", s.Title, len(s.Metrics))
		}
		for _, m := range s.Metrics {
			if m.Help == "" {
				t.Errorf("%s has no help", m.Name)
			}
		}
	}
	// The tables the document is read from are the descriptors the
	// collectors describe to the registry, no more, no fewer.
	for _, sys := range systems.All {
		c := struct {
			name      string
			collector prometheus.Collector
			sets      []*exposition.Set
		}{sys.Name(), sys.Collector(), sys.Sets()}
		described := map[*prometheus.Desc]bool{}
		ch := make(chan *prometheus.Desc)
		go func() { c.collector.Describe(ch); close(ch) }()
		for d := range ch {
			described[d] = true
		}
		for _, set := range c.sets {
			for _, d := range set.Descs() {
				if !described[d.Prom] {
					t.Errorf("%s: %s is in the table but the collector does not describe it", c.name, d.Name)
				}
				delete(described, d.Prom)
			}
		}
		for d := range described {
			t.Errorf("%s: the collector describes %s, which is in no table", c.name, d)
		}
	}
}
