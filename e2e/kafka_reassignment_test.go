package e2e

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka"
)

// TestKafkaReassignment is the routine rebalance that used to page: a
// throttled reassignment adds broker 3 to two RF-2 partitions holding
// 20 MB each. While the new replica copies, Kafka (KIP-352) and the
// exporter agree that nothing is under-replicated and the replication
// factor stays 2; the exporter shows the reassignment. One reassignment is
// cancelled, the other completes when the throttle is lifted; both end
// with every reassignment series at 0. In each state kafka-topics.sh
// --describe and the exporter list the same partitions. The event log has
// one reassignment_started and one reassignment_finished per partition; the
// cancelled one finishes on the replicas it started from.
//
// The exporter runs in the default partition_metrics mode, lean: a
// reassigning partition is detailed, so its kafka_partition_reassigning,
// _adding_replicas and _removing_replicas are served while it moves, and
// reassigning stays served (at 0) for partition_metrics_hold (10m) after,
// which is how the end of a reassignment is seen. (These RF-2 partitions
// at the lab's min ISR 2 are detailed before and after anyway; "moving",
// RF 3 at the end, only for the hold.)
func TestKafkaReassignment(t *testing.T) {
	cluster := lab.SharedKafka(t, lab.KafkaOptions{})
	bootstrap := cluster.Bootstrap()
	admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer admin.Close()

	// "moving" completes, "cancelled" is cancelled; both start on 1 and 2.
	assignments := map[string][]int32{"moving": {1, 2}, "cancelled": {2, 1}}
	for topic, replicas := range assignments {
		err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: map[int32][]int32{0: replicas}}, false)
		if err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	const mib = 1 << 20
	for topic := range assignments {
		produceBytes(t, bootstrap, topic, 20*mib)
	}

	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")
	waitMetrics(t, exporter, 60*time.Second, "both topics fully in sync, nothing reassigning", func(m exportertest.Metrics) (bool, string) {
		for topic := range assignments {
			isr, ok1 := m.Value("kafka_partition_in_sync_replicas", partitionLabels(topic, 0))
			moving, ok2 := m.Value("kafka_topic_reassigning_partitions", map[string]string{"topic": topic})
			if !ok1 || !ok2 || isr != 2 || moving != 0 {
				return false, m.Describe("kafka_partition_in_sync_replicas", nil) + "\n" + m.Describe("kafka_topic_reassigning_partitions", nil)
			}
		}
		return true, ""
	})
	assertAgreesWithKafkaTopics(t, cluster, exporter, "moving|cancelled", "before the reassignment", 60*time.Second)

	// Throttle replication to 100 KB/s: copying 20 MB then takes minutes.
	// Set after the data is in sync, so that only the new replica is slowed.
	throttle(t, admin, "100000", assignments)
	for topic, replicas := range assignments {
		if err := admin.AlterPartitionReassignments(topic, [][]int32{append(replicas, 3)}); err != nil {
			t.Fatalf("reassign %s to add broker 3: %v", topic, err)
		}
	}
	m, took := waitMetrics(t, exporter, 30*time.Second, "both partitions reassigning, adding broker 3", func(m exportertest.Metrics) (bool, string) {
		for topic := range assignments {
			for name, want := range map[string]float64{
				"kafka_partition_reassigning":       1,
				"kafka_partition_adding_replicas":   1,
				"kafka_partition_removing_replicas": 0,
			} {
				if v, ok := m.Value(name, partitionLabels(topic, 0)); !ok || v != want {
					return false, m.Describe(name, nil)
				}
			}
		}
		return true, ""
	})
	t.Logf("FIGURE kafka reassignment: AlterPartitionReassignments to kafka_partition_reassigning 1: %s", took.Round(10*time.Millisecond))
	for topic := range assignments {
		labels := partitionLabels(topic, 0)
		if v := value(t, m, "kafka_partition_under_replicated", labels); v != 0 {
			t.Errorf("%s: under-replicated = %v while a replica is being added, want 0 (KIP-352)", topic, v)
		}
		if v := value(t, m, "kafka_partition_replicas", labels); v != 2 {
			t.Errorf("%s: replicas = %v mid-reassignment, want 2 (the adding replica does not count)", topic, v)
		}
		if v := value(t, m, "kafka_topic_replication_factor", map[string]string{"topic": topic}); v != 2 {
			t.Errorf("%s: replication factor = %v mid-reassignment, want 2", topic, v)
		}
		if v := value(t, m, "kafka_topic_reassigning_partitions", map[string]string{"topic": topic}); v != 1 {
			t.Errorf("%s: reassigning partitions = %v, want 1", topic, v)
		}
	}
	if v := value(t, m, "kafka_broker_adding_replicas", map[string]string{"broker": "3"}); v != 2 {
		t.Errorf("broker 3 adding replicas = %v, want 2", v)
	}
	evs := waitEvents(t, exporter, 10*time.Second, "reassignment_started for both topics", func(evs []events.Event) bool {
		return len(partitionEvents(evs, kafka.EventReassignmentStarted, "moving")) > 0 && len(partitionEvents(evs, kafka.EventReassignmentStarted, "cancelled")) > 0
	})
	for topic, replicas := range assignments {
		want := events.Event{Kind: kafka.EventReassignmentStarted, Before: fmt.Sprint(replicas), After: fmt.Sprint(append(slices.Clone(replicas), 3))}
		if got := partitionEvents(evs, kafka.EventReassignmentStarted, topic); len(got) != 1 || got[0].Before != want.Before || got[0].After != want.After {
			t.Errorf("%s/0: want one reassignment_started %s -> %s, got:\n%s", topic, want.Before, want.After, describeEvents(got))
		}
		if got := partitionEvents(evs, kafka.EventReassignmentFinished, topic); len(got) != 0 {
			t.Errorf("%s/0 is still reassigning but the log has reassignment_finished:\n%s", topic, describeEvents(got))
		}
	}
	during := assertAgreesWithKafkaTopics(t, cluster, exporter, "moving|cancelled", "during the throttled reassignment", 60*time.Second)
	for _, p := range during {
		if !p.Reassigning || fmt.Sprint(p.AddingReplicas) != "[3]" {
			t.Errorf("kafka-topics.sh shows %s without Adding Replicas: 3 (%+v): the reassignment was not in progress during the comparison", p.Key(), p)
		}
	}

	// Cancelling puts "cancelled" back on its original replicas.
	if err := admin.AlterPartitionReassignments("cancelled", [][]int32{nil}); err != nil {
		t.Fatalf("cancel the reassignment of cancelled: %v", err)
	}
	waitMetrics(t, exporter, 30*time.Second, "cancelled back to 2 replicas, not reassigning", func(m exportertest.Metrics) (bool, string) {
		labels := partitionLabels("cancelled", 0)
		r, ok1 := m.Value("kafka_partition_reassigning", labels)
		n, ok2 := m.Value("kafka_partition_replicas", labels)
		a, ok3 := m.Value("kafka_broker_adding_replicas", map[string]string{"broker": "3"})
		return ok1 && ok2 && ok3 && r == 0 && n == 2 && a == 1, m.Describe("kafka_partition_reassigning", nil) + "\n" + m.Describe("kafka_broker_adding_replicas", nil)
	})
	// Cancelled: it finished on the replicas it started from, so before and
	// after are the same assignment.
	evs = waitEvents(t, exporter, 10*time.Second, "reassignment_finished for cancelled", func(evs []events.Event) bool {
		return len(partitionEvents(evs, kafka.EventReassignmentFinished, "cancelled")) > 0
	})
	if got := partitionEvents(evs, kafka.EventReassignmentFinished, "cancelled"); len(got) != 1 || got[0].Before != "[2 1]" || got[0].After != "[2 1]" {
		t.Errorf("cancelled/0: want one reassignment_finished [2 1] -> [2 1], got:\n%s", describeEvents(got))
	}
	if got := partitionEvents(evs, kafka.EventReassignmentFinished, "moving"); len(got) != 0 {
		t.Errorf("moving/0 is still reassigning but the log has reassignment_finished:\n%s", describeEvents(got))
	}
	assertAgreesWithKafkaTopics(t, cluster, exporter, "moving|cancelled", "after cancelling one reassignment", 60*time.Second)

	// Lifting the throttle lets "moving" finish: RF 3, all in sync.
	throttle(t, admin, "", assignments)
	waitMetrics(t, exporter, 3*time.Minute, "moving reassigned to 3 in-sync replicas", func(m exportertest.Metrics) (bool, string) {
		labels := partitionLabels("moving", 0)
		r, ok := m.Value("kafka_partition_reassigning", labels)
		isr, _ := m.Value("kafka_partition_in_sync_replicas", labels)
		rf, _ := m.Value("kafka_topic_replication_factor", map[string]string{"topic": "moving"})
		return ok && r == 0 && isr == 3 && rf == 3, m.Describe("kafka_partition_reassigning", nil) + "\n" + m.Describe("kafka_partition_in_sync_replicas", nil)
	})
	m = exporter.Scrape(t)
	for _, s := range append(m.Series("kafka_broker_adding_replicas", nil), m.Series("kafka_broker_removing_replicas", nil)...) {
		if s.Value != 0 {
			t.Errorf("after every reassignment ended: %v = %v, want 0", s.Labels, s.Value)
		}
	}
	for topic := range assignments {
		if v := value(t, m, "kafka_partition_under_replicated", partitionLabels(topic, 0)); v != 0 {
			t.Errorf("%s under-replicated = %v after the reassignment ended", topic, v)
		}
	}
	evs = waitEvents(t, exporter, 10*time.Second, "reassignment_finished for moving", func(evs []events.Event) bool {
		return len(partitionEvents(evs, kafka.EventReassignmentFinished, "moving")) > 0
	})
	if got := partitionEvents(evs, kafka.EventReassignmentFinished, "moving"); len(got) != 1 || got[0].Before != "[1 2]" || got[0].After != "[1 2 3]" {
		t.Errorf("moving/0: want one reassignment_finished [1 2] -> [1 2 3], got:\n%s", describeEvents(got))
	}
	for topic := range assignments {
		for _, kind := range []events.Kind{kafka.EventReassignmentStarted, kafka.EventReassignmentFinished} {
			if got := partitionEvents(evs, kind, topic); len(got) != 1 {
				t.Errorf("%s/0: %d %s events after both reassignments ended, want 1:\n%s", topic, len(got), kind, describeEvents(got))
			}
		}
	}
	assertAgreesWithKafkaTopics(t, cluster, exporter, "moving|cancelled", "after the reassignments ended", 60*time.Second)
}

// partitionEvents are the events of kind about partition 0 of topic, newest first.
func partitionEvents(evs []events.Event, kind events.Kind, topic string) []events.Event {
	var out []events.Event
	for _, e := range evs {
		if e.Kind == kind && e.Subject.Topic == topic && e.Subject.Partition != nil && *e.Subject.Partition == 0 {
			out = append(out, e)
		}
	}
	return out
}

// produceBytes writes about size bytes of incompressible records to
// partition 0 of topic, with acks=all.
func produceBytes(t *testing.T, bootstrap []string, topic string, size int) {
	t.Helper()
	producer, err := sarama.NewSyncProducer(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer producer.Close()
	const record = 100_000
	batch := make([]*sarama.ProducerMessage, 0, 20)
	for written := 0; written < size; written += record {
		value := make([]byte, record)
		_, _ = rand.Read(value)
		batch = append(batch, &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.ByteEncoder(value)})
		if len(batch) == cap(batch) || written+record >= size {
			if err := producer.SendMessages(batch); err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
			batch = batch[:0]
		}
	}
}

// throttle sets the replication throttle of every broker to rate bytes per
// second and applies it to every replica of the topics; rate "" removes it.
func throttle(t *testing.T, admin sarama.ClusterAdmin, rate string, topics map[string][]int32) {
	t.Helper()
	op := sarama.IncrementalAlterConfigsOperationSet
	if rate == "" {
		op = sarama.IncrementalAlterConfigsOperationDelete
	}
	all := "*"
	value := &rate
	for id := 1; id <= 3; id++ {
		err := admin.IncrementalAlterConfig(sarama.BrokerResource, fmt.Sprint(id), map[string]sarama.IncrementalAlterConfigsEntry{
			"leader.replication.throttled.rate":   {Operation: op, Value: value},
			"follower.replication.throttled.rate": {Operation: op, Value: value},
		}, false)
		if err != nil {
			t.Fatalf("throttle broker %d to %q: %v", id, rate, err)
		}
	}
	for topic := range topics {
		err := admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
			"leader.replication.throttled.replicas":   {Operation: op, Value: &all},
			"follower.replication.throttled.replicas": {Operation: op, Value: &all},
		}, false)
		if err != nil {
			t.Fatalf("throttle topic %s: %v", topic, err)
		}
	}
}
