package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The ListOffsets timestamps a tiered read asks each partition's leader
// for: the high watermark, the log start offset, and the newest offset
// already copied to tiered storage (KIP-1005, ListOffsets v9, Kafka 3.9).
const (
	latestTimestamp       int64 = -1
	earliestTimestamp     int64 = -2
	latestTieredTimestamp int64 = -5
	// listOffsetsTieredVersion is the first ListOffsets version that knows
	// latestTieredTimestamp.
	listOffsetsTieredVersion = 9
)

// UntieredRecords is what a topic with tiered storage holds only on its
// local replicas: records its brokers have not copied to tiered storage
// yet, which are lost if every replica of their partition is. The active
// segment is never copied, so a topic being written always has some.
type UntieredRecords struct {
	// Records sums, over Partitions, the high watermark minus the first
	// offset not tiered: the newest tiered offset + 1, or the log start
	// offset when none is tiered.
	Records int64
	// Partitions counts the topic's partitions whose leader answered.
	Partitions int
}

// partitionOffsets are the offsets a tiered read found for one partition;
// tiered is -1 when nothing of it is tiered.
type partitionOffsets struct {
	end, start, tiered int64
}

// untiered is the partition's records above its newest tiered offset.
func (o partitionOffsets) untiered() int64 {
	first := max(o.tiered+1, o.start)
	return max(0, o.end-first)
}

// tieredRead is one read of the offsets of every partition of the topics
// with tiered storage, from their leaders; unsupported when no leader
// tells the newest tiered offset (before Kafka 3.9).
type tieredRead struct {
	offsets map[PartitionKey]partitionOffsets
	readOutcome
}

// tieredReader reads the tiered topics' offsets beside the refreshes.
type tieredReader = brokerReader[tieredRead]

var tieredKind = readKind{
	kind:        "tiered",
	unsupported: "brokers do not tell the newest tiered offset (ListOffsets v9, Kafka 3.9+); kafka_topic_untiered_records is not served",
	failed:      "reading some offsets of topics with tiered storage failed; their partitions are left out of kafka_topic_untiered_records",
}

// readTiered takes the outcome of the read the previous refreshes started,
// starts the next one for snap's tiered topics, and sets their untiered
// records from the last read that ended. A cluster without a topic with
// tiered storage costs no request.
func (s *source) readTiered(brokers map[int32]string, snap *Snapshot) {
	r := &s.tiered
	r.keep(s, tieredKind)
	byLeader := tieredPartitionsByLeader(snap)
	if len(byLeader) == 0 {
		r.last = nil
		return
	}
	if !r.paused(s.now()) {
		leaders := make(map[int32]string, len(byLeader))
		for id := range byLeader {
			if addr, ok := brokers[id]; ok {
				leaders[id] = addr
			}
		}
		timeout := s.cfg.RequestTimeout
		err := r.start(s.cfg, leaders, func(handles map[int32]*kgo.Broker) tieredRead { return listTieredOffsets(handles, byLeader, timeout) })
		if err != nil {
			s.logFailure("tiered", "reading the offsets of topics with tiered storage failed; kafka_topic_untiered_records is not served", err)
		}
	}
	if r.last == nil {
		return
	}
	for ti := range snap.Topics {
		t := &snap.Topics[ti]
		if !t.Tiered.Enabled {
			continue
		}
		var u UntieredRecords
		for _, p := range t.Partitions {
			if o, ok := r.last.offsets[PartitionKey{t.Name, p.ID}]; ok {
				u.Records += o.untiered()
				u.Partitions++
			}
		}
		if u.Partitions > 0 {
			t.Untiered = &u
		}
	}
}

// tieredPartitionsByLeader lists the partitions of snap's topics with
// tiered storage by their leader; leaderless ones cannot be asked.
func tieredPartitionsByLeader(snap *Snapshot) map[int32][]PartitionKey {
	byLeader := map[int32][]PartitionKey{}
	for ti := range snap.Topics {
		t := &snap.Topics[ti]
		if !t.Tiered.Enabled {
			continue
		}
		for _, p := range t.Partitions {
			if p.Leader >= 0 {
				byLeader[p.Leader] = append(byLeader[p.Leader], PartitionKey{t.Name, p.ID})
			}
		}
	}
	return byLeader
}

// listTieredOffsets asks every leader, at once, for the three offsets of
// each of its partitions: three ListOffsets requests, as one request asks
// for one timestamp per partition. Each is bounded by timeout.
func listTieredOffsets(handles map[int32]*kgo.Broker, byLeader map[int32][]PartitionKey, timeout time.Duration) tieredRead {
	read := tieredRead{offsets: map[PartitionKey]partitionOffsets{}}
	leaders := make(map[int32]*kgo.Broker, len(byLeader))
	var missing readOutcome
	for id, parts := range byLeader {
		if broker, ok := handles[id]; ok {
			leaders[id] = broker
			continue
		}
		missing.failed++
		missing.err = fmt.Errorf("leader %d of %d tiered partitions is not a live broker", id, len(parts))
	}
	read.readOutcome = askBrokers(leaders, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		parts := byLeader[id]
		found := make(map[PartitionKey]partitionOffsets, len(parts))
		for _, ts := range []int64{latestTieredTimestamp, latestTimestamp, earliestTimestamp} {
			got, version, err := listOffsets(ctx, broker, parts, ts)
			if err != nil {
				return nil, false, fmt.Errorf("list offsets of %d tiered partitions led by broker %d: %w", len(parts), id, err)
			}
			if ts == latestTieredTimestamp && version < listOffsetsTieredVersion {
				return nil, false, nil
			}
			for key, offset := range got {
				o, seen := found[key]
				if !seen {
					o = partitionOffsets{end: -1, start: -1, tiered: -1}
				}
				switch ts {
				case latestTimestamp:
					o.end = offset
				case earliestTimestamp:
					o.start = offset
				default:
					o.tiered = offset
				}
				found[key] = o
			}
		}
		return func() {
			for key, o := range found {
				if o.end >= 0 && o.start >= 0 {
					read.offsets[key] = o
				}
			}
		}, true, nil
	})
	// A leader the read could not reach counts among the failures.
	read.failed += missing.failed
	if read.err == nil {
		read.err = missing.err
	}
	return read
}

// listOffsets sends one ListOffsets request for parts at timestamp ts and
// returns the offset of each partition that answered without error, and
// the version the broker answered.
func listOffsets(ctx context.Context, broker *kgo.Broker, parts []PartitionKey, ts int64) (map[PartitionKey]int64, int16, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	byTopic := map[string]int{}
	for _, p := range parts {
		i, ok := byTopic[p.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[p.Topic] = i
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = p.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p.Partition, ts
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	offsets := make(map[PartitionKey]int64, len(parts))
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if kerr.ErrorForCode(p.ErrorCode) == nil {
				offsets[PartitionKey{t.Topic, p.Partition}] = p.Offset
			}
		}
	}
	return offsets, resp.GetVersion(), nil
}
