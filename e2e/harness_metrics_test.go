package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// Reading the exporter's /metrics: one series, a wait for a condition, the
// labels of a partition's series. Every e2e test reads its scrapes so.

// value reads one series from a scrape and fails the test if it is absent.
func value(t *testing.T, m exportertest.Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := m.Value(name, labels)
	if !ok {
		t.Fatalf("no single series %s%v; have:\n%s", name, labels, m.Describe(name, nil))
	}
	return v
}

// waitMetrics scrapes until cond holds and returns that scrape and how long
// it took.
func waitMetrics(t *testing.T, e *exportertest.Exporter, timeout time.Duration, what string, cond func(m exportertest.Metrics) (bool, string)) (exportertest.Metrics, time.Duration) {
	t.Helper()
	start := time.Now()
	var last string
	for {
		m, err := e.TryScrape()
		if err == nil {
			var ok bool
			if ok, last = cond(m); ok {
				return m, time.Since(start)
			}
		} else {
			last = err.Error()
		}
		if time.Since(start) > timeout {
			t.Fatalf("after %s, still waiting for %s: %s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func partitionLabels(topic string, partition int) map[string]string {
	return map[string]string{"kafka_cluster": "lab", "topic": topic, "partition": fmt.Sprint(partition)}
}

// scrapeValue returns the value of the first series line starting with
// prefix (a metric name, optionally with labels). It asks for gzip, so that
// the exporter's side of it costs next to nothing and does not weigh on the
// figures being taken.
func scrapeValue(t *testing.T, url, prefix string) float64 {
	t.Helper()
	value, found := 0.0, false
	scanMetrics(t, url, true, func(line string) {
		if found || !strings.HasPrefix(line, prefix) {
			return
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		value, found = v, true
	})
	if !found {
		t.Fatalf("no series %s in /metrics", prefix)
	}
	return value
}
