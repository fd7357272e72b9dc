package mirror

import (
	"slices"
	"strconv"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

const (
	mirrorLabel = "mirror"
	sourceLabel = "source_cluster"
	targetLabel = "target_cluster"
)

// table holds the flows' health families, served first, and every other
// family, in exposition order; every family's labels start with the
// flow's (its name and its two clusters').
var table = &exposition.Table{Labels: []string{mirrorLabel, sourceLabel, targetLabel}}

type descs struct {
	up, sourceUp, targetUp                    *exposition.Desc
	duration, lastSuccess, refreshes, failing *exposition.Desc
	readErrors                                *exposition.Desc

	heartbeatAge, heartbeatTimestamp, stalled *exposition.Desc
	syncsNewest, syncsCaughtUp, syncsParts    *exposition.Desc

	topics, topicsMissing                       *exposition.Desc
	topicMissing, topicMismatch                 *exposition.Desc
	topicNotReplicated, topicRPO, topicUnknown  *exposition.Desc
	groupReread, groupCheckpointAge, groupParts *exposition.Desc
	groups, groupsLeftOut                       *exposition.Desc
	connectUp, connectorsMissing                *exposition.Desc
	connectorState, connectorTasks              *exposition.Desc

	partitionNotReplicated, partitionRPO, groupResume *exposition.Desc
}

// metrics is the flow's metric table, each name a literal. Every series
// carries the flow's name and its two clusters' names.
var metrics = func() descs {
	flow := table.Labels
	return descs{
		up: table.Health.Gauge("kafka_mirror_up",
			"1 if the last refresh of the mirror flow read both clusters; 0 if it reached one of them (see kafka_mirror_source_up and kafka_mirror_target_up) or neither.", flow...),
		sourceUp: table.Health.Gauge("kafka_mirror_source_up",
			"1 if the last refresh read the source cluster's metadata and offsets. While 0 the topic series are not served; the heartbeat and checkpoint series are, from the target.", flow...),
		targetUp: table.Health.Gauge("kafka_mirror_target_up",
			"1 if the last refresh read the target cluster's metadata and offsets.", flow...),
		duration:    table.Health.Gauge("kafka_mirror_refresh_duration_seconds", exposition.HelpRefreshDuration, flow...),
		lastSuccess: table.Health.Gauge("kafka_mirror_last_refresh_success_timestamp_seconds", "Unix time when the flow was last read from at least one of its clusters; time() minus this is the age of the data.", flow...),
		refreshes:   table.Health.Counter("kafka_mirror_refreshes_total", exposition.HelpRefreshes, flow...),
		failing:     table.Health.Counter("kafka_mirror_refresh_failures_total", "Refreshes of the flow that reached neither cluster.", flow...),
		readErrors: table.Health.Counter("kafka_mirror_read_errors_total",
			"Reads of the flow that failed, by what was read: source, target (metadata and offsets), offset_syncs, checkpoints, heartbeats, timestamps (single records for seconds behind), group_offsets (committed offsets on the source), decode (records of MM2's internal topics that did not decode, skipped).",
			append(append([]string(nil), flow...), "read")...),

		heartbeatAge: table.Gauge("kafka_mirror_heartbeat_age_seconds",
			"Age of the newest heartbeat replicated to the target (<source alias>.heartbeats) at the last refresh: its own timestamp, set by MM2 on the source side, to the exporter's clock. About MM2's emit.heartbeats.interval.seconds plus the replication delay when the flow runs; grows while it does not. Absent while none was read."),
		heartbeatTimestamp: table.Gauge("kafka_mirror_heartbeat_timestamp_seconds",
			"Unix time in the newest heartbeat replicated to the target; time() minus this ages between refreshes."),
		stalled: table.Gauge("kafka_mirror_stalled",
			"1 while the newest replicated heartbeat is older than the flow's stall_after, or the target answered and holds no heartbeat; kept as it was while the target is unreachable."),
		syncsNewest: table.Gauge("kafka_mirror_offset_syncs_newest_timestamp_seconds",
			"Unix time of the newest offset-sync record read (its record timestamp). MM2 writes syncs only when a partition moved offset.lag.max (100) records since the last, skipped an offset, or at its offset commit: an old one is normal for an idle flow. Absent while none was read."),
		syncsCaughtUp: table.Gauge("kafka_mirror_offset_syncs_caught_up",
			"1 once the exporter has read the offset-syncs topic to its end; while 0 (the first reads of a long topic) records_not_replicated may lack partitions."),
		syncsParts: table.Gauge("kafka_mirror_offset_syncs_partitions",
			"Source partitions with an offset sync read."),

		topics: table.Gauge("kafka_mirror_topics",
			"Source topics the flow replicates: matching its topics filter, MM2's internal and heartbeat topics left out."),
		topicsMissing: table.Gauge("kafka_mirror_topics_missing_on_target",
			"Replicated source topics whose remote topic (per replication_policy) the target lacks."),
		topicMissing: table.Gauge("kafka_mirror_topic_missing_on_target",
			"1 if the target lacks the topic's remote topic: everything the source keeps of it counts as not replicated.", "topic"),
		topicMismatch: table.Gauge("kafka_mirror_topic_partition_mismatch",
			"1 if the remote topic has another partition count than the source topic; partitions the target lacks count as not replicated.", "topic"),
		topicNotReplicated: table.Gauge("kafka_mirror_topic_records_not_replicated",
			"Records of the source topic the target lacks, summed over partitions with a figure: source high watermark minus the source offset after the newest replicated record, estimated from the latest offset sync (docs/mirror.md says how exact). What a failover now would lose.", "topic"),
		topicRPO: table.Gauge("kafka_mirror_topic_rpo_seconds",
			"Largest over the topic's partitions of the newest source record's timestamp minus the newest replicated record's (0 when caught up): the seconds of data a failover now would lose. Record timestamps: producers' clocks with CreateTime (docs/mirror.md). Absent when a partition's figure is unknown.", "topic"),
		topicUnknown: table.Gauge("kafka_mirror_topic_partitions_unknown",
			"Partitions of the topic left out of records_not_replicated: offsets not read, or data on both sides and no offset sync read yet.", "topic"),
		connectUp: table.Gauge("kafka_mirror_connect_up",
			"1 if the flow's Kafka Connect REST API (connect.url) answered at the last refresh. Served only for flows with connect."),
		connectorsMissing: table.Gauge("kafka_mirror_connectors_missing",
			"Connectors of the flow the Kafka Connect REST API does not run: those connect.connectors names that it does not know or, when none is named, 1 if no MirrorSourceConnector has the flow's source and target aliases. Served only for flows with connect."),
		connectorState: table.Gauge("kafka_mirror_connector_state",
			"1 for the connector's state as the Kafka Connect REST API reports it, 0 for the others (RUNNING, PAUSED, STOPPED, FAILED, UNASSIGNED, RESTARTING). kind: source, checkpoint or heartbeat (the Mirror connector class), other. Served only for flows with connect.", "connector", "kind", "state"),
		connectorTasks: table.Gauge("kafka_mirror_connector_tasks",
			"The connector's tasks in each state (RUNNING, PAUSED, STOPPED, FAILED, UNASSIGNED, RESTARTING), from the Kafka Connect REST API. A FAILED MirrorSourceConnector task replicates nothing until it is restarted. Served only for flows with connect.", "connector", "kind", "state"),
		groups: table.Gauge("kafka_mirror_groups",
			"Consumer groups with a checkpoint for a replicated topic on the target."),
		groupsLeftOut: table.Gauge("kafka_mirror_groups_left_out",
			"Consumer groups with checkpoints beyond the flow's max_groups: the last by name, whose group series are not served. The first max_groups by name are, the same ones every refresh."),
		groupReread: table.Gauge("kafka_mirror_group_records_to_reread",
			"Records the consumer group would read again after failing over to the target: its committed offset on the source minus its latest checkpoint's upstream offset, summed over partitions (at least the gap between the checkpoint's translated offset and where the group was). Absent while the source's committed offsets are unread.", "group", "topic"),
		groupCheckpointAge: table.Gauge("kafka_mirror_group_checkpoint_age_seconds",
			"Age at the last refresh of the group's oldest checkpoint for the topic (record timestamp). MM2 writes a checkpoint only when the translated offset moves, so an idle group's ages.", "group", "topic"),
		groupParts: table.Gauge("kafka_mirror_group_checkpointed_partitions",
			"Partitions of the topic with a checkpoint for the group on the target.", "group", "topic"),

		partitionNotReplicated: table.Gauge("kafka_mirror_partition_records_not_replicated",
			"Records of the source partition the target lacks (as kafka_mirror_topic_records_not_replicated). Only with partition_metrics.", "topic", "partition"),
		partitionRPO: table.Gauge("kafka_mirror_partition_rpo_seconds",
			"Seconds of the partition's data the target lacks (as kafka_mirror_topic_rpo_seconds). Only with partition_metrics.", "topic", "partition"),
		groupResume: table.Gauge("kafka_mirror_group_resume_offset",
			"Offset of the remote partition the group would resume from on the target: its latest checkpoint's downstream offset. Only with partition_metrics.", "group", "topic", "partition"),
	}
}()

// Sets returns the flow's metric tables, in exposition order.
func Sets() []*exposition.Set { return table.Sets() }

// Collector serves the latest state of every mirror flow. It never talks
// to a cluster.
type Collector = exposition.Collector[Snapshot]

// NewCollector returns a collector with no flows, serving each by its
// snapshot's cluster names and without partition series.
func NewCollector() *Collector {
	return exposition.NewCollector(Emitter("", "", false), Sets()...)
}

// Emitter emits a flow's state with these cluster names (those of its
// snapshot when empty) and, with partitions, the per-partition series.
func Emitter(sourceCluster, targetCluster string, partitions bool) exposition.EmitStateFunc[Snapshot] {
	return func(health, sink exposition.Sink, name string, state *watch.State[Snapshot]) {
		s := state.Snapshot
		src, dst := sourceCluster, targetCluster
		if s != nil && src == "" {
			src, dst = s.SourceCluster, s.TargetCluster
		}
		flow := []string{name, src, dst}
		with := func(extra ...string) []string { return append(append([]string(nil), flow...), extra...) }
		emitHealth(health, flow, state)
		if s != nil {
			for _, kind := range readKinds {
				health.Add(metrics.readErrors, float64(s.Errors[kind]), with(kind)...)
			}
			if s.Connect.Configured {
				health.Add(metrics.readErrors, float64(s.Errors[readConnect]), with(readConnect)...)
			}
		}
		if s == nil || !state.Up {
			return
		}
		if s.Heartbeat.Known {
			sink.Add(metrics.heartbeatAge, s.Heartbeat.Age.Seconds(), flow...)
			sink.Add(metrics.heartbeatTimestamp, unixSeconds(s.Heartbeat.Timestamp), flow...)
		}
		sink.Add(metrics.stalled, boolValue(s.Stalled), flow...)
		if !s.Syncs.Newest.IsZero() {
			sink.Add(metrics.syncsNewest, unixSeconds(s.Syncs.Newest), flow...)
		}
		sink.Add(metrics.syncsCaughtUp, boolValue(s.Syncs.CaughtUp), flow...)
		sink.Add(metrics.syncsParts, float64(s.Syncs.Partitions), flow...)
		if s.SourceUp {
			emitTopics(sink, s, with, partitions)
		}
		if s.Connect.Configured {
			emitConnect(sink, s.Connect, flow, with)
		}
		sink.Add(metrics.groups, float64(s.GroupsCheckpointed), flow...)
		sink.Add(metrics.groupsLeftOut, float64(s.GroupsLeftOut), flow...)
		for _, g := range s.Groups {
			labels := with(g.Group, g.Topic)
			if g.RereadKnown {
				sink.Add(metrics.groupReread, float64(g.Reread), labels...)
			}
			if !g.OldestCheckpoint.IsZero() {
				sink.Add(metrics.groupCheckpointAge, max(0, s.ReadAt.Sub(g.OldestCheckpoint).Seconds()), labels...)
			}
			sink.Add(metrics.groupParts, float64(len(g.Partitions)), labels...)
			if partitions {
				for _, p := range g.Partitions {
					sink.Add(metrics.groupResume, float64(p.Resume), with(g.Group, g.Topic, strconv.Itoa(int(p.ID)))...)
				}
			}
		}
	}
}

func emitConnect(sink exposition.Sink, c ConnectState, flow []string, with func(...string) []string) {
	sink.Add(metrics.connectUp, boolValue(c.Read), flow...)
	if !c.Read {
		return
	}
	sink.Add(metrics.connectorsMissing, float64(len(c.Missing)), flow...)
	for _, connector := range c.Connectors {
		tasks := map[string]int{}
		for _, t := range connector.Tasks {
			tasks[t.State]++
		}
		for _, state := range statesOf(connector) {
			sink.Add(metrics.connectorState, boolValue(connector.State == state), with(connector.Name, connector.Kind, state)...)
			sink.Add(metrics.connectorTasks, float64(tasks[state]), with(connector.Name, connector.Kind, state)...)
		}
	}
}

// statesOf is Connect's states, and any other the connector or its tasks
// are in (a newer Connect's), so that no state goes unserved.
func statesOf(c Connector) []string {
	states := connectStates
	for _, state := range append([]string{c.State}, taskStates(c)...) {
		if state != "" && !slices.Contains(states, state) {
			states = append(slices.Clone(states), state)
		}
	}
	return states
}

func taskStates(c Connector) []string {
	var states []string
	for _, t := range c.Tasks {
		states = append(states, t.State)
	}
	return states
}

func emitTopics(sink exposition.Sink, s *Snapshot, with func(...string) []string, partitions bool) {
	missing := 0
	for _, t := range s.Topics {
		if t.Missing {
			missing++
		}
	}
	flow := with()
	sink.Add(metrics.topics, float64(len(s.Topics)), flow...)
	if s.TargetUp {
		sink.Add(metrics.topicsMissing, float64(missing), flow...)
	}
	for _, t := range s.Topics {
		labels := with(t.Name)
		if s.TargetUp {
			sink.Add(metrics.topicMissing, boolValue(t.Missing), labels...)
			sink.Add(metrics.topicMismatch, boolValue(t.PartitionMismatch()), labels...)
		}
		if t.Unknown < t.Partitions {
			sink.Add(metrics.topicNotReplicated, float64(t.NotReplicated), labels...)
		}
		if t.RPOKnown {
			sink.Add(metrics.topicRPO, t.RPO.Seconds(), labels...)
		}
		sink.Add(metrics.topicUnknown, float64(t.Unknown), labels...)
		if !partitions {
			continue
		}
		for _, p := range t.Parts {
			if !p.Known {
				continue
			}
			pl := with(t.Name, strconv.Itoa(int(p.ID)))
			sink.Add(metrics.partitionNotReplicated, float64(p.NotReplicated), pl...)
			if p.RPOKnown {
				sink.Add(metrics.partitionRPO, p.RPO.Seconds(), pl...)
			}
		}
	}
}

// emitHealth is exposition.EmitHealth with the flow's three labels; up
// is both clusters read, not the refresh's success.
func emitHealth(sink exposition.Sink, flow []string, st *watch.State[Snapshot]) {
	up, srcUp, dstUp := 0.0, 0.0, 0.0
	if st.Up && st.Snapshot != nil {
		srcUp, dstUp = boolValue(st.Snapshot.SourceUp), boolValue(st.Snapshot.TargetUp)
		up = srcUp * dstUp
	}
	sink.Add(metrics.up, up, flow...)
	sink.Add(metrics.sourceUp, srcUp, flow...)
	sink.Add(metrics.targetUp, dstUp, flow...)
	if st.Refreshes > 0 {
		sink.Add(metrics.duration, st.LastDuration.Seconds(), flow...)
	}
	if !st.LastSuccess.IsZero() {
		sink.Add(metrics.lastSuccess, unixSeconds(st.LastSuccess), flow...)
	}
	sink.Add(metrics.refreshes, float64(st.Refreshes), flow...)
	sink.Add(metrics.failing, float64(st.Failures), flow...)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
