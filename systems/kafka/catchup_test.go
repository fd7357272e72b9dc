package kafka

import (
	"testing"
	"time"
)

// The catch-up read asks each live follower about its own out-of-sync
// replicas and each live leader about those partitions once; a replica on
// a broker that is down is not asked, and one whose leader is down is
// counted unread.
func TestCatchUpRequests(t *testing.T) {
	snap := &Snapshot{Topics: []Topic{{Name: "orders", Partitions: []Partition{
		{ID: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}},    // 2 and 3 behind
		{ID: 1, Leader: 2, Replicas: []int32{2, 3, 4}, ISR: []int32{2, 3}}, // 4 behind, down
		{ID: 2, Leader: 4, Replicas: []int32{4, 3}, ISR: []int32{4}},       // 3 behind, its leader down
		{ID: 3, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
	}}}}
	live := map[int32]string{1: "a", 2: "b", 3: "c"}
	r := catchUpRequestsOf(snap, live)
	key := func(p int32) PartitionKey { return PartitionKey{Topic: "orders", Partition: p} }
	if got := r.followers[2]; len(got) != 1 || got[0] != key(0) {
		t.Errorf("broker 2 asked about %v, want orders-0", got)
	}
	if got := r.followers[3]; len(got) != 1 || got[0] != key(0) {
		t.Errorf("broker 3 asked about %v, want orders-0 (orders-2's leader is down)", got)
	}
	if got := r.leaders[1]; len(got) != 1 || got[0] != key(0) {
		t.Errorf("leader 1 asked about %v, want orders-0 once", got)
	}
	if _, asked := r.followers[4]; asked || r.unread[3] != 1 || r.unread[4] != 0 {
		t.Errorf("down broker 4 asked: %v; unread %v, want broker 3: 1", asked, r.unread)
	}
}

// Rate and ETA run from when the gap began to shrink from its peak, once
// it has shrunk for minCatchUpTiming; a read within 1% of the peak (a
// broker not fetching yet, a tiny partition caught up) does not start the
// clock, and a gap that grows again moves the peak.
func TestCatchUpRateFromPeak(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	var prev *CatchUp
	read := func(at time.Duration, records int64) BrokerCatchUp {
		c := &CatchUp{ReadAt: t0.Add(at), Brokers: map[int32]BrokerCatchUp{3: {Records: records, Partitions: 1}}}
		carryPeaks(c, prev)
		prev = c
		return c.Brokers[3]
	}
	read(0, 400)
	if b := read(time.Second, 500); b.Peak != 500 || !b.PeakAt.Equal(t0.Add(time.Second)) {
		t.Errorf("growing gap: peak %d at %v, want the new one", b.Peak, b.PeakAt)
	}
	if b := read(2*time.Second, 499); b.Peak != 500 || !b.PeakAt.Equal(t0.Add(2*time.Second)) {
		t.Errorf("within 1%% of the peak: clock at %v, want this read's", b.PeakAt)
	}
	b := read(6*time.Second, 400)
	if _, ok := b.ETA(t0.Add(6 * time.Second)); ok {
		t.Errorf("an ETA after %s of shrinking, want none before %s", 4*time.Second, minCatchUpTiming)
	}
	b = read(12*time.Second, 300) // 200 records in 10 s since the clock started
	rate, _ := b.Rate(t0.Add(12 * time.Second))
	eta, ok := b.ETA(t0.Add(12 * time.Second))
	if !ok || rate != 20 || eta != 15*time.Second {
		t.Errorf("rate %v, ETA %v (%v); want 20 records/s, 15s", rate, eta, ok)
	}
	if b := read(13*time.Second, 0); b.Records != 0 {
		t.Fatal(b)
	}
	if b := read(14*time.Second, 50); b.Peak != 50 {
		t.Errorf("a new catch-up after one that ended: peak %d, want 50", b.Peak)
	}
}

// The series and the answer count only brokers live with replicas still
// out of the ISR: a read of a broker that has since rejoined is not served.
func TestCatchUpOf(t *testing.T) {
	snap := &Snapshot{
		Brokers: []Broker{{ID: 1, Up: true}, {ID: 2, Up: true, OutOfSyncReplicas: 2}, {ID: 3, OutOfSyncReplicas: 1}},
		CatchUp: &CatchUp{Brokers: map[int32]BrokerCatchUp{1: {Records: 5}, 2: {Records: 7}, 3: {Records: 9}}},
	}
	for id, want := range map[int32]bool{1: false, 2: true, 3: false, 4: false} {
		if _, ok := snap.CatchUpOf(id); ok != want {
			t.Errorf("CatchUpOf(%d) served %v, want %v", id, ok, want)
		}
	}
}
