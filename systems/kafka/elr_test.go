package kafka

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestNoCleanLeader(t *testing.T) {
	cases := []struct {
		name string
		p    Partition
		want bool
	}{
		{"leader", Partition{Leader: 1, ISR: []int32{1}}, false},
		{"no leader, last leader kept in ISR (ELR off)", Partition{Leader: NoLeader, ISR: []int32{2}}, false},
		{"no leader, ELR members may return", Partition{Leader: NoLeader, rare: &partitionRare{elr: []int32{2, 3}}}, false},
		{"no leader, no ISR, no ELR", Partition{Leader: NoLeader, rare: &partitionRare{lastKnownELR: []int32{3}}}, true},
	}
	for _, tc := range cases {
		if got := tc.p.NoCleanLeader(); got != tc.want {
			t.Errorf("%s: NoCleanLeader = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Only topics with a partition below min ISR are asked for their ELR, so a
// healthy cluster costs no DescribeTopicPartitions request at all.
func TestTopicsBelowMinISR(t *testing.T) {
	md := threeBrokerMetadata(1, 2, 3)
	md.AddTopicPartition("healthy", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil, sarama.ErrNoError)
	md.AddTopicPartition("at-min", 0, 1, []int32{1, 2, 3}, []int32{1, 2}, nil, sarama.ErrNoError)
	md.AddTopicPartition("below", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil, sarama.ErrNoError)
	md.AddTopicPartition("below", 1, 1, []int32{1, 2, 3}, []int32{1}, nil, sarama.ErrNoError)
	md.AddTopicPartition("offline", 0, -1, []int32{1, 2}, nil, nil, sarama.ErrLeaderNotAvailable)
	md.AddTopicPartition("unknown-min-isr", 0, 1, []int32{1, 2, 3}, []int32{1}, nil, sarama.ErrNoError)
	configs := TopicConfigCache{MinISR: map[string]int{"healthy": 2, "at-min": 2, "below": 2, "offline": 2}}
	s := buildSnapshot(md, all, configs, nil, time.Now())
	if got := topicsBelowMinISR(s); !slices.Equal(got, []string{"below", "offline"}) {
		t.Errorf("topicsBelowMinISR = %v, want [below offline]", got)
	}
	if got := topicsBelowMinISR(snapshotOf([]int32{1, 2, 3}, part{1, []int32{1, 2, 3}, []int32{1, 2, 3}})); len(got) != 0 {
		t.Errorf("a healthy cluster would be asked about %v", got)
	}
}

// Against a broker whose ApiVersions answer lacks DescribeTopicPartitions
// (Kafka before 3.9) and DescribeQuorum (ZooKeeper mode), with a partition
// below min ISR: the refresh succeeds, the ELR and quorum series are
// absent, and debug logs say why.
func TestELRAndQuorumAbsentWhenTheClusterLacksTheAPIs(t *testing.T) {
	m := newMockCluster(t)
	m.serve(map[string]string{"a": "2"}) // RF 1: ISR 1 is below min ISR 2
	var logs strings.Builder
	src, _ := testSourceLogging(t, m.broker.Addr(), log.NewLogfmtLogger(&logs))
	snap, err := src.Refresh(context.Background(), nil)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if snap.ELRKnown {
		t.Error("ELRKnown = true for a cluster without DescribeTopicPartitions")
	}
	if !snap.Topics[0].Partitions[0].UnderMinISR(2) {
		t.Fatalf("test setup: partition a/0 should be below min ISR: %+v", snap.Topics[0])
	}
	if !strings.Contains(logs.String(), "level=debug") || !strings.Contains(logs.String(), "does not offer DescribeTopicPartitions (API 75") {
		t.Errorf("logs do not explain the missing series at debug level:\n%s", logs.String())
	}
	if snap.Quorum != nil {
		t.Errorf("quorum = %+v from a cluster without DescribeQuorum", snap.Quorum)
	}
	if !strings.Contains(logs.String(), "does not offer DescribeQuorum (API 55") {
		t.Errorf("logs do not explain the missing quorum series:\n%s", logs.String())
	}
	text := renderSnapshot(t, snap)
	for _, name := range []string{"kafka_partition_eligible_leader_replicas", "kafka_partition_last_known_elr", "kafka_partition_no_clean_leader",
		"kafka_topic_no_clean_leader_partitions", "kafka_quorum_leader", "kafka_quorum_voter_lag"} {
		if strings.Contains(text, name+"{") {
			t.Errorf("%s served although the cluster lacks its API", name)
		}
	}
	if !strings.Contains(text, `kafka_partition_under_min_isr{kafka_cluster="k",partition="0",topic="a"} 1`) {
		t.Errorf("the rest of the partition series should be unchanged:\n%s", text)
	}
}

// An election between the Metadata request and DescribeTopicPartitions
// (seen in CI: the last known ELR member came back in between) gives an
// ELR of a later state: the partition is marked stale, so that the next
// refresh does not count the election it already saw as unclean, and no
// false no-clean-leader is reported for it.
func TestDescribedPartitionOfALaterStateIsStale(t *testing.T) {
	leaderless := Partition{ID: 0, Leader: NoLeader, Replicas: []int32{1, 2}}
	later := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	later.LeaderID, later.ISR = 1, []int32{1}
	p := leaderless
	applyDescribed(&p, &later)
	if !p.ELRStale() || p.NoCleanLeader() {
		t.Errorf("elected between the requests: stale %v, no clean leader %v; want stale and not reported", p.ELRStale(), p.NoCleanLeader())
	}

	same := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	same.LeaderID, same.LastKnownELR = NoLeader, []int32{1}
	p = leaderless
	applyDescribed(&p, &same)
	if p.ELRStale() || !slices.Equal(p.LastKnownELR(), []int32{1}) {
		t.Errorf("same state: stale %v, last known ELR %v", p.ELRStale(), p.LastKnownELR())
	}

	reordered := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	reordered.LeaderID, reordered.ISR = 2, []int32{1, 2}
	p = Partition{Leader: 2, Replicas: []int32{1, 2}, ISR: []int32{2, 1}}
	applyDescribed(&p, &reordered)
	if p.ELRStale() {
		t.Error("the same ISR in another order was taken for another state")
	}

	// The refresh after a stale one, with nothing to restore it from, does
	// not count the election as unclean.
	prev := &Snapshot{ELRKnown: true, Topics: []Topic{{Name: "t", MinISR: 2, Partitions: []Partition{{Leader: NoLeader, Replicas: []int32{1, 2}, rare: &partitionRare{elrStale: true}}}}}}
	next := &Snapshot{ELRKnown: true, Topics: []Topic{{Name: "t", MinISR: 2, Partitions: []Partition{{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}}}}}
	carryTransitions(prev, next)
	if n := next.Topics[0].Partitions[0].UncleanElections; n != 0 {
		t.Errorf("unclean elections after a stale ELR read: %d, want 0", n)
	}
	prev.Topics[0].Partitions[0].setELR(nil, nil, false)
	next.Topics[0].Partitions[0].UncleanElections = 0
	carryTransitions(prev, next)
	if n := next.Topics[0].Partitions[0].UncleanElections; n != 1 {
		t.Errorf("the same election judged against a fresh, empty ELR: %d unclean, want 1", n)
	}
}

// The race as CI met it, over three refreshes: leaderless with last known
// ELR [1]; then Metadata still leaderless while DescribeTopicPartitions
// already sees broker 1 elected; then broker 1 leading. The stale read takes
// back the previous refresh's ELR, so the return of the last known ELR
// member is clean, while an out-of-sync replica elected the same way is
// still unclean.
func TestStaleELRReadTakesThePreviousRefreshs(t *testing.T) {
	for _, c := range []struct {
		name      string
		newLeader int32
		want      uint64
	}{
		{"last known ELR member returns", 1, 0},
		{"out-of-sync replica elected", 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := func(p Partition) *Snapshot {
				return &Snapshot{ELRKnown: true, Topics: []Topic{{Name: "t", MinISR: 2, Partitions: []Partition{p}}}}
			}
			leaderless := Partition{Leader: NoLeader, Replicas: []int32{1, 2}}
			first := leaderless
			first.setELR(nil, []int32{1}, false)
			racing := leaderless
			described := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			described.LeaderID, described.ISR = c.newLeader, []int32{c.newLeader}
			applyDescribed(&racing, &described)
			s1, s2 := snap(first), snap(racing)
			s3 := snap(Partition{Leader: c.newLeader, Replicas: []int32{1, 2}, ISR: []int32{c.newLeader}})
			carryTransitions(nil, s1)
			carryTransitions(s1, s2)
			if p := s2.Topics[0].Partitions[0]; p.ELRStale() || !slices.Equal(p.LastKnownELR(), []int32{1}) {
				t.Fatalf("stale read not restored from the previous refresh: stale %v, last known ELR %v", p.ELRStale(), p.LastKnownELR())
			}
			carryTransitions(s2, s3)
			if n := s3.Topics[0].Partitions[0].UncleanElections; n != c.want {
				t.Errorf("unclean elections %d, want %d", n, c.want)
			}
		})
	}
}
