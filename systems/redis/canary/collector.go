package rediscanary

import (
	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/systems/redis/keycanary"
)

const clusterLabel = "redis_cluster"

// table holds the canary's round health families, served first, and
// every other family, in exposition order; its families' labels start
// with the cluster's.
var table = &exposition.Table{Labels: []string{clusterLabel}, Buckets: canary.LatencyBuckets}

// metrics is the canary's metric table, each name a literal.
var metrics = func() canary.Metrics {
	master := []string{"node_id", "address"}
	return canary.Metrics{
		Health: exposition.Health{
			Up: table.Health.Gauge("redis_canary_up",
				"1 if the write canary's last round read the slot owners; the write counters are served either way.", clusterLabel),
			Duration:    table.Health.Gauge("redis_canary_round_duration_seconds", "How long the canary's last round of writes took.", clusterLabel),
			LastSuccess: table.Health.Gauge("redis_canary_last_round_success_timestamp_seconds", "Unix time when the canary last read the slot owners and wrote.", clusterLabel),
			Refreshes:   table.Health.Counter("redis_canary_rounds_total", "Rounds of canary writes attempted since the exporter started.", clusterLabel),
			Failures:    table.Health.Counter("redis_canary_round_failures_total", "Canary rounds that could not read the slot owners from any node.", clusterLabel),
		},
		Attempts: table.Counter("redis_canary_write_attempts_total",
			"Canary writes attempted to the master's key: SET (and WAIT when configured), preceded by a GET when the key's slot changed master.", master...),
		Acknowledged: table.Counter("redis_canary_writes_acknowledged_total",
			"Canary writes the master acknowledged (with WAIT on: that a replica also confirmed).", master...),
		Failures: table.Counter("redis_canary_write_failures_total",
			"Canary writes that failed, by error: the Redis error code (NOPERM, MOVED, CLUSTERDOWN, READONLY, OOM, ...), timeout, connection, or not_replicated (WAIT saw no replica in time).",
			append(master, "error")...),
		Duration: table.Histogram("redis_canary_write_duration_seconds",
			"Latency of acknowledged canary writes, SET and WAIT together.", master...),
		Lost: table.Counter("redis_canary_acknowledged_lost_writes_total",
			"Writes this master acknowledged that the master which took over its slot did not have when the canary read the key from it.", master...),
		Unverifiable: table.Counter("redis_canary_acknowledged_unverifiable_writes_total",
			"Writes this master acknowledged whose key the master which took over its slot did not have, when the key's TTL (canary.key_ttl) may have run out before the canary read it: expired or lost, which cannot be told, so counted neither lost nor kept.", master...),
		Leader: table.Gauge("redis_canary_leader",
			"1 if this exporter holds the cluster's canary lease and its last round succeeded, so it is the one that writes (always 1 with canary.lease false, while rounds succeed); 0 on the other exporters of the cluster, which serve no write counters."),
		Checks: table.Counter("redis_canary_lost_write_checks_total",
			"Times the canary read its key from a new master after the key's slot changed master, looking for lost acknowledged writes."),
	}
}()

// stallSeconds is the clients' stall clock, by the master that acknowledged
// the last write before the stall.
var stallSeconds = table.Series.Histogram("redis_canary_write_stall_seconds",
	"The clients' stall clock: how long the canary's writes to a master's key stalled, from the last acknowledged write before a failed one to the first acknowledged after (by the new master after a failover), "+
		"by the master that acknowledged the last write before (the one whose loss or trouble began the stall). One observation per stall when it ends; a stall the exporter did not see begin (it started during one, or another exporter held the canary lease) is not observed.",
	episode.Buckets, clusterLabel, "node_id", "address")

// Sets returns the canary's metric tables, in exposition order, for
// documentation and contract tests.
func Sets() []*exposition.Set { return table.Sets() }

// Collector serves the latest counters of every Redis canary. It never
// talks to a cluster.
type Collector = exposition.Collector[Snapshot]

// NewCollector returns a collector with no canaries.
func NewCollector() *Collector { return exposition.NewCollector(emitState, table.Sets()...) }

// emitState emits the round health and the counters of the last snapshot.
// Unlike the cluster collectors' series, the counters stay served when a
// round fails: they count what happened, and stay true.
func emitState(health, sink exposition.Sink, cluster string, state *watch.State[Snapshot]) {
	s := canary.Round(&metrics, health, sink, cluster, state, func(s *Snapshot) (bool, uint64) { return s.Leader, s.Checks })
	if s == nil {
		return
	}
	keycanary.EmitMasters(&metrics, stallSeconds, sink, s, func(id string, m *MasterStats) []string { return []string{cluster, id, m.Addr} })
}
