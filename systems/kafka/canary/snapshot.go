// Package kafkacanary is the Kafka write canary: a topic of its own with a
// partition led by each broker, one record per partition every interval
// with acks=all and an idempotent producer, and, after a partition's
// leader changes, a read of the records acknowledged before the change to
// count those that did not survive it.
//
// source.go owns the canary's client, producer and consumer and runs one
// round; topic.go creates the topic, heals it and keeps its leadership
// spread; heal.go plans the healing from the topic's state;
// snapshot.go is what a round publishes; collector.go turns it into
// metrics; watcher.go runs the rounds on the canary's interval; lease.go
// holds the lease (which exporter writes) and lease_coordinator.go finds
// its group's coordinator.
package kafkacanary

import (
	"time"

	"maps"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/events"
)

// Snapshot is the canary's counters after one round. It is immutable once
// published; each round starts from a copy of the previous one.
type Snapshot struct {
	// Partitions is keyed by partition, then by the broker that led it
	// when the write was attempted (-1: no leader known).
	Partitions map[int32]map[int32]*PartitionStats
	// Latency of acknowledged writes, by leader.
	Latency map[int32]*canary.Histogram
	// Stalls are the writes' stalls that ended, by the leader that
	// acknowledged the last write before each: from that acknowledgement
	// to the first after a failed write (the clients' stall clock).
	Stalls map[int32]*episode.Histogram
	// LastStall is each partition's last stall that ended.
	LastStall map[int32]Stall
	// Checks counts reads of acknowledged records after a leader change.
	Checks uint64
	// Topic is the canary topic's shape as this round saw it.
	Topic *TopicHealth
	// Leader is set when this exporter holds the cluster's canary lease (or
	// the lease is off) and wrote this round: only the leader serves the
	// counters.
	Leader bool
	// Events are what this round saw, for the event log (write_failing,
	// write_recovered, acknowledged_writes_lost).
	Events events.List
}

// Stall is one stall of a partition's canary writes, as a client lives
// it: From, the last acknowledgement before a failed write, by Leader;
// To, the first acknowledgement after, by After.
type Stall struct {
	From, To      time.Time
	Leader, After int32
}

// PartitionStats are the counters of one partition under one leader.
type PartitionStats struct {
	Attempts     uint64
	Acknowledged uint64
	// Failures by error: the Kafka error code's name (NOT_ENOUGH_REPLICAS,
	// NOT_LEADER_OR_FOLLOWER, ...), timeout, connection or other.
	Failures map[string]uint64
	// Lost counts records this leader acknowledged that were not at their
	// offset when read after the next leader change.
	Lost uint64
	// Unverifiable counts records this leader acknowledged that the canary
	// dropped without reading them back: gone from the log (retention,
	// DeleteRecords), written to a topic since re-created, acknowledged in
	// an earlier hold of the lease, or past maxPending while read-backs
	// failed. Never counted lost.
	Unverifiable uint64
	// Duplicates counts the extra copies of records this leader
	// acknowledged that read-backs found at other offsets as well (an
	// attempt appended before the acknowledged retry): writes the client
	// made once and the log holds twice.
	Duplicates uint64
}

func (s *Snapshot) clone() *Snapshot {
	out := &Snapshot{Partitions: map[int32]map[int32]*PartitionStats{}, Latency: map[int32]*canary.Histogram{},
		Stalls: map[int32]*episode.Histogram{}, LastStall: map[int32]Stall{}}
	if s == nil {
		return out
	}
	out.Checks = s.Checks
	maps.Copy(out.Latency, s.Latency)
	maps.Copy(out.Stalls, s.Stalls)
	maps.Copy(out.LastStall, s.LastStall)
	for p, byLeader := range s.Partitions {
		out.Partitions[p] = map[int32]*PartitionStats{}
		for leader, st := range byLeader {
			c := *st
			c.Failures = maps.Clone(st.Failures)
			out.Partitions[p][leader] = &c
		}
	}
	return out
}

func (s *Snapshot) stats(partition, leader int32) *PartitionStats {
	byLeader, ok := s.Partitions[partition]
	if !ok {
		byLeader = map[int32]*PartitionStats{}
		s.Partitions[partition] = byLeader
	}
	st, ok := byLeader[leader]
	if !ok {
		st = &PartitionStats{Failures: map[string]uint64{}}
		byLeader[leader] = st
	}
	return st
}
