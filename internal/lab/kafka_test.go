package lab

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestKafkaLab proves the lab cluster behaves like a real one: acks=all
// writes survive a kill -9 of the partition leader, a new leader is elected
// from the old ISR within seconds, and the restarted node rejoins the ISR.
func TestKafkaLab(t *testing.T) {
	const topic = "lab-failover"
	start := time.Now()
	c := StartKafka(t, KafkaOptions{})
	startup := time.Since(start)

	conf := labSaramaConfig()

	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), conf)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		parts, err := partitionMetadata(conf, c.Bootstrap(), topic)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range parts {
			if p.Leader < 0 || len(p.Isr) != 3 {
				return false, describe(parts)
			}
		}
		return len(parts) == 3, describe(parts)
	})

	producer, err := sarama.NewSyncProducer(c.Bootstrap(), conf)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer producer.Close()
	produce(t, producer, topic, "before failover")

	parts, err := partitionMetadata(conf, c.Bootstrap(), topic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	p0 := parts[0]
	oldLeader, oldISR := p0.Leader, slices.Clone(p0.Isr)
	t.Logf("before: %s", describe(parts))

	// Crash the leader of partition 0.
	killedAt := time.Now()
	c.Kill(t, oldLeader)
	if pid := c.PID(oldLeader); pid != 0 {
		t.Fatalf("node %d still has pid %d after kill", oldLeader, pid)
	}
	survivors := slices.DeleteFunc(c.Bootstrap(), func(a string) bool { return a == c.BrokerAddr(oldLeader) })
	WaitFor(t, 45*time.Second, 50*time.Millisecond, func() (bool, string) {
		parts, err := partitionMetadata(conf, survivors, topic)
		if err != nil {
			return false, err.Error()
		}
		p := parts[0]
		ok := p.Leader >= 0 && p.Leader != oldLeader && slices.Contains(oldISR, p.Leader) &&
			len(p.Isr) == 2 && !slices.Contains(p.Isr, oldLeader)
		return ok, describe(parts)
	})
	failover := time.Since(killedAt)
	parts, _ = partitionMetadata(conf, survivors, topic)
	t.Logf("after kill -9 of node %d: %s", oldLeader, describe(parts))

	// ISR 2 == min.insync.replicas: acks=all must still be accepted.
	produceAt := time.Now()
	produce(t, producer, topic, "after failover")
	produceAfter := time.Since(produceAt)

	restartAt := time.Now()
	c.Restart(t, oldLeader)
	restart := time.Since(restartAt)
	WaitFor(t, 45*time.Second, 100*time.Millisecond, func() (bool, string) {
		parts, err := partitionMetadata(conf, c.Bootstrap(), topic)
		if err != nil {
			return false, err.Error()
		}
		return len(parts[0].Isr) == 3, describe(parts)
	})
	isrBack := time.Since(restartAt)
	parts, _ = partitionMetadata(conf, c.Bootstrap(), topic)
	t.Logf("after restart of node %d: %s", oldLeader, describe(parts))

	// Both acks=all records survived the crash of the leader they went to.
	consumer, err := sarama.NewConsumer(c.Bootstrap(), conf)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("consume partition 0: %v", err)
	}
	defer pc.Close()
	for _, want := range []string{"before failover", "after failover"} {
		select {
		case m := <-pc.Messages():
			if string(m.Value) != want {
				t.Fatalf("partition 0 offset %d: got %q, want %q", m.Offset, m.Value, want)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("partition 0: no record %q within 15s", want)
		}
	}

	t.Logf("timings: cluster start %s; kill -9 leader -> new leader with ISR 2 in metadata %s; "+
		"acks=all produce after failover %s; start-node %s; restart -> ISR 3 %s",
		startup.Round(time.Millisecond), failover.Round(time.Millisecond),
		produceAfter.Round(time.Millisecond), restart.Round(time.Millisecond), isrBack.Round(time.Millisecond))
}

// labSaramaConfig is the lab's client configuration with enough producer
// retries to ride out a leader failover (a few seconds), reading from the
// oldest offset.
func labSaramaConfig() *sarama.Config {
	conf := ClientConfig()
	conf.ClientID = "failover-exporter-lab-test"
	conf.Producer.Retry.Max = 50
	conf.Consumer.Offsets.Initial = sarama.OffsetOldest
	return conf
}

func produce(t *testing.T, p sarama.SyncProducer, topic, value string) {
	t.Helper()
	part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(value)})
	if err != nil {
		t.Fatalf("produce %q with acks=all: %v", value, err)
	}
	t.Logf("produced %q to partition %d offset %d", value, part, off)
}

// partitionMetadata asks the first broker in addrs that answers for a fresh
// Metadata response (no client-side cache) and returns the topic's
// partitions ordered by id.
func partitionMetadata(conf *sarama.Config, addrs []string, topic string) ([]*sarama.PartitionMetadata, error) {
	var lastErr error
	for _, addr := range addrs {
		b := sarama.NewBroker(addr)
		if err := b.Open(conf); err != nil {
			lastErr = err
			continue
		}
		resp, err := b.GetMetadata(sarama.NewMetadataRequest(conf.Version, []string{topic}))
		b.Close()
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", addr, err)
			continue
		}
		if len(resp.Topics) != 1 || resp.Topics[0].Err != sarama.ErrNoError {
			lastErr = fmt.Errorf("%s: topic %s not in metadata: %+v", addr, topic, resp.Topics)
			continue
		}
		parts := slices.Clone(resp.Topics[0].Partitions)
		slices.SortFunc(parts, func(a, b *sarama.PartitionMetadata) int { return int(a.ID - b.ID) })
		return parts, nil
	}
	return nil, fmt.Errorf("no broker answered metadata: %w", lastErr)
}

func describe(parts []*sarama.PartitionMetadata) string {
	s := ""
	for _, p := range parts {
		s += fmt.Sprintf("[p%d leader %d isr %v offline %v] ", p.ID, p.Leader, p.Isr, p.OfflineReplicas)
	}
	return s
}
