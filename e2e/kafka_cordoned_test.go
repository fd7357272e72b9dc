package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaCordonedLogDirs cordons a broker's only log directory on a real
// Kafka 4.4 lab (cordoned.log.dirs, KIP-1066) and lifts the cordon: the
// exporter serves it per broker and per directory, lists an event each
// time and shows it on the status page. The oracles are Kafka's own:
// kafka-configs.sh describes the cordon, and kafka-topics.sh is refused a
// replica on the cordoned broker while it holds, and not after.
func TestKafkaCordonedLogDirs(t *testing.T) {
	cluster := lab.StartKafka(t, lab.KafkaOptions{Version: "4.4"})
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(cluster.Bootstrap(), ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")
	broker := map[string]string{"broker": "1"}
	dir := filepath.Join(cluster.Dir(), "node-1", "data")
	dirLabels := map[string]string{"broker": "1", "log_dir": dir}

	waitMetrics(t, exporter, 60*time.Second, "one log directory per broker, none cordoned", func(m exportertest.Metrics) (bool, string) {
		for id := 1; id <= 3; id++ {
			b := map[string]string{"broker": fmt.Sprint(id)}
			dirs, ok1 := m.Value("kafka_broker_log_dirs", b)
			cordoned, ok2 := m.Value("kafka_broker_cordoned_log_dirs", b)
			if !ok1 || !ok2 || dirs != 1 || cordoned != 0 {
				return false, m.Describe("kafka_broker_log_dirs", nil) + m.Describe("kafka_broker_cordoned_log_dirs", nil)
			}
		}
		v, ok := m.Value("kafka_broker_log_dir_cordoned", dirLabels)
		return ok && v == 0, m.Describe("kafka_broker_log_dir_cordoned", nil)
	})

	cordonedAt := time.Now()
	cluster.Configs(t, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "cordoned.log.dirs="+dir)
	_, took := waitMetrics(t, exporter, 30*time.Second, "broker 1's directory cordoned", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("kafka_broker_cordoned_log_dirs", broker)
		v, _ := m.Value("kafka_broker_log_dir_cordoned", dirLabels)
		return n == 1 && v == 1, m.Describe("kafka_broker_cordoned_log_dirs", nil) + m.Describe("kafka_broker_log_dir_cordoned", nil)
	})
	t.Logf("FIGURE kafka cordon: kafka-configs.sh returned -> kafka_broker_cordoned_log_dirs 1 after %s (refresh 500 ms; read one refresh behind)", took.Round(10*time.Millisecond))
	if described := cluster.Configs(t, "--entity-type", "brokers", "--entity-name", "1", "--describe"); !strings.Contains(described, "cordoned.log.dirs="+dir) {
		t.Errorf("kafka-configs.sh does not describe the cordon the exporter shows:\n%s", described)
	}
	refused := cluster.TryTopics("--create", "--topic", "cordon-probe", "--replica-assignment", "1:2")
	if refused.Err == nil || !strings.Contains(refused.Output(), "cordoned") {
		t.Errorf("kafka-topics.sh placed a replica on broker 1 while the exporter shows it cordoned: %v\n%s", refused.Err, refused.Output())
	}
	evs := waitEvents(t, exporter, 10*time.Second, "log_dir_cordoned of broker 1", func(evs []events.Event) bool {
		return eventIndex(evs, "log_dir_cordoned", "", 1) >= 0
	})
	e := evs[eventIndex(evs, "log_dir_cordoned", "", 1)]
	if e.After != dir || e.Time.Before(cordonedAt.Add(-time.Second)) {
		t.Errorf("log_dir_cordoned: after %q at %s, want %q after the cordon at %s", e.After, clock(e.Time), dir, clock(cordonedAt))
	}
	page := statusPage(t, exporter)
	if !strings.Contains(page, "1 of 1 log dirs cordoned") {
		t.Errorf("the status page does not show broker 1's cordon")
	}

	cluster.Configs(t, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--delete-config", "cordoned.log.dirs")
	waitMetrics(t, exporter, 30*time.Second, "broker 1's cordon lifted", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("kafka_broker_cordoned_log_dirs", broker)
		return n == 0, m.Describe("kafka_broker_cordoned_log_dirs", nil)
	})
	waitEvents(t, exporter, 10*time.Second, "log_dir_uncordoned of broker 1", func(evs []events.Event) bool {
		i := eventIndex(evs, "log_dir_uncordoned", "", 1)
		return i >= 0 && evs[i].Before == dir
	})
	if r := cluster.TryTopics("--create", "--topic", "cordon-probe", "--replica-assignment", "1:2"); r.Err != nil {
		t.Errorf("kafka-topics.sh still refused a replica on broker 1 after the exporter showed the cordon lifted: %v\n%s", r.Err, r.Output())
	}
}
