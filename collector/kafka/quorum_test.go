package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestQuorumFrom(t *testing.T) {
	now := time.UnixMilli(1_700_000_010_000)
	voter := func(id int32, leo, caughtUp int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		v.ReplicaID, v.LogEndOffset, v.LastCaughtUpTimestamp = id, leo, caughtUp
		return v
	}
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = 2, 7, 500
	// Voter 3 is stopped: 40 records behind, last caught up 9 s ago.
	// Voter 1's catch-up time is unknown to the leader.
	p.CurrentVoters = append(p.CurrentVoters, voter(3, 470, 1_700_000_001_000), voter(2, 510, 1_700_000_010_000), voter(1, 510, -1))
	p.Observers = append(p.Observers, voter(4, 510, -1))

	q := quorumFrom(p, now)
	if q.LeaderID != 2 || q.LeaderEpoch != 7 || q.HighWatermark != 500 || q.Observers != 1 || len(q.Voters) != 3 {
		t.Fatalf("quorum = %+v", q)
	}
	want := []QuorumVoter{
		{ID: 1, LogEndOffset: 510, Lag: 0, CaughtUpAge: -1},
		{ID: 2, LogEndOffset: 510, Lag: 0, CaughtUpAge: 0},
		{ID: 3, LogEndOffset: 470, Lag: 40, CaughtUpAge: 9 * time.Second},
	}
	for i, w := range want {
		if q.Voters[i] != w {
			t.Errorf("voter %d = %+v, want %+v", w.ID, q.Voters[i], w)
		}
	}

	p.LeaderID = -1
	if q := quorumFrom(p, now); q.LeaderID != NoLeader || q.Voters[2].Lag != 30 {
		t.Errorf("without a leader: leader %d, voter 3 lag %d; want -1 and 30 (behind the high watermark)", q.LeaderID, q.Voters[2].Lag)
	}
}
