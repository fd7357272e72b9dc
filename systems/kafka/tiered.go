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

	"github.com/failover-exporter/failover_exporter/systems/kafka/client"
)

// The ListOffsets timestamps a tiered read asks each partition's leader
// for: the high watermark, the log start offset, the first offset its
// local log holds (KIP-405, ListOffsets v8), and the newest offset already
// copied to tiered storage (KIP-1005, ListOffsets v9, Kafka 3.9).
const (
	latestTimestamp        int64 = -1
	earliestTimestamp      int64 = -2
	earliestLocalTimestamp int64 = -4
	latestTieredTimestamp  int64 = -5
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
	v := franzVersions()
	v.SetMaxKeyVersion(apiFetch, tieredFetchVersion)
	return v
}()

// maxTimestampFetches bounds the Fetch requests one tiered read sends each
// leader for the time of a first untiered record. A Fetch answers one
// partition's first batch whole (KIP-74: from v3 on, a later partition
// whose first batch exceeds its byte limit gets nothing), so each partition
// takes a request of its own, and a batch of up to max.message.bytes; a
// record's time at an offset never changes, so a partition is asked again
// only when its first untiered offset moved (a segment was copied). A
// cluster with many tiered partitions learns their times over several
// reads; until then their topic's oldest record is unknown.
const maxTimestampFetches = 16

// batchTimestampsEnd is where a v2 record batch header's timestamps end
// (base offset 8, length 4, leader epoch 4, magic 1, CRC 4, attributes 2,
// last offset delta 4, first timestamp 8, max timestamp 8), all
// batchTimestamp reads.
const batchTimestampsEnd = 43

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
	// of the topic's partitions could not tell (its leader did not answer,
	// its fetch failed or is yet to come, or its producer set no
	// timestamp): a partial minimum could be younger than the truth.
	Oldest time.Time
}

// partitionOffsets are the offsets a tiered read found for one partition;
// tiered is -1 when nothing of it is tiered, local is the first offset of
// its local log. firstUntieredMs is the timestamp (Unix ms) of its first
// untiered record, -1 when unknown or when it has none.
type partitionOffsets struct {
	end, start, local, tiered int64
	firstUntieredMs           int64
}

// consistent reports whether the leader's offsets account for every
// record: each is local or tiered. A leader that took the partition over
// knows its newest tiered offset only once its remote log task ran (every
// remote.log.manager.task.interval.ms, 30 s by default); until then it
// answers -1, and records only tiered storage holds (below the local log)
// would count as untiered. The limit: while the local log still holds
// everything (no local retention deleted a copied segment yet), such an
// answer cannot be told from "nothing tiered", and counts the copied
// records too.
func (o partitionOffsets) consistent() bool { return o.tiered+1 >= o.local }

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
		// The last read's findings, which the next one only reads: a
		// finished read's map is never written again.
		var known map[PartitionKey]partitionOffsets
		if r.last != nil {
			known = r.last.offsets
		}
		err := r.start(s.cfg, leaders, func(handles map[int32]*kgo.Broker) tieredRead {
			return listTieredOffsets(handles, byLeader, known, timeout)
		})
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
	if oldestKnown && oldest >= 0 && u.Partitions == len(t.Partitions) {
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

// listTieredOffsets asks every leader, at once, for the four offsets of
// each of its partitions (four ListOffsets requests, as one request asks
// for one timestamp per partition), then for the time of the first
// untiered record of those that hold some: from known, the last read's
// findings, while that offset did not move, else with a Fetch. Each
// leader's requests are bounded by timeout together. known is only read.
func listTieredOffsets(handles map[int32]*kgo.Broker, byLeader map[int32][]PartitionKey, known map[PartitionKey]partitionOffsets, timeout time.Duration) tieredRead {
	read := tieredRead{offsets: map[PartitionKey]partitionOffsets{}}
	leaders, missing := liveLeaders(handles, byLeader, func(parts []PartitionKey) int { return len(parts) }, "tiered partitions")
	read.readOutcome = askBrokers(leaders, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		parts := byLeader[id]
		found, supported, err := partitionOffsetsOf(ctx, broker, parts)
		if err != nil {
			return nil, false, fmt.Errorf("list offsets of %d tiered partitions led by broker %d: %w", len(parts), id, err)
		}
		if !supported {
			return nil, false, nil
		}
		// Without the times the offsets still tell the records: a failed
		// Fetch leaves a time unknown, and is not an error of the read (a
		// leader change between the requests does that).
		firstUntieredTimes(ctx, broker, found, known)
		return func() {
			for key, o := range found {
				read.offsets[key] = o
			}
		}, true, nil
	})
	// A leader the read could not reach counts among the failures.
	read.readOutcome = read.plus(missing)
	return read
}

// partitionOffsetsOf asks broker for the four offsets of parts; supported
// is false when it does not know the newest tiered offset. Partitions that
// lack one of them, or whose offsets are not consistent, are left out.
func partitionOffsetsOf(ctx context.Context, broker *kgo.Broker, parts []PartitionKey) (found map[PartitionKey]partitionOffsets, supported bool, err error) {
	found = make(map[PartitionKey]partitionOffsets, len(parts))
	for _, key := range parts {
		found[key] = partitionOffsets{end: -1, start: -1, local: -1, tiered: -2, firstUntieredMs: -1}
	}
	for _, ts := range []int64{latestTieredTimestamp, latestTimestamp, earliestTimestamp, earliestLocalTimestamp} {
		got, version, err := listOffsets(ctx, broker, parts, ts)
		if err != nil {
			return nil, false, err
		}
		if ts == latestTieredTimestamp && version < listOffsetsTieredVersion {
			return nil, false, nil
		}
		for key, offset := range got {
			o, ok := found[key]
			if !ok {
				continue
			}
			switch ts {
			case latestTimestamp:
				o.end = offset
			case earliestTimestamp:
				o.start = offset
			case earliestLocalTimestamp:
				o.local = offset
			default:
				o.tiered = offset
			}
			found[key] = o
		}
	}
	for key, o := range found {
		// tiered -2: the partition's answer had an error (-1 is "none").
		if o.end < 0 || o.start < 0 || o.local < 0 || o.tiered < -1 || !o.consistent() {
			delete(found, key)
		}
	}
	return found, true, nil
}

// listOffsets sends one ListOffsets request for parts at timestamp ts and
// returns the offset of each partition that answered without error, and
// the version the broker answered.
func listOffsets(ctx context.Context, broker *kgo.Broker, parts []PartitionKey, ts int64) (map[PartitionKey]int64, int16, error) {
	req := kafkaclient.ListOffsetsRequest(parts, func(p PartitionKey) (string, int32) { return p.Topic, p.Partition }, ts)
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

// firstUntieredTimes sets the time of the first untiered record of each
// partition in found that holds untiered records: the one known found
// when its first untiered offset was the same, else fetched, up to
// maxTimestampFetches partitions.
func firstUntieredTimes(ctx context.Context, broker *kgo.Broker, found, known map[PartitionKey]partitionOffsets) {
	fetches := 0
	for key, o := range found {
		if o.untiered() == 0 {
			continue
		}
		if k, ok := known[key]; ok && k.firstUntieredMs >= 0 && k.firstUntiered() == o.firstUntiered() {
			o.firstUntieredMs = k.firstUntieredMs
			found[key] = o
			continue
		}
		if fetches == maxTimestampFetches || ctx.Err() != nil {
			continue
		}
		fetches++
		if ms, err := fetchBatchTimestamp(ctx, broker, key, o.firstUntiered()); err == nil {
			o.firstUntieredMs = ms
			found[key] = o
		}
	}
}

// fetchBatchTimestamp fetches the record batch holding offset (one
// partition, so the broker sends its first batch whole however small the
// byte limits) and returns the time of the records there.
func fetchBatchTimestamp(ctx context.Context, broker *kgo.Broker, key PartitionKey, offset int64) (int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0 // what the log holds now, without waiting for more
	req.MinBytes = 1
	req.MaxBytes = 1      // the first batch comes whole anyway, and nothing more
	req.SessionEpoch = -1 // no fetch session: a single fetch
	t := kmsg.NewFetchRequestTopic()
	t.Topic = key.Topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes = key.Partition, offset, 1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		return -1, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic != key.Topic || rp.Partition != key.Partition {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return -1, err
			}
			return batchTimestamp(rp.RecordBatches, offset)
		}
	}
	return -1, fmt.Errorf("fetch of %s/%d: no answer for the partition", key.Topic, key.Partition)
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
