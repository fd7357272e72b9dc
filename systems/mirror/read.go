package mirror

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/systems/kafka/client"
)

// Bounds on what one refresh reads.
const (
	// followFetchBytes bounds one fetch of an internal topic; followRounds
	// the fetches per partition per refresh. A first read of a long
	// offset-syncs topic takes a few refreshes (SyncsState.CaughtUp).
	followFetchBytes = 1 << 20
	followRounds     = 16
	// recordFetchBytes bounds a partition's share of a fetch of single
	// records; one that does not fit is fetched alone, where the broker
	// returns the whole first batch however large, at most
	// maxSingleFetches of them per refresh.
	recordFetchBytes = 64 << 10
	recordFetchTotal = 8 << 20
	maxSingleFetches = 64
)

// cluster is one side of the flow: a franz-go client that keeps its own
// metadata, and what the last Metadata request said.
type cluster struct {
	name   string
	client *kgo.Client
	topics map[string]topicMeta
}

type topicMeta struct {
	id      [16]byte
	leaders map[int32]int32 // partition → leader (-1: none)
}

// partitions returns the topic's partition IDs in order.
func (t topicMeta) partitions() []int32 {
	ids := make([]int32, 0, len(t.leaders))
	for p := range t.leaders {
		ids = append(ids, p)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// readMetadata reads every topic's partitions and leaders.
func (c *cluster) readMetadata(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	kresp, err := c.client.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	resp := kresp.(*kmsg.MetadataResponse)
	topics := make(map[string]topicMeta, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		meta := topicMeta{id: t.TopicID, leaders: make(map[int32]int32, len(t.Partitions))}
		for _, p := range t.Partitions {
			meta.leaders[p.Partition] = p.Leader
		}
		topics[*t.Topic] = meta
	}
	c.topics = topics
	return nil
}

// partitionKey names a partition of a topic.
type partitionKey struct {
	topic     string
	partition int32
}

// listOffsets asks each partition's leader for its earliest (timestamp
// -2) or latest (-1: the high watermark) offset. Partitions with an error
// are left out.
func (c *cluster) listOffsets(ctx context.Context, parts []partitionKey, timestamp int64) (map[partitionKey]int64, error) {
	out := make(map[partitionKey]int64, len(parts))
	if len(parts) == 0 {
		return out, nil
	}
	req := kafkaclient.ListOffsetsRequest(parts, func(p partitionKey) (string, int32) { return p.topic, p.partition }, timestamp)
	kresp, err := c.client.Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("list offsets of %d partitions: %w", len(parts), err)
	}
	var failed error
	for _, t := range kresp.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				failed = needsGrant(fmt.Errorf("list offsets %s/%d: %w", t.Topic, p.Partition, err), "Describe", "topic "+t.Topic, c.name)
				continue
			}
			out[partitionKey{t.Topic, p.Partition}] = p.Offset
		}
	}
	if len(out) == 0 && failed != nil {
		return nil, failed
	}
	return out, nil
}

// fetch sends one Fetch to a broker for the given partitions and offsets,
// and decodes what came back: records (control records dropped) by
// partition, and each partition's next offset and high watermark.
type fetched struct {
	records []*kgo.Record
	next    int64
	hwm     int64
	err     error
}

func (c *cluster) fetch(ctx context.Context, broker int32, offsets map[partitionKey]int64, partitionBytes, totalBytes int32) (map[partitionKey]fetched, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = totalBytes
	req.IsolationLevel = 0 // read_uncommitted: up to the high watermark
	req.SessionEpoch = -1
	byTopic := map[string]int{}
	keys := make([]partitionKey, 0, len(offsets))
	for k := range offsets {
		keys = append(keys, k)
	}
	sortKeys(keys)
	names := map[[16]byte]string{}
	for _, k := range keys {
		i, ok := byTopic[k.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[k.topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = k.topic
			rt.TopicID = c.topics[k.topic].id
			names[rt.TopicID] = k.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = k.partition
		rp.FetchOffset = offsets[k]
		rp.PartitionMaxBytes = partitionBytes
		rp.CurrentLeaderEpoch = -1
		rp.LogStartOffset = -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	kresp, err := c.client.Broker(int(broker)).Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("fetch from broker %d: %w", broker, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("fetch from broker %d: %w", broker, err)
	}
	out := make(map[partitionKey]fetched, len(offsets))
	decompressor := kgo.DefaultDecompressor()
	for i := range resp.Topics {
		t := &resp.Topics[i]
		topic := t.Topic
		if topic == "" {
			topic = names[t.TopicID]
		}
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			key := partitionKey{topic, rp.Partition}
			fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: rp.Partition}, rp, decompressor, nil)
			f := fetched{records: fp.Records, next: next, hwm: fp.HighWatermark, err: fp.Err}
			if next == 0 && len(fp.Records) == 0 {
				f.next = offsets[key]
			}
			out[key] = f
		}
	}
	return out, nil
}

// leaderOf returns the partition's leader, or an error.
func (c *cluster) leaderOf(k partitionKey) (int32, error) {
	meta, ok := c.topics[k.topic]
	if !ok {
		return -1, fmt.Errorf("topic %s not in metadata", k.topic)
	}
	leader, ok := meta.leaders[k.partition]
	if !ok || leader < 0 {
		return -1, fmt.Errorf("%s/%d has no leader", k.topic, k.partition)
	}
	return leader, nil
}

// recordsAt reads, for each partition, the newest data record at or
// before the given offset: the record itself, unless it is a transaction
// marker. Partitions whose record could not be read are left out; err
// is the last failure.
func (c *cluster) recordsAt(ctx context.Context, at map[partitionKey]int64) (map[partitionKey]*kgo.Record, error) {
	out := make(map[partitionKey]*kgo.Record, len(at))
	byLeader := map[int32]map[partitionKey]int64{}
	var failed error
	for k, offset := range at {
		leader, err := c.leaderOf(k)
		if err != nil {
			failed = err
			continue
		}
		if byLeader[leader] == nil {
			byLeader[leader] = map[partitionKey]int64{}
		}
		byLeader[leader][k] = offset
	}
	var alone []partitionKey
	for leader, offsets := range byLeader {
		got, err := c.fetch(ctx, leader, offsets, recordFetchBytes, recordFetchTotal)
		if err != nil {
			failed = err
			continue
		}
		for k, offset := range offsets {
			switch r := newestAtOrBefore(got[k].records, offset); {
			case r != nil:
				out[k] = r
			case got[k].err != nil:
				failed = needsGrant(fmt.Errorf("fetch %s/%d: %w", k.topic, k.partition, got[k].err), "Read", "topic "+k.topic, c.name)
			default:
				alone = append(alone, k) // its batch did not fit
			}
		}
	}
	sortKeys(alone)
	for i, k := range alone {
		if i == maxSingleFetches {
			failed = fmt.Errorf("%d partitions' records left for the next refresh", len(alone)-i)
			break
		}
		leader, _ := c.leaderOf(k)
		// Total bytes 1: the broker still returns the first batch whole.
		got, err := c.fetch(ctx, leader, map[partitionKey]int64{k: at[k]}, 1, 1)
		if err != nil {
			failed = err
			continue
		}
		if r := newestAtOrBefore(got[k].records, at[k]); r != nil {
			out[k] = r
		}
	}
	return out, failed
}

func newestAtOrBefore(records []*kgo.Record, offset int64) *kgo.Record {
	var best *kgo.Record
	for _, r := range records {
		if r.Offset <= offset && (best == nil || r.Offset > best.Offset) {
			best = r
		}
	}
	return best
}

// follower reads a topic from where it stopped the refresh before:
// the offset-syncs and checkpoints topics, read whole once and then only
// what was appended.
type follower struct {
	topic string
	next  map[int32]int64
}

func newFollower(topic string) *follower { return &follower{topic: topic, next: map[int32]int64{}} }

// errTopicAbsent says the followed topic is not on the cluster.
var errTopicAbsent = errors.New("topic does not exist")

// absent says why a topic the flow reads is not in the cluster's
// metadata. Kafka leaves out of an all-topics Metadata response the topics
// the user may not Describe, so the topic is asked for by name: the answer
// tells a missing topic (errTopicAbsent) from a missing grant.
func (c *cluster) absent(ctx context.Context, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	kresp, err := c.client.Request(ctx, req)
	if err == nil {
		for _, t := range kresp.(*kmsg.MetadataResponse).Topics {
			if t.Topic != nil && *t.Topic == topic && t.ErrorCode == kerr.TopicAuthorizationFailed.Code {
				return needsGrant(fmt.Errorf("%s on %s: %w", topic, c.name, kerr.TopicAuthorizationFailed), "Describe", "topic "+topic, c.name)
			}
		}
	}
	return fmt.Errorf("%s on %s: %w", topic, c.name, errTopicAbsent)
}

// poll reads what was appended to every partition of the topic since the
// last poll, up to followRounds fetches per partition, handing each record
// to handle in offset order. caughtUp is whether every partition was read
// to its high watermark.
func (f *follower) poll(ctx context.Context, c *cluster, handle func(*kgo.Record)) (caughtUp bool, err error) {
	meta, ok := c.topics[f.topic]
	if !ok {
		return false, c.absent(ctx, f.topic)
	}
	var unknown []partitionKey
	for _, p := range meta.partitions() {
		if _, ok := f.next[p]; !ok {
			unknown = append(unknown, partitionKey{f.topic, p})
		}
	}
	if len(unknown) > 0 {
		starts, err := c.listOffsets(ctx, unknown, -2)
		if err != nil {
			return false, err
		}
		for k, offset := range starts {
			f.next[k.partition] = offset
		}
	}
	caughtUp = true
	for _, p := range meta.partitions() {
		next, ok := f.next[p]
		if !ok {
			caughtUp = false
			continue
		}
		key := partitionKey{f.topic, p}
		leader, err := c.leaderOf(key)
		if err != nil {
			return false, err
		}
		done := false
		var hwm int64
		for round := 0; round < followRounds && !done; round++ {
			got, err := c.fetch(ctx, leader, map[partitionKey]int64{key: next}, followFetchBytes, followFetchBytes)
			if err != nil {
				return false, err
			}
			res := got[key]
			switch {
			case errors.Is(res.err, kerr.OffsetOutOfRange):
				// Deleted or compacted past us, or the topic was
				// recreated: start again from its start.
				delete(f.next, p)
				return false, fmt.Errorf("%s/%d: offset %d out of range; reading again from the start", f.topic, p, next)
			case res.err != nil:
				return false, needsGrant(fmt.Errorf("fetch %s/%d: %w", f.topic, p, res.err), "Read", "topic "+f.topic, c.name)
			}
			for _, r := range res.records {
				handle(r)
			}
			hwm = res.hwm
			progress := res.next > next
			if progress {
				next = res.next
			}
			done = next >= res.hwm || !progress
		}
		f.next[p] = next
		if !done || next < hwm {
			caughtUp = false
		}
	}
	return caughtUp, nil
}

func sortKeys(keys []partitionKey) {
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
}
