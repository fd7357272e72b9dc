package kafka

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/events"
)

// snapshotOf builds a snapshot of topic "t" with one partition per entry.
func snapshotOf(live []int32, parts ...struct {
	leader        int32
	replicas, isr []int32
}) *Snapshot {
	// An empty reassignment list: the cluster answered that none is in
	// progress.
	return snapshotReassigning(live, noReassignments(), parts...)
}

// snapshotReassigning is snapshotOf with reassignments as
// ListPartitionReassignments answered (nil: not answered).
func snapshotReassigning(live []int32, reassignments map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus, parts ...part) *Snapshot {
	md := threeBrokerMetadata(live...)
	for i, p := range parts {
		md.AddTopicPartition("t", int32(i), p.leader, p.replicas, p.isr, nil, sarama.ErrNoError)
	}
	// The ELR is known (and empty: no ELR member was read).
	s := buildSnapshot(md, all, TopicConfigCache{MinISR: map[string]int{"t": 2}, Unclean: map[string]bool{"t": false}}, reassignments, time.Now())
	s.ELRKnown = true
	s.countNoCleanLeader()
	s.Quorum = &Quorum{LeaderID: 1, LeaderEpoch: 3, HighWatermark: 120, FetchTimesKnown: true, Voters: []QuorumVoter{
		{ID: 1, DirectoryID: "N2bDCyLX8L1ABKrkifKD2w", LogEndOffset: 120, CaughtUpAge: 0},
		{ID: 2, DirectoryID: "v8E9Z6qLHsyDDJ3e_QhM1g", LogEndOffset: 118, Lag: 2, CaughtUpAge: time.Second, LastFetchAge: time.Second},
		{ID: 3, DirectoryID: "YOUZu3kSHfynKrWJ749KIQ", LogEndOffset: 120, CaughtUpAge: 0, LastFetchAge: 200 * time.Millisecond},
	}, Observers: []QuorumObserver{{ID: 3000, DirectoryID: "CGOcmMkKQYq1mDS3YmD0Lw", LastFetchAge: time.Second}}}
	for i := range s.Brokers {
		if b := &s.Brokers[i]; b.Up {
			b.LogDirs = []LogDir{{Path: fmt.Sprintf("/var/lib/kafka/broker-%d", b.ID)}}
		}
	}
	if len(s.Topics) > 0 {
		s.Topics[0].Tiered = TieredConfig{Enabled: true, CopyLagMs: 3_600_000, CopyLagBytes: -1, CopyLagKnown: true}
		s.Topics[0].Untiered = &UntieredRecords{Records: 84, Partitions: len(s.Topics[0].Partitions), Oldest: time.UnixMilli(1_780_000_000_000)}
	}
	return s
}

type part = struct {
	leader        int32
	replicas, isr []int32
}

func TestCarryTransitions(t *testing.T) {
	rs := []int32{1, 2, 3}
	cases := []struct {
		name                          string
		before, after                 part
		leaderChanges, shrink, expand uint64
	}{
		{"no change", part{1, rs, rs}, part{1, rs, rs}, 0, 0, 0},
		{"leader killed: new leader from ISR, ISR shrinks", part{1, rs, rs}, part{2, rs, []int32{2, 3}}, 1, 1, 0},
		{"broker back: ISR expands, leader stays", part{2, rs, []int32{2, 3}}, part{2, rs, []int32{2, 3, 1}}, 0, 0, 1},
		{"ISR order changes only", part{1, rs, []int32{1, 2, 3}}, part{1, rs, []int32{3, 1, 2}}, 0, 0, 0},
		{"partition goes offline", part{1, rs, []int32{1}}, part{-1, rs, []int32{1}}, 1, 0, 0},
		{"offline partition gets a leader", part{-1, rs, []int32{1}}, part{1, rs, []int32{1}}, 1, 0, 0},
		{"member replaced in one refresh", part{1, rs, []int32{1, 2}}, part{1, rs, []int32{1, 3}}, 0, 1, 1},
		{"two members lost at once count one shrink", part{1, rs, rs}, part{1, rs, []int32{1}}, 0, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := snapshotOf([]int32{1, 2, 3}, c.before)
			prev.Topics[0].Partitions[0].LeaderChanges = 10
			prev.Topics[0].Partitions[0].ISRShrinks = 20
			prev.Topics[0].Partitions[0].ISRExpands = 30
			next := snapshotOf([]int32{1, 2, 3}, c.after)
			carryTransitions(prev, next)
			p := next.Topics[0].Partitions[0]
			if p.LeaderChanges != 10+c.leaderChanges || p.ISRShrinks != 20+c.shrink || p.ISRExpands != 30+c.expand {
				t.Errorf("counters = %d/%d/%d, want %d/%d/%d", p.LeaderChanges, p.ISRShrinks, p.ISRExpands,
					10+c.leaderChanges, 20+c.shrink, 30+c.expand)
			}
		})
	}
}

// An ISR change is one event, whatever it did: one that both lost and
// gained members is an isr_change, logged on one line, and still counts as
// a shrink and an expand, as Kafka's own counters do.
func TestISRChangesAreOneEvent(t *testing.T) {
	cases := []struct {
		name           string
		before, after  []int32
		shrink, expand uint64
		want           []ev
	}{
		{"no change", []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, nil},
		{"order only", []int32{1, 2, 3}, []int32{3, 1, 2}, 0, 0, nil},
		{"pure shrink", []int32{1, 2, 3}, []int32{2, 3}, 1, 0, []ev{{EventISRShrink, "t/0", "[1 2 3]", "[2 3]"}}},
		{"shrink to empty", []int32{1}, nil, 1, 0, []ev{{EventISRShrink, "t/0", "[1]", "[]"}}},
		{"pure expand", []int32{2, 3}, []int32{2, 3, 1}, 0, 1, []ev{{EventISRExpand, "t/0", "[2 3]", "[2 3 1]"}}},
		{"replacement", []int32{3}, []int32{1}, 1, 1, []ev{{EventISRChange, "t/0", "[3]", "[1]"}}},
		{"replacement that grows", []int32{1, 2}, []int32{2, 3, 4}, 1, 1, []ev{{EventISRChange, "t/0", "[1 2]", "[2 3 4]"}}},
		{"replacement that shrinks", []int32{1, 2, 3}, []int32{1, 4}, 1, 1, []ev{{EventISRChange, "t/0", "[1 2 3]", "[1 4]"}}},
	}
	replicas := []int32{1, 2, 3, 4}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The leader stays and no min ISR is known: the ISR's are the
			// only events.
			prev := &Snapshot{Topics: []Topic{{Name: "t", Partitions: []Partition{{Leader: 2, Replicas: replicas, ISR: c.before, ISRShrinks: 20, ISRExpands: 30}}}}}
			next := &Snapshot{Topics: []Topic{{Name: "t", Partitions: []Partition{{Leader: 2, Replicas: replicas, ISR: c.after}}}}}
			carryTransitions(prev, next)
			p := next.Topics[0].Partitions[0]
			if p.ISRShrinks != 20+c.shrink || p.ISRExpands != 30+c.expand {
				t.Errorf("shrinks/expands = %d/%d, want %d/%d", p.ISRShrinks, p.ISRExpands, 20+c.shrink, 30+c.expand)
			}
			if got := summarizeEvents(t, next); !slices.Equal(got, c.want) {
				t.Errorf("events:\n got %+v\nwant %+v", got, c.want)
			}
			var logged bytes.Buffer
			events.NewLog(0, log.NewLogfmtLogger(&logged)).Record("kafka", "main", next.Events.All())
			if lines := strings.Count(logged.String(), `msg="cluster event"`); lines != len(c.want) {
				t.Errorf("logged %d lines, want %d:\n%s", lines, len(c.want), logged.String())
			}
			for _, e := range c.want {
				for _, want := range []string{"kind=" + string(e.kind), "before=" + logfmtValue(e.before), "after=" + logfmtValue(e.after)} {
					if !strings.Contains(logged.String(), want) {
						t.Errorf("log lacks %s:\n%s", want, logged.String())
					}
				}
			}
		})
	}
}

// logfmtValue is v as a logfmt logger writes it: quoted when it holds a
// space.
func logfmtValue(v string) string {
	if strings.Contains(v, " ") {
		return fmt.Sprintf("%q", v)
	}
	return v
}

func TestCarryTransitionsNewAndRecreatedPartitionsStartAtZero(t *testing.T) {
	rs := []int32{1, 2, 3}
	prev := snapshotOf([]int32{1, 2, 3}, part{1, rs, rs})
	next := snapshotOf([]int32{1, 2, 3}, part{2, rs, rs}, part{3, rs, rs})
	carryTransitions(prev, next)
	if got := next.Topics[0].Partitions[1].LeaderChanges; got != 0 {
		t.Errorf("new partition leader changes = %d, want 0", got)
	}
	carryTransitions(nil, next) // first refresh: nothing to carry, must not panic
}

func TestCarryTransitionsRemembersDownBrokerAddress(t *testing.T) {
	rs := []int32{1, 2, 3}
	prev := snapshotOf([]int32{1, 2, 3}, part{1, rs, rs})
	next := snapshotOf([]int32{2, 3}, part{2, rs, []int32{2, 3}})
	carryTransitions(prev, next)
	b1 := next.Brokers[0]
	if b1.Up || b1.Address != prev.Brokers[0].Address {
		t.Errorf("down broker 1 = %+v, want Up=false and last known address %q", b1, prev.Brokers[0].Address)
	}
}

func TestTransitionsAreEvents(t *testing.T) {
	rs := []int32{1, 2, 3}
	// Broker 1 dies: partition 0 (RF 3) fails over to 2 and shrinks under
	// min ISR 2 only later; partition 1 (RF 1 on broker 1) goes offline.
	before := snapshotAt(0, rs, part{1, rs, []int32{1, 2}}, part{1, []int32{1}, []int32{1}})
	after := snapshotAt(3, []int32{2, 3}, part{2, rs, []int32{2}}, part{-1, []int32{1}, []int32{1}})
	back := snapshotAt(9, rs, part{2, rs, []int32{2, 1}}, part{1, []int32{1}, []int32{1}})
	carryTransitions(nil, before)
	carryTransitions(before, after)
	carryTransitions(after, back)
	if got := before.Events.All(); len(got) != 0 {
		t.Errorf("the first snapshot has events: %+v", got)
	}
	summarize := func(s *Snapshot) []ev { return summarizeEvents(t, s) }
	wantAfter := []ev{
		{EventBrokerDown, "1", "", ""},
		{EventLeaderChange, "t/0", "1", "2"},
		{EventISRShrink, "t/0", "[1 2]", "[2]"},
		{EventUnderMinISRBegin, "t/0", "[1 2]", "[2]"},
		{EventPartitionOffline, "t/1", "1", "none"},
	}
	if got := summarize(after); !slices.Equal(got, wantAfter) {
		t.Errorf("events after the kill:\n got %+v\nwant %+v", got, wantAfter)
	}
	wantBack := []ev{
		{EventBrokerUp, "1", "", ""},
		{EventISRExpand, "t/0", "[2]", "[2 1]"},
		{EventUnderMinISREnd, "t/0", "[2]", "[2 1]"},
		{EventPartitionOnline, "t/1", "none", "1"},
	}
	if got := summarize(back); !slices.Equal(got, wantBack) {
		t.Errorf("events after the return:\n got %+v\nwant %+v", got, wantBack)
	}
}

// ev is an event as the tests compare it: subject "topic/partition" or a
// broker ID.
type ev struct {
	kind          events.Kind
	subject       string
	before, after string
}

// summarizeEvents lists the events of s, each checked to carry the time
// its refresh read the cluster.
func summarizeEvents(t *testing.T, s *Snapshot) []ev {
	t.Helper()
	var out []ev
	for _, e := range s.Events.All() {
		subject := e.Subject.NodeID
		if e.Subject.Partition != nil {
			subject = fmt.Sprintf("%s/%d", e.Subject.Topic, *e.Subject.Partition)
		}
		if !e.Time.Equal(s.ReadAt) {
			t.Errorf("%v at %v, want the refresh's read time %v", e.Kind, e.Time, s.ReadAt)
		}
		out = append(out, ev{e.Kind, subject, e.Before, e.After})
	}
	return out
}

func noReassignments() map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus {
	return map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus{}
}

func TestCarryTransitionsCountsUncleanElections(t *testing.T) {
	rs := []int32{1, 2}
	cases := []struct {
		name          string
		before, after Partition
		elrKnown      bool
		want          uint64
	}{
		{"leader from the ISR", Partition{Leader: 1, Replicas: rs, ISR: rs}, Partition{Leader: 2, Replicas: rs, ISR: []int32{2}}, true, 0},
		{"ELR off: the last ISR member returns", Partition{Leader: -1, Replicas: rs, ISR: []int32{1}}, Partition{Leader: 1, Replicas: rs, ISR: []int32{1}}, true, 0},
		{"an eligible leader replica returns", Partition{Leader: -1, Replicas: rs, rare: &partitionRare{elr: []int32{1}}}, Partition{Leader: 1, Replicas: rs, ISR: []int32{1}}, true, 0},
		{"the last known ELR member returns", Partition{Leader: -1, Replicas: rs, rare: &partitionRare{lastKnownELR: []int32{1}}}, Partition{Leader: 1, Replicas: rs, ISR: []int32{1}}, true, 0},
		{"a replica being added, caught up and elected", Partition{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: rs, rare: &partitionRare{addingReplicas: []int32{3}}}, Partition{Leader: 3, Replicas: []int32{3}, ISR: []int32{3}}, true, 0},
		{"an out-of-sync replica leads: unclean", Partition{Leader: -1, Replicas: rs, rare: &partitionRare{elr: []int32{1}}}, Partition{Leader: 2, Replicas: rs, ISR: []int32{2}}, true, 1},
		{"ELR off, out-of-sync replica leads: unclean", Partition{Leader: -1, Replicas: rs, ISR: []int32{1}}, Partition{Leader: 2, Replicas: rs, ISR: []int32{2}}, true, 1},
		{"the new leader rejoined within the refresh, ISR kept", Partition{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}}, Partition{Leader: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}}, true, 0},
		{"ELR unknown: not counted", Partition{Leader: -1, Replicas: rs, ISR: nil}, Partition{Leader: 2, Replicas: rs, ISR: []int32{2}}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := &Snapshot{ELRKnown: c.elrKnown, Topics: []Topic{{Name: "t", MinISR: 2, Partitions: []Partition{c.before}}}}
			prev.Topics[0].Partitions[0].UncleanElections = 5
			next := &Snapshot{Topics: []Topic{{Name: "t", MinISR: 2, Partitions: []Partition{c.after}}}}
			carryTransitions(prev, next)
			if got := next.Topics[0].Partitions[0].UncleanElections; got != 5+c.want {
				t.Errorf("unclean elections = %d, want %d", got, 5+c.want)
			}
			// Each counted one is an event, right after the leader's.
			evs := summarizeEvents(t, next)
			var unclean []ev
			for i, e := range evs {
				if e.kind != EventUncleanElection {
					continue
				}
				unclean = append(unclean, e)
				if i == 0 || (evs[i-1].kind != EventLeaderChange && evs[i-1].kind != EventPartitionOnline) {
					t.Errorf("unclean_election at %d does not follow the leader's event: %+v", i, evs)
				}
			}
			want := []ev{{EventUncleanElection, "t/0", leaderText(c.before.Leader), leaderText(c.after.Leader)}}
			if c.want == 0 {
				want = nil
			}
			if !slices.Equal(unclean, want) {
				t.Errorf("unclean_election events = %+v, want %+v", unclean, want)
			}
		})
	}
}

// reassigning is a ListPartitionReassignments answer for partition t/0.
// Kafka lists the replicas as the metadata does while it reassigns: the
// target followed by the replicas being removed.
func reassigning(replicas, adding, removing []int32) map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus {
	return map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus{"t": {0: {
		Replicas: replicas, AddingReplicas: adding, RemovingReplicas: removing,
	}}}
}

func TestReassignmentsAreEvents(t *testing.T) {
	rs := []int32{1, 2, 3}
	none := noReassignments()
	type state struct {
		partition     part
		reassignments map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus
	}
	addingThree := state{part{1, rs, []int32{1, 2}}, reassigning(rs, []int32{3}, nil)}
	cases := []struct {
		name          string
		before, after state
		want          []ev
	}{
		{"adding a replica starts",
			state{part{1, []int32{1, 2}, []int32{1, 2}}, none}, addingThree,
			[]ev{{EventReassignmentStarted, "t/0", "[1 2]", "[1 2 3]"}}},
		{"still copying: nothing", addingThree, addingThree, nil},
		{"the new replica caught up: the finish is held a refresh (TestHeldReassignmentFinish)",
			addingThree, state{part{1, rs, rs}, none},
			[]ev{{EventISRExpand, "t/0", "[1 2]", "[1 2 3]"}}},
		{"a move from 1 to 3 finishes: leadership and ISR follow",
			state{part{1, []int32{2, 3, 1}, rs}, reassigning([]int32{2, 3, 1}, []int32{3}, []int32{1})},
			state{part{2, []int32{2, 3}, []int32{2, 3}}, none},
			[]ev{
				{EventReassignmentFinished, "t/0", "[2 1]", "[2 3]"},
				{EventLeaderChange, "t/0", "1", "2"},
				{EventISRShrink, "t/0", "[1 2 3]", "[2 3]"},
			}},
		{"cancelled: back on the replicas it started from",
			state{part{2, []int32{2, 1, 3}, []int32{2, 1}}, reassigning([]int32{2, 1, 3}, []int32{3}, nil)},
			state{part{2, []int32{2, 1}, []int32{2, 1}}, none},
			[]ev{{EventReassignmentFinished, "t/0", "[2 1]", "[2 1]"}}},
		{"a new target while in progress: started again",
			addingThree,
			state{part{1, []int32{1, 3, 2}, []int32{1, 2}}, reassigning([]int32{1, 3, 2}, []int32{3}, []int32{2})},
			[]ev{{EventReassignmentStarted, "t/0", "[1 2]", "[1 3]"}}},
		{"metadata read just before a move began: the target still shows",
			state{part{1, []int32{1, 2}, []int32{1, 2}}, none},
			state{part{1, []int32{1, 2}, []int32{1, 2}}, reassigning([]int32{2, 3, 1}, []int32{3}, []int32{1})},
			[]ev{{EventReassignmentStarted, "t/0", "[1 2]", "[2 3]"}}},
		{"reordered at once, never seen in progress: finished",
			state{part{1, rs, rs}, none}, state{part{1, []int32{3, 2, 1}, rs}, none},
			[]ev{{EventReassignmentFinished, "t/0", "[1 2 3]", "[3 2 1]"}}},
		{"reassignments not answered before: no started",
			state{part{1, rs, []int32{1, 2}}, nil}, addingThree, nil},
		{"reassignments not answered after: no finished",
			addingThree, state{part{1, rs, []int32{1, 2}}, nil}, nil},
		{"not answered after, the replica caught up: only the ISR change",
			addingThree, state{part{1, rs, rs}, nil},
			[]ev{{EventISRExpand, "t/0", "[1 2]", "[1 2 3]"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := snapshotReassigning(rs, c.before.reassignments, c.before.partition)
			next := snapshotReassigning(rs, c.after.reassignments, c.after.partition)
			carryTransitions(prev, next)
			if got := summarizeEvents(t, next); !slices.Equal(got, c.want) {
				t.Errorf("events:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// A reassignment that seems to finish on its in-progress replicas is
// decided by the refresh after: a finish that added replicas keeps them, a
// cancel read from a broker whose metadata lagged the controller (as a CI
// run saw: "finished [2 1] -> [2 1 3]", then a replica change back) drops
// them. Either way one reassignment_finished, dated when the exporter
// first saw the reassignment ended.
func TestHeldReassignmentFinish(t *testing.T) {
	rs := []int32{1, 2, 3}
	none := noReassignments()
	type state struct {
		partition     part
		reassignments map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus
	}
	cases := []struct {
		name   string
		states [3]state
		want   []ev
	}{
		{"finished by adding a replica",
			[3]state{
				{part{1, rs, []int32{1, 2}}, reassigning(rs, []int32{3}, nil)},
				{part{1, rs, rs}, none},
				{part{1, rs, rs}, none},
			},
			[]ev{{EventReassignmentFinished, "t/0", "[1 2]", "[1 2 3]"}}},
		{"cancelled, the first read from a lagging broker",
			[3]state{
				{part{2, []int32{2, 1, 3}, []int32{2, 1}}, reassigning([]int32{2, 1, 3}, []int32{3}, nil)},
				{part{2, []int32{2, 1, 3}, []int32{2, 1}}, none},
				{part{2, []int32{2, 1}, []int32{2, 1}}, none},
			},
			[]ev{{EventReassignmentFinished, "t/0", "[2 1]", "[2 1]"}}},
		{"finished, and another one started",
			[3]state{
				{part{1, rs, []int32{1, 2}}, reassigning(rs, []int32{3}, nil)},
				{part{1, rs, rs}, none},
				{part{1, []int32{2, 3, 1}, rs}, reassigning([]int32{2, 3, 1}, nil, []int32{1})},
			},
			[]ev{
				{EventReassignmentFinished, "t/0", "[1 2]", "[1 2 3]"},
				{EventReassignmentStarted, "t/0", "[1 2 3]", "[2 3]"},
			}},
		{"the reassignments unanswered in between: still held",
			[3]state{
				{part{1, rs, []int32{1, 2}}, reassigning(rs, []int32{3}, nil)},
				{part{1, rs, rs}, none},
				{part{1, rs, rs}, nil},
			},
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var snaps [3]*Snapshot
			for i, st := range c.states {
				snaps[i] = snapshotReassigning(rs, st.reassignments, st.partition)
				snaps[i].ReadAt = time.Unix(1000+int64(i), 0)
			}
			carryTransitions(nil, snaps[0])
			carryTransitions(snaps[0], snaps[1])
			carryTransitions(snaps[1], snaps[2])
			var got []ev
			for i, s := range snaps[1:] {
				for _, e := range s.Events.All() {
					if e.Kind != EventReassignmentFinished && e.Kind != EventReassignmentStarted {
						continue
					}
					want := snaps[2].ReadAt
					if e.Kind == EventReassignmentFinished {
						want = snaps[1].ReadAt
					}
					if i != 1 || !e.Time.Equal(want) {
						t.Errorf("%s in refresh %d at %v, want it listed by refresh 2 at %v", e.Kind, i+1, e.Time, want)
					}
					got = append(got, ev{e.Kind, fmt.Sprintf("%s/%d", e.Subject.Topic, *e.Subject.Partition), e.Before, e.After})
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("events:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// A refresh whose ListPartitionReassignments goes unanswered (a CI run
// under load: "no answer within 172ms") hides nothing: the refresh after it
// compares with the last one that had the list, so a reassignment that
// started, or a held finish, is still reported, once.
func TestReassignmentEventsSurviveAnUnansweredList(t *testing.T) {
	rs := []int32{1, 2, 3}
	none := noReassignments()
	t.Run("started while unanswered", func(t *testing.T) {
		snaps := []*Snapshot{
			snapshotReassigning(rs, none, part{1, []int32{1, 2}, []int32{1, 2}}),
			snapshotReassigning(rs, nil, part{1, rs, []int32{1, 2}}),
			snapshotReassigning(rs, reassigning(rs, []int32{3}, nil), part{1, rs, []int32{1, 2}}),
			snapshotReassigning(rs, reassigning(rs, []int32{3}, nil), part{1, rs, []int32{1, 2}}),
		}
		got := reassignmentEventsOf(snaps)
		want := []string{"refresh 2: reassignment_started [1 2] -> [1 2 3]"}
		if !slices.Equal(got, want) {
			t.Errorf("events:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("a held finish decided after the gap", func(t *testing.T) {
		snaps := []*Snapshot{
			snapshotReassigning(rs, reassigning([]int32{2, 1, 3}, []int32{3}, nil), part{2, []int32{2, 1, 3}, []int32{2, 1}}),
			snapshotReassigning(rs, none, part{2, []int32{2, 1, 3}, []int32{2, 1}}),
			snapshotReassigning(rs, nil, part{2, []int32{2, 1}, []int32{2, 1}}),
			snapshotReassigning(rs, none, part{2, []int32{2, 1}, []int32{2, 1}}),
		}
		got := reassignmentEventsOf(snaps)
		want := []string{"refresh 3: reassignment_finished [2 1] -> [2 1]"}
		if !slices.Equal(got, want) {
			t.Errorf("events:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("unanswered too long: the old state is let go", func(t *testing.T) {
		snaps := []*Snapshot{snapshotReassigning(rs, none, part{1, []int32{1, 2}, []int32{1, 2}})}
		for range maxReassignmentsUnanswered + 1 {
			snaps = append(snaps, snapshotReassigning(rs, nil, part{1, rs, []int32{1, 2}}))
		}
		snaps = append(snaps, snapshotReassigning(rs, reassigning(rs, []int32{3}, nil), part{1, rs, []int32{1, 2}}))
		if got := reassignmentEventsOf(snaps); len(got) != 0 {
			t.Errorf("events after %d unanswered refreshes: %q, want none", maxReassignmentsUnanswered+1, got)
		}
		if base := snaps[len(snaps)-2].reassignmentBase; base != nil {
			t.Error("a snapshot is still held after too many unanswered refreshes")
		}
	})
}

// reassignmentEventsOf carries transitions through snaps in order and
// lists their reassignment events as "refresh N: kind before -> after".
func reassignmentEventsOf(snaps []*Snapshot) []string {
	var out []string
	carryTransitions(nil, snaps[0])
	for i := 1; i < len(snaps); i++ {
		carryTransitions(snaps[i-1], snaps[i])
		for _, e := range snaps[i].Events.All() {
			if e.Kind == EventReassignmentStarted || e.Kind == EventReassignmentFinished {
				out = append(out, fmt.Sprintf("refresh %d: %s %s -> %s", i, e.Kind, e.Before, e.After))
			}
		}
	}
	return out
}

// The first refresh sees reassignments already in progress: none of them
// is reported as started, as the exporter did not see them start.
func TestReassignmentsInProgressAtTheFirstRefreshAreNotEvents(t *testing.T) {
	rs := []int32{1, 2, 3}
	first := snapshotReassigning(rs, reassigning(rs, []int32{3}, nil), part{1, rs, []int32{1, 2}})
	carryTransitions(nil, first)
	if got := first.Events.All(); len(got) != 0 {
		t.Errorf("the first refresh has events: %+v", got)
	}
	if !first.Topics[0].Partitions[0].Reassigning() {
		t.Fatal("partition t/0 is not reassigning: the test reads nothing")
	}
}

// A reassignment of many partitions at once is bounded like a broker
// death: MaxPerRefresh events, then one events_truncated.
func TestReassignmentEventsAreCapped(t *testing.T) {
	rs := []int32{1, 2, 3}
	const n = events.MaxPerRefresh + 5
	before := make([]part, n)
	during := make([]part, n)
	reassignments := map[int32]*sarama.PartitionReplicaReassignmentsStatus{}
	for i := range n {
		before[i] = part{1, []int32{1, 2}, []int32{1, 2}}
		during[i] = part{1, rs, []int32{1, 2}}
		reassignments[int32(i)] = &sarama.PartitionReplicaReassignmentsStatus{Replicas: rs, AddingReplicas: []int32{3}}
	}
	prev := snapshotReassigning(rs, noReassignments(), before...)
	next := snapshotReassigning(rs, map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus{"t": reassignments}, during...)
	carryTransitions(prev, next)
	got := next.Events.All()
	if len(got) != events.MaxPerRefresh+1 {
		t.Fatalf("%d events, want %d and one events_truncated", len(got), events.MaxPerRefresh)
	}
	if got[0].Kind != EventReassignmentStarted || got[0].Before != "[1 2]" || got[0].After != "[1 2 3]" {
		t.Errorf("first event = %+v, want reassignment_started [1 2] → [1 2 3]", got[0])
	}
	if last := got[len(got)-1]; last.Kind != events.EventsTruncated || last.After != "5" {
		t.Errorf("last event = %+v, want events_truncated with 5 left out", last)
	}
}
