package kafkacanary

import (
	"sort"
	"strconv"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

const clusterLabel = "kafka_cluster"

// table holds the canary's round health families, served first, and
// every other family, in exposition order; its families' labels start
// with the cluster's.
var table = &exposition.Table{Labels: []string{clusterLabel}, Buckets: canary.LatencyBuckets}

type descs struct {
	canary.Metrics

	stallSeconds    *exposition.Desc
	duplicates      *exposition.Desc
	topicDegraded   *exposition.Desc
	topicRF         *exposition.Desc
	topicMinISR     *exposition.Desc
	topicNotLeading *exposition.Desc
}

// metrics is the canary's metric table, each name a literal. broker is
// the partition's leader when the write was attempted (-1: none known).
var metrics = func() descs {
	partition := []string{"partition", "broker"}
	return descs{
		Metrics: canary.Metrics{
			Health: exposition.Health{
				Up: table.Health.Gauge("kafka_canary_up",
					"1 if the write canary's last round reached the cluster and its topic; the write counters are served either way.", clusterLabel),
				Duration:    table.Health.Gauge("kafka_canary_round_duration_seconds", "How long the canary's last round of writes took.", clusterLabel),
				LastSuccess: table.Health.Gauge("kafka_canary_last_round_success_timestamp_seconds", "Unix time when the canary last reached its topic and wrote.", clusterLabel),
				Refreshes:   table.Health.Counter("kafka_canary_rounds_total", "Rounds of canary writes attempted since the exporter started.", clusterLabel),
				Failures:    table.Health.Counter("kafka_canary_round_failures_total", "Canary rounds that could not reach the cluster or the canary topic.", clusterLabel),
			},
			Leader: table.Gauge("kafka_canary_leader",
				"1 if this exporter holds the cluster's canary lease (leads the group named after the canary topic with .lease) and its last round succeeded, so it is the one that writes (always 1 with canary.lease false, while rounds succeed); 0 on the other exporters of the cluster, which serve no write counters."),
			Attempts: table.Counter("kafka_canary_produce_attempts_total",
				"Canary records produced (acks=all, idempotent) to the partition, by its leader at the time.", partition...),
			Acknowledged: table.Counter("kafka_canary_produce_acknowledged_total",
				"Canary records the leader acknowledged: written to every in-sync replica, at least min.insync.replicas.", partition...),
			Failures: table.Counter("kafka_canary_produce_failures_total",
				"Canary records not acknowledged, by error: the Kafka error (NOT_ENOUGH_REPLICAS, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, TOPIC_AUTHORIZATION_FAILED, ...), timeout, connection, no_broker or other.",
				append(partition, "error")...),
			Duration: table.Histogram("kafka_canary_produce_duration_seconds",
				"Latency of acknowledged canary records, by the leader that acknowledged them.", "broker"),
			Lost: table.Counter("kafka_canary_acknowledged_lost_total",
				"Canary records this leader acknowledged that were not at their offset when read back after a later leader change of the partition (the last 1000 records found at their offset are read again after each: an unclean election loses records read back before it too).", partition...),
			Unverifiable: table.Counter("kafka_canary_acknowledged_unverifiable_total",
				"Canary records this leader acknowledged that the canary dropped without reading them back, so counted neither lost nor kept: gone from the log (retention, DeleteRecords), written to a canary topic since deleted and re-created, acknowledged during an earlier hold of the canary lease, or more than 1000 waiting on a partition whose read-backs failed.", partition...),
			Checks: table.Counter("kafka_canary_read_back_checks_total",
				"Times the canary read back a partition's acknowledged records after its leader changed."),
		},
		stallSeconds: table.Series.Histogram("kafka_canary_write_stall_seconds",
			"The clients' stall clock: how long the canary's writes to a partition stalled, from the last acknowledged write before a failed one (or a round that could not write) to the first acknowledged after, "+
				"by the leader that acknowledged the last write before (the broker whose loss or trouble began the stall). One observation per stall when it ends; a stall the exporter did not see begin (it started during one, or another exporter held the canary lease) is not observed.",
			episode.Buckets, clusterLabel, "broker"),
		duplicates: table.Counter("kafka_canary_acknowledged_duplicates_total",
			"Extra copies of canary records this leader acknowledged that a read-back found at another offset as well: records the producer sent once (acks=all, idempotent) that the log holds twice, as a retry across a leader change can append. "+
				"Counted when the record is read back (after the partition's next leader change, or every 100 records), among the offsets since the previous read-back of the partition.", partition...),
		topicDegraded: table.Gauge("kafka_canary_topic_degraded",
			"1 while the canary topic is weaker than configured: fewer replicas or a lower min.insync.replicas than canary.replication_factor and canary.min_insync_replicas, or a live broker that is the preferred leader of no canary partition. The canary heals its own topic (unless create_topic is false). Served while the last round succeeded."),
		topicRF: table.Gauge("kafka_canary_topic_replication_factor",
			"Lowest number of replicas of a canary partition, not counting those a reassignment is still adding. Served while the last round succeeded."),
		topicMinISR: table.Gauge("kafka_canary_topic_min_insync_replicas",
			"min.insync.replicas of the canary topic; absent while unknown. Served while the last round succeeded."),
		topicNotLeading: table.Gauge("kafka_canary_topic_brokers_not_leading",
			"Live brokers that lead no canary partition, so the canary does not test them as leaders (after a failover, until leadership is moved back). Served while the last round succeeded."),
	}
}()

// Sets returns the canary's metric tables, in exposition order.
func Sets() []*exposition.Set { return table.Sets() }

// Collector serves the latest counters of every Kafka canary. It never
// talks to a cluster.
type Collector = exposition.Collector[Snapshot]

// NewCollector returns a collector with no canaries.
func NewCollector() *Collector { return exposition.NewCollector(emitState, table.Sets()...) }

func sortedKeys[V any](m map[int32]V) []int32 {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// emitState emits the round health and the counters of the last snapshot,
// which stay served when a round fails: they count what happened.
func emitState(health, sink exposition.Sink, cluster string, state *watch.State[Snapshot]) {
	s := canary.Round(&metrics.Metrics, health, sink, cluster, state, func(s *Snapshot) (bool, uint64) { return s.Leader, s.Checks })
	if s == nil {
		return
	}
	// The topic's shape is now's, unlike the counters: not served stale.
	if t := s.Topic; t != nil && state.Up {
		degraded := 0.0
		if t.Degraded() {
			degraded = 1
		}
		sink.Add(metrics.topicDegraded, degraded, cluster)
		sink.Add(metrics.topicRF, float64(t.ReplicationFactor), cluster)
		if t.MinInsyncReplicas > 0 {
			sink.Add(metrics.topicMinISR, float64(t.MinInsyncReplicas), cluster)
		}
		sink.Add(metrics.topicNotLeading, float64(len(t.NotLeading)), cluster)
	}
	for _, p := range sortedKeys(s.Partitions) {
		for _, leader := range sortedKeys(s.Partitions[p]) {
			st := s.Partitions[p][leader]
			labels := []string{cluster, strconv.Itoa(int(p)), strconv.Itoa(int(leader))}
			metrics.EmitWrites(sink, labels, st.Attempts, st.Acknowledged, st.Failures, st.Lost, st.Unverifiable)
			sink.Add(metrics.duplicates, float64(st.Duplicates), labels...)
		}
	}
	for _, broker := range sortedKeys(s.Latency) {
		count, sum, cumulative := s.Latency[broker].Values()
		sink.AddHistogram(metrics.Duration, count, sum, cumulative, cluster, strconv.Itoa(int(broker)))
	}
	for _, broker := range sortedKeys(s.Stalls) {
		h := s.Stalls[broker]
		sink.AddHistogram(metrics.stallSeconds, h.Count, h.Sum, h.Cumulative, cluster, strconv.Itoa(int(broker)))
	}
}
