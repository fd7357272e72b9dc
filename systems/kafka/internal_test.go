package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
)

// The internal topics' health is counted whatever the topic filter: a
// filter that keeps only user topics (exclude "__.*") still serves it,
// under the feature each topic carries. A topic that does not exist (no
// share groups, no tiered storage) has no series, not zeros. An offline
// internal partition is a case the 5-broker lab cannot make without losing
// its controller quorum, so it is built here.
func TestInternalTopicsServedWhateverTheFilter(t *testing.T) {
	md := threeBrokerMetadata(2, 3)
	md.AddTopicPartition("orders", 0, 2, []int32{1, 2, 3}, []int32{2, 3}, nil, sarama.ErrNoError)
	// __consumer_offsets: 0 under min ISR and under-replicated, 1 offline
	// (so under min ISR), 2 under-replicated, 3 healthy.
	md.AddTopicPartition("__consumer_offsets", 0, 2, []int32{1, 2, 3}, []int32{2}, nil, sarama.ErrNoError)
	md.AddTopicPartition("__consumer_offsets", 1, -1, []int32{1}, []int32{1}, nil, sarama.ErrLeaderNotAvailable)
	md.AddTopicPartition("__consumer_offsets", 2, 3, []int32{3, 1, 2}, []int32{3, 2}, nil, sarama.ErrNoError)
	md.AddTopicPartition("__consumer_offsets", 3, 2, []int32{2, 3}, []int32{2, 3}, nil, sarama.ErrNoError)
	md.AddTopicPartition("__transaction_state", 0, 2, []int32{2, 3}, []int32{2, 3}, nil, sarama.ErrNoError)
	configs := TopicConfigCache{MinISR: map[string]int{"orders": 2, "__consumer_offsets": 2}}
	userTopics := func(name string) bool { return !strings.HasPrefix(name, "__") }

	s := buildSnapshot(md, userTopics, configs, nil, time.Unix(0, 0))

	if len(s.Topics) != 1 || s.Topics[0].Name != "orders" {
		t.Fatalf("kept topics %+v, want orders only", s.Topics)
	}
	want := []InternalTopic{
		{Name: "__consumer_offsets", Feature: "consumer_offsets", MinISR: 2, Partitions: 4, UnderReplicated: 2, UnderMinISR: 2, Offline: 1},
		{Name: "__transaction_state", Feature: "transactions", Partitions: 1},
	}
	if len(s.Internal) != len(want) {
		t.Fatalf("internal topics %+v, want %+v", s.Internal, want)
	}
	for i := range want {
		if s.Internal[i] != want[i] {
			t.Errorf("internal topic %d = %+v, want %+v", i, s.Internal[i], want[i])
		}
	}

	c := NewCollector()
	c.Set("lab", watchtest.Static[Snapshot]("lab", s, nil))
	text, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`kafka_internal_topic_offline_partitions{feature="consumer_offsets",kafka_cluster="lab",topic="__consumer_offsets"} 1`,
		`kafka_internal_topic_under_min_isr_partitions{feature="consumer_offsets",kafka_cluster="lab",topic="__consumer_offsets"} 2`,
		`kafka_internal_topic_under_replicated_partitions{feature="consumer_offsets",kafka_cluster="lab",topic="__consumer_offsets"} 2`,
		`kafka_internal_topic_partitions{feature="transactions",kafka_cluster="lab",topic="__transaction_state"} 1`,
	} {
		if !strings.Contains(string(text), line+"\n") {
			t.Errorf("text lacks %s", line)
		}
	}
	for _, absent := range []string{
		// min.insync.replicas of __transaction_state unknown: no guess.
		`kafka_internal_topic_under_min_isr_partitions{feature="transactions"`,
		`topic="__share_group_state"`, `topic="__remote_log_metadata"`,
	} {
		if strings.Contains(string(text), absent) {
			t.Errorf("text has %s", absent)
		}
	}
}
