package kafka

import "testing"

// A partition without a leader takes no acks=all writes, whatever its ISR:
// it is under min ISR, as kafka-topics.sh --under-min-isr-partitions says.
// Without ELR (Kafka 3.x, or ELR off) the ISR keeps its last member, so
// the ISR size alone would say otherwise.
func TestUnderMinISR(t *testing.T) {
	for _, c := range []struct {
		name   string
		leader int32
		isr    []int32
		minISR int
		want   bool
	}{
		{"in sync", 1, []int32{1, 2, 3}, 2, false},
		{"at min ISR", 1, []int32{1, 2}, 2, false},
		{"below min ISR", 1, []int32{1}, 2, true},
		{"offline, last member kept (no ELR)", NoLeader, []int32{1}, 1, true},
		{"offline, ISR emptied (ELR)", NoLeader, nil, 1, true},
		{"offline, min ISR unknown", NoLeader, []int32{1}, 0, false},
	} {
		p := Partition{Leader: c.leader, Replicas: []int32{1, 2, 3}, ISR: c.isr}
		if got := p.UnderMinISR(c.minISR); got != c.want {
			t.Errorf("%s: UnderMinISR(%d) = %v, want %v", c.name, c.minISR, got, c.want)
		}
	}
}
