package redis

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/watch/watchtest"
)

var episodeT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at builds a snapshot read at t0 plus seconds, with its slot counts
// derived from the nodes' states as the topology merge would.
func at(seconds float64, nodes ...Node) *Snapshot {
	s := &Snapshot{ReadAt: episodeT0.Add(time.Duration(seconds * float64(time.Second))), Nodes: nodes}
	for _, n := range nodes {
		switch n.State {
		case NodeStatePFail:
			s.SlotsPFail += n.Slots
		case NodeStateFail:
			s.SlotsFail += n.Slots
		default:
			s.SlotsOK += n.Slots
		}
	}
	return s
}

func master(id string, slots int, state NodeState) Node {
	return Node{ID: id, Role: RoleMaster, Slots: slots, State: state}
}

func replica(id, of string, state NodeState) Node {
	return Node{ID: id, Role: RoleReplica, MasterID: of, State: state}
}

// chain applies the transitions of each snapshot to the next, as refreshes do.
func chain(snaps ...*Snapshot) *Snapshot {
	var prev *Snapshot
	for _, s := range snaps {
		carryTransitions(prev, s)
		prev = s
	}
	return prev
}

func TestFailoverEpisodeFromFlagToPromotion(t *testing.T) {
	last := chain(
		at(0, master(idA, 5461, NodeStateOK), replica(idD, idA, NodeStateOK)),
		at(2, master(idA, 5461, NodeStatePFail), replica(idD, idA, NodeStateOK)),
		at(3, master(idA, 5461, NodeStateFail), replica(idD, idA, NodeStateOK)),
		at(4.5, master(idA, 0, NodeStateFail), master(idD, 5461, NodeStateOK)),
	)
	h := last.Episodes.FailoverSeconds
	if h == nil || h.Count != 1 || h.Sum != 2.5 {
		t.Fatalf("failover histogram %+v, want one 2.5 s failover (first PFAIL at 2 s to promotion at 4.5 s)", h)
	}
	u := last.Episodes.SlotsUnservedSeconds
	if u == nil || u.Count != 1 || u.Sum != 2.5 {
		t.Errorf("unserved-slots histogram %+v, want one 2.5 s episode", u)
	}
	if len(last.Episodes.Failovers) != 0 || last.Episodes.SlotsUnserved != nil {
		t.Errorf("episodes still open after the promotion: %+v", last.Episodes)
	}
	if last.Failovers != 1 {
		t.Errorf("failovers counter %d, want 1", last.Failovers)
	}
}

func TestFailoverEpisodeOpenAge(t *testing.T) {
	last := chain(
		at(0, master(idA, 5461, NodeStateOK), replica(idD, idA, NodeStateOK)),
		at(1, master(idA, 5461, NodeStatePFail), replica(idD, idA, NodeStateOK)),
		at(7, master(idA, 5461, NodeStateFail), replica(idD, idA, NodeStateOK)),
	)
	oldest, ok := last.Episodes.OldestFailover()
	if !ok || oldest.Age(last.ReadAt) != 6*time.Second || !oldest.StartSeen {
		t.Errorf("oldest open failover %+v (ok %v), want 6 s old", oldest, ok)
	}
	if last.Episodes.SlotsUnserved == nil || last.Episodes.SlotsUnserved.Age(last.ReadAt) != 6*time.Second {
		t.Errorf("unserved slots episode %+v, want 6 s old", last.Episodes.SlotsUnserved)
	}
}

func TestMasterBackWithoutFailoverObservesNoFailover(t *testing.T) {
	last := chain(
		at(0, master(idA, 5461, NodeStateOK), replica(idD, idA, NodeStateOK)),
		at(1, master(idA, 5461, NodeStatePFail), replica(idD, idA, NodeStateOK)),
		at(2, master(idA, 5461, NodeStateOK), replica(idD, idA, NodeStateOK)),
	)
	if observed(last.Episodes.FailoverSeconds) != 0 {
		t.Errorf("a master that came back in place was timed as a failover: %+v", last.Episodes.FailoverSeconds)
	}
	if u := last.Episodes.SlotsUnservedSeconds; u == nil || u.Count != 1 || u.Sum != 1 {
		t.Errorf("unserved-slots histogram %+v, want one 1 s episode", u)
	}
	if len(last.Episodes.Failovers) != 0 {
		t.Errorf("episode left open: %+v", last.Episodes.Failovers)
	}
}

func TestRestartMidFailoverObservesNothing(t *testing.T) {
	first := chain(at(10, master(idA, 5461, NodeStateFail), replica(idD, idA, NodeStateOK)))
	oldest, ok := first.Episodes.OldestFailover()
	if !ok || oldest.StartSeen || oldest.Age(first.ReadAt) != 0 {
		t.Fatalf("first refresh: open failover %+v (ok %v), want one of unknown start, 0 s old", oldest, ok)
	}
	last := chain(first, at(12, master(idA, 0, NodeStateFail), master(idD, 5461, NodeStateOK)))
	if observed(last.Episodes.FailoverSeconds) != 0 || observed(last.Episodes.SlotsUnservedSeconds) != 0 {
		t.Errorf("episodes whose start the exporter never saw were observed: %+v", last.Episodes)
	}
	if last.Episodes.FailoverSeconds == nil || last.Episodes.SlotsUnservedSeconds == nil {
		t.Errorf("the histograms are not served at zero from the first refresh: %+v", last.Episodes)
	}
	if len(last.Episodes.Failovers) != 0 || last.Episodes.SlotsUnserved != nil {
		t.Errorf("episodes left open after the promotion: %+v", last.Episodes)
	}
}

func TestPromotionSeenInTheSameRefreshAsTheFlag(t *testing.T) {
	// The refresh interval was longer than the failover: the master is
	// already FAIL with no slots when first seen failing. The failover and
	// its unserved slots began and ended between the two refreshes, and
	// count as the 5 s between them, an upper bound.
	last := chain(
		at(0, master(idA, 5461, NodeStateOK), replica(idD, idA, NodeStateOK)),
		at(5, master(idA, 0, NodeStateFail), master(idD, 5461, NodeStateOK)),
	)
	if h := last.Episodes.FailoverSeconds; h == nil || h.Count != 1 || h.Sum != 5 {
		t.Errorf("failover histogram %+v, want one failover of at most the 5 s between refreshes", h)
	}
	if u := last.Episodes.SlotsUnservedSeconds; u == nil || u.Count != 1 || u.Sum != 5 {
		t.Errorf("unserved-slots histogram %+v, want one 5 s episode", u)
	}
	if len(last.Episodes.Failovers) != 0 || last.Episodes.SlotsUnserved != nil {
		t.Errorf("episodes left open: %+v", last.Episodes)
	}
	if last.Failovers != 1 {
		t.Errorf("failovers counter %d, want 1", last.Failovers)
	}
	// Later refreshes, with the old master still FAIL, time nothing more.
	later := at(10, master(idA, 0, NodeStateFail), master(idD, 5461, NodeStateOK))
	carryTransitions(last, later)
	if later.Episodes.FailoverSeconds.Count != 1 || later.Episodes.SlotsUnservedSeconds.Count != 1 {
		t.Errorf("the same failover was timed again: %+v", later.Episodes)
	}
}

// A manual failover (CLUSTER FAILOVER) leaves the old master a healthy
// replica: counted as a failover, never timed as an outage.
func TestManualFailoverIsNotTimed(t *testing.T) {
	last := chain(
		at(0, master(idA, 5461, NodeStateOK), replica(idD, idA, NodeStateOK)),
		at(1, replica(idA, idD, NodeStateOK), master(idD, 5461, NodeStateOK)),
	)
	if observed(last.Episodes.FailoverSeconds) != 0 || observed(last.Episodes.SlotsUnservedSeconds) != 0 {
		t.Errorf("a manual failover was timed: %+v", last.Episodes)
	}
	if last.Failovers != 1 {
		t.Errorf("failovers counter %d, want 1", last.Failovers)
	}
}

// Two masters failing over between the same two refreshes are two
// failovers and one unserved-slots episode.
func TestTwoFailoversBetweenRefreshes(t *testing.T) {
	last := chain(
		at(0, master(idA, 5461, NodeStateOK), master(idB, 5462, NodeStateOK), master(idC, 5461, NodeStateOK),
			replica(idD, idA, NodeStateOK), replica(idE, idB, NodeStateOK), replica(idF, idC, NodeStateOK)),
		at(2, master(idA, 0, NodeStateFail), master(idB, 0, NodeStatePFail), master(idC, 5461, NodeStateOK),
			master(idD, 5461, NodeStateOK), master(idE, 5462, NodeStateOK), replica(idF, idC, NodeStateOK)),
	)
	if h := last.Episodes.FailoverSeconds; h.Count != 2 || h.Sum != 4 {
		t.Errorf("failover histogram %+v, want two failovers of at most 2 s", h)
	}
	if u := last.Episodes.SlotsUnservedSeconds; u.Count != 1 || u.Sum != 2 {
		t.Errorf("unserved-slots histogram %+v, want one 2 s episode", u)
	}
}

func TestTransitionsAreEvents(t *testing.T) {
	s0 := at(0, master(idA, 5461, NodeStateOK), replica(idD, idA, NodeStateOK))
	s0.StateOK = true
	s1 := at(2, master(idA, 5461, NodeStatePFail), replica(idD, idA, NodeStateOK))
	s1.StateOK = true
	s2 := at(3, master(idA, 5461, NodeStateFail), replica(idD, idA, NodeStateOK))
	s3 := at(4, master(idA, 0, NodeStateFail), master(idD, 5461, NodeStateOK))
	s3.StateOK = true
	chain(s0, s1, s2, s3)
	var got []string
	for _, s := range []*Snapshot{s0, s1, s2, s3} {
		for _, e := range s.Events.All() {
			if !e.Time.Equal(s.ReadAt) {
				t.Errorf("%s at %v, want %v", e.Kind, e.Time, s.ReadAt)
			}
			id := e.Subject.NodeID
			if len(id) > 4 {
				id = id[:4]
			}
			got = append(got, string(e.Kind)+" "+id+" "+e.Before+" -> "+e.After)
		}
	}
	want := []string{
		"node_pfail 099a ok -> pfail",
		"cluster_state  ok -> fail",
		"node_fail 099a pfail -> fail",
		"cluster_state  fail -> ok",
		"slots_moved 099a 5461 -> 0",
		"promotion c096 replica of " + idA + " -> master",
		"slots_moved c096 0 -> 5461",
	}
	if len(got) != len(want) {
		t.Fatalf("events:\n%v\nwant\n%v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// withEpisodes adds one ended and one open episode of each kind to s.
func withEpisodes(s *Snapshot) *Snapshot {
	s.ReadAt = episodeT0.Add(10 * time.Second)
	var h *episode.Histogram
	s.Episodes = Episodes{
		Failovers:            map[string]FailoverEpisode{idB: {Open: episode.Open{Since: episodeT0, StartSeen: true}}},
		SlotsUnserved:        &episode.Open{Since: episodeT0.Add(4 * time.Second)},
		FailoverSeconds:      h.ObserveDuration(1500 * time.Millisecond),
		SlotsUnservedSeconds: h.ObserveDuration(3 * time.Second).ObserveDuration(20 * time.Second),
	}
	s.StaleRoutingSeconds = h.ObserveDuration(95 * time.Second)
	s.StaleRouting = map[string]*StaleRouting{idB: {DemotedAt: episodeT0, Redirections: 12, LastRedirectionAt: episodeT0.Add(7 * time.Second)}}
	return s
}

func TestEpisodeExposition(t *testing.T) {
	c := NewCollector()
	c.Set("main", watchtest.Static[Snapshot]("main", withEpisodes(testSnapshot()), nil))
	want := `
# HELP redis_cluster_failover_open_episode_seconds Age of the oldest failover under way (a master owning slots flagged PFAIL or FAIL, no replica promoted yet); absent while none is. Counted from the exporter's first failed query of the master, as the histogram is; for one already under way when the exporter started, from its first refresh. As of the last refresh.
# TYPE redis_cluster_failover_open_episode_seconds gauge
redis_cluster_failover_open_episode_seconds{redis_cluster="main"} 10
# HELP redis_cluster_slots_unserved_open_episode_seconds Age of the ongoing episode of unserved hash slots; absent while every slot is served. Counted from the exporter's first failed query of the flagged owner, as the histogram is; for one already under way when the exporter started, from its first refresh. As of the last refresh.
# TYPE redis_cluster_slots_unserved_open_episode_seconds gauge
redis_cluster_slots_unserved_open_episode_seconds{redis_cluster="main"} 6
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"redis_cluster_failover_open_episode_seconds", "redis_cluster_slots_unserved_open_episode_seconds"); err != nil {
		t.Error(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "redis_cluster_failover_seconds":
			h := f.GetMetric()[0].GetHistogram()
			if f.GetType() != dto.MetricType_HISTOGRAM || h.GetSampleCount() != 1 || h.GetSampleSum() != 1.5 || h.GetBucket()[1].GetCumulativeCount() != 0 || h.GetBucket()[2].GetCumulativeCount() != 1 {
				t.Errorf("failover histogram %v", f)
			}
		case "redis_cluster_slots_unserved_episode_seconds":
			if h := f.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() != 23 {
				t.Errorf("unserved histogram %v", f)
			}
		}
	}
}

func TestForeignNodesAreEvents(t *testing.T) {
	s0 := at(0, master(idA, 16384, NodeStateOK))
	s1 := at(1, master(idA, 16384, NodeStateOK))
	s1.Foreign = []ForeignNode{{ID: idB, Addr: "127.0.0.1:7001", Reason: ForeignNotListed}}
	s2 := at(2, master(idA, 16384, NodeStateOK))
	chain(s0, s1, s2)
	if got := s1.Events.All(); len(got) != 1 || got[0].Kind != EventForeignNodeSeen || got[0].Subject.NodeID != idB ||
		got[0].Subject.Address != "127.0.0.1:7001" || got[0].After != string(ForeignNotListed) {
		t.Errorf("a foreign node answering: %+v", got)
	}
	if got := s2.Events.All(); len(got) != 1 || got[0].Kind != EventForeignNodeGone || got[0].Before != string(ForeignNotListed) {
		t.Errorf("a foreign node gone: %+v", got)
	}
}

// observed is how many episodes h counts (none for nil).
func observed(h *episode.Histogram) uint64 {
	if h == nil {
		return 0
	}
	return h.Count
}

// reached and unreached give a node an address and whether the refresh's
// query of it answered: the exporter's own probe of the node.
func reached(n Node) Node   { n.Addr, n.Reachable = "127.0.0.1:"+n.ID[:4], true; return n }
func unreached(n Node) Node { n.Addr, n.Reachable = "127.0.0.1:"+n.ID[:4], false; return n }

// clocked sets the outage clock's limit on a snapshot built by hand, as
// the source does from the config's backdate_limit.
func clocked(s *Snapshot) *Snapshot { s.backdateLimit = time.Minute; return s }

// The outage clock's rule: an episode the cluster confirms begins at the
// exporter's first failed query of the master that caused it.
func TestOutageClockBackdatesToFirstFailedProbe(t *testing.T) {
	healthy := func(s float64) *Snapshot {
		return clocked(at(s, reached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK))))
	}
	t.Run("confirmed", func(t *testing.T) {
		// Killed between 0 and 1 s: the query at 1 s fails; the cluster
		// flags it at 3 s and the replica takes over at 5 s.
		snaps := []*Snapshot{
			healthy(0),
			clocked(at(1, unreached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK)))),
			clocked(at(2, unreached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK)))),
			clocked(at(3, unreached(master(idA, 5461, NodeStatePFail)), reached(replica(idD, idA, NodeStateOK)))),
		}
		open := chain(snaps...)
		f, ok := open.Episodes.OldestFailover()
		if !ok || !f.StartSeen || f.Age(open.ReadAt) != 2*time.Second {
			t.Fatalf("open failover %+v (ok %v), want it 2 s old at the flag: begun at the failed query at 1 s", f, ok)
		}
		if u := open.Episodes.SlotsUnserved; u == nil || u.Age(open.ReadAt) != 2*time.Second {
			t.Errorf("unserved slots %+v, want 2 s old", u)
		}
		var flagged *events.Event
		for i, ev := range open.Events.Events {
			if ev.Kind == EventNodePFail {
				flagged = &open.Events.Events[i]
			}
		}
		if flagged == nil || !flagged.FirstFailure.Equal(episodeT0.Add(time.Second)) {
			t.Errorf("node_pfail event %+v, want first_failure at 1 s", flagged)
		}
		last := chain(append(snaps, clocked(at(5, unreached(master(idA, 0, NodeStateFail)), reached(master(idD, 5461, NodeStateOK)))))...)
		if h := last.Episodes.FailoverSeconds; h.Count != 1 || h.Sum != 4 {
			t.Errorf("failover histogram %+v, want one of 4 s (failed query at 1 s to promotion at 5 s)", h)
		}
		if h := last.Episodes.SlotsUnservedSeconds; h.Count != 1 || h.Sum != 4 {
			t.Errorf("unserved histogram %+v, want one of 4 s", h)
		}
	})
	t.Run("flagged and promoted between two refreshes", func(t *testing.T) {
		// Killed between 0 and 1 s: the queries at 1 and 2 s fail, the
		// cluster flags the master and promotes its replica between 2 and
		// 3 s, and the refresh at 3 s sees both at once. The outage began
		// before the failed query at 1 s, not at the refresh at 2 s.
		last := chain(
			healthy(0),
			clocked(at(1, unreached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK)))),
			clocked(at(2, unreached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK)))),
			clocked(at(3, unreached(master(idA, 0, NodeStateFail)), reached(master(idD, 5461, NodeStateOK)))),
		)
		if h := last.Episodes.FailoverSeconds; h.Count != 1 || h.Sum != 2 {
			t.Errorf("failover histogram %+v, want one of 2 s (failed query at 1 s to promotion seen at 3 s)", h)
		}
		if h := last.Episodes.SlotsUnservedSeconds; h.Count != 1 || h.Sum != 2 {
			t.Errorf("unserved histogram %+v, want one of 2 s", h)
		}
		// Killed between 2 and 3 s, failed over before 3 s: no failed
		// query before the promotion, so the 1 s between the refreshes.
		quick := chain(
			healthy(0),
			healthy(2),
			clocked(at(3, unreached(master(idA, 0, NodeStateFail)), reached(master(idD, 5461, NodeStateOK)))),
		)
		if h := quick.Episodes.FailoverSeconds; h.Count != 1 || h.Sum != 1 {
			t.Errorf("failover histogram %+v, want one of the 1 s between the refreshes", h)
		}
		if h := quick.Episodes.SlotsUnservedSeconds; h.Count != 1 || h.Sum != 1 {
			t.Errorf("unserved histogram %+v, want one of 1 s", h)
		}
	})
	t.Run("never confirmed", func(t *testing.T) {
		// The exporter cannot reach the master; the cluster can. Nothing.
		last := chain(
			healthy(0),
			clocked(at(1, unreached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK)))),
			clocked(at(2, unreached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK)))),
			healthy(3),
		)
		if len(last.Episodes.Failovers) != 0 || last.Episodes.SlotsUnserved != nil ||
			last.Episodes.SlotsUnservedSeconds.Count != 0 || last.Episodes.FailoverSeconds.Count != 0 {
			t.Errorf("a failure only the exporter saw made an episode: %+v", last.Episodes)
		}
	})
	t.Run("confirmed after the node came back", func(t *testing.T) {
		// A stall: the query at 1 s fails, the node answers at 2 s, when
		// the cluster's PFAIL (from the stall) shows: the stall began it.
		last := chain(
			healthy(0),
			clocked(at(1, unreached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK)))),
			clocked(at(2, reached(master(idA, 5461, NodeStatePFail)), reached(replica(idD, idA, NodeStateOK)))),
			healthy(3),
		)
		if h := last.Episodes.SlotsUnservedSeconds; h.Count != 1 || h.Sum != 2 {
			t.Errorf("unserved histogram %+v, want one of 2 s (the stall's first failed query at 1 s to 3 s)", h)
		}
		// One refresh later the run is over: a flag then is not its doing.
		later := chain(
			healthy(0),
			clocked(at(1, unreached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK)))),
			healthy(2),
			clocked(at(3, reached(master(idA, 5461, NodeStatePFail)), reached(replica(idD, idA, NodeStateOK)))),
		)
		if u := later.Episodes.SlotsUnserved; u == nil || u.Age(later.ReadAt) != 0 {
			t.Errorf("unserved slots %+v, want begun at the flag (3 s): the node had answered at 2 s", u)
		}
	})
	t.Run("failed probe older than the limit", func(t *testing.T) {
		snaps := []*Snapshot{healthy(0)}
		for s := 1.0; s <= 100; s++ {
			snaps = append(snaps, clocked(at(s, unreached(master(idA, 5461, NodeStateOK)), reached(replica(idD, idA, NodeStateOK)))))
		}
		snaps = append(snaps, clocked(at(101, unreached(master(idA, 5461, NodeStatePFail)), reached(replica(idD, idA, NodeStateOK)))))
		last := chain(snaps...)
		if f, ok := last.Episodes.OldestFailover(); !ok || f.Age(last.ReadAt) != 0 {
			t.Errorf("failover %+v, want begun at the flag: a 100 s old failed query is the exporter's network", f)
		}
	})
	t.Run("exporter restarted mid-outage", func(t *testing.T) {
		// The first refresh finds the master unreachable and flagged: its
		// start is unknown, and nothing is made up when it ends.
		last := chain(
			clocked(at(10, unreached(master(idA, 5461, NodeStateFail)), reached(replica(idD, idA, NodeStateOK)))),
			clocked(at(11, unreached(master(idA, 5461, NodeStateFail)), reached(replica(idD, idA, NodeStateOK)))),
			clocked(at(12, unreached(master(idA, 0, NodeStateFail)), reached(master(idD, 5461, NodeStateOK)))),
		)
		if last.Episodes.FailoverSeconds.Count != 0 || last.Episodes.SlotsUnservedSeconds.Count != 0 {
			t.Errorf("a restarted exporter timed an outage whose start it never saw: %+v", last.Episodes)
		}
	})
}
