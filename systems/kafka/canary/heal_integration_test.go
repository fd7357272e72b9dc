package kafkacanary

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// seriesValue is the value of the canary's series name{kafka_cluster="lab"}
// as the exporter would serve it, "" when it is not served.
func seriesValue(t *testing.T, c *Collector, name string) string {
	t.Helper()
	text, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	prefix := name + `{kafka_cluster="lab"} `
	for _, line := range strings.Split(string(text), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return ""
}

// liveBrokers are the brokers the cluster's metadata lists, read with a
// client of the test's own.
func liveBrokers(t *testing.T, c *lab.KafkaCluster) []int32 {
	t.Helper()
	conf := lab.ClientConfig()
	conf.Net.ReadTimeout = 2 * time.Second
	client, err := sarama.NewClient(c.Bootstrap(), conf)
	if err != nil {
		return nil
	}
	defer client.Close()
	return brokerIDs(client)
}

func testAdmin(t *testing.T, c *lab.KafkaCluster) sarama.ClusterAdmin {
	t.Helper()
	conf := lab.ClientConfig()
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), conf)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	return admin
}

// topicMinISR reads the canary topic's min.insync.replicas with a client
// of the test's own.
func topicMinISR(t *testing.T, c *lab.KafkaCluster) string {
	t.Helper()
	admin := testAdmin(t, c)
	defer admin.Close()
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: settings.DefaultCanaryTopic, ConfigNames: []string{minISRConfig}})
	if err != nil {
		t.Fatalf("describe canary topic config: %v", err)
	}
	for _, e := range entries {
		if e.Name == minISRConfig {
			return e.Value
		}
	}
	return ""
}

// TestKafkaCanaryHealsItsTopic is issue 17's case: the canary creates its
// topic while broker 3 of 3 is down, so with 2 partitions at RF 2 (the
// configured RF 3 / min ISR 2 capped at the live brokers), and says so in
// kafka_canary_topic_degraded. When broker 3 returns, the canary raises its
// partitions to RF 3 by reassignment, adds a partition led by broker 3 and
// the series goes to 0; Kafka's own kafka-topics --describe agrees. Then
// one broker's death costs no write a NOT_ENOUGH_REPLICAS, as the
// configured topic promises. Last, a min.insync.replicas lowered by hand is
// raised back to the configured one.
func TestKafkaCanaryHealsItsTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Kafka cluster; run without -short")
	}
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	topic := settings.DefaultCanaryTopic
	c.Kill(t, 3)
	// Broker 3 stays in metadata until its session times out.
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		live := liveBrokers(t, c)
		return slices.Equal(live, []int32{1, 2}), fmt.Sprintf("live brokers %v, want [1 2]", live)
	})

	w, _, coll := runCanary(t, c, settings.Canary{Enabled: true, Interval: testInterval, ReplicationFactor: 3, MinInsyncReplicas: 2})
	lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		n := sum(w, any2, acknowledged)
		return n >= 6, fmt.Sprintf("%d acknowledged; last error %v", n, w.Current().LastError)
	})
	if v := seriesValue(t, coll, "kafka_canary_topic_degraded"); v != "1" {
		t.Errorf("kafka_canary_topic_degraded = %q with the topic created at RF 2 of 3, want 1", v)
	}
	if v := seriesValue(t, coll, "kafka_canary_topic_replication_factor"); v != "2" {
		t.Errorf("kafka_canary_topic_replication_factor = %q, want 2", v)
	}
	created := c.DescribeTopics(t, "--topic", topic)
	if len(created) != 2 || len(created[0].Replicas) != 2 {
		t.Fatalf("canary topic created as %+v, want 2 partitions at RF 2 (broker 3 down)", created)
	}
	t.Logf("created while broker 3 was down: %+v; reasons %v", created, w.Current().Snapshot.Topic.Reasons())

	restarted := time.Now()
	c.Restart(t, 3)
	restartTook := time.Since(restarted)
	healed := lab.WaitFor(t, 90*time.Second, 200*time.Millisecond, func() (bool, string) {
		degraded, notLeading := seriesValue(t, coll, "kafka_canary_topic_degraded"), seriesValue(t, coll, "kafka_canary_topic_brokers_not_leading")
		h := w.Current().Snapshot.Topic
		return degraded == "0" && notLeading == "0", fmt.Sprintf("degraded %q, brokers not leading %q, topic %+v", degraded, notLeading, h)
	})
	// Kafka's own tooling agrees: RF 3 everywhere, no reassignment left,
	// a partition led by each broker (in sync once broker 3 caught up).
	verified := lab.WaitFor(t, 30*time.Second, time.Second, func() (bool, string) {
		parts := c.DescribeTopics(t, "--topic", topic)
		var leaders []int32
		for _, p := range parts {
			if len(p.Replicas) != 3 || p.Reassigning {
				t.Fatalf("the canary said healed, kafka-topics says partition %d: replicas %v, reassigning %v", p.Partition, p.Replicas, p.Reassigning)
			}
			if len(p.ISR) != 3 {
				return false, fmt.Sprintf("partition %d ISR %v", p.Partition, p.ISR)
			}
			leaders = append(leaders, p.Leader)
		}
		slices.Sort(leaders)
		return slices.Equal(leaders, []int32{1, 2, 3}), fmt.Sprintf("leaders %v of %+v", leaders, parts)
	})
	if v := topicMinISR(t, c); v != "2" {
		t.Errorf("min.insync.replicas of the healed topic = %q, want 2", v)
	}
	t.Logf("FIGURE kafka canary healing: broker 3 served %s after its restart; the canary topic at RF 3 / min ISR 2 with every broker leading (degraded 0) %s after that; kafka-topics --describe agreeing (all in sync) %s later",
		restartTook.Round(100*time.Millisecond), healed.Round(100*time.Millisecond), verified.Round(100*time.Millisecond))

	// One broker dies: the configured topic takes writes on the other two.
	victim := int32(2)
	nerBefore := sum(w, any2, failuresOf("NOT_ENOUGH_REPLICAS")) + sum(w, any2, failuresOf("NOT_ENOUGH_REPLICAS_AFTER_APPEND"))
	ackedBefore := map[int32]uint64{}
	for p := range int32(3) {
		ackedBefore[p] = sum(w, func(pp, _ int32) bool { return pp == p }, acknowledged)
	}
	killed := time.Now()
	c.Kill(t, victim)
	took := lab.WaitFor(t, 60*time.Second, 200*time.Millisecond, func() (bool, string) {
		var waiting []string
		for p := range int32(3) {
			if n := sum(w, func(pp, _ int32) bool { return pp == p }, acknowledged) - ackedBefore[p]; n < 3 {
				waiting = append(waiting, fmt.Sprintf("partition %d: %d acknowledged", p, n))
			}
		}
		return len(waiting) == 0, strings.Join(waiting, ", ")
	})
	time.Sleep(10 * testInterval)
	ner := sum(w, any2, failuresOf("NOT_ENOUGH_REPLICAS")) + sum(w, any2, failuresOf("NOT_ENOUGH_REPLICAS_AFTER_APPEND")) - nerBefore
	if ner != 0 {
		t.Errorf("%d writes failed with NOT_ENOUGH_REPLICAS after one broker of three died; the healed RF 3 / min ISR 2 topic should take them", ner)
	}
	if v := seriesValue(t, coll, "kafka_canary_topic_degraded"); v != "0" {
		t.Errorf("kafka_canary_topic_degraded = %q after a broker died, want 0 (a dead broker is the cluster's failure, not the topic's)", v)
	}
	if n := sum(w, any2, lost); n != 0 {
		t.Errorf("%d acknowledged records lost, want 0", n)
	}
	other := sum(w, func(_, leader int32) bool { return leader == victim }, allFailures)
	t.Logf("FIGURE kafka canary after healing: kill -9 of broker %d: every partition takes writes again %s after the kill (%s), %d NOT_ENOUGH_REPLICAS, %d other failures on the dead leader",
		victim, took.Round(100*time.Millisecond), time.Since(killed).Round(100*time.Millisecond), ner, other)

	// A min.insync.replicas below the configured one (as a topic created
	// with one live broker has) is raised once the RF allows it; the
	// canary re-reads it within topicConfigEvery.
	c.Restart(t, victim)
	admin := testAdmin(t, c)
	one := "1"
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, settings.DefaultCanaryTopic, map[string]sarama.IncrementalAlterConfigsEntry{
		minISRConfig: {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &one},
	}, false); err != nil {
		t.Fatalf("lower the canary topic's min.insync.replicas: %v", err)
	}
	admin.Close()
	raised := lab.WaitFor(t, topicConfigEvery+30*time.Second, time.Second, func() (bool, string) {
		v := topicMinISR(t, c)
		return v == "2", fmt.Sprintf("min.insync.replicas %s; canary topic %+v", v, w.Current().Snapshot.Topic)
	})
	t.Logf("FIGURE kafka canary: min.insync.replicas lowered to 1 by hand, raised back to 2 by the canary %s later", raised.Round(100*time.Millisecond))
}
