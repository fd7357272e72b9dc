package lab

import (
	"slices"
	"testing"

	"github.com/IBM/sarama"
)

// TestSharedKafka lends one cluster to three tests in turn, as the e2e
// tests are lent theirs: the first kills a node and creates a topic, and the
// second gets the same cluster back with the node running and the topic
// gone; the second changes a broker's dynamic config, which is not undone,
// so the third gets a new cluster and the old one is stopped.
func TestSharedKafka(t *testing.T) {
	t.Cleanup(func() {
		if err := StopSharedKafka(); err != nil {
			t.Error(err)
		}
	})
	var first *KafkaCluster
	t.Run("kills a node and creates a topic", func(t *testing.T) {
		first = SharedKafka(t, KafkaOptions{})
		first.CreateTopic(t, "shared-first", 3)
		first.Kill(t, 2)
	})
	t.Run("gets it back restored, changes a broker config", func(t *testing.T) {
		c := SharedKafka(t, KafkaOptions{Nodes: 3})
		if c != first {
			t.Fatalf("lent a new cluster at %v, want the first test's at %v", c.Bootstrap(), first.Bootstrap())
		}
		if c.PID(2) == 0 {
			t.Errorf("node 2, killed by the first test, is not running")
		}
		topics, err := c.Topics()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(topics, "shared-first") {
			t.Errorf("the first test's topic is still there: %v", topics)
		}
		admin, err := sarama.NewClusterAdmin(c.Bootstrap(), ClientConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		rate := "1048576"
		if err := admin.IncrementalAlterConfig(sarama.BrokerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
			"leader.replication.throttled.rate": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &rate},
		}, false); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("gets a new cluster", func(t *testing.T) {
		c := SharedKafka(t, KafkaOptions{})
		if c == first {
			t.Fatalf("lent the cluster whose broker config the last test changed")
		}
		for id := int32(1); id <= 3; id++ {
			if pid := first.PID(id); pid != 0 {
				t.Errorf("node %d of the discarded cluster still runs (pid %d)", id, pid)
			}
		}
	})
}
