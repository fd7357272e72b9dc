package collector

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// The clusters of these tests point at 127.0.0.1:1, where nothing listens:
// Apply's job is which watchers run and which clusters are served, and a
// refresh that fails at once is enough to see both.
const nowhere = "127.0.0.1:1"

func kafkaCluster(name string) kafkasettings.Cluster {
	return kafkasettings.Cluster{Name: name, BootstrapServers: []string{nowhere}, RefreshInterval: time.Hour}
}

func redisCluster(name string) redissettings.Cluster {
	return redissettings.Cluster{Name: name, Addrs: []string{nowhere}, RefreshInterval: time.Hour}
}

func completed(t *testing.T, kafka []kafkasettings.Cluster, redis []redissettings.Cluster) *config.Config {
	t.Helper()
	cfg := &config.Config{}
	kafkasettings.SetClusters(cfg, kafka)
	redissettings.SetClusters(cfg, redis)
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// apply applies cfg and waits for every watcher's first refresh.
func apply(t *testing.T, m *Manager, cfg *config.Config) error {
	t.Helper()
	err := m.Apply(cfg)
	deadline := time.Now().Add(30 * time.Second)
	for !m.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("watchers not ready after 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// runningNow returns the running watchers by key.
func runningNow(m *Manager) map[string]*running {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]*running{}
	for k, r := range m.running {
		out[k] = r
	}
	return out
}

// upSeries returns the up lines /metrics serves, sorted.
func upSeries(t *testing.T, m *Manager) []string {
	t.Helper()
	text, err := exposition.PlainText(m.TextWriters()...)
	if err != nil {
		t.Fatal(err)
	}
	var up []string
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "kafka_up{") || strings.HasPrefix(line, "redis_cluster_up{") {
			up = append(up, line)
		}
	}
	return up
}

func keysOf(rs map[string]*running) string {
	var keys []string
	for k := range rs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

func TestApplyAddsKeepsChangesAndRemovesClusters(t *testing.T) {
	m := NewManager(systems.All, log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)

	// Add: two Kafka clusters and one Redis cluster.
	if err := apply(t, m, completed(t,
		[]kafkasettings.Cluster{kafkaCluster("a"), kafkaCluster("b")},
		[]redissettings.Cluster{redisCluster("r")})); err != nil {
		t.Fatal(err)
	}
	first := runningNow(m)
	if got := keysOf(first); got != "kafka/a kafka/b redis/r" {
		t.Fatalf("running %q after adding", got)
	}
	want := []string{`kafka_up{kafka_cluster="a"} 0`, `kafka_up{kafka_cluster="b"} 0`, `redis_cluster_up{redis_cluster="r"} 0`}
	if got := upSeries(t, m); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("served %q, want %q", got, want)
	}

	// The same settings again: nothing restarts.
	if err := apply(t, m, completed(t,
		[]kafkasettings.Cluster{kafkaCluster("a"), kafkaCluster("b")},
		[]redissettings.Cluster{redisCluster("r")})); err != nil {
		t.Fatal(err)
	}
	for k, r := range runningNow(m) {
		if first[k] != r {
			t.Errorf("%s restarted though its settings did not change", k)
		}
	}

	// Change b and r, remove a, add Redis s.
	changedB := kafkaCluster("b")
	changedB.ClientID = "other"
	changedR := redisCluster("r")
	changedR.CommandTimeout = time.Second
	if err := apply(t, m, completed(t,
		[]kafkasettings.Cluster{changedB},
		[]redissettings.Cluster{changedR, redisCluster("s")})); err != nil {
		t.Fatal(err)
	}
	second := runningNow(m)
	if got := keysOf(second); got != "kafka/b redis/r redis/s" {
		t.Fatalf("running %q after the change", got)
	}
	for _, k := range []string{"kafka/b", "redis/r"} {
		if second[k] == first[k] {
			t.Errorf("%s not restarted though its settings changed", k)
		}
	}
	select {
	case <-first["kafka/a"].done:
	default:
		t.Error("the watcher of the removed cluster kafka/a still runs")
	}
	want = []string{`kafka_up{kafka_cluster="b"} 0`, `redis_cluster_up{redis_cluster="r"} 0`, `redis_cluster_up{redis_cluster="s"} 0`}
	if got := upSeries(t, m); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("served %q, want %q", got, want)
	}
}

// A reload in which one of several clusters cannot be set up changes
// nothing, and the error names that cluster.
func TestApplyFailedReloadChangesNothing(t *testing.T) {
	m := NewManager(systems.All, log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	if err := apply(t, m, completed(t,
		[]kafkasettings.Cluster{kafkaCluster("a")},
		[]redissettings.Cluster{redisCluster("r")})); err != nil {
		t.Fatal(err)
	}
	before := runningNow(m)
	servedBefore := upSeries(t, m)

	// The new config changes a and r, adds s, and gives t a password file
	// that disappears between validation and Apply.
	password := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(password, []byte("pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	changedA := kafkaCluster("a")
	changedA.ClientID = "other"
	changedR := redisCluster("r")
	changedR.CommandTimeout = time.Second
	broken := redisCluster("t")
	broken.Password = config.Secret{File: password}
	cfg := completed(t, []kafkasettings.Cluster{changedA}, []redissettings.Cluster{changedR, redisCluster("s"), broken})
	if err := os.Remove(password); err != nil {
		t.Fatal(err)
	}

	err := m.Apply(cfg)
	if err == nil || !strings.HasPrefix(err.Error(), `redis cluster "t": `) || !strings.Contains(err.Error(), password) {
		t.Fatalf("err = %v, want one naming redis cluster \"t\" and the password file", err)
	}
	t.Logf("error: %v", err)
	if strings.Count(err.Error(), `redis cluster "t"`) != 1 {
		t.Errorf("the cluster is named more than once: %v", err)
	}
	after := runningNow(m)
	if keysOf(after) != keysOf(before) {
		t.Fatalf("running %q after a failed reload, want %q", keysOf(after), keysOf(before))
	}
	for k, r := range after {
		if before[k] != r {
			t.Errorf("%s restarted by a failed reload", k)
		}
		select {
		case <-r.done:
			t.Errorf("%s stopped by a failed reload", k)
		default:
		}
	}
	if got := upSeries(t, m); strings.Join(got, "\n") != strings.Join(servedBefore, "\n") {
		t.Errorf("served %q after a failed reload, want %q", got, servedBefore)
	}
}
