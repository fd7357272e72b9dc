package metricsdoc

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector"
	"github.com/failover-exporter/failover_exporter/collector/kafka"
	"github.com/failover-exporter/failover_exporter/collector/redis"
)

var update = flag.Bool("update", false, "rewrite METRICS.md from the collectors")

type collectors []prometheus.Collector

func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(chan<- prometheus.Metric) {}

func sections(t *testing.T) []Section {
	t.Helper()
	describe := func(c prometheus.Collector) []Metric {
		m, err := Describe(c)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	return []Section{
		{"Kafka", "Every series carries `kafka_cluster`. While `kafka_up` is 0 only `kafka_up` and the `kafka_exporter_*` series are served.", describe(kafka.NewCollector())},
		{"Redis Cluster", "Every series carries `redis_cluster`. While `redis_cluster_up` is 0 only it and the `redis_cluster_exporter_*` series are served.", describe(redis.NewCollector())},
		{"The exporter itself", "Besides Go runtime (`go_*`) and process (`process_*`) series.", describe(collectors(collector.NewSelfMetrics().Collectors()))},
	}
}

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
	kafkaNames := map[string]bool{}
	for _, n := range kafka.MetricNames() {
		kafkaNames[n] = true
	}
	for _, m := range sections(t)[0].Metrics {
		if !kafkaNames[m.Name] {
			t.Errorf("described %s but MetricNames does not list it", m.Name)
		}
		delete(kafkaNames, m.Name)
	}
	for n := range kafkaNames {
		t.Errorf("MetricNames lists %s but the collector does not describe it", n)
	}
}
