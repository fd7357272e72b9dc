package settings

import (
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/configtest"
)

func TestParseAppliesDefaults(t *testing.T) {
	cfg, err := config.Parse([]byte(`
kafka:
  - bootstrap_servers: [127.0.0.1:9092, 127.0.0.1:9093]
    topics:
      include: "orders.*"
      exclude: "orders-tmp"
`))
	if err != nil {
		t.Fatal(err)
	}
	k := Clusters(cfg)[0]
	if k.Name != DefaultClusterName || k.RefreshInterval != config.DefaultRefreshInterval ||
		k.RefreshTimeout != 4*time.Second || k.Version != DefaultVersion || k.PartitionMetrics != PartitionMetricsLean || k.PartitionMetricsHold != 10*time.Minute || k.BackdateLimit != time.Minute {
		t.Errorf("kafka defaults not applied: %+v", k)
	}
	if k.Canary.Enabled || k.Canary.Topic != DefaultCanaryTopic || !k.Canary.CreateTopicEnabled() || k.Canary.Interval != config.DefaultRefreshInterval ||
		k.Canary.ReplicationFactor != 3 || k.Canary.MinInsyncReplicas != 2 {
		t.Errorf("kafka canary defaults not applied: %+v", k.Canary)
	}
	for topic, want := range map[string]bool{"orders": true, "orders-eu": true, "orders-tmp": false, "payments": false, "xorders": false} {
		if got := k.Topics.Match(topic); got != want {
			t.Errorf("Match(%q) = %v, want %v", topic, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown key names the line", "kafka:\n  - bootstrap_servers: [a:1]\n    bootstrap: [b:2]\n", "line 3: field bootstrap not found"},
		{"empty bootstrap", "kafka:\n  - name: k\n", "bootstrap_servers is empty"},
		{"bad host:port", "kafka:\n  - bootstrap_servers: [localhost]\n", `bootstrap server "localhost": want HOST:PORT`},
		{"bad regexp", "kafka:\n  - bootstrap_servers: [a:1]\n    topics: {include: \"(\"}\n", "invalid regular expression"},
		{"duplicate names", "kafka:\n  - bootstrap_servers: [a:1]\n  - bootstrap_servers: [b:1]\n", `kafka cluster "kafka" is defined twice`},
		{"timeout above interval", "kafka:\n  - bootstrap_servers: [a:1]\n    refresh_interval: 1s\n    refresh_timeout: 2s\n", "refresh_timeout 2s must be positive and at most refresh_interval 1s"},
		{"bad duration", "kafka:\n  - bootstrap_servers: [a:1]\n    refresh_interval: often\n", "often"},
		{"unknown sasl", "kafka:\n  - bootstrap_servers: [a:1]\n    sasl: {mechanism: GSSAPI, username: u, password: {env: HOME}}\n", `sasl.mechanism "GSSAPI"`},
		{"password env missing", "kafka:\n  - bootstrap_servers: [a:1]\n    sasl: {mechanism: PLAIN, username: u, password: {env: FAILOVER_TEST_UNSET_VAR}}\n", "FAILOVER_TEST_UNSET_VAR is not set"},
		{"canary topic name", "kafka:\n  - bootstrap_servers: [a:1]\n    canary: {enabled: true, topic: \"a b\"}\n", `canary.topic "a b" is not a valid Kafka topic name`},
		{"canary min isr above rf", "kafka:\n  - bootstrap_servers: [a:1]\n    canary: {replication_factor: 2, min_insync_replicas: 3}\n", "canary.replication_factor 2 and canary.min_insync_replicas 3"},
		{"backdate limit above an hour", "kafka:\n  - bootstrap_servers: [a:1]\n    backdate_limit: 2h\n", "backdate_limit 2h0m0s must be positive and at most 1h0m0s"},
		{"two documents", "kafka: []\n---\nredis: []\n", "more than one YAML document"},
		{"unknown partition metrics mode", "kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics: sparse\n", `line 3: partition_metrics "sparse": want one of lean, unhealthy, full, none`},
		{"partition metrics as a list", "kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics: [full]\n", "line 3: partition_metrics must be one of lean, unhealthy, full, none"},
		{"negative partition metrics hold", "kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics_hold: -1m\n", "line 3: kafka[0].partition_metrics_hold: -1m must be positive"},
		{"partition metrics hold above a day", "kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics_hold: 25h\n", "partition_metrics_hold 25h0m0s must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { configtest.RefusedSaying(t, c.yaml, c.want, "hunter2") })
	}
}

// partition_metrics takes a mode, or a boolean as before modes existed:
// true was the default and is lean, false is none.
func TestPartitionMetricsModes(t *testing.T) {
	for value, want := range map[string]PartitionMetrics{
		"lean": PartitionMetricsLean, "unhealthy": PartitionMetricsUnhealthy, "full": PartitionMetricsFull,
		"none": PartitionMetricsNone, "true": PartitionMetricsLean, "false": PartitionMetricsNone,
	} {
		cfg, err := config.Parse([]byte("kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics: " + value + "\n    partition_metrics_hold: 30s\n"))
		if err != nil {
			t.Fatalf("partition_metrics: %s: %v", value, err)
		}
		if got := Clusters(cfg)[0].PartitionMetrics; got != want {
			t.Errorf("partition_metrics: %s = %q, want %q", value, got, want)
		}
		if Clusters(cfg)[0].PartitionMetricsHold != 30*time.Second {
			t.Errorf("partition_metrics_hold = %s, want 30s", Clusters(cfg)[0].PartitionMetricsHold)
		}
	}
}
