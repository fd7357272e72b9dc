package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaCordonedLogDirs cordons a broker's only log directory on a real
// Kafka 4.4 lab (cordoned.log.dirs, KIP-1066) and lifts the cordon: the
// exporter serves it per broker and per directory, lists an event each
// time and shows it on the status page. The oracles are Kafka's own:
// kafka-configs.sh describes the cordon, and kafka-topics.sh is refused a
// replica on the cordoned broker while it holds, and not after. A
// reassignment under way onto the broker when the cordon comes goes on,
// and the status page says so while it adds replicas there.
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

	// A reassignment under way onto broker 1 when the cordon comes: 20 MiB
	// throttled to 10 kB/s keeps its new replica copying until the
	// throttle is lifted (the throttle lets a fetch of up to 1 MiB through
	// about every 11 s, its rate window, so the copy would take minutes).
	// Broker 1 must hold the replica (its log directory) before the
	// cordon, as a reassignment submitted after it would be refused.
	const moving = "cordon-move"
	admin, err := sarama.NewClusterAdmin(cluster.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(moving, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: map[int32][]int32{0: {2}}}, false); err != nil {
		t.Fatalf("create %s on broker 2: %v", moving, err)
	}
	value := []byte(strings.Repeat("x", 10*1024))
	for range 4 {
		batch := make([]lab.Record, 500)
		for i := range batch {
			batch[i] = lab.Record{Value: value}
		}
		cluster.Produce(t, moving, 0, batch...)
	}
	throttled := map[string][]int32{moving: {2}}
	throttle(t, admin, "10000", throttled)
	reassignedAt := time.Now()
	if err := admin.AlterPartitionReassignments(moving, [][]int32{{2, 1}}); err != nil {
		t.Fatalf("reassign %s/0 to [2 1]: %v", moving, err)
	}
	waitMetrics(t, exporter, 30*time.Second, "a reassignment adding a replica to broker 1", func(m exportertest.Metrics) (bool, string) {
		v, _ := m.Value("kafka_broker_adding_replicas", broker)
		return v == 1, m.Describe("kafka_broker_adding_replicas", nil)
	})
	replicaDir := filepath.Join(dir, moving+"-0")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := os.Stat(replicaDir); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker 1 created no replica of %s/0 (%s) in 30s", moving, replicaDir)
		}
	}

	cordonedAt := time.Now()
	cluster.Configs(t, "--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "cordoned.log.dirs="+dir)
	_, took := waitMetrics(t, exporter, 30*time.Second, "broker 1's directory cordoned", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("kafka_broker_cordoned_log_dirs", broker)
		v, _ := m.Value("kafka_broker_log_dir_cordoned", dirLabels)
		return n == 1 && v == 1, m.Describe("kafka_broker_cordoned_log_dirs", nil) + m.Describe("kafka_broker_log_dir_cordoned", nil)
	})
	t.Logf("FIGURE kafka cordon: kafka-configs.sh returned -> kafka_broker_cordoned_log_dirs 1 after %s (refresh 500 ms; read one refresh behind)", took.Round(10*time.Millisecond))
	page := statusPage(t, exporter)
	if !strings.Contains(page, "1 of 1 log dirs cordoned, yet a reassignment is adding 1 replica(s) to it") {
		t.Errorf("the status page does not show broker 1's cordon with the reassignment still adding to it")
	}
	// Kafka's view: the cordon left the reassignment under way.
	if parts := cluster.DescribeTopics(t, "--topic", moving); len(parts) != 1 || !parts[0].Reassigning || fmt.Sprint(parts[0].AddingReplicas) != "[1]" {
		t.Errorf("kafka-topics.sh does not show %s/0 still adding broker 1 after the cordon: %+v", moving, parts)
	}
	t.Logf("kafka cordon: the reassignment onto broker 1 still under way %s after it started", time.Since(reassignedAt).Round(100*time.Millisecond))
	throttle(t, admin, "", throttled)
	waitMetrics(t, exporter, 60*time.Second, "the reassignment onto cordoned broker 1 finished", func(m exportertest.Metrics) (bool, string) {
		v, _ := m.Value("kafka_broker_adding_replicas", broker)
		return v == 0, m.Describe("kafka_broker_adding_replicas", nil)
	})
	if parts := cluster.DescribeTopics(t, "--topic", moving); len(parts) != 1 || parts[0].Reassigning || fmt.Sprint(parts[0].ISR) != "[2 1]" && fmt.Sprint(parts[0].ISR) != "[1 2]" {
		t.Errorf("kafka-topics.sh after the reassignment onto cordoned broker 1: %+v, want it done with ISR 1 and 2", parts)
	}
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
	if page := statusPage(t, exporter); strings.Contains(page, "yet a reassignment") || !strings.Contains(page, "1 of 1 log dirs cordoned") {
		t.Errorf("the status page, after the reassignment finished, should show the cordon alone")
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
