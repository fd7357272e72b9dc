package kafka

import (
	"fmt"
	"strings"
)

// PartitionSeries says how the lean mode serves one per-partition family
// and, for a family lean does not serve for every partition, the PromQL
// over what lean serves that gives the full mode's value for every
// partition (TestLeanReplacementsGiveTheFullSeries checks each one with
// promtool against rendered snapshots).
type PartitionSeries struct {
	Family string
	// Lean is when the lean mode serves the family.
	Lean string
	// Replacement is the PromQL that gives the full mode's series from
	// lean's; empty when lean serves what full serves.
	Replacement string
	// Note qualifies the replacement, when it is not exact.
	Note string
}

// Lean's serving rules, as PartitionSeries.Lean says them.
const (
	leanAlways     = "every partition"
	leanDetailed   = "detailed partitions"
	leanAsFull     = "as full: only in the rare state that gives it a value, which details the partition"
	leanCountersTo = "not per partition"
)

// PartitionSeriesModes lists every per-partition family and how lean
// serves it. In the unhealthy mode, a family is served for detailed
// partitions as lean serves it for them; a healthy partition has no series
// and reads as healthy: its offline, under-replicated and under-min-ISR
// flags are 0, its replicas in sync.
var PartitionSeriesModes = []PartitionSeries{
	{Family: "kafka_partition_leader", Lean: leanAlways},
	{Family: "kafka_partition_replicas", Lean: leanAlways},
	{Family: "kafka_partition_in_sync_replicas", Lean: leanAlways},
	{Family: "kafka_partition_under_replicated", Lean: leanAlways},
	{Family: "kafka_partition_under_min_isr", Lean: leanAlways + " (once the topic's min ISR is known, as full)"},
	{Family: "kafka_partition_offline", Lean: leanDetailed,
		Replacement: `kafka_partition_leader == bool -1`},
	{Family: "kafka_partition_at_min_isr", Lean: leanDetailed + ", and wherever it is 1",
		Replacement: `kafka_partition_in_sync_replicas == bool ignoring (partition) group_left kafka_topic_min_insync_replicas`},
	{Family: "kafka_partition_offline_replicas", Lean: leanDetailed,
		Replacement: `kafka_partition_offline_replicas or kafka_partition_replicas * 0`},
	{Family: "kafka_partition_leader_is_preferred", Lean: leanDetailed + ", and wherever it is 0",
		Replacement: `kafka_partition_leader_is_preferred or kafka_partition_leader * 0 + 1`},
	{Family: "kafka_partition_reassigning", Lean: leanDetailed,
		Replacement: `kafka_partition_reassigning or kafka_partition_leader * 0`},
	{Family: "kafka_partition_adding_replicas", Lean: leanAsFull},
	{Family: "kafka_partition_removing_replicas", Lean: leanAsFull},
	{Family: "kafka_partition_eligible_leader_replicas", Lean: leanAsFull},
	{Family: "kafka_partition_last_known_elr", Lean: leanAsFull},
	{Family: "kafka_partition_no_clean_leader", Lean: leanAsFull},
	{Family: "kafka_partition_replica_racks", Lean: leanDetailed + ", and where the partition is rack-unsafe or its ISR spans fewer racks",
		Replacement: `kafka_partition_replica_racks or (kafka_partition_replicas <= ignoring (topic, partition) group_left kafka_cluster_racks) or (kafka_partition_replicas * 0 + ignoring (topic, partition) group_left kafka_cluster_racks)`,
		Note:        "a partition lean leaves out is rack-safe: its replicas span min(replication factor, racks)"},
	{Family: "kafka_partition_isr_racks", Lean: leanDetailed + ", and where the partition is rack-unsafe or its ISR spans fewer racks",
		Replacement: `kafka_partition_isr_racks or (kafka_partition_replicas <= ignoring (topic, partition) group_left kafka_cluster_racks) or (kafka_partition_replicas * 0 + ignoring (topic, partition) group_left kafka_cluster_racks)`,
		Note:        "a partition lean leaves out has its ISR in as many racks as its replicas"},
	{Family: "kafka_partition_leader_changes_total", Lean: leanCountersTo,
		Replacement: `kafka_topic_leader_changes_total`, Note: "per topic; per broker, `kafka_broker_leaderships_gained_total` and `_lost_total`; which partition: the event log (`/api/events?system=kafka`)"},
	{Family: "kafka_partition_isr_shrinks_total", Lean: leanCountersTo,
		Replacement: `kafka_topic_isr_shrinks_total`, Note: "per topic; per broker whose replica left, `kafka_broker_isr_shrinks_total`; which partition: the event log"},
	{Family: "kafka_partition_isr_expands_total", Lean: leanCountersTo,
		Replacement: `kafka_topic_isr_expands_total`, Note: "per topic; per broker whose replica joined, `kafka_broker_isr_expands_total`; which partition: the event log"},
	{Family: "kafka_partition_unclean_leader_elections_total", Lean: leanCountersTo,
		Replacement: `kafka_topic_unclean_leader_elections_total`, Note: "per topic; per broker elected, `kafka_broker_unclean_leader_elections_total`; which partition: the event log"},
}

// PartitionModesDoc is the Markdown METRICS.md shows after the Kafka
// table: the modes, and for each per-partition family what lean serves
// and the PromQL that replaces what it leaves out.
func PartitionModesDoc() string {
	var b strings.Builder
	b.WriteString("### Per-partition series by `partition_metrics` mode\n\n")
	b.WriteString("Topic, broker and cluster series are served in every mode. Per partition:\n\n")
	b.WriteString("- `lean` (default): five series for every partition, the rest where they say something: for *detailed* partitions " +
		"(under-replicated, at or under min ISR, offline, with offline replicas, reassigning or in an open episode, and for " +
		"`partition_metrics_hold`, default 10m, after the last of these) and where a gauge is off its healthy value. " +
		"Transition counters are per topic and per broker.\n")
	b.WriteString("- `unhealthy`: detailed partitions only, each with what lean serves for it. A partition without series is healthy.\n")
	b.WriteString("- `full`: every family below for every partition.\n")
	b.WriteString("- `none`: no per-partition series.\n\n")
	b.WriteString("| family | lean serves it for | PromQL over lean's series that gives full's |\n|---|---|---|\n")
	for _, s := range PartitionSeriesModes {
		replacement := "(the same series)"
		if s.Replacement != "" {
			replacement = "`" + strings.ReplaceAll(s.Replacement, "|", `\|`) + "`"
			if s.Note != "" {
				replacement += fmt.Sprintf(" (%s)", s.Note)
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", s.Family, s.Lean, replacement)
	}
	return b.String()
}
