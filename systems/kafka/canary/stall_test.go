package kafkacanary

import (
	"errors"
	"testing"
	"time"
)

// The stall clock runs from the last acknowledgement before a failed
// write to the first after, and is observed by the leader that
// acknowledged the last write before; failures with nothing acknowledged
// before date nothing, and a round that could not write counts as a
// failed write.
func TestStallClock(t *testing.T) {
	s := &source{lastAck: map[int32]Stall{}, stalled: map[int32]bool{}}
	t0 := time.Unix(1000, 0)
	next := (*Snapshot)(nil).clone()
	ok := func(p, leader int32, at time.Duration) produceResult {
		return produceResult{partition: p, leader: leader, acked: t0.Add(at)}
	}
	failed := func(p, leader int32) produceResult {
		return produceResult{partition: p, leader: leader, errKind: "timeout", err: errors.New("timeout")}
	}
	// Partition 1 fails before any acknowledgement: nothing to date.
	s.stall(next, failed(1, 2))
	s.stall(next, ok(1, 2, time.Second))
	// Partition 0: acknowledged by 1 at 0.5 s, two failures, then 3
	// acknowledges at 4.2 s.
	s.stall(next, ok(0, 1, 500*time.Millisecond))
	s.stall(next, failed(0, 1))
	s.stall(next, failed(0, -1))
	s.stall(next, ok(0, 3, 4200*time.Millisecond))
	h := next.Stalls[1]
	if h == nil || h.Count != 1 || h.Sum != 3.7 || len(next.Stalls) != 1 {
		t.Fatalf("stalls %+v, want one of 3.7 s by broker 1", next.Stalls)
	}
	if st := next.LastStall[0]; st.Leader != 1 || st.After != 3 || !st.From.Equal(t0.Add(500*time.Millisecond)) {
		t.Errorf("last stall %+v", st)
	}
	// Acknowledged writes in a row are no stall.
	s.stall(next, ok(0, 3, 5*time.Second))
	if next.Stalls[1].Count != 1 || next.Stalls[3] != nil {
		t.Errorf("stalls %+v after two acknowledged writes, want the one", next.Stalls)
	}
	// A round that could not write: every partition acknowledged before
	// stalls until its next acknowledgement.
	for p := range s.lastAck {
		s.stalled[p] = true
	}
	s.stall(next, ok(1, 2, 9*time.Second))
	if h := next.Stalls[2]; h == nil || h.Count != 1 || h.Sum != 8 {
		t.Errorf("stalls %+v, want one of 8 s by broker 2 after a failed round", next.Stalls)
	}
}
