package kafka

import (
	"slices"
	"testing"
)

func TestUntieredRecordsOfAPartition(t *testing.T) {
	for _, c := range []struct {
		name string
		o    partitionOffsets
		want int64
	}{
		{"segments tiered, the active one not", partitionOffsets{end: 30000, start: 0, tiered: 29914}, 85},
		{"nothing tiered yet: everything from the log start", partitionOffsets{end: 500, start: 100, tiered: -1}, 400},
		{"everything tiered", partitionOffsets{end: 500, start: 0, tiered: 499}, 0},
		{"local retention deleted tiered segments: the log start is above the tiered offset", partitionOffsets{end: 900, start: 600, tiered: 700}, 199},
		{"empty", partitionOffsets{end: 0, start: 0, tiered: -1}, 0},
	} {
		if got := c.o.untiered(); got != c.want {
			t.Errorf("%s: %+v untiered = %d, want %d", c.name, c.o, got, c.want)
		}
	}
}

// Only topics with tiered storage are read, partition by partition from
// their leader; a partition without a leader cannot be.
func TestTieredPartitionsByLeader(t *testing.T) {
	rs := []int32{1, 2, 3}
	s := snapshotOf(rs, part{1, rs, rs}, part{2, rs, rs}, part{-1, rs, nil})
	s.Topics[0].Tiered.Enabled = false
	if got := tieredPartitionsByLeader(s); len(got) != 0 {
		t.Fatalf("no tiered topic, yet %v", got)
	}
	s.Topics[0].Tiered.Enabled = true
	got := tieredPartitionsByLeader(s)
	if len(got) != 2 || !slices.Equal(got[1], []PartitionKey{{"t", 0}}) || !slices.Equal(got[2], []PartitionKey{{"t", 1}}) {
		t.Errorf("by leader = %v, want t/0 on 1, t/1 on 2, leaderless t/2 left out", got)
	}
}
