package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// uncleanSnapshot is orders-0 led by 1 with 3 out of its ISR, orders-1
// without a leader (its ISR member 2 down) and 3 live, orders-2 without a
// leader but 2's ISR member back, orders-3 in sync.
func uncleanSnapshot(leader0 int32, brokers ...Broker) *Snapshot {
	return &Snapshot{Brokers: brokers, Topics: []Topic{{Name: "orders", Partitions: []Partition{
		{ID: 0, Leader: leader0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}},
		{ID: 1, Leader: NoLeader, Replicas: []int32{2, 3}, ISR: []int32{2}},
		{ID: 2, Leader: NoLeader, Replicas: []int32{1, 3}, ISR: []int32{1}},
		{ID: 3, Leader: 1, Replicas: []int32{1, 3}, ISR: []int32{1, 3}},
	}}}}
}

// The watched partitions with a replica out of the ISR are tracked; their
// live leaders are asked for the high watermark; a leaderless partition's
// live replicas out of its ISR and ELR are candidates, unless a live ISR
// member will be elected cleanly.
func TestUncleanRequests(t *testing.T) {
	snap := uncleanSnapshot(1)
	r := catchUpRequestsOf(snap, map[int32]string{1: "a", 3: "c"})
	key := func(p int32) PartitionKey { return PartitionKey{Topic: "orders", Partition: p} }
	if len(r.tracked) != 3 || !r.tracked[key(0)] || !r.tracked[key(1)] || !r.tracked[key(2)] {
		t.Errorf("tracked %v, want orders-0, 1 and 2", r.tracked)
	}
	if got := r.watermarks[1]; len(got) != 1 || got[0] != key(0) {
		t.Errorf("leader 1 asked for the high watermarks of %v, want orders-0", got)
	}
	if got := r.candidates[3]; len(got) != 1 || got[0] != key(1) {
		t.Errorf("broker 3 asked as a candidate of %v, want orders-1 only (orders-2's ISR member 1 is live)", got)
	}
}

// A read keeps the high watermarks its leaders answered, carries the
// others while their partition is tracked, and drops a partition back in
// sync; the estimate is what each answering candidate lacks of it.
func TestUncleanCarry(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	key := func(p int32) PartitionKey { return PartitionKey{Topic: "orders", Partition: p} }
	live := map[int32]string{1: "a", 3: "c"}
	up := []Broker{{ID: 1, Up: true}, {ID: 2}, {ID: 3, Up: true}}

	// orders-0 led by 1, which answers 1500.
	r := catchUpRequestsOf(uncleanSnapshot(1, up...), live)
	first := carryOnly(r, nil, t0)
	first.keepUnclean(r, map[int32]map[PartitionKey]int64{1: {key(0): 1500}}, nil)
	if w := first.Watermarks[key(0)]; w.Offset != 1500 || !w.ReadAt.Equal(t0) {
		t.Fatalf("orders-0's watermark %+v, want 1500 at t0", w)
	}

	// Leader 1 dies: orders-0 has no leader; 3 is its candidate, at 1200.
	snap := uncleanSnapshot(NoLeader, Broker{ID: 1}, Broker{ID: 2}, Broker{ID: 3, Up: true})
	r = catchUpRequestsOf(snap, map[int32]string{3: "c"})
	second := carryOnly(r, first, t0.Add(time.Second))
	second.keepUnclean(r, nil, map[int32]map[PartitionKey]int64{3: {key(0): 1200}})
	snap.CatchUp = second
	estimates := snap.UncleanEstimates()
	if len(estimates) != 3 {
		t.Fatalf("%d estimates, want orders-0, 1 and 2 (1 is down now): %+v", len(estimates), estimates)
	}
	e := estimates[0]
	if n, ok := e.Behind(e.Candidates[0]); !ok || n != 300 || e.Candidates[0].Broker != 3 {
		t.Errorf("orders-0: broker %d behind %d (%v), want broker 3 300 records", e.Candidates[0].Broker, n, ok)
	}
	if _, ok := estimates[1].Behind(estimates[1].Candidates[0]); ok || estimates[1].WatermarkKnown {
		t.Errorf("orders-1, whose high watermark was never read: %+v, want it unknown", estimates[1])
	}
	text := e.Text(t0.Add(3 * time.Second))
	if want := "orders/0 has no clean leader: electing broker 3 would lose at least 300 records (its high watermark was 1500 when last read, 3s ago"; !strings.HasPrefix(text, want) {
		t.Errorf("text %q, want it to begin %q", text, want)
	}
	if text := estimates[1].Text(t0); !strings.Contains(text, "unknown") {
		t.Errorf("orders-1's text %q does not say the loss is unknown", text)
	}

	// Back in sync: dropped.
	snap.Topics[0].Partitions[0] = Partition{ID: 0, Leader: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
	r = catchUpRequestsOf(snap, map[int32]string{3: "c"})
	if third := carryOnly(r, second, t0.Add(2*time.Second)); len(third.Watermarks) != 0 {
		t.Errorf("watermarks %v after orders-0 is back in sync, want none", third.Watermarks)
	}
}

// The series are served for a partition without a clean leader whose
// high watermark is known, in every partition_metrics mode but none, and
// the answers note the estimate.
func TestUncleanServed(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	snap := uncleanSnapshot(NoLeader, Broker{ID: 1}, Broker{ID: 2}, Broker{ID: 3, Up: true})
	snap.ReadAt = t0.Add(2 * time.Second)
	key := PartitionKey{Topic: "orders", Partition: 0}
	snap.CatchUp = &CatchUp{ReadAt: t0, Watermarks: map[PartitionKey]Watermark{key: {Offset: 1500, ReadAt: t0}},
		Candidates: map[PartitionKey]map[int32]int64{key: {3: 1450}}}
	for _, mode := range []settings.PartitionMetrics{settings.PartitionMetricsFull, settings.PartitionMetricsLean, settings.PartitionMetricsUnhealthy, settings.PartitionMetricsNone} {
		var sink lineSink
		emitSnapshot(&sink, "c", snap, mode)
		text := sink.String()
		want := `kafka_partition_unclean_candidate_records_behind{broker="3",kafka_cluster="c",partition="0",topic="orders"} 50`
		if got := strings.Contains(text, want); got != (mode != settings.PartitionMetricsNone) {
			t.Errorf("%s: served %v, want %v:\n%s", mode, got, mode != settings.PartitionMetricsNone, text)
		}
		if mode != settings.PartitionMetricsNone && !strings.Contains(text, `kafka_partition_last_high_watermark{kafka_cluster="c",partition="0",topic="orders"} 1500`) {
			t.Errorf("%s: no last high watermark", mode)
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "kafka_partition_unclean_candidate") || strings.HasPrefix(line, "kafka_partition_last_high_") {
				if !strings.Contains(line, `partition="0"`) {
					t.Errorf("%s: %s, but only orders-0's high watermark is known", mode, line)
				}
			}
		}
	}
	snap.Budget = &Budget{Brokers: []StopEffect{{ID: "3", Members: []int32{3}}}}
	a, err := answerBudget(snap, budget.Question{Scope: ScopeBroker, ID: "3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Notes) != 3 || !strings.Contains(a.Notes[0], "electing broker 3 would lose at least 50 records") || a.Facts["partitions_without_clean_leader"] != 3 {
		t.Errorf("answer notes %q, facts %v", a.Notes, a.Facts)
	}
}
