package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaRackSafety uses the lab's racks (broker.rack: nodes 1 and 3 in
// rack-1, node 2 in rack-2). "one-rack" is created with both replicas on 1
// and 3, one rack where two are possible: rack-unsafe. "two-racks" (on 1 and
// 2) is safe, and when broker 2 dies its ISR spans one rack while its
// replicas still span two. The broker table shows each broker's rack.
//
// The exporter runs in the default partition_metrics mode, lean, which
// serves a partition's rack series only where they say something: for a
// rack-unsafe partition, one whose ISR spans fewer racks than its replicas,
// and a detailed (unhealthy) one. Both topics have min.insync.replicas 1,
// so that with their two replicas in sync they are healthy (at the lab's
// default min ISR 2 they would be at min ISR, hence detailed): "one-rack"
// has its rack series for being rack-unsafe, "two-racks" none until broker
// 2 dies.
func TestKafkaRackSafety(t *testing.T) {
	cluster := lab.SharedKafka(t, lab.KafkaOptions{})
	bootstrap := cluster.Bootstrap()
	admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	one := "1"
	for topic, replicas := range map[string][]int32{"one-rack": {1, 3}, "two-racks": {1, 2}} {
		err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: map[int32][]int32{0: replicas}, ConfigEntries: map[string]*string{"min.insync.replicas": &one}}, false)
		if err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	admin.Close()
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")
	m, _ := waitMetrics(t, exporter, 60*time.Second, "rack series for both topics, both in sync", func(m exportertest.Metrics) (bool, string) {
		_, ok1 := m.Value("kafka_topic_rack_unsafe_partitions", map[string]string{"topic": "one-rack"})
		_, ok2 := m.Value("kafka_topic_rack_unsafe_partitions", map[string]string{"topic": "two-racks"})
		isr1, _ := m.Value("kafka_partition_in_sync_replicas", partitionLabels("one-rack", 0))
		isr2, _ := m.Value("kafka_partition_in_sync_replicas", partitionLabels("two-racks", 0))
		return ok1 && ok2 && isr1 == 2 && isr2 == 2, m.Describe("kafka_topic_rack_unsafe_partitions", nil) + "\n" + m.Describe("kafka_partition_in_sync_replicas", nil)
	})
	if v := value(t, m, "kafka_cluster_racks", nil); v != 2 {
		t.Errorf("racks = %v, want 2", v)
	}
	for broker, rack := range map[string]string{"1": "rack-1", "2": "rack-2", "3": "rack-1"} {
		if len(m.Series("kafka_broker_info", map[string]string{"broker": broker, "rack": rack})) != 1 {
			t.Errorf("broker %s not shown in %s:\n%s", broker, rack, m.Describe("kafka_broker_info", nil))
		}
	}
	for topic, want := range map[string]float64{"one-rack": 1, "two-racks": 0} {
		if v := value(t, m, "kafka_topic_rack_unsafe_partitions", map[string]string{"topic": topic}); v != want {
			t.Errorf("%s: rack-unsafe partitions = %v, want %v", topic, v, want)
		}
	}
	if v := value(t, m, "kafka_detailed_partitions", nil); v != 0 {
		t.Errorf("kafka_detailed_partitions = %v with both partitions in sync above min ISR, want 0", v)
	}
	// The rack-unsafe partition has its rack series though healthy...
	for name, want := range map[string]float64{"kafka_partition_replica_racks": 1, "kafka_partition_isr_racks": 1} {
		if v := value(t, m, name, partitionLabels("one-rack", 0)); v != want {
			t.Errorf("one-rack: %s = %v, want %v", name, v, want)
		}
	}
	// ...the healthy rack-safe one none: nothing to say.
	for _, name := range []string{"kafka_partition_replica_racks", "kafka_partition_isr_racks"} {
		if n := len(m.Series(name, partitionLabels("two-racks", 0))); n != 0 {
			t.Errorf("two-racks, healthy and rack-safe: %d series %s in the default (lean) mode, want none:\n%s", n, name, m.Describe(name, nil))
		}
	}
	assertAgreesWithKafkaTopics(t, cluster, exporter, "one-rack|two-racks", "rack layout", 60*time.Second)

	cluster.Kill(t, 2)
	// Under-replicated now, so detailed: its rack series appear.
	m, _ = waitMetrics(t, exporter, 60*time.Second, "two-racks ISR in one rack", func(m exportertest.Metrics) (bool, string) {
		v, _ := m.Value("kafka_partition_isr_racks", partitionLabels("two-racks", 0))
		return v == 1, m.Describe("kafka_partition_isr_racks", nil)
	})
	// The dead broker keeps its last known rack: the layout is unchanged.
	if v := value(t, m, "kafka_partition_replica_racks", partitionLabels("two-racks", 0)); v != 2 {
		t.Errorf("two-racks replica racks = %v with broker 2 down, want 2", v)
	}
	if v := value(t, m, "kafka_cluster_racks", nil); v != 2 {
		t.Errorf("racks = %v with broker 2 down, want 2", v)
	}
}
