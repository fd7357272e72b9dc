// Package mirror watches a MirrorMaker 2 replication flow from the two
// clusters themselves, to answer before a failover: if the source died
// now, how many records and how many seconds of data would the target
// lack, per topic, and where would each consumer group resume?
//
// wire.go decodes MM2's offset syncs, checkpoints and heartbeats;
// policy.go names remote topics; lag.go is the arithmetic (records not
// replicated from sparse offset syncs, seconds behind, records a group
// would re-read); read.go fetches records at offsets and follows the
// internal topics between refreshes; source.go reads both clusters once
// per refresh into a Snapshot; judge.go judges what it read (records not
// replicated, RPO, stall); transitions.go finds the events;
// collector.go serves the metrics. docs/mirror.md says how exact each
// figure is.
package mirror

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
)

// Snapshot is one refresh of a flow. It is immutable once published.
type Snapshot struct {
	// SourceCluster and TargetCluster are the kafka clusters' names.
	SourceCluster, TargetCluster string
	// ReadAt is when the refresh started.
	ReadAt time.Time
	// SourceUp and TargetUp say whether the refresh read each cluster's
	// metadata and offsets. A refresh that reached neither fails; one
	// that reached one publishes what it could read (the target's
	// heartbeat age is what matters most when the source is gone).
	SourceUp, TargetUp bool
	// Topics are the source topics the flow replicates, by name; empty
	// when the source was not read.
	Topics []Topic
	// Heartbeat is the newest heartbeat replicated to the target.
	Heartbeat HeartbeatState
	// Stalled is set while the heartbeat is older than stall_after (or
	// none was ever read while the target answered).
	Stalled bool
	// Syncs is what the offset-syncs topic holds, as read so far.
	Syncs SyncsState
	// Groups are the consumer groups with checkpoints for replicated
	// topics, per group and source topic, by group then topic.
	Groups []GroupTopic
	// GroupsCheckpointed counts the groups with checkpoints for
	// replicated topics; GroupsLeftOut those of them beyond the flow's
	// max_groups (the last by name), whose series are not served.
	GroupsCheckpointed, GroupsLeftOut int
	// Connect is what the flow's Kafka Connect REST API said, when it
	// names one.
	Connect ConnectState
	// Errors counts the failed reads since the source was built, by
	// what was read (source, target, offset_syncs, checkpoints,
	// heartbeats, timestamps, group_offsets) and records that did not
	// decode (decode).
	Errors map[string]uint64
	// Events are the transitions this refresh saw.
	Events events.List
}

// HeartbeatState is the newest heartbeat record on the target's
// <source alias>.heartbeats.
type HeartbeatState struct {
	Known bool
	// Timestamp is the heartbeat's own timestamp: when MM2 emitted it on
	// the source side, by the emitting worker's clock.
	Timestamp time.Time
	// Age is ReadAt minus Timestamp, by the exporter's clock.
	Age time.Duration
}

// SyncsState is the state of the offset-syncs topic reading.
type SyncsState struct {
	// Partitions are the source partitions with a sync.
	Partitions int
	// Newest is the timestamp of the newest offset-sync record read.
	Newest time.Time
	// CaughtUp is false while the reader has not reached the end of the
	// topic (a first read of a long topic takes a few refreshes).
	CaughtUp bool
}

// Topic is one replicated source topic and its remote twin.
type Topic struct {
	Name, Remote string
	Partitions   int
	// RemotePartitions is 0 when the target lacks the remote topic.
	RemotePartitions int
	Missing          bool
	// NotReplicated sums the partitions' records not replicated; RPO is
	// the largest seconds behind of a partition. Known tells whether
	// every partition had a figure.
	NotReplicated int64
	RPO           time.Duration
	RPOKnown      bool
	// Unknown counts partitions without a figure: data on the source and
	// on the target but no offset sync read for them yet.
	Unknown int
	// Parts are the partitions, by ID.
	Parts []Partition
}

// PartitionMismatch reports whether the remote topic has another
// partition count than the source's.
func (t Topic) PartitionMismatch() bool { return !t.Missing && t.RemotePartitions != t.Partitions }

// Partition is one source partition and its remote twin.
type Partition struct {
	ID int32
	// SourceStart and SourceEnd are the source's log start offset and
	// high watermark; TargetEnd the remote partition's high watermark
	// (0 when it is missing).
	SourceStart, SourceEnd, TargetEnd int64
	Lag
	// RPO is the newest source record's timestamp minus the newest
	// replicated record's; RPOKnown when both were read (or the
	// partition is caught up: 0).
	RPO      time.Duration
	RPOKnown bool
}

// GroupTopic is a consumer group's checkpoints for one source topic.
type GroupTopic struct {
	Group, Topic string
	// Partitions are the checkpointed partitions, by ID.
	Partitions []GroupPartition
	// Reread sums the records the group would read again on the target
	// (those whose committed offset was read); OldestCheckpoint is the
	// oldest checkpoint's record timestamp.
	Reread           int64
	RereadKnown      bool
	OldestCheckpoint time.Time
}

// GroupPartition is a group's checkpoint for one partition.
type GroupPartition struct {
	ID int32
	// Resume is the target offset the group would resume from (the
	// checkpoint's downstream offset); Checkpointed its upstream offset.
	Resume, Checkpointed int64
	// Committed is the group's committed offset on the source now, -1
	// when none or unread.
	Committed int64
	// Reread is max(0, Committed - Checkpointed) when Committed is known.
	Reread int64
	// At is the checkpoint record's timestamp.
	At time.Time
}
