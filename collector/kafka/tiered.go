package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
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

// tieredFetchVersion is the Fetch version (API 1) the tiered read sends:
// the last that names topics (v13 wants topic IDs, which the refresh does
// not read), served by every Kafka since 2.7 and kept by 4.x (KIP-896).
const (
	apiFetch           = 1
	tieredFetchVersion = 12
)

// tieredMaxVersions are the request versions of the tiered read's client.
var tieredMaxVersions = func() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(apiApiVersions, 3)
	v.SetMaxKeyVersion(apiFetch, tieredFetchVersion)
	return v
}()

// batchHeaderBytes is what the tiered read fetches of a partition: the
// start of the record batch holding its first untiered offset, up to the
// batch's timestamps (v2 batch header: base offset 8, length 4, leader
// epoch 4, magic 1, CRC 4, attributes 2, last offset delta 4, first
// timestamp 8, max timestamp 8). A broker cuts a batch short at the
// partition's byte limit, but for the first partition of the answer, which
// it sends whole (KIP-74). batchTimestampsEnd is where the max timestamp
// ends, all batchTimestamp reads.
const (
	batchHeaderBytes   = 61
	batchTimestampsEnd = 43
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
	// Oldest is the timestamp of the oldest record only local replicas
	// hold: the first untiered record of each partition, the earliest of
	// them. Zero when no partition holds untiered records, or when one
	// that does could not tell (its fetch failed, or its producer set no
	// timestamp): a partial minimum could be younger than the truth.
	Oldest time.Time
}

// partitionOffsets are the offsets a tiered read found for one partition;
// tiered is -1 when nothing of it is tiered. firstUntieredMs is the
// timestamp (Unix ms) of its first untiered record, -1 when unknown or
// when it has none.
type partitionOffsets struct {
	end, start, tiered int64
	firstUntieredMs    int64
}

// firstUntiered is the partition's first offset not copied to tiered
// storage.
func (o partitionOffsets) firstUntiered() int64 { return max(o.tiered+1, o.start) }

// untiered is the partition's records above its newest tiered offset.
func (o partitionOffsets) untiered() int64 { return max(0, o.end-o.firstUntiered()) }

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
		r.maxVersions = tieredMaxVersions
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
		t.Untiered = untieredRecords(t, r.last.offsets)
	}
}

// untieredRecords sums what a read found of t's partitions; nil when it
// found none of them.
func untieredRecords(t *Topic, offsets map[PartitionKey]partitionOffsets) *UntieredRecords {
	var u UntieredRecords
	oldest, oldestKnown := int64(-1), true
	for _, p := range t.Partitions {
		o, ok := offsets[PartitionKey{t.Name, p.ID}]
		if !ok {
			continue
		}
		u.Records += o.untiered()
		u.Partitions++
		switch {
		case o.untiered() == 0:
		case o.firstUntieredMs < 0:
			oldestKnown = false
		case oldest < 0 || o.firstUntieredMs < oldest:
			oldest = o.firstUntieredMs
		}
	}
	if u.Partitions == 0 {
		return nil
	}
	if oldestKnown && oldest >= 0 {
		u.Oldest = time.UnixMilli(oldest)
	}
	return &u
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
// each of its partitions (three ListOffsets requests, as one request asks
// for one timestamp per partition), then for the timestamp of the first
// untiered record of those that hold some (one Fetch). Each leader's
// requests are bounded by timeout together.
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
					o = partitionOffsets{end: -1, start: -1, tiered: -1, firstUntieredMs: -1}
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
		// Without the timestamps the offsets still tell the records: a
		// failed Fetch leaves the timestamps unknown, and is not an error
		// of the read (a leader change between the requests does that).
		firstUntieredTimestamps(ctx, broker, found)
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

// firstUntieredTimestamps sets the timestamp of the first untiered record
// of each partition in found that holds untiered records, from one Fetch
// of the start of the batch at that offset. A partition whose answer has
// an error or no batch keeps -1.
func firstUntieredTimestamps(ctx context.Context, broker *kgo.Broker, found map[PartitionKey]partitionOffsets) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0 // what the log holds now, without waiting for more
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1 // no fetch session: a single fetch
	byTopic := map[string]int{}
	for key, o := range found {
		if o.end < 0 || o.start < 0 || o.untiered() == 0 {
			continue
		}
		i, ok := byTopic[key.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[key.Topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic = key.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.PartitionMaxBytes = key.Partition, o.firstUntiered(), batchHeaderBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	if len(req.Topics) == 0 {
		return
	}
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		return
	}
	resp := kresp.(*kmsg.FetchResponse)
	if kerr.ErrorForCode(resp.ErrorCode) != nil {
		return
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			key := PartitionKey{t.Topic, p.Partition}
			o, ok := found[key]
			if !ok || kerr.ErrorForCode(p.ErrorCode) != nil {
				continue
			}
			if ms, err := batchTimestamp(p.RecordBatches, o.firstUntiered()); err == nil {
				o.firstUntieredMs = ms
				found[key] = o
			}
		}
	}
}

// batchTimestamp reads the timestamp of the records at offset from the
// start of a fetched record set: the first batch's first timestamp, or,
// when the broker stamps batches with their append time, its max
// timestamp, which is that time (the first timestamp stays the
// producer's). The batch must hold offset: a batch ending before it, or
// starting after it, would date other records.
func batchTimestamp(records []byte, offset int64) (int64, error) {
	if len(records) < batchTimestampsEnd {
		return -1, fmt.Errorf("record set of %d bytes: no batch header", len(records))
	}
	be := binary.BigEndian
	base := int64(be.Uint64(records[0:]))
	if magic := records[16]; magic != 2 {
		return -1, fmt.Errorf("record batch magic %d: only v2 batches carry timestamps here", magic)
	}
	attributes := be.Uint16(records[21:])
	last := base + int64(int32(be.Uint32(records[23:])))
	if offset < base || offset > last {
		return -1, fmt.Errorf("batch holds offsets %d to %d, not %d", base, last, offset)
	}
	first, maxTs := int64(be.Uint64(records[27:])), int64(be.Uint64(records[35:]))
	const logAppendTime = 0x08
	ts := first
	if attributes&logAppendTime != 0 {
		ts = maxTs
	}
	if ts < 0 {
		return -1, errors.New("the batch has no timestamp")
	}
	return ts, nil
}
