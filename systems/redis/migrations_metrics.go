package redis

// The atomic slot migration series (see migrations.go).

import (
	"strings"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
)

// migrationMetrics is the atomic slot migration families' metric table.
// Node series are served for the reachable nodes whose server has atomic
// slot migration.
var migrationMetrics = func() struct {
	jobs, slots, remaining, lastOutcome, finished *exposition.Desc
} {
	node := []string{"node_id", "address"}
	const servers = " Atomic slot migration: Valkey 9.0+ (CLUSTER GETSLOTMIGRATIONS) and Redis 8.4+ (CLUSTER MIGRATION STATUS); absent on other servers."
	return struct {
		jobs, slots, remaining, lastOutcome, finished *exposition.Desc
	}{
		jobs: table.Gauge("redis_cluster_node_slot_migration_jobs",
			"Atomic slot migration jobs in the node's log by operation (export: the node is the source; import: the target) and state (in_progress, or how it finished: success, failed, cancelled); in_progress is always served, the others while non-zero. The log is bounded (cluster-slot-migration-log-max-len)."+servers+fromRefresh,
			append(node, "operation", "state")...),
		slots: table.Gauge("redis_cluster_node_slot_migration_slots",
			"Hash slots in the node's atomic slot migration jobs in progress, by operation (export or import)."+servers+fromRefresh,
			append(node, "operation")...),
		remaining: table.Gauge("redis_cluster_node_slot_migration_remaining_replication_bytes",
			"Replication stream the node still has to send for its export jobs in progress (remaining_repl_size; Valkey only)."+servers+fromRefresh, node...),
		lastOutcome: table.Gauge("redis_cluster_node_slot_migration_last_outcome",
			"1 for the outcome (success, failed, cancelled) of the node's most recently finished atomic slot migration job, 0 for the others; absent while its log has no finished job."+servers+fromRefresh,
			append(node, "outcome")...),
		finished: table.Counter("redis_cluster_slot_migrations_finished_total",
			"Atomic slot migration jobs this exporter saw finish, by outcome (success, failed, cancelled); each job once, however many nodes report it."+servers+fromRefresh, "outcome"),
	}
}()

// emitMigrations emits the atomic slot migration series.
func emitMigrations(ch exposition.Sink, cluster string, s *Snapshot) {
	m := &migrationMetrics
	if !exposition.Wants(ch, m.jobs, m.slots, m.remaining, m.lastOutcome, m.finished) {
		return
	}
	served := false
	labels := []string{cluster, "", "", "", ""}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		nm := n.Migrations
		if nm == nil {
			continue
		}
		served = true
		labels[1], labels[2] = n.ID, n.Addr
		for _, op := range []string{MigrationExport, MigrationImport} {
			labels[3] = strings.ToLower(op)
			ch.Add(m.slots, float64(nm.InFlightSlots(op)), labels[:4]...)
			counts := map[MigrationOutcome]int{}
			for j := range nm.Jobs {
				if nm.Jobs[j].Operation == op {
					counts[nm.Jobs[j].Outcome]++
				}
			}
			labels[4] = "in_progress"
			ch.Add(m.jobs, float64(counts[MigrationRunning]), labels...)
			for _, o := range migrationOutcomes {
				if counts[o] > 0 {
					labels[4] = string(o)
					ch.Add(m.jobs, float64(counts[o]), labels...)
				}
			}
		}
		var remaining int64
		hasRemaining := false
		for j := range nm.Jobs {
			if job := &nm.Jobs[j]; job.HasRemaining {
				hasRemaining = true
				if job.Outcome == MigrationRunning && job.Operation == MigrationExport {
					remaining += job.RemainingReplBytes
				}
			}
		}
		if hasRemaining {
			ch.Add(m.remaining, float64(remaining), labels[:3]...)
		}
		if last := nm.LastFinished(); last != nil {
			for _, o := range migrationOutcomes {
				labels[3] = string(o)
				ch.Add(m.lastOutcome, bool01(last.Outcome == o), labels[:4]...)
			}
		}
	}
	if served {
		for i, o := range migrationOutcomes {
			ch.Add(m.finished, float64(s.MigrationsFinished[i]), cluster, string(o))
		}
	}
}
