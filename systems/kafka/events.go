package kafka

import "github.com/failover-exporter/failover_exporter/collector/events"

// Kafka transitions.
const (
	EventLeaderChange     events.Kind = "leader_change"
	EventISRShrink        events.Kind = "isr_shrink"
	EventISRExpand        events.Kind = "isr_expand"
	EventPartitionOffline events.Kind = "partition_offline"
	EventPartitionOnline  events.Kind = "partition_online"
	EventUnderMinISRBegin events.Kind = "under_min_isr_begin"
	EventUnderMinISREnd   events.Kind = "under_min_isr_end"
	EventBrokerDown       events.Kind = "broker_down"
	EventBrokerUp         events.Kind = "broker_up"
	// The controller fenced a registered broker, or unfenced it (Kafka
	// 4.0+, where the cluster lists fenced brokers): a dead or paused
	// broker is fenced after its session timeout, a restarted one is
	// unfenced once it caught up with the metadata log.
	EventBrokerFenced   events.Kind = "broker_fenced"
	EventBrokerUnfenced events.Kind = "broker_unfenced"
	// A controller joined or left the KRaft voter set (KIP-853: by
	// add-controller / remove-controller, or auto-join on Kafka 4.2+). A
	// voter is an ID and a metadata log directory: a controller that
	// comes back with a new disk is removed under its old directory and
	// added under the new. Before (removed) or After (added) is the
	// directory ID. Counted only when both refreshes read the quorum.
	EventQuorumVoterAdded   events.Kind = "quorum_voter_added"
	EventQuorumVoterRemoved events.Kind = "quorum_voter_removed"
	// An operator cordoned a broker's log directory, or lifted the cordon
	// (KIP-1066, Kafka 4.3+): no new replica is placed in a cordoned
	// directory. After (cordoned) or Before (uncordoned) is its path.
	// Listed when the broker's directories were read both times.
	EventLogDirCordoned   events.Kind = "log_dir_cordoned"
	EventLogDirUncordoned events.Kind = "log_dir_uncordoned"
	// EventISRChange is an ISR change that both lost and gained members (a
	// replacement, [3] → [1]), as one event: isr_shrink only lost members
	// and isr_expand only gained some. For all three, Before and After are
	// the whole ISRs. The counters count a replacement as a shrink and an
	// expand, as Kafka does.
	EventISRChange events.Kind = "isr_change"
	// EventUncleanElection follows the leader_change (or partition_online)
	// of a partition whose new leader could not have been elected cleanly;
	// Before and After are the old and new leader.
	EventUncleanElection events.Kind = "unclean_election"
	// A partition reassignment. Started: Before is the assignment, After
	// the target replicas. Finished: Before is the assignment it started
	// from, After the assignment now; equal when it was cancelled, as
	// Kafka then restores the replicas it started from. One that began and
	// ended between two refreshes shows only as finished.
	EventReassignmentStarted  events.Kind = "reassignment_started"
	EventReassignmentFinished events.Kind = "reassignment_finished"
)
