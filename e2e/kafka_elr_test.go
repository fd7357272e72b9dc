package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaEligibleLeaderReplicas follows KIP-966 on a 5-node Kafka 4.1
// lab (ELR on by default; five voters keep the quorum with two nodes dead).
// Topic "elr" (RF 3 on 1,2,3, min ISR 2) loses two replicas: the second
// one leaves an ISR already below min ISR and becomes an eligible leader
// replica. Topic "elr-offline" (RF 2 on 4,5) loses both: no leader, an
// empty ISR, and both replicas in the ELR, so it can still come back
// cleanly. In every state the exporter and kafka-topics.sh --describe agree
// on leader, ISR, ELR, last known ELR and the no-clean-leader flag, and
// everything heals when the nodes return.
func TestKafkaEligibleLeaderReplicas(t *testing.T) {
	cluster := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 5})
	bootstrap := cluster.Bootstrap()
	admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer admin.Close()
	for topic, replicas := range map[string][]int32{"elr": {1, 2, 3}, "elr-offline": {4, 5}} {
		err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: map[int32][]int32{0: replicas}}, false)
		if err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	admin.Close()
	for _, topic := range []string{"elr", "elr-offline"} {
		if err := produceAll(bootstrap, topic, 10); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")
	// In sync: the whole ISR, and no ELR series (served only below min ISR).
	inSync := func(topic string, n float64) func(m exportertest.Metrics) (bool, string) {
		return func(m exportertest.Metrics) (bool, string) {
			isr, ok := m.Value("kafka_partition_in_sync_replicas", partitionLabels(topic, 0))
			elr := m.Series("kafka_partition_eligible_leader_replicas", partitionLabels(topic, 0))
			return ok && isr == n && len(elr) == 0, m.Describe("kafka_partition_in_sync_replicas", nil) + "\n" + m.Describe("kafka_partition_eligible_leader_replicas", nil)
		}
	}
	waitMetrics(t, exporter, 60*time.Second, "elr fully in sync", inSync("elr", 3))
	waitMetrics(t, exporter, 60*time.Second, "elr-offline fully in sync", inSync("elr-offline", 2))
	assertAgreesWithKafkaTopics(t, cluster, exporter, "elr.*", "healthy", 60*time.Second)

	// ISR 3 -> 2 (= min ISR, no ELR) -> 1: the replica that left an ISR
	// below min ISR is an eligible leader replica.
	elr := partitionLabels("elr", 0)
	cluster.Kill(t, 1)
	waitMetrics(t, exporter, 60*time.Second, "elr at min ISR without node 1", inSync("elr", 2))
	cluster.Kill(t, 2)
	m, took := waitMetrics(t, exporter, 60*time.Second, "elr below min ISR with one eligible leader replica", func(m exportertest.Metrics) (bool, string) {
		isr, _ := m.Value("kafka_partition_in_sync_replicas", elr)
		n, _ := m.Value("kafka_partition_eligible_leader_replicas", elr)
		return isr == 1 && n == 1, m.Describe("kafka_partition_in_sync_replicas", elr) + "\n" + m.Describe("kafka_partition_eligible_leader_replicas", elr)
	})
	t.Logf("FIGURE kafka ELR: kill -9 of 2 of 3 replicas to kafka_partition_eligible_leader_replicas 1: %s", took.Round(10*time.Millisecond))
	for name, want := range map[string]float64{"kafka_partition_leader": 3, "kafka_partition_under_min_isr": 1, "kafka_partition_no_clean_leader": 0} {
		if v := value(t, m, name, elr); v != want {
			t.Errorf("elr: %s = %v, want %v", name, v, want)
		}
	}
	described := assertAgreesWithKafkaTopics(t, cluster, exporter, "elr.*", "elr below min ISR", 60*time.Second)
	for _, p := range described {
		if p.Topic == "elr" && fmt.Sprint(p.ISR, p.ELR) != "[3] [2]" {
			t.Errorf("kafka-topics.sh shows elr with ISR %v ELR %v, want [3] [2]", p.ISR, p.ELR)
		}
	}
	cluster.Restart(t, 1)
	cluster.Restart(t, 2)
	waitMetrics(t, exporter, 2*time.Minute, "elr healed", inSync("elr", 3))
	assertAgreesWithKafkaTopics(t, cluster, exporter, "elr.*", "elr healed", 60*time.Second)

	// Both replicas of elr-offline die: no leader, an empty ISR, and both
	// in the ELR, so a clean election is still possible.
	cluster.Kill(t, 4)
	cluster.Kill(t, 5)
	offline := partitionLabels("elr-offline", 0)
	m, _ = waitMetrics(t, exporter, 60*time.Second, "elr-offline leaderless with both replicas eligible", func(m exportertest.Metrics) (bool, string) {
		leader, _ := m.Value("kafka_partition_leader", offline)
		n, _ := m.Value("kafka_partition_eligible_leader_replicas", offline)
		return leader == -1 && n == 2, m.Describe("kafka_partition_leader", offline) + "\n" + m.Describe("kafka_partition_eligible_leader_replicas", offline)
	})
	for name, want := range map[string]float64{"kafka_partition_in_sync_replicas": 0, "kafka_partition_offline": 1, "kafka_partition_no_clean_leader": 0} {
		if v := value(t, m, name, offline); v != want {
			t.Errorf("elr-offline: %s = %v, want %v", name, v, want)
		}
	}
	assertAgreesWithKafkaTopics(t, cluster, exporter, "elr.*", "elr-offline leaderless, ELR [4 5]", 60*time.Second)

	// A replica killed with -9 is dropped from the ELR when it returns (it
	// may have lost unflushed writes); whatever Kafka then reports, the
	// exporter must say the same.
	cluster.Restart(t, 4)
	time.Sleep(3 * time.Second)
	after := assertAgreesWithKafkaTopics(t, cluster, exporter, "elr.*", "elr-offline after node 4 returned", 60*time.Second)
	for _, p := range after {
		if p.Topic == "elr-offline" {
			t.Logf("elr-offline after node 4 returned: leader %d ISR %v ELR %v last known ELR %v", p.Leader, p.ISR, p.ELR, p.LastKnownELR)
		}
	}
	cluster.Restart(t, 5)
	waitMetrics(t, exporter, 2*time.Minute, "elr-offline healed", inSync("elr-offline", 2))
	m = exporter.Scrape(t)
	for _, s := range m.Series("kafka_partition_no_clean_leader", nil) {
		if s.Value != 0 {
			t.Errorf("after healing: no_clean_leader %v = %v", s.Labels, s.Value)
		}
	}
	assertAgreesWithKafkaTopics(t, cluster, exporter, "elr.*", "all healed", 60*time.Second)
}
