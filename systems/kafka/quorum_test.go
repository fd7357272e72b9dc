package kafka

import (
	"slices"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func replicaState(id int32, leo, fetched, caughtUp int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	v.ReplicaID, v.LogEndOffset, v.LastFetchTimestamp, v.LastCaughtUpTimestamp = id, leo, fetched, caughtUp
	return v
}

func TestQuorumFrom(t *testing.T) {
	now := time.UnixMilli(1_700_000_010_000)
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = 2, 7, 500
	// Voter 3 is stopped: 40 records behind, last fetched and caught up
	// 9 s ago. Voter 1's times are unknown to the leader, which reports
	// -1 for its own.
	p.CurrentVoters = append(p.CurrentVoters,
		replicaState(3, 470, 1_700_000_001_000, 1_700_000_001_000), replicaState(2, 510, -1, 1_700_000_010_000), replicaState(1, 510, -1, -1))
	p.CurrentVoters[0].ReplicaDirectoryID = [16]byte{0xe1, 0x6e, 0x27, 0x0f, 0x95, 0xa2, 0x4b, 0xdf, 0xa6, 0xfb, 0x88, 0xa1, 0x2c, 0x98, 0x3a, 0x3c}
	p.Observers = append(p.Observers, replicaState(5, 510, 1_700_000_009_500, -1), replicaState(4, 510, 1_699_999_990_000, -1))

	q := quorumFrom(p, 2, now)
	if q.LeaderID != 2 || q.LeaderEpoch != 7 || q.HighWatermark != 500 || len(q.Observers) != 2 || len(q.Voters) != 3 || !q.FetchTimesKnown {
		t.Fatalf("quorum = %+v", q)
	}
	want := []QuorumVoter{
		{ID: 1, LogEndOffset: 510, Lag: 0, CaughtUpAge: -1, LastFetchAge: -1},
		{ID: 2, LogEndOffset: 510, Lag: 0, CaughtUpAge: 0, LastFetchAge: 0},
		// Kafka prints this directory ID as 4W4nD5WiS9-m-4ihLJg6PA (URL-safe base64).
		{ID: 3, DirectoryID: "4W4nD5WiS9-m-4ihLJg6PA", LogEndOffset: 470, Lag: 40, CaughtUpAge: 9 * time.Second, LastFetchAge: 9 * time.Second},
	}
	for i, w := range want {
		if q.Voters[i] != w {
			t.Errorf("voter %d = %+v, want %+v", w.ID, q.Voters[i], w)
		}
	}
	if q.Observers[0].ID != 4 || q.Observers[0].LastFetchAge != 20*time.Second || q.Observers[1].LastFetchAge != 500*time.Millisecond {
		t.Errorf("observers = %+v, want 4 (fetched 20 s ago) then 5 (0.5 s ago)", q.Observers)
	}
	// Online: the leader always; voter 3 at 9 s still; voter 1 unknown: no.
	for _, c := range []struct {
		id     int32
		online bool
	}{{1, false}, {2, true}, {3, true}} {
		if got := q.Voters[c.id-1].Online(q); got != c.online {
			t.Errorf("voter %d online = %v, want %v", c.id, got, c.online)
		}
	}

	p.LeaderID = -1
	if q := quorumFrom(p, 2, now); q.LeaderID != NoLeader || q.Voters[2].Lag != 30 {
		t.Errorf("without a leader: leader %d, voter 3 lag %d; want -1 and 30 (behind the high watermark)", q.LeaderID, q.Voters[2].Lag)
	}
	if q := quorumFrom(p, 0, now); q.FetchTimesKnown {
		t.Error("a v0 answer has no fetch times, yet FetchTimesKnown")
	}
}

// TestQuorumAgesByTheLeadersClock: with the leader's clock a minute behind
// the exporter's, a voter that fetched a second ago by the leader's clock
// is online and caught up, and one that stopped 30 s ago by it is not:
// ages are the leader's own differences (issue 42, 6).
func TestQuorumAgesByTheLeadersClock(t *testing.T) {
	const leaderNow = 1_700_000_000_000
	for _, skew := range []time.Duration{-time.Minute, 0, time.Minute} {
		exporterNow := time.UnixMilli(leaderNow).Add(skew)
		p := kmsg.NewDescribeQuorumResponseTopicPartition()
		p.LeaderID, p.LeaderEpoch, p.HighWatermark = 1, 3, 100
		p.CurrentVoters = append(p.CurrentVoters,
			replicaState(1, 100, leaderNow, leaderNow),
			replicaState(2, 100, leaderNow-1_000, leaderNow-1_000),
			replicaState(3, 90, leaderNow-30_000, leaderNow-30_000))
		q := quorumFrom(p, 1, exporterNow)
		if v := q.Voters[1]; !v.Online(q) || v.CaughtUpAge != time.Second {
			t.Errorf("skew %s: live voter 2 = %+v, online %v; want online, caught up 1s ago", skew, v, v.Online(q))
		}
		if v := q.Voters[2]; v.Online(q) || v.CaughtUpAge != 30*time.Second {
			t.Errorf("skew %s: stopped voter 3 = %+v, online %v; want offline, caught up 30s ago", skew, v, v.Online(q))
		}
	}
}

// A controller outside the voter set is an observer that is no broker; a
// broker observer, or one that stopped fetching, is not one.
func TestControllerObservers(t *testing.T) {
	q := &Quorum{FetchTimesKnown: true, LeaderID: 1, Observers: []QuorumObserver{
		{ID: 2, LastFetchAge: time.Second},                        // a broker
		{ID: 3000, DirectoryID: "dir", LastFetchAge: time.Second}, // a controller
		{ID: 3001, LastFetchAge: time.Minute},                     // stopped: listed for minutes more
		{ID: 3002, LastFetchAge: -1},                              // never fetched from this leader
	}}
	brokers := map[int32]bool{1: true, 2: true}
	got, known := q.ControllerObservers(func(id int32) bool { return brokers[id] })
	if !known || len(got) != 1 || got[0].ID != 3000 || got[0].DirectoryID != "dir" {
		t.Errorf("controller observers = %+v, want only 3000", got)
	}
	q.FetchTimesKnown = false
	if got, known := q.ControllerObservers(func(int32) bool { return false }); known || got != nil {
		t.Errorf("without fetch times: %+v (known %v), want unknown (a stopped observer stays listed)", got, known)
	}
}

// HasBroker knows brokers Metadata lists (live or remembered down) and
// those the cluster lists as registered and fenced.
func TestSnapshotHasBroker(t *testing.T) {
	s := &Snapshot{Brokers: []Broker{{ID: 1, Up: true}, {ID: 2}}, registered: map[int32]bool{1: false, 4: true}}
	for id, want := range map[int32]bool{1: true, 2: true, 3: false, 4: true} {
		if got := s.HasBroker(id); got != want {
			t.Errorf("HasBroker(%d) = %v, want %v", id, got, want)
		}
	}
}

// A controller that leaves the voter set, and one that joins it, are
// events; a voter back under a new directory (a replaced disk) is removed
// and added; a refresh that could not read the quorum says nothing.
func TestVoterChangesAreEvents(t *testing.T) {
	rs := []int32{1, 2, 3}
	withVoters := func(voters ...QuorumVoter) *Snapshot {
		s := snapshotOf(rs, part{1, rs, rs})
		if voters != nil {
			s.Quorum = &Quorum{LeaderID: 1, Voters: voters}
		} else {
			s.Quorum = nil
		}
		return s
	}
	type change struct {
		kind                events.Kind
		node, before, after string
	}
	changes := func(s *Snapshot) []change {
		var out []change
		for _, e := range s.Events.All() {
			if e.Kind == EventQuorumVoterAdded || e.Kind == EventQuorumVoterRemoved {
				out = append(out, change{e.Kind, e.Subject.NodeID, e.Before, e.After})
			}
		}
		return out
	}
	three := withVoters(QuorumVoter{ID: 1, DirectoryID: "a"}, QuorumVoter{ID: 2, DirectoryID: "b"}, QuorumVoter{ID: 3, DirectoryID: "c"})
	two := withVoters(QuorumVoter{ID: 1, DirectoryID: "a"}, QuorumVoter{ID: 3, DirectoryID: "c"})
	carryTransitions(three, two)
	if got, want := changes(two), []change{{EventQuorumVoterRemoved, "2", "b", ""}}; !slices.Equal(got, want) {
		t.Errorf("voter 2 removed: %v, want %v", got, want)
	}
	newDisk := withVoters(QuorumVoter{ID: 1, DirectoryID: "a"}, QuorumVoter{ID: 2, DirectoryID: "B"}, QuorumVoter{ID: 3, DirectoryID: "c"})
	carryTransitions(two, newDisk)
	if got, want := changes(newDisk), []change{{EventQuorumVoterAdded, "2", "", "B"}}; !slices.Equal(got, want) {
		t.Errorf("voter 2 added: %v, want %v", got, want)
	}
	replaced := withVoters(QuorumVoter{ID: 1, DirectoryID: "a"}, QuorumVoter{ID: 2, DirectoryID: "b"}, QuorumVoter{ID: 3, DirectoryID: "c"})
	carryTransitions(newDisk, replaced)
	if got, want := changes(replaced), []change{{EventQuorumVoterRemoved, "2", "B", ""}, {EventQuorumVoterAdded, "2", "", "b"}}; !slices.Equal(got, want) {
		t.Errorf("voter 2's directory replaced: %v, want %v", got, want)
	}
	unread := withVoters()
	carryTransitions(replaced, unread)
	after := withVoters(QuorumVoter{ID: 1, DirectoryID: "a"})
	carryTransitions(unread, after)
	if got := append(changes(unread), changes(after)...); len(got) != 0 {
		t.Errorf("across a refresh without the quorum: %v, want none", got)
	}
}
