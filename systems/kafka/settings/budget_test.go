package settings

import (
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/config"
)

func TestKafkaFailureBudget(t *testing.T) {
	cfg, err := config.Parse([]byte("kafka:\n  - bootstrap_servers: [a:1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Clusters(cfg)[0].FailureBudget.MinISRHeadroom; got != 0 {
		t.Errorf("default min_isr_headroom = %d, want 0", got)
	}
	if got := Clusters(cfg)[0].FailureBudget.UnwatchedTopics; got != JudgeUnwatched {
		t.Errorf("default unwatched_topics = %q, want judge: a topic outside the filter is judged unless the user says otherwise", got)
	}
	cfg, err = config.Parse([]byte("kafka:\n  - bootstrap_servers: [a:1]\n    topics: {include: 'orders\\..*'}\n    failure_budget: {unwatched_topics: name}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if k := Clusters(cfg)[0]; k.Judged("legacy") || !k.Judged("orders.new") {
		t.Errorf("unwatched_topics: name judges legacy %v, orders.new %v; want only the watched one", k.Judged("legacy"), k.Judged("orders.new"))
	}
	cfg, err = config.Parse([]byte("kafka:\n  - bootstrap_servers: [a:1]\n    failure_budget: {min_isr_headroom: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Clusters(cfg)[0].FailureBudget.MinISRHeadroom; got != 2 {
		t.Errorf("min_isr_headroom = %d, want 2", got)
	}
	for _, c := range []struct{ yaml, want string }{
		{"failure_budget: {min_isr_headroom: -1}", "must be 0 or more"},
		{"failure_budget: {min_isr_headroom: one}", "cannot unmarshal"},
		{"failure_budget: {headroom: 1}", "field headroom not found in failure_budget"},
		{"failure_budget: 1", "failure_budget must be a mapping"},
		{"failure_budget: {unwatched_topics: skip}", `failure_budget.unwatched_topics "skip" must be "judge"`},
	} {
		_, err := config.Parse([]byte("kafka:\n  - bootstrap_servers: [a:1]\n    " + c.yaml + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.yaml, err, c.want)
		}
	}
}

// A config built in code (flags, tests, tools) is checked by Complete as a
// file is at load: a bad failure budget never reaches a watcher. (The
// Redis budget's cases are systems/redis/settings's.)
func TestFailureBudgetCheckedByComplete(t *testing.T) {
	for _, tc := range []struct {
		clusters []Cluster
		want     string
	}{
		{[]Cluster{{BootstrapServers: []string{"127.0.0.1:9092"}, FailureBudget: Budget{MinISRHeadroom: -1}}},
			"failure_budget.min_isr_headroom -1 must be 0 or more"},
	} {
		cfg := &config.Config{}
		SetClusters(cfg, tc.clusters)
		err := cfg.Complete()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Complete: %v, want an error saying %q", err, tc.want)
		}
	}
}
