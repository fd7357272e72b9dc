package kafka

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// watcherServing returns a watcher whose refreshes return the given
// snapshots and errors in turn.
func watcherServing(t *testing.T, results ...any) *watch.Watcher[Snapshot] {
	t.Helper()
	i := 0
	w := watch.New("main", time.Second, time.Second, func(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
		r := results[i]
		i++
		if err, ok := r.(error); ok {
			return nil, err
		}
		s := r.(*Snapshot)
		carryTransitions(prev, s)
		return s, nil
	}, log.NewNopLogger())
	return w
}

// collectorAfterFailover serves cluster "main" after two refreshes: before
// and after the leader of partition 0 (broker 1) was killed.
func collectorAfterFailover(t *testing.T) *Collector {
	t.Helper()
	before, after := failoverSnapshots()
	w := watcherServing(t, before, after)
	c := NewCollector()
	c.SetEmit("main", w, EmitState(settings.PartitionMetricsFull))
	w.RefreshOnce(context.Background())
	w.RefreshOnce(context.Background())
	return c
}

func failoverSnapshots() (before, after *Snapshot) {
	rs := []int32{1, 2, 3}
	before = snapshotOf([]int32{1, 2, 3}, part{1, rs, rs})
	after = snapshotOf([]int32{2, 3}, part{2, rs, []int32{2, 3}})
	return before, after
}

const partitionMetricsAfterFailover = `
# HELP kafka_partition_in_sync_replicas Number of replicas in the partition's in-sync replica set (ISR) (as of the last successful refresh).
# TYPE kafka_partition_in_sync_replicas gauge
kafka_partition_in_sync_replicas{kafka_cluster="main",partition="0",topic="t"} 2
# HELP kafka_partition_isr_shrinks_total Refreshes in which this exporter observed the partition's ISR lose members; one that also gained members (a replacement, e.g. [3] to [1]) counts here and in kafka_partition_isr_expands_total.
# TYPE kafka_partition_isr_shrinks_total counter
kafka_partition_isr_shrinks_total{kafka_cluster="main",partition="0",topic="t"} 1
# HELP kafka_partition_leader Broker ID of the partition's leader, -1 when it has none (as of the last successful refresh).
# TYPE kafka_partition_leader gauge
kafka_partition_leader{kafka_cluster="main",partition="0",topic="t"} 2
# HELP kafka_partition_leader_changes_total Leader changes this exporter observed between consecutive refreshes, including to and from no leader.
# TYPE kafka_partition_leader_changes_total counter
kafka_partition_leader_changes_total{kafka_cluster="main",partition="0",topic="t"} 1
# HELP kafka_partition_offline_replicas Number of the partition's assigned replicas on brokers that are down or on offline log directories (as of the last successful refresh).
# TYPE kafka_partition_offline_replicas gauge
kafka_partition_offline_replicas{kafka_cluster="main",partition="0",topic="t"} 1
# HELP kafka_partition_under_min_isr 1 if acks=all writes fail: the ISR is smaller than the topic's effective min.insync.replicas, or the partition has no leader (as kafka-topics.sh --under-min-isr-partitions counts) (as of the last successful refresh).
# TYPE kafka_partition_under_min_isr gauge
kafka_partition_under_min_isr{kafka_cluster="main",partition="0",topic="t"} 0
# HELP kafka_partition_at_min_isr 1 if the ISR equals the topic's effective min.insync.replicas, so one more loss blocks acks=all writes (as of the last successful refresh).
# TYPE kafka_partition_at_min_isr gauge
kafka_partition_at_min_isr{kafka_cluster="main",partition="0",topic="t"} 1
# HELP kafka_partition_under_replicated 1 if the ISR is smaller than the replication factor; a replica a reassignment is still adding does not count (KIP-352) (as of the last successful refresh).
# TYPE kafka_partition_under_replicated gauge
kafka_partition_under_replicated{kafka_cluster="main",partition="0",topic="t"} 1
# HELP kafka_broker_up 1 if the broker is registered and live, 0 if replicas are assigned to it but it is not (as of the last successful refresh).
# TYPE kafka_broker_up gauge
kafka_broker_up{broker="1",kafka_cluster="main"} 0
kafka_broker_up{broker="2",kafka_cluster="main"} 1
kafka_broker_up{broker="3",kafka_cluster="main"} 1
# HELP kafka_broker_leader_partitions Partitions this broker leads, across all topics (as of the last successful refresh).
# TYPE kafka_broker_leader_partitions gauge
kafka_broker_leader_partitions{broker="1",kafka_cluster="main"} 0
kafka_broker_leader_partitions{broker="2",kafka_cluster="main"} 1
kafka_broker_leader_partitions{broker="3",kafka_cluster="main"} 0
# HELP kafka_broker_info Always 1; carries the broker's advertised address and rack (last known address for a broker that is down) (as of the last successful refresh).
# TYPE kafka_broker_info gauge
kafka_broker_info{address="127.0.0.1:9091",broker="1",kafka_cluster="main",rack=""} 1
kafka_broker_info{address="127.0.0.1:9092",broker="2",kafka_cluster="main",rack=""} 1
kafka_broker_info{address="127.0.0.1:9093",broker="3",kafka_cluster="main",rack=""} 1
# HELP kafka_cluster_brokers Live brokers (as of the last successful refresh).
# TYPE kafka_cluster_brokers gauge
kafka_cluster_brokers{kafka_cluster="main"} 2
# HELP kafka_cluster_expected_brokers Brokers that are live or hold replica assignments; fewer live than expected means brokers are down (as of the last successful refresh).
# TYPE kafka_cluster_expected_brokers gauge
kafka_cluster_expected_brokers{kafka_cluster="main"} 3
# HELP kafka_topic_under_replicated_partitions Partitions of the topic whose ISR is smaller than their assigned replicas (as of the last successful refresh).
# TYPE kafka_topic_under_replicated_partitions gauge
kafka_topic_under_replicated_partitions{kafka_cluster="main",topic="t"} 1
# HELP kafka_topic_min_insync_replicas Effective min.insync.replicas of the topic: its override, else the broker or cluster default (as of the last successful refresh).
# TYPE kafka_topic_min_insync_replicas gauge
kafka_topic_min_insync_replicas{kafka_cluster="main",topic="t"} 2
# HELP kafka_up 1 if the last refresh of this Kafka cluster succeeded, else 0. While 0, partition, topic and broker series are not served.
# TYPE kafka_up gauge
kafka_up{kafka_cluster="main"} 1
`

func TestCollectorAfterFailover(t *testing.T) {
	c := collectorAfterFailover(t)

	names := []string{
		"kafka_partition_in_sync_replicas", "kafka_partition_isr_shrinks_total", "kafka_partition_leader",
		"kafka_partition_leader_changes_total", "kafka_partition_offline_replicas", "kafka_partition_under_min_isr",
		"kafka_partition_at_min_isr", "kafka_partition_under_replicated", "kafka_broker_up",
		"kafka_broker_leader_partitions", "kafka_broker_info", "kafka_cluster_brokers", "kafka_cluster_expected_brokers",
		"kafka_topic_under_replicated_partitions", "kafka_topic_min_insync_replicas", "kafka_up",
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(partitionMetricsAfterFailover), names...); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestCollectorHidesStaleSnapshotWhenRefreshFails(t *testing.T) {
	before, _ := failoverSnapshots()
	w := watcherServing(t, before, errors.New("no broker answered"))
	c := NewCollector()
	c.Set("main", w)
	w.RefreshOnce(context.Background())
	if n := testutil.CollectAndCount(c, "kafka_partition_leader"); n != 1 {
		t.Fatalf("partition series after a good refresh = %d, want 1", n)
	}
	w.RefreshOnce(context.Background())
	if n := testutil.CollectAndCount(c, "kafka_partition_leader", "kafka_broker_up", "kafka_topic_partitions"); n != 0 {
		t.Errorf("%d cluster series served after a failed refresh, want 0", n)
	}
	want := `
# HELP kafka_up 1 if the last refresh of this Kafka cluster succeeded, else 0. While 0, partition, topic and broker series are not served.
# TYPE kafka_up gauge
kafka_up{kafka_cluster="main"} 0
# HELP kafka_exporter_refresh_failures_total Refreshes of this cluster that failed since the exporter started.
# TYPE kafka_exporter_refresh_failures_total counter
kafka_exporter_refresh_failures_total{kafka_cluster="main"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "kafka_up", "kafka_exporter_refresh_failures_total"); err != nil {
		t.Error(err)
	}
}

func TestCollectorWithoutPartitionMetrics(t *testing.T) {
	before, _ := failoverSnapshots()
	w := watcherServing(t, before)
	c := NewCollector()
	c.SetEmit("main", w, EmitState(settings.PartitionMetricsNone))
	w.RefreshOnce(context.Background())
	if n := testutil.CollectAndCount(c, "kafka_partition_leader", "kafka_partition_in_sync_replicas"); n != 0 {
		t.Errorf("partition series = %d, want 0 with partition metrics off", n)
	}
	if n := testutil.CollectAndCount(c, "kafka_topic_partitions", "kafka_broker_up"); n != 4 {
		t.Errorf("topic+broker series = %d, want 4", n)
	}
}

func TestMetricNamesCoverEverythingCollected(t *testing.T) {
	// After the failover, partition 0 is also being reassigned and a second
	// partition is offline with an empty ISR: the series served only in
	// those states are there too.
	rs := []int32{1, 2, 3}
	before, _ := failoverSnapshots()
	after := snapshotOf([]int32{2, 3}, part{2, rs, []int32{2, 3}}, part{-1, rs, nil})
	after.Topics[0].Partitions[0].setReassignment(nil, []int32{1})
	after.countNoCleanLeader()
	for i := range after.Brokers {
		after.Brokers[i].Rack = "rack-" + brokerLabel(after.Brokers[i].ID%2)
	}
	after.countRacks()
	after.computeBudget(1)
	after.FencedKnown = true
	after.Internal = []InternalTopic{{Name: "__consumer_offsets", Feature: "consumer_offsets", MinISR: 2, Partitions: 50, UnderReplicated: 1}}
	// A coordinator loading, with an episode open and one ended.
	after.Coordinators.Reads[CoordinatorGroup] = &CoordinatorRead{ReadAt: after.ReadAt, Partitions: []CoordinatorPartition{
		{State: CoordinatorLoading, Coordinator: 2, Reason: "COORDINATOR_LOAD_IN_PROGRESS"}, {State: CoordinatorAnswering, Coordinator: 3}}}
	after.Coordinators.Open[CoordinatorGroup] = map[int32]episode.Open{0: {Since: after.ReadAt.Add(-time.Second), StartSeen: true}}
	after.Coordinators.Ended[CoordinatorGroup] = episode.Empty().ObserveDuration(3 * time.Second)
	after.Coordinators.Groups = map[int32]*BrokerGroups{2: {Total: 2, ByProtocol: map[string]int{"consumer": 1, "none": 1}, ByState: map[string]int{"stable": 1, "empty": 1}}}
	after.Coordinators.Transactions = map[int32]*BrokerTransactions{2: {Total: 2, ByState: map[string]int{"ongoing": 1, "idle": 1}}}
	after.Coordinators.GroupsComplete = true
	after.Transactions = &TransactionRead{ReadAt: after.ReadAt, Complete: true, HangingKnown: true, MaxTimeout: 15 * time.Minute,
		Gaps: map[PartitionKey]ReadCommittedGap{{"t", 0}: {Records: 2, LSO: 5, StalledSince: after.ReadAt.Add(-time.Minute), Open: 1, OldestIdle: time.Minute}}}
	// Broker 2, live with replicas out of the offline partition's ISR, half
	// caught up over 20 s: its catch-up series and ETA.
	// The offline partition has no clean leader: what electing broker 2
	// would lose.
	after.CatchUp = &CatchUp{ReadAt: after.ReadAt, Brokers: map[int32]BrokerCatchUp{
		2: {Records: 5, Partitions: 1, Unread: 1, Peak: 10, PeakAt: after.ReadAt.Add(-20 * time.Second)}},
		Watermarks: map[PartitionKey]Watermark{{"t", 1}: {Offset: 100, ReadAt: after.ReadAt.Add(-time.Second)}},
		Candidates: map[PartitionKey]map[int32]int64{{"t", 1}: {2: 90}}}
	w := watcherServing(t, before, after)
	c := NewCollector()
	c.SetEmit("main", w, EmitState(settings.PartitionMetricsFull))
	w.RefreshOnce(context.Background())
	w.RefreshOnce(context.Background())
	known := map[string]bool{}
	for _, n := range exposition.SeriesNames(Sets()...) {
		known[n] = true
	}
	reg := prometheus.NewPedanticRegistry()
	// The failover (with a reassignment, an offline partition and racks)
	// exercises the state series, the episodes the histograms and
	// open-episode gauges.
	reg.MustRegister(c)
	episodes := prometheus.NewPedanticRegistry()
	episodes.MustRegister(collectorThroughEpisodes(t))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	episodeFamilies, err := episodes.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	seenNames := map[string]bool{}
	for _, mf := range append(families, episodeFamilies...) {
		if seenNames[mf.GetName()] {
			continue
		}
		seenNames[mf.GetName()] = true
		names := []string{mf.GetName()}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			names = []string{mf.GetName() + "_bucket", mf.GetName() + "_sum", mf.GetName() + "_count"}
		}
		for _, name := range names {
			if !known[name] {
				t.Errorf("collected %s, which the metric tables do not list", name)
			}
			seen++
		}
	}
	if seen != len(known) {
		var missing []string
		for name := range known {
			if !seenNames[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] && !seenNames[name] {
				missing = append(missing, name)
			}
		}
		slices.Sort(missing)
		t.Errorf("collected %d metric names, the metric tables list %d: each should be exercised by these snapshots (not collected: %v)", seen, len(known), missing)
	}
}

// The text path served on /metrics and the prometheus.Collector path must
// produce the same families, series and values.
func TestWriteTextMatchesCollect(t *testing.T) {
	c := collectorAfterFailover(t)
	episodes := collectorThroughEpisodes(t)
	episodeBytes, err := exposition.PlainText(episodes)
	if err != nil {
		t.Fatal(err)
	}
	episodeText := string(episodeBytes)
	if err := testutil.CollectAndCompare(episodes, strings.NewReader(episodeText)); err != nil {
		t.Errorf("text rendering of episode histograms differs from Collect: %v", err)
	}
	if !strings.Contains(episodeText, `kafka_partition_offline_episode_seconds_bucket{kafka_cluster="main",topic="t",le="10"} 1`) {
		t.Errorf("text lacks the offline episode histogram:\n%s", episodeText)
	}

	plain, err := exposition.PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(plain)
	if err := testutil.CollectAndCompare(c, strings.NewReader(text)); err != nil {
		t.Errorf("text rendering differs from Collect: %v", err)
	}
	if !strings.Contains(text, `kafka_partition_leader{kafka_cluster="main",partition="0",topic="t"} 2`) {
		t.Errorf("text lacks the leader series:\n%s", text)
	}
}
