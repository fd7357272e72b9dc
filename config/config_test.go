package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseAppliesDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`
kafka:
  - bootstrap_servers: [127.0.0.1:9092, 127.0.0.1:9093]
    topics:
      include: "orders.*"
      exclude: "orders-tmp"
redis:
  - name: sessions
    addrs: [127.0.0.1:7000]
    refresh_interval: 2s
`))
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Kafka[0]
	if k.Name != DefaultKafkaClusterName || k.RefreshInterval != DefaultRefreshInterval ||
		k.RefreshTimeout != 4*time.Second || k.Version != DefaultKafkaVersion || k.PartitionMetrics != PartitionMetricsLean || k.PartitionMetricsHold != 10*time.Minute || k.BackdateLimit != time.Minute {
		t.Errorf("kafka defaults not applied: %+v", k)
	}
	if k.Canary.Enabled || k.Canary.Topic != DefaultKafkaCanaryTopic || !k.Canary.CreateTopicEnabled() || k.Canary.Interval != DefaultRefreshInterval ||
		k.Canary.ReplicationFactor != 3 || k.Canary.MinInsyncReplicas != 2 {
		t.Errorf("kafka canary defaults not applied: %+v", k.Canary)
	}
	for topic, want := range map[string]bool{"orders": true, "orders-eu": true, "orders-tmp": false, "payments": false, "xorders": false} {
		if got := k.Topics.Match(topic); got != want {
			t.Errorf("Match(%q) = %v, want %v", topic, got, want)
		}
	}
	r := cfg.Redis[0]
	if r.RefreshInterval != 2*time.Second || r.RefreshTimeout != 1600*time.Millisecond || r.CommandTimeout != DefaultRedisCommandTimeout || r.BackdateLimit != time.Minute {
		t.Errorf("redis defaults not applied: %+v", r)
	}
	// The canary writes to the cluster: off unless the file says so.
	if r.Canary.Enabled || r.Canary.Interval != 2*time.Second || r.Canary.KeyPrefix != DefaultRedisCanaryKeyPrefix || r.Canary.KeyTTL != time.Hour || r.Canary.Wait != 0 {
		t.Errorf("redis canary defaults not applied: %+v", r.Canary)
	}
	// Hot slots are opt-in.
	if r.SlotStats.Top != 0 {
		t.Errorf("slot_stats.top = %d by default, want 0 (off)", r.SlotStats.Top)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown key names the line", "kafka:\n  - bootstrap_servers: [a:1]\n    bootstrap: [b:2]\n", "line 3: field bootstrap not found"},
		{"empty bootstrap", "kafka:\n  - name: k\n", "bootstrap_servers is empty"},
		{"bad host:port", "kafka:\n  - bootstrap_servers: [localhost]\n", `bootstrap server "localhost": want HOST:PORT`},
		{"bad port", "redis:\n  - addrs: [\"h:port\"]\n", "port is not a number"},
		{"bad regexp", "kafka:\n  - bootstrap_servers: [a:1]\n    topics: {include: \"(\"}\n", "invalid regular expression"},
		{"duplicate names", "kafka:\n  - bootstrap_servers: [a:1]\n  - bootstrap_servers: [b:1]\n", `kafka cluster "kafka" is defined twice`},
		{"timeout above interval", "kafka:\n  - bootstrap_servers: [a:1]\n    refresh_interval: 1s\n    refresh_timeout: 2s\n", "refresh_timeout 2s must be positive and at most refresh_interval 1s"},
		{"bad duration", "kafka:\n  - bootstrap_servers: [a:1]\n    refresh_interval: often\n", "often"},
		{"inline password refused", "redis:\n  - addrs: [a:1]\n    password: hunter2\n", "line 3: redis[0].password: secrets are not accepted inline"},
		{"unknown sasl", "kafka:\n  - bootstrap_servers: [a:1]\n    sasl: {mechanism: GSSAPI, username: u, password: {env: HOME}}\n", `sasl.mechanism "GSSAPI"`},
		{"password env missing", "kafka:\n  - bootstrap_servers: [a:1]\n    sasl: {mechanism: PLAIN, username: u, password: {env: FAILOVER_TEST_UNSET_VAR}}\n", "FAILOVER_TEST_UNSET_VAR is not set"},
		{"tls settings while disabled", "redis:\n  - addrs: [a:1]\n    tls: {ca_file: /x}\n", "tls.enabled is false"},
		{"missing tls file", "redis:\n  - addrs: [a:1]\n    tls: {enabled: true, ca_file: /nonexistent/ca.pem}\n", "/nonexistent/ca.pem"},
		{"canary prefix with a hash tag", "redis:\n  - addrs: [a:1]\n    canary: {enabled: true, key_prefix: \"x{y}\"}\n", `canary.key_prefix "x{y}" must not contain { or }`},
		{"canary interval too short", "redis:\n  - addrs: [a:1]\n    canary: {enabled: true, interval: 1ms}\n", "canary.interval 1ms is shorter than 100ms"},
		{"canary negative wait", "redis:\n  - addrs: [a:1]\n    canary: {enabled: true, wait: -1s}\n", "line 3: redis[0].canary.wait: -1s is negative; write 0s for none"},
		{"canary topic name", "kafka:\n  - bootstrap_servers: [a:1]\n    canary: {enabled: true, topic: \"a b\"}\n", `canary.topic "a b" is not a valid Kafka topic name`},
		{"canary min isr above rf", "kafka:\n  - bootstrap_servers: [a:1]\n    canary: {replication_factor: 2, min_insync_replicas: 3}\n", "canary.replication_factor 2 and canary.min_insync_replicas 3"},
		{"negative backdate limit", "redis:\n  - addrs: [a:1]\n    backdate_limit: -1s\n", "line 3: redis[0].backdate_limit: -1s must be positive"},
		{"backdate limit above an hour", "kafka:\n  - bootstrap_servers: [a:1]\n    backdate_limit: 2h\n", "backdate_limit 2h0m0s must be positive and at most 1h0m0s"},
		{"slot stats top above the bound", "redis:\n  - addrs: [a:1]\n    slot_stats: {top: 101}\n", "slot_stats.top 101 must be between 0 (off) and 100"},
		{"negative slot stats top", "redis:\n  - addrs: [a:1]\n    slot_stats: {top: -1}\n", "slot_stats.top -1 must be between 0 (off) and 100"},
		{"unknown slot stats key", "redis:\n  - addrs: [a:1]\n    slot_stats: {top: 5, every: 1m}\n", "field every not found"},
		{"two documents", "kafka: []\n---\nredis: []\n", "more than one YAML document"},
		{"unknown partition metrics mode", "kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics: sparse\n", `line 3: partition_metrics "sparse": want one of lean, unhealthy, full, none`},
		{"partition metrics as a list", "kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics: [full]\n", "line 3: partition_metrics must be one of lean, unhealthy, full, none"},
		{"negative partition metrics hold", "kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics_hold: -1m\n", "line 3: kafka[0].partition_metrics_hold: -1m must be positive"},
		{"partition metrics hold above a day", "kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics_hold: 25h\n", "partition_metrics_hold 25h0m0s must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the inline secret: %v", err)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// partition_metrics takes a mode, or a boolean as before modes existed:
// true was the default and is lean, false is none.
func TestPartitionMetricsModes(t *testing.T) {
	for value, want := range map[string]PartitionMetrics{
		"lean": PartitionMetricsLean, "unhealthy": PartitionMetricsUnhealthy, "full": PartitionMetricsFull,
		"none": PartitionMetricsNone, "true": PartitionMetricsLean, "false": PartitionMetricsNone,
	} {
		cfg, err := Parse([]byte("kafka:\n  - bootstrap_servers: [a:1]\n    partition_metrics: " + value + "\n    partition_metrics_hold: 30s\n"))
		if err != nil {
			t.Fatalf("partition_metrics: %s: %v", value, err)
		}
		if got := cfg.Kafka[0].PartitionMetrics; got != want {
			t.Errorf("partition_metrics: %s = %q, want %q", value, got, want)
		}
		if cfg.Kafka[0].PartitionMetricsHold != 30*time.Second {
			t.Errorf("partition_metrics_hold = %s, want 30s", cfg.Kafka[0].PartitionMetricsHold)
		}
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yml")
	if err := os.WriteFile(path, []byte("kafka:\n  - nope: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error = %v, want the path and line 2", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yml")); err == nil {
		t.Error("missing file: want an error")
	}
}

func TestSecretFromFileAndEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(path, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := (Secret{File: path}).Value(); err != nil || v != "s3cret" {
		t.Errorf("file secret = %q, %v", v, err)
	}
	t.Setenv("FAILOVER_TEST_PW", "from-env")
	if v, err := (Secret{Env: "FAILOVER_TEST_PW"}).Value(); err != nil || v != "from-env" {
		t.Errorf("env secret = %q, %v", v, err)
	}
	if s := (Secret{Env: "FAILOVER_TEST_PW"}).String(); strings.Contains(s, "from-env") {
		t.Errorf("String() leaks the secret: %q", s)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("kafka:\n  - bootstrap_servers: [127.0.0.1:9092]\n"))
	f.Add([]byte("redis:\n  - addrs: [127.0.0.1:7000]\n    password: {env: X}\n"))
	f.Add([]byte("kafka: [{bootstrap_servers: [a:1], topics: {include: 'a|b'}}]"))
	f.Add([]byte("redis:\n  - addrs: [a:1]\n    password: {flie: /x}\n    canary: {interval: 5, key_ttl: 0s, wait: 0s}\n---\n"))
	f.Add([]byte("x: &c {interval: 5}\nredis: [{addrs: [a:1], canary: *c, tls: {<<: *c}}]\n"))
	f.Add([]byte("mirrors: [{name: m, partition_metrics: full, connect: {url: '127.0.0.1:8083?t=1'}}]\nkafka: [{bootstrap_servers: a:1}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := Parse(b)
		if err == nil && cfg == nil {
			t.Fatal("nil config without error")
		}
	})
}

func TestRedisSlotStats(t *testing.T) {
	cfg, err := Parse([]byte("redis:\n  - addrs: [a:1]\n    slot_stats: {top: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Redis[0].SlotStats.Top; got != MaxSlotStatsTop {
		t.Errorf("slot_stats.top = %d, want %d", got, MaxSlotStatsTop)
	}
	// A change of top is a change of the cluster's settings: the watcher
	// restarts with the new bound.
	off := cfg.Redis[0]
	off.SlotStats.Top = 0
	a, errA := cfg.Redis[0].Fingerprint()
	b, errB := off.Fingerprint()
	if errA != nil || errB != nil || a == b {
		t.Errorf("fingerprints with top 100 and 0: %q, %q (%v, %v): want them to differ", a, b, errA, errB)
	}
}
