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
	// ProbedAt is when the refresh began probing the brokers: the time of
	// each broker's probe (Broker.ProbeFailedSince). Zero in snapshots
	// built by hand, where ReadAt stands in.
	ProbedAt time.Time
	// backdateLimit bounds how far back an episode may start at the
	// exporter's first failed probe (episode.Backdate); 0 turns it off.
	backdateLimit time.Duration
	// ClusterID is the cluster's id (Metadata v2+), empty when it has none:
	// what tells a /probe target that is a known cluster under another
	// address (Spec.Members).
	ClusterID string
	// Brokers are sorted by ID. They include brokers that are down but still
	// hold replica assignments (Up is false for those).
	Brokers []Broker
	// Topics are sorted by name and hold only topics that pass the filter.
	Topics []Topic
	// FencedKnown is true when the cluster listed its fenced brokers
	// (DescribeCluster v2, Kafka 4.0+); Broker.Fenced is meaningful only then.
	FencedKnown bool
	// registered holds every broker the cluster listed as registered
	// (DescribeCluster v2), true for the fenced ones; nil before Kafka 4.0.
	// It knows brokers Metadata leaves out: fenced ones never seen live.
	registered map[int32]bool
	// Internal is the health of the internal topics that exist
	// (InternalFeatures), filter or not, sorted by name.
	Internal []InternalTopic
	// UnwatchedJudged are the topics the topic filter leaves out that the
	// failure budget judges all the same, with their partitions, sorted by
	// name: the internal ones always (a broker out of the ISR of
	// __consumer_offsets is not back, whatever the filter), the others
	// unless failure_budget.unwatched_topics is name. The budget judges
	// them as it judges Topics, and nothing else serves them.
	UnwatchedJudged []Topic
	// UnwatchedTopics counts the topics the topic filter leaves out that
	// the budget does not judge (failure_budget.unwatched_topics: name),
	// and Unwatched names the first maxUnwatchedNames of them met, sorted:
	// the failure budget's answers say it did not judge them.
	UnwatchedTopics int
	Unwatched       []string
	// TopicConfigs caches each topic's effective min.insync.replicas so
	// that configs are re-read only every topic_config_refresh_interval.
	TopicConfigs TopicConfigCache
	// Episodes times offline, under-min-ISR and under-replicated partitions
	// across refreshes.
	Episodes Episodes
	// Coordinators is whether the group and transaction coordinators
	// answer, as of the last coordinator read that ended (read beside the
	// refreshes, so one refresh late), and its episodes.
	Coordinators Coordinators
	// Transactions are the read_committed gaps and hanging transactions of
	// the watched partitions, as of the last transaction read that ended
	// (transactions.go); nil before one did.
	Transactions *TransactionRead
	// CatchUp is the last read of how far the out-of-sync replicas are
	// behind their leaders (catchup.go), as of the previous refresh; nil
	// when every replica of a live broker is in sync, or before a read
	// ended. Only brokers that still have out-of-sync replicas count.
	CatchUp *CatchUp
	// Events are the transitions between the previous snapshot and this
	// one, in broker then topic and partition order.
	Events events.List
	// ReassignmentsKnown is true when the cluster answered the refresh's
	// ListPartitionReassignments request. When false (the API is missing
	// or was refused) reassignment series are not served and replication
	// factors count every listed replica.
	ReassignmentsKnown bool
	// reassignmentBase is, while ListPartitionReassignments goes
	// unanswered, the last snapshot in which it was answered: reassignment
	// events compare with it, so a reassignment that started or ended
	// during a refresh whose list timed out is still reported, when the
	// list is answered again (carryReassignmentBase). Nil when this
	// snapshot has its reassignments, or went too long without.
	reassignmentBase *Snapshot
	// reassignmentsUnanswered counts the refreshes in a row, up to this
	// one, whose ListPartitionReassignments went unanswered.
	reassignmentsUnanswered int
	// ELRKnown is true when the cluster offers DescribeTopicPartitions
	// (Kafka 3.9+) and it answered for every partition below min ISR. When
	// false, eligible leader replica series are not served.
	ELRKnown bool
	// ELRUnsupported is true when the cluster does not offer the ELR API
	// (Kafka before 3.9): the ISR alone then decides who may lead cleanly.
	ELRUnsupported bool
	// Racks counts the distinct broker.rack values of the brokers (down
	// ones by their last known rack); 0 when no broker has a rack, and then
	// rack series are not served.
	Racks int
	// Quorum is the KRaft controller quorum, nil when it could not be read
	// (then its series are not served).
	Quorum *Quorum
	// QuorumUnread says why a cluster that offers DescribeQuorum (KRaft)
	// could not be read this refresh (refused by an ACL, timed out); empty
	// when it was read or the cluster has no KRaft quorum. The failure
	// budget then judges no stop (not_judged): whether it keeps a majority
	// of controllers is unknown.
	QuorumUnread string
	// Budget is what stopping each broker or rack would do now, computed
	// once per refresh (computeBudget); nil in snapshots built by hand.
	Budget *Budget
	// Unhealthy holds, for each partition now detailed, when it was last
	// unhealthy (carryDetail); empty while every partition is healthy, so
	// its cost grows with the trouble, not the partition count.
	Unhealthy map[PartitionKey]time.Time
	// detailHold is how long a partition stays detailed after it was last
	// unhealthy (partition_metrics_hold); 0 in snapshots built by hand.
	detailHold time.Duration
}

// Broker is one broker, live or referenced by an assignment.
type Broker struct {
	ID      int32
	Address string
	Rack    string
	// Up is true when the broker is registered and live (it appears in the
	// Metadata response, which lists only unfenced brokers).
	Up bool
	// Reachable is true when the broker answered the exporter's ApiVersions
	// request at its address during the refresh (reach.go). It catches what Metadata
	// cannot: when the KRaft controller quorum is lost, metadata freezes
	// and dead brokers stay listed as live.
	Reachable bool
	// Fenced is true when the controller fenced the broker (Snapshot.
	// FencedKnown): registered, serving nothing, and so left out of
	// Metadata: dead, paused, or alive and not caught up.
	Fenced bool
	// LogDirs are the broker's log directories, sorted by path, as of the
	// previous refresh's read (logDirsReader); nil when unknown: the broker
	// is down, did not answer, or does not say whether a directory is
	// cordoned (before Kafka 4.3).
	LogDirs []LogDir
	// ProbeFailedSince is when the exporter's probes of the broker began to
	// fail, in its current run of failures: zero while it accepts them, or
	// when the run began before the exporter could see it
	// (episode.FailedSince).
	ProbeFailedSince time.Time
	// LeaderPartitions counts partitions this broker leads.
	LeaderPartitions int
	// ReplicaPartitions counts partition replicas assigned to this broker.
	ReplicaPartitions int
	// OutOfSyncReplicas counts replicas on this broker that are not in their
	// partition's ISR.
	OutOfSyncReplicas int
	// AddingReplicas and RemovingReplicas count this broker's replicas that
	// an in-progress reassignment is adding or removing.
	AddingReplicas   int
	RemovingReplicas int
	// Transitions are counted across refreshes while the broker is known.
	Transitions BrokerTransitions
}

// BrokerTransitions count what the partitions' transitions did to one
// broker, as this exporter observed them (carryTransitions).
type BrokerTransitions struct {
	// LeadershipsGained and LeadershipsLost count leader changes to and
	// from this broker.
	LeadershipsGained, LeadershipsLost uint64
	// ISRShrinks counts this broker's replicas leaving an ISR; ISRExpands
	// their joining one.
	ISRShrinks, ISRExpands uint64
	// UncleanElections counts unclean elections that made it the leader.
	UncleanElections uint64
}

// TopicTransitions are the sums of a topic's partition counters.
type TopicTransitions struct {
	LeaderChanges, ISRShrinks, ISRExpands, UncleanElections uint64
}

// Topic is one topic and its partitions, sorted by partition ID.
type Topic struct {
	Name string
	// ReplicationFactor is the largest ReplicationFactor of its partitions
	// (they differ only when partitions were reassigned to different sizes).
	ReplicationFactor int
	// MinISR is the effective min.insync.replicas; 0 when it could not be
	// read yet, in which case min-ISR series are not served for the topic.
	MinISR     int
	Partitions []Partition

	UnderReplicated int
	UnderMinISR     int
	AtMinISR        int
	Offline         int
	// ReassigningPartitions counts partitions with a reassignment in progress.
	ReassigningPartitions int
	// NoCleanLeader counts partitions for which NoCleanLeader holds, once
	// the ELR is read (0 until then).
	NoCleanLeader int
	// RackUnsafe counts partitions whose replicas sit in fewer racks than
	// they could: min(replication factor, racks in the cluster).
	RackUnsafe int
	// UncleanElectionKnown and UncleanElectionEnabled are the topic's
	// effective unclean.leader.election.enable, once read.
	UncleanElectionKnown, UncleanElectionEnabled bool
	// Tiered is the topic's tiered storage settings, once read. With
	// Tiered.Enabled, Untiered is what its partitions hold only on local
	// replicas, nil until read.
	Tiered   TieredConfig
	Untiered *UntieredRecords
	// NonPreferredLeaders counts partitions led by a replica other than
	// the preferred (first) one; OfflineReplicas the partitions' replicas
	// on brokers that are down or on offline log directories.
	NonPreferredLeaders, OfflineReplicas int
	// Transitions sum the partitions' transition counters.
	Transitions TopicTransitions
}

// Partition is one partition's replication state and the transitions this
// exporter has observed for it since it first saw it.
//
// It is kept small because a snapshot holds one per partition, and during
// a refresh two snapshots are alive: at a million partitions every 8 bytes
// here cost 16 MB. What is empty for a healthy partition sits behind one
// pointer (rare), read through the methods below.
type Partition struct {
	ID int32
	// Leader is the leader's broker ID, or -1 when there is none.
	Leader int32
	// Replicas and ISR share one array per snapshot (build.go's idArena).
	Replicas []int32
	ISR      []int32
	// rare is nil while the partition has no offline replica, no
	// reassignment and no ELR; set it through editRare.
	rare *partitionRare
	// ReplicaRacks and ISRRacks count the distinct racks of the replicas
	// and of the ISR (brokers without a rack do not count).
	ReplicaRacks, ISRRacks uint16
	// Detailed is true while the partition is unhealthy and for the hold
	// after it recovered (carryDetail): the lean and unhealthy modes serve
	// its detailed series then.
	Detailed bool

	LeaderChanges uint64
	ISRShrinks    uint64
	ISRExpands    uint64
	// UncleanElections counts leader changes to a replica that could not
	// have been elected cleanly (see carryTransitions).
	UncleanElections uint64
}

// partitionRare holds a partition's state that is empty while it is
// healthy.
type partitionRare struct {
	// offlineReplicas are assigned replicas whose broker is not live or
	// whose log directory is offline.
	offlineReplicas []int32
	// addingReplicas and removingReplicas are what an in-progress
	// reassignment adds and removes. During a reassignment Replicas is the
	// union of the old and the target replicas (KIP-455).
	addingReplicas   []int32
	removingReplicas []int32
	// elr are the eligible leader replicas (KIP-966): replicas that left an
	// ISR already below min ISR and may still lead without losing
	// acknowledged writes. lastKnownELR are the last ELR members of a
	// partition whose ELR emptied. Read only for partitions below min ISR;
	// Kafka keeps both empty otherwise.
	elr          []int32
	lastKnownELR []int32
	// elrStale is true when DescribeTopicPartitions, sent just after
	// Metadata, already saw another leader or ISR for the partition: its
	// ELR then belongs to a later state than the rest of the snapshot (an
	// election happened between the two requests). carryTransitions gives
	// it back the previous refresh's ELR when the partition's leader and
	// ISR have not changed since; otherwise its ELR series are left out for
	// that refresh, and the next refresh does not judge an unclean election
	// against it.
	elrStale bool
	// finishOrigin and finishSeenAt hold back a reassignment that seemed
	// to finish on the replicas it had while in progress (heldFinish in
	// transitions.go): the replicas it started from, and when the
	// exporter first saw it no longer in progress.
	finishOrigin []int32
	finishSeenAt time.Time
}

// editRare returns a copy of p's rare state for p to hold from now on, so
// that a change never reaches another snapshot that shares the old one.
func (p *Partition) editRare() *partitionRare {
	rare := &partitionRare{}
	if p.rare != nil {
		*rare = *p.rare
	}
	p.rare = rare
	return rare
}

// OfflineReplicas are the assigned replicas whose broker is not live or
// whose log directory is offline.
func (p *Partition) OfflineReplicas() []int32 {
	if p.rare == nil {
		return nil
	}
	return p.rare.offlineReplicas
}

// AddingReplicas are the replicas an in-progress reassignment adds.
func (p *Partition) AddingReplicas() []int32 {
	if p.rare == nil {
		return nil
	}
	return p.rare.addingReplicas
}

// RemovingReplicas are the replicas an in-progress reassignment removes.
func (p *Partition) RemovingReplicas() []int32 {
	if p.rare == nil {
		return nil
	}
	return p.rare.removingReplicas
}

// ELR are the eligible leader replicas (see partitionRare.elr).
func (p *Partition) ELR() []int32 {
	if p.rare == nil {
		return nil
	}
	return p.rare.elr
}

// LastKnownELR are the last ELR members of a partition whose ELR emptied.
func (p *Partition) LastKnownELR() []int32 {
	if p.rare == nil {
		return nil
	}
	return p.rare.lastKnownELR
}

// ELRStale reports whether the partition's ELR was read in a later state
// than the rest of the snapshot (see partitionRare.elrStale).
func (p *Partition) ELRStale() bool { return p.rare != nil && p.rare.elrStale }

// setReassignment records an in-progress reassignment's replica changes.
func (p *Partition) setReassignment(adding, removing []int32) {
	if p.rare == nil && len(adding) == 0 && len(removing) == 0 {
		return
	}
	rare := p.editRare()
	rare.addingReplicas, rare.removingReplicas = adding, removing
}

// setELR records the partition's ELR as read, or as carried from the
// previous refresh.
func (p *Partition) setELR(elr, lastKnownELR []int32, stale bool) {
	if p.rare == nil && len(elr) == 0 && len(lastKnownELR) == 0 && !stale {
		return
	}
	rare := p.editRare()
	rare.elr, rare.lastKnownELR, rare.elrStale = elr, lastKnownELR, stale
}

// heldFinish returns the reassignment finish held back by the previous
// refresh (see partitionRare.finishOrigin); ok is false when there is none.
func (p *Partition) heldFinish() (origin []int32, seenAt time.Time, ok bool) {
	if p.rare == nil || p.rare.finishSeenAt.IsZero() {
		return nil, time.Time{}, false
	}
	return p.rare.finishOrigin, p.rare.finishSeenAt, true
}

// holdFinish holds back the finish of a reassignment that started from
// origin and was first seen ended at seenAt.
func (p *Partition) holdFinish(origin []int32, seenAt time.Time) {
	rare := p.editRare()
	rare.finishOrigin, rare.finishSeenAt = origin, seenAt
}

// setOfflineReplicas records the replicas on dead brokers or offline log
// directories.
func (p *Partition) setOfflineReplicas(ids []int32) {
	if p.rare == nil && len(ids) == 0 {
		return
	}
	p.editRare().offlineReplicas = ids
}

// NoLeader is the leader ID Kafka reports for a partition without a leader.
const NoLeader int32 = -1

// Offline reports whether the partition has no leader and so accepts
// neither reads nor writes.
func (p *Partition) Offline() bool { return p.Leader == NoLeader }

// ReplicationFactor is the number of replicas the partition is meant to
// have, counted as Kafka does since KIP-352: the listed replicas without
// those a reassignment is still adding. A replica being added is not
// expected in the ISR yet, so it makes a partition neither under-replicated
// nor bigger.
func (p *Partition) ReplicationFactor() int { return len(p.Replicas) - len(p.AddingReplicas()) }

// Reassigning reports whether a reassignment of the partition is in progress.
func (p *Partition) Reassigning() bool {
	return p.rare != nil && (len(p.rare.addingReplicas) > 0 || len(p.rare.removingReplicas) > 0)
}

// UnderReplicated reports whether fewer replicas are in sync than the
// replication factor, as kafka-topics.sh --under-replicated-partitions does.
func (p *Partition) UnderReplicated() bool { return len(p.ISR) < p.ReplicationFactor() }

// UnderMinISR reports whether acks=all writes fail: the ISR is smaller than
// minISR (NOT_ENOUGH_REPLICAS), or the partition has no leader to take them.
// The second half matters without ELR (Kafka 3.x, or ELR off): an offline
// partition's ISR keeps its last member, so its size alone says nothing.
// kafka-topics.sh --under-min-isr-partitions counts it the same way.
func (p *Partition) UnderMinISR(minISR int) bool {
	return minISR > 0 && (p.Offline() || len(p.ISR) < minISR)
}

// AtMinISR reports whether losing one more in-sync replica blocks acks=all writes.
func (p *Partition) AtMinISR(minISR int) bool { return minISR > 0 && len(p.ISR) == minISR }

// NoCleanLeader reports whether the partition has no leader and no replica
// left that may lead without losing acknowledged writes: its ISR and its
// ELR are empty. Only an unclean election (data loss) brings it back.
// Meaningful only when the snapshot's ELRKnown is true.
func (p *Partition) NoCleanLeader() bool {
	return !p.ELRStale() && p.Offline() && len(p.ISR) == 0 && len(p.ELR()) == 0
}

// RackUnsafe reports whether the replicas sit in fewer racks than they
// could, given racks racks in the cluster: losing one rack then costs more
// replicas than it has to.
func (p *Partition) RackUnsafe(racks int) bool {
	return racks > 0 && int(p.ReplicaRacks) < min(p.ReplicationFactor(), racks)
}

// LeaderIsPreferred reports whether the leader is the first assigned
// replica, where a preferred-leader election would put it.
func (p *Partition) LeaderIsPreferred() bool {
	return len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
}

// HasBroker reports whether id is a broker of the cluster: listed, live or
// down, or registered and fenced.
func (s *Snapshot) HasBroker(id int32) bool {
	_, registered := s.registered[id]
	return registered || findBroker(s.Brokers, id) != nil
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
	// Unclean is each topic's effective unclean.leader.election.enable.
	Unclean map[string]bool
	// Tiered is each topic's tiered storage settings.
	Tiered map[string]TieredConfig
	ReadAt time.Time
}

// TieredConfig is a topic's tiered storage settings.
type TieredConfig struct {
	// Enabled is remote.storage.enable: the topic's rolled segments are
	// copied to tiered storage (KIP-405).
	Enabled bool
	// CopyLagMs and CopyLagBytes are remote.copy.lag.ms and .bytes
	// (KIP-1241, Kafka 4.4): a rolled segment is copied once its newest
	// record is CopyLagMs old or CopyLagBytes newer bytes follow it; 0
	// copies at once, -1 follows the local retention. CopyLagKnown is false
	// before Kafka 4.4, whose brokers do not know them.
	CopyLagMs, CopyLagBytes int64
	CopyLagKnown            bool
}
