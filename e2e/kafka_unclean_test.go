package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka"
)

// TestKafkaUncleanLeaderElection makes Kafka elect a replica that was out
// of sync. Two RF-2 topics on brokers 1 and 2 (min ISR 1), one with
// unclean.leader.election.enable: the follower 2 is stopped, so the ISR
// shrinks to the leader 1, records are written, 1 is killed, 2 is started.
// On "unclean-on" 2 leads at once: one unclean election, counted. On
// "unclean-off" the partition stays without a leader until 1 returns, and
// nothing is counted. Five nodes, so the controller quorum survives two
// dead ones. Every state is compared with kafka-topics.sh. The event log
// has the unclean election of "unclean-on" (none -> 2, after its
// partition_online) and none for "unclean-off".
//
// The exporter runs in the default partition_metrics mode, lean, where an
// unclean election is counted per topic and per broker (the broker it made
// leader); each topic has one partition, so its topic counter is its
// partition's. A second exporter runs with --kafka.partition-metrics=full,
// the only mode serving kafka_partition_unclean_leader_elections_total, to
// check the per-partition counter on the same real election.
func TestKafkaUncleanLeaderElection(t *testing.T) {
	cluster := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 5})
	bootstrap := cluster.Bootstrap()
	admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	one, yes := "1", "true"
	for topic, configs := range map[string]map[string]*string{
		"unclean-on":  {"min.insync.replicas": &one, "unclean.leader.election.enable": &yes},
		"unclean-off": {"min.insync.replicas": &one},
	} {
		err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: map[int32][]int32{0: {1, 2}}, ConfigEntries: configs}, false)
		if err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	admin.Close()
	topics := []string{"unclean-on", "unclean-off"}
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")
	full := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms",
		"--kafka.partition-metrics=full")
	// uncleanElections reads what each exporter counted for a topic: the
	// topic counter (every mode) and, in full, the partition counter.
	uncleanElections := func(m exportertest.Metrics, topic string) (float64, bool) {
		return m.Value("kafka_topic_unclean_leader_elections_total", map[string]string{"topic": topic})
	}
	partitionUnclean := func(m exportertest.Metrics, topic string) (float64, bool) {
		return m.Value("kafka_partition_unclean_leader_elections_total", partitionLabels(topic, 0))
	}
	brokerUnclean := func(m exportertest.Metrics, broker string) float64 {
		return value(t, m, "kafka_broker_unclean_leader_elections_total", map[string]string{"broker": broker})
	}
	isr := func(n float64) func(m exportertest.Metrics) (bool, string) {
		return func(m exportertest.Metrics) (bool, string) {
			for _, topic := range topics {
				if v, ok := m.Value("kafka_partition_in_sync_replicas", partitionLabels(topic, 0)); !ok || v != n {
					return false, m.Describe("kafka_partition_in_sync_replicas", nil)
				}
			}
			return true, ""
		}
	}
	m, _ := waitMetrics(t, exporter, 60*time.Second, "both topics in sync", isr(2))
	waitMetrics(t, full, 60*time.Second, "both topics in sync (full mode)", isr(2))
	// Lean serves no per-partition counter; full does.
	if n := len(m.Series("kafka_partition_unclean_leader_elections_total", nil)); n != 0 {
		t.Errorf("%d kafka_partition_unclean_leader_elections_total series in the default (lean) mode, want none", n)
	}
	for _, topic := range topics {
		if v, ok := partitionUnclean(full.Scrape(t), topic); !ok || v != 0 {
			t.Errorf("%s: full mode kafka_partition_unclean_leader_elections_total = %v (served %v), want 0", topic, v, ok)
		}
	}
	for topic, want := range map[string]float64{"unclean-on": 1, "unclean-off": 0} {
		if v := value(t, m, "kafka_topic_unclean_leader_election_enabled", map[string]string{"topic": topic}); v != want {
			t.Errorf("%s: unclean leader election enabled = %v, want %v", topic, v, want)
		}
	}
	assertAgreesWithKafkaTopics(t, cluster, exporter, "unclean-.*", "in sync", 60*time.Second)

	cluster.Stop(t, 2)
	waitMetrics(t, exporter, 60*time.Second, "ISR shrunk to the leader", isr(1))
	for _, topic := range topics {
		if err := produceAll(bootstrap, topic, 10); err != nil {
			t.Fatalf("produce to %s with only the leader in sync: %v", topic, err)
		}
	}
	cluster.Kill(t, 1)
	waitMetrics(t, exporter, 60*time.Second, "both partitions without a leader", func(m exportertest.Metrics) (bool, string) {
		for _, topic := range topics {
			if v, ok := m.Value("kafka_partition_leader", partitionLabels(topic, 0)); !ok || v != -1 {
				return false, m.Describe("kafka_partition_leader", nil)
			}
		}
		return true, ""
	})
	assertAgreesWithKafkaTopics(t, cluster, exporter, "unclean-.*", "leaderless", 60*time.Second)

	// The out-of-sync replica returns: it leads only where allowed.
	cluster.Restart(t, 2)
	on, off := partitionLabels("unclean-on", 0), partitionLabels("unclean-off", 0)
	m, took := waitMetrics(t, exporter, 60*time.Second, "unclean-on led by 2 with one unclean election", func(m exportertest.Metrics) (bool, string) {
		leader, _ := m.Value("kafka_partition_leader", on)
		n, _ := uncleanElections(m, "unclean-on")
		return leader == 2 && n == 1, m.Describe("kafka_partition_leader", nil) + "\n" + m.Describe("kafka_topic_unclean_leader_elections_total", nil)
	})
	t.Logf("FIGURE kafka unclean election: counted by the exporter %s after the restarted out-of-sync replica was registered", took.Round(10*time.Millisecond))
	waitMetrics(t, full, 30*time.Second, "unclean-on's partition counter at 1 (full mode)", func(m exportertest.Metrics) (bool, string) {
		n, _ := partitionUnclean(m, "unclean-on")
		return n == 1, m.Describe("kafka_partition_unclean_leader_elections_total", nil)
	})
	time.Sleep(3 * time.Second) // several refreshes: it stays leaderless and uncounted
	m = exporter.Scrape(t)
	if v := value(t, m, "kafka_partition_leader", off); v != -1 {
		t.Errorf("unclean-off leader = %v with unclean elections off and its ISR member dead, want -1", v)
	}
	// Leaderless, so detailed: the offline series is served in lean.
	if v := value(t, m, "kafka_partition_offline", off); v != 1 {
		t.Errorf("unclean-off kafka_partition_offline = %v, want 1", v)
	}
	if v, _ := uncleanElections(m, "unclean-off"); v != 0 {
		t.Errorf("unclean-off unclean elections = %v, want 0", v)
	}
	// The election made broker 2 leader; broker 1 was never elected uncleanly.
	if v := brokerUnclean(m, "2"); v != 1 {
		t.Errorf("kafka_broker_unclean_leader_elections_total{broker=2} = %v, want 1", v)
	}
	if v := brokerUnclean(m, "1"); v != 0 {
		t.Errorf("kafka_broker_unclean_leader_elections_total{broker=1} = %v, want 0", v)
	}
	if v, ok := partitionUnclean(full.Scrape(t), "unclean-off"); !ok || v != 0 {
		t.Errorf("unclean-off: full mode kafka_partition_unclean_leader_elections_total = %v (served %v), want 0", v, ok)
	}
	evs := waitEvents(t, exporter, 10*time.Second, "unclean_election for unclean-on", func(evs []events.Event) bool {
		return len(partitionEvents(evs, kafka.EventUncleanElection, "unclean-on")) > 0
	})
	if got := partitionEvents(evs, kafka.EventUncleanElection, "unclean-on"); len(got) != 1 || got[0].Before != "none" || got[0].After != "2" {
		t.Errorf("unclean-on/0: want one unclean_election none -> 2, got:\n%s", describeEvents(got))
	}
	// Newest first: the election's partition_online is recorded just before it.
	if i := eventIndex(evs, string(kafka.EventUncleanElection), "unclean-on", 0); i+1 >= len(evs) || evs[i+1].Kind != kafka.EventPartitionOnline || evs[i+1].After != "2" {
		t.Errorf("unclean-on/0: the unclean_election does not follow partition_online none -> 2:\n%s", describeEvents(evs))
	}
	assertAgreesWithKafkaTopics(t, cluster, exporter, "unclean-.*", "after the unclean election", 60*time.Second)

	// The last in-sync replica returns: a leader for unclean-off, not counted.
	cluster.Restart(t, 1)
	waitMetrics(t, exporter, 2*time.Minute, "unclean-off led again", func(m exportertest.Metrics) (bool, string) {
		leader, _ := m.Value("kafka_partition_leader", off)
		return leader >= 1, m.Describe("kafka_partition_leader", off)
	})
	waitMetrics(t, full, 30*time.Second, "unclean-off led again (full mode)", func(m exportertest.Metrics) (bool, string) {
		leader, _ := m.Value("kafka_partition_leader", off)
		return leader >= 1, m.Describe("kafka_partition_leader", off)
	})
	m = exporter.Scrape(t)
	fm := full.Scrape(t)
	for topic, want := range map[string]float64{"unclean-on": 1, "unclean-off": 0} {
		if v, ok := uncleanElections(m, topic); !ok || v != want {
			t.Errorf("%s: kafka_topic_unclean_leader_elections_total = %v (served %v) after broker 1 returned, want %v", topic, v, ok, want)
		}
		if v, ok := partitionUnclean(fm, topic); !ok || v != want {
			t.Errorf("%s: full mode kafka_partition_unclean_leader_elections_total = %v (served %v) after broker 1 returned, want %v", topic, v, ok, want)
		}
	}
	for broker, want := range map[string]float64{"1": 0, "2": 1} {
		if v := brokerUnclean(m, broker); v != want {
			t.Errorf("kafka_broker_unclean_leader_elections_total{broker=%s} = %v after broker 1 returned, want %v", broker, v, want)
		}
	}
	evs = fetchEvents(t, exporter, "?cluster=lab")
	if got := partitionEvents(evs, kafka.EventUncleanElection, "unclean-off"); len(got) != 0 {
		t.Errorf("unclean-off/0 was led again by its last in-sync replica, but the log has unclean_election:\n%s", describeEvents(got))
	}
	if got := partitionEvents(evs, kafka.EventUncleanElection, "unclean-on"); len(got) != 1 {
		t.Errorf("unclean-on/0: %d unclean_election events after broker 1 returned, want 1:\n%s", len(got), describeEvents(got))
	}
	assertAgreesWithKafkaTopics(t, cluster, exporter, "unclean-.*", "both back", 60*time.Second)
}
