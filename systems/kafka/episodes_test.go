package kafka

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

var episodeT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// snapshotAt is snapshotOf read at t0 plus the given seconds.
func snapshotAt(seconds float64, live []int32, parts ...part) *Snapshot {
	s := snapshotOf(live, parts...)
	s.ReadAt = episodeT0.Add(time.Duration(seconds * float64(time.Second)))
	return s
}

// collectorThroughEpisodes serves cluster "main" after three refreshes of
// topic "t" (min ISR 2): all healthy at 0 s; at 5 s broker 1 is dead, and
// partition 0 (RF 3) and partition 1 (RF 1 on broker 1) lose it; at 13 s
// partition 0 is whole again while partition 1 is still offline.
func collectorThroughEpisodes(t *testing.T) *Collector {
	t.Helper()
	rs, one := []int32{1, 2, 3}, []int32{1}
	w := watcherServing(t,
		snapshotAt(0, rs, part{1, rs, rs}, part{1, one, one}),
		snapshotAt(5, []int32{2, 3}, part{-1, rs, one}, part{-1, one, one}),
		snapshotAt(13, rs, part{2, rs, rs}, part{-1, one, one}),
	)
	c := NewCollector()
	c.Set("main", w)
	for range 3 {
		w.RefreshOnce(context.Background())
	}
	return c
}

func TestEpisodesObservedWhenTheyEnd(t *testing.T) {
	c := collectorThroughEpisodes(t)
	// Partition 0 was offline, under min ISR and under-replicated from 5 s
	// to 13 s: one 8 s observation each. Partition 1 (RF 1, ISR {1} kept
	// while offline, as KRaft does) is offline since 5 s, so 8 s old; it
	// is never under-replicated, and has been under min ISR (1 < 2) since
	// the exporter's first refresh, so that episode is 13 s old and will
	// not be observed when it ends.
	want := `
# HELP kafka_partition_offline_episode_seconds How long partitions of the topic had no leader, from the exporter's first failed probe of the broker that caused it (once the metadata confirmed it; else the first refresh that saw it) to the first refresh that no longer did; one observation per partition episode when it ends. Episodes already under way when the exporter started are not observed.
# TYPE kafka_partition_offline_episode_seconds histogram
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="0.5"} 0
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="1"} 0
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="2.5"} 0
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="5"} 0
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="10"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="15"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="30"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="60"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="120"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="300"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="600"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="1200"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="1800"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="3600"} 1
kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="+Inf"} 1
kafka_partition_offline_episode_seconds_sum{kafka_cluster="main",topic="t"} 8
kafka_partition_offline_episode_seconds_count{kafka_cluster="main",topic="t"} 1
# HELP kafka_partition_offline_open_episode_seconds Age of the oldest ongoing episode of a partition of the topic without a leader, as of the last successful refresh; absent while none is open. Counted from the exporter's first failed probe of the broker that caused it, as the histograms are; for an episode already under way when the exporter started, from its first refresh.
# TYPE kafka_partition_offline_open_episode_seconds gauge
kafka_partition_offline_open_episode_seconds{kafka_cluster="main",topic="t"} 8
# HELP kafka_partition_under_min_isr_open_episode_seconds Age of the oldest ongoing episode of a partition of the topic under min.insync.replicas, as of the last successful refresh; absent while none is open. Counted from the exporter's first failed probe of the broker that caused it, as the histograms are; for an episode already under way when the exporter started, from its first refresh.
# TYPE kafka_partition_under_min_isr_open_episode_seconds gauge
kafka_partition_under_min_isr_open_episode_seconds{kafka_cluster="main",topic="t"} 13
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"kafka_partition_offline_episode_seconds", "kafka_partition_offline_open_episode_seconds",
		"kafka_partition_under_min_isr_open_episode_seconds", "kafka_partition_under_replicated_open_episode_seconds"); err != nil {
		t.Error(err)
	}
	// Partition 0's under-min-ISR and under-replicated episodes: 8 s each.
	for _, name := range []string{"kafka_partition_under_min_isr_episode_seconds", "kafka_partition_under_replicated_episode_seconds"} {
		text := gatherText(t, c, name)
		for _, line := range []string{name + `_count{kafka_cluster="main",topic="t"} 1`, name + `_sum{kafka_cluster="main",topic="t"} 8`} {
			if !strings.Contains(text, line) {
				t.Errorf("want %q in:\n%s", line, text)
			}
		}
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// gatherText renders the named families of c in text format.
func gatherText(t *testing.T, c *Collector, names ...string) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range families {
		if len(names) > 0 && !slices.Contains(names, mf.GetName()) {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func TestRestartMidOutageInventsNoEpisode(t *testing.T) {
	rs := []int32{1, 2, 3}
	// The exporter starts while partition 0 is offline, watches it for 20 s
	// and sees it recover at 30 s.
	w := watcherServing(t,
		snapshotAt(10, []int32{2, 3}, part{-1, rs, []int32{1}}),
		snapshotAt(30, rs, part{1, rs, rs}),
	)
	c := NewCollector()
	c.Set("main", w)
	w.RefreshOnce(context.Background())
	first := gatherText(t, c)
	if !strings.Contains(first, `kafka_partition_offline_open_episode_seconds{kafka_cluster="main",topic="t"} 0`) {
		t.Errorf("the open episode is not reported from the first refresh:\n%s", first)
	}
	if !strings.Contains(first, `kafka_partition_offline_episode_seconds_count{kafka_cluster="main",topic="t"} 0`) {
		t.Errorf("the topic's histogram is not served at zero from the start of its first episode:\n%s", first)
	}
	w.RefreshOnce(context.Background())
	after := gatherText(t, c)
	for _, line := range []string{
		`kafka_partition_offline_episode_seconds_count{kafka_cluster="main",topic="t"} 0`,
		`kafka_partition_offline_episode_seconds_sum{kafka_cluster="main",topic="t"} 0`,
	} {
		if !strings.Contains(after, line) {
			t.Errorf("an episode of unknown start was observed: want %s in:\n%s", line, after)
		}
	}
	if strings.Contains(after, "_open_episode_seconds") {
		t.Errorf("an episode is still open after the recovery:\n%s", after)
	}
}

func TestEpisodeHistogramsShareUnchangedTopics(t *testing.T) {
	rs := []int32{1, 2, 3}
	s0 := snapshotAt(0, rs, part{1, rs, rs})
	s1 := snapshotAt(1, rs, part{1, rs, []int32{1, 2}})
	s2 := snapshotAt(2, rs, part{1, rs, rs})
	s3 := snapshotAt(3, rs, part{1, rs, rs})
	for _, pair := range [][2]*Snapshot{{nil, s0}, {s0, s1}, {s1, s2}, {s2, s3}} {
		carryTransitions(pair[0], pair[1])
	}
	if s2.Episodes.Ended["t"] == nil || s3.Episodes.Ended["t"] != s2.Episodes.Ended["t"] {
		t.Errorf("a refresh without episodes copied the topic's histograms")
	}
	if got := s2.Episodes.Ended["t"][ConditionUnderReplicated].Count; got != 1 {
		t.Errorf("under-replicated episodes = %d, want 1", got)
	}
	if len(s3.Episodes.Open[ConditionUnderReplicated]) != 0 || len(s3.Episodes.Oldest) != 0 {
		t.Errorf("healthy cluster keeps open episodes: %+v", s3.Episodes)
	}
	// A deleted topic takes its histograms with it.
	gone := snapshotAt(4, rs)
	carryTransitions(s3, gone)
	if len(gone.Episodes.Ended) != 0 {
		t.Errorf("histograms of a deleted topic kept: %v", gone.Episodes.Ended)
	}
}

func TestMinISRReadLateMakesAnEpisodeOfUnknownStart(t *testing.T) {
	rs := []int32{1, 2, 3}
	// The first refresh could not read min.insync.replicas; the second
	// could, and finds the partition already under it.
	s0 := snapshotAt(0, rs, part{1, rs, []int32{1}})
	s0.Topics[0].MinISR = 0
	s1 := snapshotAt(5, rs, part{1, rs, []int32{1}})
	s2 := snapshotAt(9, rs, part{1, rs, rs})
	carryTransitions(nil, s0)
	carryTransitions(s0, s1)
	carryTransitions(s1, s2)
	if o := s1.Episodes.Open[ConditionUnderMinISR][PartitionKey{"t", 0}]; o.StartSeen || !o.Since.Equal(s1.ReadAt) {
		t.Errorf("under-min-ISR episode found with min ISR first known: %+v, want unknown start at %v", o, s1.ReadAt)
	}
	for c, h := range s2.Episodes.Ended["t"] {
		if h != nil && h.Count != 0 {
			t.Errorf("condition %d: an episode of unknown start was observed (under min ISR since min ISR was known, under-replicated since the first refresh): %+v", c, h)
		}
	}
	if len(s2.Episodes.Open[ConditionUnderMinISR]) != 0 {
		t.Errorf("the episode is still open after the ISR healed")
	}
}

// probed marks which brokers accepted the refresh's probe and sets the
// outage clock's limit, as the source does.
func probed(s *Snapshot, unreachable ...int32) *Snapshot {
	for i := range s.Brokers {
		s.Brokers[i].Reachable = s.Brokers[i].Address != "" && !slices.Contains(unreachable, s.Brokers[i].ID)
	}
	s.backdateLimit = time.Minute
	return s
}

// chainSnapshots carries transitions from each snapshot to the next, as
// refreshes do, and returns the last.
func chainSnapshots(snaps ...*Snapshot) *Snapshot {
	var prev *Snapshot
	for _, s := range snaps {
		rememberDownBrokers(prev, s)
		carryTransitions(prev, s)
		prev = s
	}
	return prev
}

// The outage clock's rule for Kafka: an offline or under-min-ISR episode
// the metadata confirms begins at the exporter's first failed probe of the
// broker it lost.
func TestOutageClockKafka(t *testing.T) {
	rs, one := []int32{1, 2, 3}, []int32{1}
	healthy := func(s float64) *Snapshot {
		return probed(snapshotAt(s, rs, part{1, rs, rs}, part{1, one, one}))
	}
	// Broker 1 killed between 0 and 1 s; the metadata still lists it
	// (its session has not expired) until 9 s.
	dead := func(s float64) *Snapshot { return probed(snapshotAt(s, rs, part{1, rs, rs}, part{1, one, one}), 1) }
	fenced := func(s float64) *Snapshot {
		return probed(snapshotAt(s, []int32{2, 3}, part{2, rs, []int32{2, 3}}, part{-1, one, one}), 1)
	}
	key := func(p int32) PartitionKey { return PartitionKey{"t", p} }

	t.Run("confirmed", func(t *testing.T) {
		last := chainSnapshots(healthy(0), dead(1), dead(5), fenced(9))
		if o := last.Episodes.Open[ConditionOffline][key(1)]; !o.StartSeen || !o.Since.Equal(episodeT0.Add(time.Second)) {
			t.Errorf("offline episode of the RF 1 partition %+v, want begun at the failed probe at 1 s", o)
		}
		// Partition 0 lost broker 1 from its ISR: under-replicated since 1 s.
		if o := last.Episodes.Open[ConditionUnderReplicated][key(0)]; !o.Since.Equal(episodeT0.Add(time.Second)) {
			t.Errorf("under-replicated episode %+v, want begun at 1 s", o)
		}
		var offline, down bool
		for _, ev := range last.Events.Events {
			switch ev.Kind {
			case "partition_offline":
				offline = ev.FirstFailure.Equal(episodeT0.Add(time.Second))
			case "broker_down":
				down = ev.FirstFailure.Equal(episodeT0.Add(time.Second))
			}
		}
		if !offline || !down {
			t.Errorf("events carry first_failure at 1 s: partition_offline %v, broker_down %v\n%+v", offline, down, last.Events.Events)
		}
		ended := chainSnapshots(healthy(0), dead(1), dead(5), fenced(9), probed(snapshotAt(12, rs, part{2, rs, rs}, part{1, one, one})))
		if h := ended.Episodes.Ended["t"][ConditionOffline]; h == nil || h.Count != 1 || h.Sum != 11 {
			t.Errorf("offline histogram %+v, want one of 11 s (failed probe at 1 s to leader back at 12 s)", h)
		}
	})
	t.Run("never confirmed", func(t *testing.T) {
		// (Partition 1, RF 1, is under min ISR 2 throughout: not at issue.)
		last := chainSnapshots(healthy(0), dead(1), dead(5), healthy(9))
		for _, c := range []Condition{ConditionOffline, ConditionUnderReplicated} {
			if len(last.Episodes.Open[c]) != 0 || (last.Episodes.Ended["t"] != nil && last.Episodes.Ended["t"][c] != nil) {
				t.Errorf("a probe failure the metadata never confirmed made an episode: %+v", last.Episodes)
			}
		}
	})
	t.Run("under min ISR dates from the member whose loss made it", func(t *testing.T) {
		// Broker 2 died at 1 s and left the ISR at 5 s (still 2 of min 2);
		// broker 3 died at 6 s and left at 9 s: under min ISR since 6 s.
		last := chainSnapshots(
			probed(snapshotAt(0, rs, part{1, rs, rs})),
			probed(snapshotAt(1, rs, part{1, rs, rs}), 2),
			probed(snapshotAt(5, []int32{1, 3}, part{1, rs, []int32{1, 3}}), 2),
			probed(snapshotAt(6, []int32{1, 3}, part{1, rs, []int32{1, 3}}), 2, 3),
			probed(snapshotAt(9, []int32{1}, part{1, rs, []int32{1}}), 2, 3),
		)
		if o := last.Episodes.Open[ConditionUnderMinISR][key(0)]; !o.Since.Equal(episodeT0.Add(6 * time.Second)) {
			t.Errorf("under-min-ISR episode %+v, want begun at 6 s", o)
		}
	})
	t.Run("a lagging member dates the shrink to the refresh", func(t *testing.T) {
		last := chainSnapshots(
			probed(snapshotAt(0, rs, part{1, rs, rs})),
			probed(snapshotAt(5, rs, part{1, rs, []int32{1, 3}})),
		)
		if o := last.Episodes.Open[ConditionUnderReplicated][key(0)]; !o.Since.Equal(episodeT0.Add(5 * time.Second)) {
			t.Errorf("under-replicated episode %+v, want begun at 5 s: broker 2 answered every probe", o)
		}
	})
	t.Run("exporter restarted mid-outage", func(t *testing.T) {
		last := chainSnapshots(fenced(9), fenced(10), probed(snapshotAt(12, rs, part{2, rs, rs}, part{1, one, one})))
		if h := last.Episodes.Ended["t"]; h != nil && h[ConditionOffline] != nil && h[ConditionOffline].Count != 0 {
			t.Errorf("a restarted exporter timed an outage whose start it never saw: %+v", h[ConditionOffline])
		}
	})
}
