package lab

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Small Kafka clients for tests that need data in a lab cluster (records,
// committed group offsets) rather than a topology: the MirrorMaker lab
// produces on one cluster and reads the copy on the other. They connect to
// InternalBootstrap, so they need no credentials on a sasl_ssl cluster.

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Record is a record to produce, or one read back (then with its Offset).
type Record struct {
	Offset     int64
	Key, Value []byte
	// Timestamp is the record's timestamp (CreateTime); the zero time
	// produces with the current time.
	Timestamp time.Time
}

// clientConfig is the configuration of the lab's own clients.
func (c *KafkaCluster) clientConfig() *sarama.Config { return ClientConfig() }

// ClientConfig is the sarama configuration of every client a test makes of
// its own, beside the exporter's, to set up or check a lab cluster (admin,
// producer, consumer): short deadlines on every request, so a dead broker
// costs seconds, not minutes; acks=all; manual partitions, so a record goes
// to the partition its message names; no topic auto-created. A test that
// needs a difference sets it on the copy it gets, and says why.
func ClientConfig() *sarama.Config {
	conf := sarama.NewConfig()
	// Every version the lab runs (3.9 to 4.4) speaks 3.7's requests.
	conf.Version = sarama.V3_7_0_0
	conf.ClientID = "failover-exporter-lab"
	conf.Net.DialTimeout = 2 * time.Second
	conf.Net.ReadTimeout = 15 * time.Second
	conf.Net.WriteTimeout = 5 * time.Second
	conf.Metadata.AllowAutoTopicCreation = false
	conf.Metadata.Retry.Max = 5
	conf.Metadata.Retry.Backoff = 200 * time.Millisecond
	conf.Producer.RequiredAcks = sarama.WaitForAll
	conf.Producer.Return.Successes = true
	conf.Producer.Partitioner = sarama.NewManualPartitioner
	conf.Producer.Timeout = 10 * time.Second
	conf.Producer.Retry.Max = 20
	conf.Producer.Retry.Backoff = 200 * time.Millisecond
	conf.Consumer.Return.Errors = true
	return conf
}

// CreateTopic creates a topic with the given number of partitions and the
// cluster's default replication factor (3, or the number of nodes if
// fewer), and waits until every partition has a leader.
func (c *KafkaCluster) CreateTopic(t testing.TB, topic string, partitions int32) {
	t.Helper()
	conf := c.clientConfig()
	admin, err := sarama.NewClusterAdmin(c.InternalBootstrap(), conf)
	if err != nil {
		t.Fatalf("lab: admin client for %s: %v", c.dir, err)
	}
	defer admin.Close()
	rf := int16(min(3, c.nodes))
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: rf}, false); err != nil {
		t.Fatalf("lab: create topic %s (%d partitions, RF %d): %v", topic, partitions, rf, err)
	}
	WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		ends, err := c.EndOffsets(topic)
		if err != nil {
			return false, err.Error()
		}
		return len(ends) == int(partitions), fmt.Sprintf("%d of %d partitions answer", len(ends), partitions)
	})
}

// AddPartitions raises a topic's partition count to total (CreatePartitions,
// as kafka-topics.sh --alter --partitions does) and waits until every
// partition has a leader.
func (c *KafkaCluster) AddPartitions(t testing.TB, topic string, total int32) {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(c.InternalBootstrap(), c.clientConfig())
	if err != nil {
		t.Fatalf("lab: admin client for %s: %v", c.dir, err)
	}
	defer admin.Close()
	if err := admin.CreatePartitions(topic, total, nil, false); err != nil {
		t.Fatalf("lab: raise %s to %d partitions: %v", topic, total, err)
	}
	WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		ends, err := c.EndOffsets(topic)
		if err != nil {
			return false, err.Error()
		}
		return len(ends) == int(total), fmt.Sprintf("%d of %d partitions answer", len(ends), total)
	})
}

// Produce writes records to one partition with acks=all and returns the
// offset of the first.
func (c *KafkaCluster) Produce(t testing.TB, topic string, partition int32, records ...Record) int64 {
	t.Helper()
	producer, err := sarama.NewSyncProducer(c.InternalBootstrap(), c.clientConfig())
	if err != nil {
		t.Fatalf("lab: producer: %v", err)
	}
	defer producer.Close()
	msgs := make([]*sarama.ProducerMessage, len(records))
	for i, r := range records {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: partition, Timestamp: r.Timestamp, Value: sarama.ByteEncoder(r.Value)}
		if r.Key != nil {
			msgs[i].Key = sarama.ByteEncoder(r.Key)
		}
	}
	if err := producer.SendMessages(msgs); err != nil {
		t.Fatalf("lab: produce %d records to %s-%d: %v", len(records), topic, partition, err)
	}
	first := msgs[0].Offset
	for _, m := range msgs {
		first = min(first, m.Offset)
	}
	return first
}

// EndOffsetSum is a topic's high watermarks summed over its partitions:
// the records it holds when nothing was deleted.
func (c *KafkaCluster) EndOffsetSum(t testing.TB, topic string) int64 {
	t.Helper()
	ends, err := c.EndOffsets(topic)
	if err != nil {
		t.Fatalf("lab: end offsets of %s: %v", topic, err)
	}
	return sumOffsets(ends)
}

// ReadRecords reads n records of a partition from offset on, waiting up to
// timeout for them.
func (c *KafkaCluster) ReadRecords(t testing.TB, topic string, partition int32, offset int64, n int, timeout time.Duration) []Record {
	t.Helper()
	consumer, err := sarama.NewConsumer(c.InternalBootstrap(), c.clientConfig())
	if err != nil {
		t.Fatalf("lab: consumer: %v", err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, partition, offset)
	if err != nil {
		t.Fatalf("lab: consume %s-%d from %d: %v", topic, partition, offset, err)
	}
	defer pc.Close()
	records := make([]Record, 0, n)
	deadline := time.After(timeout)
	for len(records) < n {
		select {
		case m := <-pc.Messages():
			records = append(records, Record{Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp})
		case err := <-pc.Errors():
			t.Fatalf("lab: consume %s-%d: %v", topic, partition, err)
		case <-deadline:
			t.Fatalf("lab: %d of %d records of %s-%d from offset %d within %s", len(records), n, topic, partition, offset, timeout)
		}
	}
	return records
}

// EndOffsets returns each partition's high watermark (the offset the next
// record will get), read fresh from the partitions' leaders. An error says
// the topic does not exist (yet) or a leader did not answer.
func (c *KafkaCluster) EndOffsets(topic string) (map[int32]int64, error) {
	client, err := sarama.NewClient(c.InternalBootstrap(), c.clientConfig())
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	ends := make(map[int32]int64, len(parts))
	for _, p := range parts {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return nil, fmt.Errorf("end offset of %s-%d: %w", topic, p, err)
		}
		ends[p] = end
	}
	return ends, nil
}

// Topics returns the names of the cluster's topics, internal ones included,
// sorted.
func (c *KafkaCluster) Topics() ([]string, error) {
	client, err := sarama.NewClient(c.InternalBootstrap(), c.clientConfig())
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	defer client.Close()
	if err := client.RefreshMetadata(); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	topics, err := client.Topics()
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	slices.Sort(topics)
	return topics, nil
}

// CommitOffsets commits offsets for a consumer group that has no running
// members, as `kafka-consumer-groups.sh --reset-offsets` does: the group
// then exists (empty, protocol type "") with these committed offsets.
func (c *KafkaCluster) CommitOffsets(t testing.TB, group string, offsets map[TopicPartition]int64) {
	t.Helper()
	conf := c.clientConfig()
	client, err := sarama.NewClient(c.InternalBootstrap(), conf)
	if err != nil {
		t.Fatalf("lab: client: %v", err)
	}
	defer client.Close()
	// The coordinator can take a moment to load the offsets topic's
	// partition on a fresh cluster.
	var lastErr error
	for range 20 {
		if lastErr = commitOffsets(client, conf, group, offsets); lastErr == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("lab: commit offsets %v of group %s: %v", offsets, group, lastErr)
}

func commitOffsets(client sarama.Client, conf *sarama.Config, group string, offsets map[TopicPartition]int64) error {
	if err := client.RefreshCoordinator(group); err != nil {
		return fmt.Errorf("find coordinator: %w", err)
	}
	coordinator, err := client.Coordinator(group)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	req := sarama.NewOffsetCommitRequest(conf, group)
	for tp, off := range offsets {
		req.AddBlock(tp.Topic, tp.Partition, off, 0, "")
	}
	resp, err := coordinator.CommitOffset(req)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	var errs []error
	for topic, parts := range resp.Errors {
		for p, kerr := range parts {
			if kerr != sarama.ErrNoError {
				errs = append(errs, fmt.Errorf("%s-%d: %w", topic, p, kerr))
			}
		}
	}
	return errors.Join(errs...)
}
