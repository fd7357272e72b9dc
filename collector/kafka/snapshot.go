// Package kafka reads the replication state of a Kafka cluster into an
// immutable Snapshot (source.go, build.go), counts the transitions between
// consecutive snapshots (transitions.go) and turns the latest snapshot into
// Prometheus metrics (collector.go).
package kafka

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
)

// Snapshot is the replication state of one cluster as read by one refresh.
// It is never modified after it is published.
type Snapshot struct {
	// ReadAt is when the metadata was read.
	ReadAt time.Time
	// Brokers are sorted by ID. They include brokers that are down but still
	// hold replica assignments (Up is false for those).
	Brokers []Broker
	// Topics are sorted by name and hold only topics that pass the filter.
	Topics []Topic
	// TopicConfigs caches each topic's effective min.insync.replicas so
	// that configs are re-read only every topic_config_refresh_interval.
	TopicConfigs TopicConfigCache
	// Episodes times offline, under-min-ISR and under-replicated partitions
	// across refreshes.
	Episodes Episodes
	// Events are the transitions between the previous snapshot and this
	// one, in broker then topic and partition order.
	Events events.List
}

// Broker is one broker, live or referenced by an assignment.
type Broker struct {
	ID      int32
	Address string
	Rack    string
	// Up is true when the broker is registered and live (it appears in the
	// Metadata response, which lists only unfenced brokers).
	Up bool
	// Reachable is true when the exporter could open a TCP connection to
	// the broker's address during the refresh. It catches what Metadata
	// cannot: when the KRaft controller quorum is lost, metadata freezes
	// and dead brokers stay listed as live.
	Reachable bool
	// LeaderPartitions counts partitions this broker leads.
	LeaderPartitions int
	// ReplicaPartitions counts partition replicas assigned to this broker.
	ReplicaPartitions int
	// OutOfSyncReplicas counts replicas on this broker that are not in their
	// partition's ISR.
	OutOfSyncReplicas int
}

// Topic is one topic and its partitions, sorted by partition ID.
type Topic struct {
	Name string
	// ReplicationFactor is the largest replica count of its partitions
	// (they differ only mid-reassignment).
	ReplicationFactor int
	// MinISR is the effective min.insync.replicas; 0 when it could not be
	// read yet, in which case min-ISR series are not served for the topic.
	MinISR     int
	Partitions []Partition

	UnderReplicated int
	UnderMinISR     int
	AtMinISR        int
	Offline         int
}

// Partition is one partition's replication state and the transitions this
// exporter has observed for it since it first saw it.
type Partition struct {
	ID int32
	// Leader is the leader's broker ID, or -1 when there is none.
	Leader   int32
	Replicas []int32
	ISR      []int32
	// OfflineReplicas are assigned replicas whose broker is not live or
	// whose log directory is offline.
	OfflineReplicas []int32

	LeaderChanges uint64
	ISRShrinks    uint64
	ISRExpands    uint64
}

// NoLeader is the leader ID Kafka reports for a partition without a leader.
const NoLeader int32 = -1

// Offline reports whether the partition has no leader and so accepts
// neither reads nor writes.
func (p *Partition) Offline() bool { return p.Leader == NoLeader }

// UnderReplicated reports whether some assigned replica is out of sync.
func (p *Partition) UnderReplicated() bool { return len(p.ISR) < len(p.Replicas) }

// UnderMinISR reports whether acks=all writes fail with NOT_ENOUGH_REPLICAS.
func (p *Partition) UnderMinISR(minISR int) bool { return minISR > 0 && len(p.ISR) < minISR }

// AtMinISR reports whether losing one more in-sync replica blocks acks=all writes.
func (p *Partition) AtMinISR(minISR int) bool { return minISR > 0 && len(p.ISR) == minISR }

// LeaderIsPreferred reports whether the leader is the first assigned
// replica, where a preferred-leader election would put it.
func (p *Partition) LeaderIsPreferred() bool {
	return len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
}

// LiveBrokers counts brokers that are up.
func (s *Snapshot) LiveBrokers() int {
	n := 0
	for i := range s.Brokers {
		if s.Brokers[i].Up {
			n++
		}
	}
	return n
}

// TopicConfigCache holds effective min.insync.replicas per topic and when
// they were read.
type TopicConfigCache struct {
	MinISR map[string]int
	ReadAt time.Time
}
