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

// ensureOffsetsTopic makes the cluster create __consumer_offsets (RF 3,
// the lab's offsets.topic.replication.factor), as a group coordinator
// lookup does.
func ensureOffsetsTopic(t *testing.T, c *lab.KafkaCluster) {
	t.Helper()
	client, err := sarama.NewClient(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		_, err := client.Coordinator("failover-exporter-test")
		return err == nil, fmt.Sprint("coordinator: ", err)
	})
}

// TestKafkaInternalTopicHealth stops two of the three replicas of some
// __consumer_offsets partitions on a real 5-broker cluster (kill -9; the
// quorum keeps 3 of 5 controllers) with an exporter whose topic filter
// drops every internal topic: the internal-topic series still serve the
// offsets topic under its feature, and their counts of under-replicated
// and under-min-ISR partitions are what Kafka's own kafka-topics.sh
// --under-replicated-partitions and --under-min-isr-partitions list.
func TestKafkaInternalTopicHealth(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 5, InternalTopics: true})
	ensureOffsetsTopic(t, c)
	const topic = "__consumer_offsets"
	sel := map[string]string{"topic": topic, "feature": "consumer_offsets"}
	cfg := faultConfig(t, fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    refresh_interval: 1s
    topics: {exclude: "__.*"}
`, strings.Join(c.Bootstrap(), ", ")))
	e := exportertest.Start(t, "--config.file="+cfg)
	waitMetrics(t, e, 60*time.Second, "the offsets topic whole", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("kafka_internal_topic_partitions", sel)
		ur, _ := m.Value("kafka_internal_topic_under_replicated_partitions", sel)
		_, minKnown := m.Value("kafka_internal_topic_under_min_isr_partitions", sel)
		return n > 0 && ur == 0 && minKnown, m.Describe("kafka_internal_topic_partitions", nil) + m.Describe("kafka_internal_topic_under_replicated_partitions", nil)
	})
	if n := len(e.Scrape(t).Series("kafka_topic_partitions", map[string]string{"topic": topic})); n != 0 {
		t.Fatalf("the filter excludes %s, yet its topic series are served", topic)
	}

	// Two brokers that share a partition of the offsets topic.
	described := c.DescribeTopics(t, "--topic", topic)
	if len(described) == 0 {
		t.Fatalf("kafka-topics.sh lists no partition of %s", topic)
	}
	victims := described[0].Replicas[:2]
	killBrokers(t, c, victims...)
	t.Logf("killed brokers %v, two of the replicas %v of %s/0", victims, described[0].Replicas, topic)

	var ur, underMin []lab.PartitionDescription
	m, took := waitMetrics(t, e, 90*time.Second, "the exporter agreeing with kafka-topics.sh", func(m exportertest.Metrics) (bool, string) {
		runs := c.DescribeTopicsBatch(t, []string{"--topic", topic, "--under-replicated-partitions"}, []string{"--topic", topic, "--under-min-isr-partitions"})
		ur, underMin = runs[0], runs[1]
		gotUR, _ := m.Value("kafka_internal_topic_under_replicated_partitions", sel)
		gotMin, _ := m.Value("kafka_internal_topic_under_min_isr_partitions", sel)
		return len(underMin) > 0 && int(gotUR) == len(ur) && int(gotMin) == len(underMin),
			fmt.Sprintf("exporter: %v under-replicated, %v under min ISR; kafka-topics.sh: %d and %d", gotUR, gotMin, len(ur), len(underMin))
	})
	t.Logf("FIGURE kafka internal topics: %s/%d partitions under-replicated, %d under min ISR after killing brokers %v, as kafka-topics.sh says; the exporter agreed %s after the kill",
		topic, len(ur), len(underMin), victims, took.Round(100*time.Millisecond))
	if v := value(t, m, "kafka_internal_topic_offline_partitions", sel); v != 0 {
		t.Errorf("offline partitions of %s = %v, want 0 (one replica of each is alive)", topic, v)
	}
}
