package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// offsetsAnswer is a ListOffsets answer with the offsets of keys, in
// their order.
func offsetsAnswer(keys []PartitionKey, offsets ...int64) *kmsg.ListOffsetsResponse {
	resp := kmsg.NewPtrListOffsetsResponse()
	for i, key := range keys {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != key.Topic {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = key.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListOffsetsResponseTopicPartition()
		rp.Partition, rp.Offset = key.Partition, offsets[i]
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return resp
}

// A gap is stalled only when an earlier read found the LSO at the same
// offset: a committing partition's LSO moves between reads.
func TestReadCommittedGapStallCarries(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a, b, c := PartitionKey{"t", 0}, PartitionKey{"t", 1}, PartitionKey{"t", 2}
	abc := []PartitionKey{a, b, c}
	first, answered := gapsOf(offsetsAnswer(abc, 10, 20, 5), offsetsAnswer(abc, 4, 20, 5), nil, t0)
	if answered != 3 || len(first) != 1 || first[a].Records != 6 || first[a].Stalled(t0) {
		t.Fatalf("first read: answered %d, gaps %+v; want one new gap of 6 records on t-0, not stalled", answered, first)
	}
	read := &TransactionRead{ReadAt: t0, Gaps: first}
	t1 := t0.Add(time.Second)
	// t-0 stays at 4 (stalled since t0); t-1 gains a gap; t-2 is not in
	// the LSO answer (a leader change between the two), which is also in
	// another order.
	second, answered := gapsOf(offsetsAnswer(abc, 12, 25, 9), offsetsAnswer([]PartitionKey{b, a}, 21, 4), read, t1)
	if answered != 2 {
		t.Errorf("answered %d, want 2: a partition missing from one answer is not answered", answered)
	}
	if g := second[a]; !g.Stalled(t1) || !g.StalledSince.Equal(t0) || g.Records != 8 {
		t.Errorf("t-0: %+v, want stalled since %s with 8 records", g, t0)
	}
	if g := second[b]; g.Stalled(t1) || g.Records != 4 {
		t.Errorf("t-1: %+v, want a new gap of 4, not stalled", g)
	}
	// The LSO moved: the stall starts again.
	third, _ := gapsOf(offsetsAnswer([]PartitionKey{a}, 12), offsetsAnswer([]PartitionKey{a}, 5), &TransactionRead{ReadAt: t1, Gaps: second}, t1.Add(time.Second))
	if g := third[a]; g.Stalled(t1.Add(time.Second)) {
		t.Errorf("t-0 after its LSO moved: %+v, want not stalled", g)
	}
	// A high watermark read before the LSO may be behind it: no gap.
	if gaps, _ := gapsOf(offsetsAnswer([]PartitionKey{a}, 10), offsetsAnswer([]PartitionKey{a}, 11), nil, t0); len(gaps) != 0 {
		t.Errorf("LSO past the earlier high watermark: gaps %+v, want none", gaps)
	}
	// A partition whose answer has an error is not answered.
	errored := offsetsAnswer([]PartitionKey{a}, 3)
	errored.Topics[0].Partitions[0].ErrorCode = 6 // NOT_LEADER_OR_FOLLOWER
	if gaps, answered := gapsOf(offsetsAnswer([]PartitionKey{a}, 10), errored, nil, t0); len(gaps) != 0 || answered != 0 {
		t.Errorf("an LSO answered with an error: gaps %+v, answered %d; want none", gaps, answered)
	}
}

// find-hanging's rule: an open transaction idle past the timeout hangs
// when no coordinator lists its producer, its coordinator does not know
// its id, or the coordinator's transaction leaves out the partition.
func TestHangingRule(t *testing.T) {
	at := time.Unix(10000, 0)
	key := PartitionKey{"t", 0}
	open := func(pid int64, idle time.Duration) openTransaction {
		p := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		p.ProducerID, p.CurrentTxnStartOffset, p.LastTimestamp = pid, 7, at.Add(-idle).UnixMilli()
		return openTransaction{partition: key, producer: p}
	}
	all := []openTransaction{open(1, 20*time.Minute), open(2, 20*time.Minute), open(3, 20*time.Minute), open(4, 20*time.Minute), open(5, time.Minute)}
	candidates := hangingCandidates(all, 15*time.Minute, at)
	if len(candidates) != 4 {
		t.Fatalf("%d candidates, want the 4 idle longer than 15 minutes", len(candidates))
	}
	if got := hangingCandidates(all, 0, at); got != nil {
		t.Errorf("an unknown timeout gives candidates %v, want none", got)
	}
	ids := map[int64]string{2: "unknown-id", 3: "elsewhere", 4: "ongoing"}
	described := map[string]transactionDescription{
		"elsewhere": {state: "Ongoing", partitions: map[PartitionKey]bool{{"t", 1}: true}},
		"ongoing":   {state: "Ongoing", partitions: map[PartitionKey]bool{key: true}},
	}
	hanging := hangingOf(candidates, ids, described)
	why := map[int64]string{}
	for _, h := range hanging {
		why[h.ProducerID] = h.Why
	}
	if len(hanging) != 3 || !strings.Contains(why[1], "no coordinator") || !strings.Contains(why[2], "unknown to its coordinator") || !strings.Contains(why[3], "does not include") {
		t.Errorf("hanging %+v, want producers 1 (unlisted), 2 (unknown id), 3 (other partitions); 4 is ongoing there", hanging)
	}
	if text := hanging[0].text(at); !strings.Contains(text, "20m0s ago") {
		t.Errorf("event text %q, want the idle time", text)
	}
}

// A client-chosen transactional id is quoted and cut in events.
func TestHangingTextQuotesTheID(t *testing.T) {
	h := HangingTransaction{ProducerID: 9, TransactionalID: "a\"b\n" + strings.Repeat("x", 300), LastWrite: time.Unix(0, 0)}
	text := h.text(time.Unix(60, 0))
	if strings.Contains(text, "\n") || len(text) > 400 {
		t.Errorf("event text %q: want the id quoted and cut", text)
	}
}

// The per-partition series are served for stalled partitions only, and
// none with partition_metrics none; kafka_hanging_transactions only when
// the read could tell.
func TestTransactionSeries(t *testing.T) {
	at := time.Unix(2000, 0)
	r := &TransactionRead{ReadAt: at, MaxTimeout: 15 * time.Minute, Complete: true, Gaps: map[PartitionKey]ReadCommittedGap{
		{"t", 0}: {Records: 3, LSO: 10, StalledSince: at.Add(-30 * time.Second), Open: 1, OldestIdle: 31 * time.Second},
		{"t", 1}: {Records: 2, LSO: 4, StalledSince: at, Open: -1},
	}}
	for _, tc := range []struct {
		mode         settings.PartitionMetrics
		partitions   int
		hangingKnown bool
	}{{settings.PartitionMetricsLean, 1, false}, {settings.PartitionMetricsFull, 1, true}, {settings.PartitionMetricsNone, 0, true}} {
		r.HangingKnown = tc.hangingKnown
		sink := seriesSink{}
		emitTransactions(sink, "main", r, tc.mode)
		if got := sink[`kafka_partition_read_committed_stalled_seconds{kafka_cluster="main",partition="0",topic="t"}`]; tc.partitions > 0 && got != 30 {
			t.Errorf("%s: stalled seconds %v, want 30", tc.mode, got)
		}
		n := 0
		for key := range sink {
			if strings.HasPrefix(key, "kafka_partition_read_committed_gap_records{") {
				n++
			}
		}
		if n != tc.partitions {
			t.Errorf("%s: %d gap series, want %d", tc.mode, n, tc.partitions)
		}
		if got, want := sink[`kafka_read_committed_gap_partitions{kafka_cluster="main"}`], 2.0; got != want {
			t.Errorf("%s: gap partitions %v, want %v", tc.mode, got, want)
		}
		r.Complete = false
		partial := seriesSink{}
		emitTransactions(partial, "main", r, tc.mode)
		r.Complete = true
		if _, ok := partial[`kafka_read_committed_gap_partitions{kafka_cluster="main"}`]; ok {
			t.Errorf("%s: gap partitions served from a read some leader did not answer", tc.mode)
		}
		if _, ok := sink[`kafka_hanging_transactions{kafka_cluster="main"}`]; ok != tc.hangingKnown {
			t.Errorf("%s: kafka_hanging_transactions served %v, want %v", tc.mode, ok, tc.hangingKnown)
		}
	}
}

// Hanging transactions are listed when found and when gone, only between
// two reads that both could tell.
func TestHangingEvents(t *testing.T) {
	at := time.Unix(3000, 0)
	h := HangingTransaction{Partition: PartitionKey{"t", 0}, ProducerID: 5, LastWrite: at.Add(-time.Hour), Why: "no coordinator lists its producer"}
	snap := func(r *TransactionRead) *Snapshot { return &Snapshot{Transactions: r} }
	none := &TransactionRead{ReadAt: at, HangingKnown: true}
	found := &TransactionRead{ReadAt: at.Add(time.Second), HangingKnown: true, Hanging: []HangingTransaction{h}}
	unknown := &TransactionRead{ReadAt: at.Add(2 * time.Second)}
	gone := &TransactionRead{ReadAt: at.Add(3 * time.Second), HangingKnown: true}

	next := snap(found)
	carryTransactions(snap(none), next)
	if evs := next.Events.All(); len(evs) != 1 || evs[0].Kind != EventTransactionHanging || !strings.Contains(evs[0].After, "producer 5") {
		t.Fatalf("events %+v, want one transaction_hanging of producer 5", evs)
	}
	next = snap(unknown)
	carryTransactions(snap(found), next)
	if evs := next.Events.All(); len(evs) != 0 {
		t.Errorf("a read that could not tell lists %+v, want nothing", evs)
	}
	next = snap(gone)
	carryTransactions(snap(found), next)
	if evs := next.Events.All(); len(evs) != 1 || evs[0].Kind != EventTransactionHangingEnded {
		t.Errorf("events %+v, want one transaction_hanging_ended", evs)
	}
}
