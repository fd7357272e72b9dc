package kafka

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

const clusterLabel = "kafka_cluster"

// fromRefresh is appended to every HELP text: values are read by the
// background refresh, not at scrape time.
const fromRefresh = " (as of the last successful refresh)."

type descs struct {
	health exposition.Health

	partitionLeader            *exposition.Desc
	partitionReplicas          *exposition.Desc
	partitionISR               *exposition.Desc
	partitionOfflineReplicas   *exposition.Desc
	partitionUnderReplicated   *exposition.Desc
	partitionUnderMinISR       *exposition.Desc
	partitionAtMinISR          *exposition.Desc
	partitionOffline           *exposition.Desc
	partitionLeaderIsPreferred *exposition.Desc
	partitionLeaderChanges     *exposition.Desc
	partitionISRShrinks        *exposition.Desc
	partitionISRExpands        *exposition.Desc
	partitionReassigning       *exposition.Desc
	partitionAddingReplicas    *exposition.Desc
	partitionRemovingReplicas  *exposition.Desc
	partitionELR               *exposition.Desc
	partitionLastKnownELR      *exposition.Desc
	partitionNoCleanLeader     *exposition.Desc
	partitionUncleanElections  *exposition.Desc
	partitionReplicaRacks      *exposition.Desc
	partitionISRRacks          *exposition.Desc

	brokerFenced *exposition.Desc
	// Log directories (DescribeLogDirs v5, KIP-1066).
	brokerLogDirs         *exposition.Desc
	brokerCordonedLogDirs *exposition.Desc
	brokerLogDirCordoned  *exposition.Desc

	internalPartitions      *exposition.Desc
	internalUnderReplicated *exposition.Desc
	internalUnderMinISR     *exposition.Desc
	internalOffline         *exposition.Desc

	topicPartitions         *exposition.Desc
	topicReplicationFactor  *exposition.Desc
	topicMinISR             *exposition.Desc
	topicUnderReplicated    *exposition.Desc
	topicUnderMinISR        *exposition.Desc
	topicAtMinISR           *exposition.Desc
	topicOffline            *exposition.Desc
	topicReassigning        *exposition.Desc
	topicNoCleanLeader      *exposition.Desc
	topicUncleanEnabled     *exposition.Desc
	topicRackUnsafe         *exposition.Desc
	topicUntieredRecords    *exposition.Desc
	topicUntieredOldest     *exposition.Desc
	topicRemoteCopyLag      *exposition.Desc
	topicRemoteCopyLagBytes *exposition.Desc
	topicNonPreferred       *exposition.Desc
	topicOfflineReplicas    *exposition.Desc
	topicLeaderChanges      *exposition.Desc
	topicISRShrinks         *exposition.Desc
	topicISRExpands         *exposition.Desc
	topicUncleanElections   *exposition.Desc

	brokerUp                *exposition.Desc
	brokerReachable         *exposition.Desc
	brokerInfo              *exposition.Desc
	brokerLeaderPartitions  *exposition.Desc
	brokerReplicaPartitions *exposition.Desc
	brokerOutOfSync         *exposition.Desc
	brokerCatchUpRecords    *exposition.Desc
	brokerCatchUpPartitions *exposition.Desc
	brokerCatchUpUnread     *exposition.Desc
	brokerCatchUpRate       *exposition.Desc
	brokerCatchUpETA        *exposition.Desc
	brokerLeadingBehind     *exposition.Desc
	brokerAddingReplicas    *exposition.Desc
	brokerRemovingReplicas  *exposition.Desc
	brokerLeadershipsGained *exposition.Desc
	brokerLeadershipsLost   *exposition.Desc
	brokerISRShrinks        *exposition.Desc
	brokerISRExpands        *exposition.Desc
	brokerUncleanElections  *exposition.Desc

	clusterBrokers         *exposition.Desc
	clusterExpectedBrokers *exposition.Desc
	detailedPartitions     *exposition.Desc

	// Indexed by Condition.
	episodeSeconds     [conditionCount]*exposition.Desc
	openEpisodeSeconds [conditionCount]*exposition.Desc
	clusterRacks       *exposition.Desc

	quorumLeader            *exposition.Desc
	quorumLeaderEpoch       *exposition.Desc
	quorumHighWatermark     *exposition.Desc
	quorumVoters            *exposition.Desc
	quorumObservers         *exposition.Desc
	quorumVoterLogEndOffset *exposition.Desc
	quorumVoterLag          *exposition.Desc
	quorumVoterCaughtUpAge  *exposition.Desc
	// KIP-853's dynamic quorum: who votes, who fetches, who could vote.
	quorumVoterInfo              *exposition.Desc
	quorumVoterOnline            *exposition.Desc
	quorumVoterLastFetchAge      *exposition.Desc
	quorumVoterCaughtUp          *exposition.Desc
	quorumControllerObservers    *exposition.Desc
	quorumControllerObserverInfo *exposition.Desc

	// Group and transaction coordinators (coordinators.go).
	coordinatorPartitions       *exposition.Desc
	coordinatorReadTimestamp    *exposition.Desc
	coordinatorEpisodeSeconds   *exposition.Desc
	coordinatorOpenEpisode      *exposition.Desc
	coordinatorPartitionState   *exposition.Desc
	coordinatorPartitionBroker  *exposition.Desc
	brokerCoordinatorPartitions *exposition.Desc
	brokerCoordinatedGroups     *exposition.Desc
	brokerCoordinatedTxIDs      *exposition.Desc
	groupsByState               *exposition.Desc
	// read_committed gaps and hanging transactions (transactions.go).
	readCommittedGapPartitions     *exposition.Desc
	readCommittedStalledPartitions *exposition.Desc
	partitionReadCommittedGap      *exposition.Desc
	partitionReadCommittedStalled  *exposition.Desc
	partitionOpenTransactionIdle   *exposition.Desc
	hangingTransactions            *exposition.Desc
	transactionMaxTimeout          *exposition.Desc
	transactionsReadTimestamp      *exposition.Desc
	// What an unclean election would lose (unclean.go).
	partitionUncleanBehind   *exposition.Desc
	partitionLastWatermark   *exposition.Desc
	partitionLastWatermarkAt *exposition.Desc

	// The failure budget (budget.go).
	brokerSafeToStop           *exposition.Desc
	brokerStopAffected         *exposition.Desc
	brokerStopUnsafe           *exposition.Desc
	rackSafeToStop             *exposition.Desc
	rackStopAffected           *exposition.Desc
	rackStopUnsafe             *exposition.Desc
	brokerLossesTolerated      *exposition.Desc
	quorumVoterLossesTolerated *exposition.Desc
}

// table holds the refresh health families, served first, and every other
// family, in exposition order; its families' labels start with the
// cluster's, and its histograms are episode histograms.
var table = &exposition.Table{Labels: []string{clusterLabel}, Buckets: episode.Buckets}

// episodeHelp is appended to the HELP of every episode histogram.
const episodeHelp = ", from the exporter's first failed probe of the broker that caused it (once the metadata confirmed it; else the first refresh that saw it) " +
	"to the first refresh that no longer did; one observation per partition episode when it ends. " +
	"Episodes already under way when the exporter started are not observed."

// openEpisodeHelp is appended to the HELP of every open-episode gauge.
const openEpisodeHelp = ", as of the last successful refresh; absent while none is open. " +
	"Counted from the exporter's first failed probe of the broker that caused it, as the histograms are; " +
	"for an episode already under way when the exporter started, from its first refresh."

// metrics is the collector's metric table: every family it can emit, each
// name a literal.
var metrics = func() descs {
	partition := []string{"topic", "partition"}
	topic := []string{"topic"}
	internal := []string{"topic", "feature"}
	broker := []string{"broker"}
	voter := []string{"voter"}
	x := descs{
		health: exposition.Health{
			Up: table.Health.Gauge("kafka_up",
				"1 if the last refresh of this Kafka cluster succeeded, else 0. While 0, partition, topic and broker series are not served.", clusterLabel),
			Duration:    table.Health.Gauge("kafka_exporter_refresh_duration_seconds", exposition.HelpRefreshDuration, clusterLabel),
			LastSuccess: table.Health.Gauge("kafka_exporter_last_refresh_success_timestamp_seconds", exposition.HelpLastRefreshSuccess, clusterLabel),
			Refreshes:   table.Health.Counter("kafka_exporter_refreshes_total", exposition.HelpRefreshes, clusterLabel),
			Failures:    table.Health.Counter("kafka_exporter_refresh_failures_total", exposition.HelpRefreshFailures, clusterLabel),
		},

		partitionLeader: table.Gauge("kafka_partition_leader",
			"Broker ID of the partition's leader, -1 when it has none"+fromRefresh, partition...),
		partitionReplicas: table.Gauge("kafka_partition_replicas",
			"Replication factor of the partition: its assigned replicas, without those a reassignment is still adding (KIP-352, as kafka-topics.sh counts)"+fromRefresh, partition...),
		partitionISR: table.Gauge("kafka_partition_in_sync_replicas",
			"Number of replicas in the partition's in-sync replica set (ISR)"+fromRefresh, partition...),
		partitionOfflineReplicas: table.Gauge("kafka_partition_offline_replicas",
			"Number of the partition's assigned replicas on brokers that are down or on offline log directories"+fromRefresh, partition...),
		partitionUnderReplicated: table.Gauge("kafka_partition_under_replicated",
			"1 if the ISR is smaller than the replication factor; a replica a reassignment is still adding does not count (KIP-352)"+fromRefresh, partition...),
		partitionUnderMinISR: table.Gauge("kafka_partition_under_min_isr",
			"1 if acks=all writes fail: the ISR is smaller than the topic's effective min.insync.replicas, or the partition has no leader (as kafka-topics.sh --under-min-isr-partitions counts)"+fromRefresh, partition...),
		partitionAtMinISR: table.Gauge("kafka_partition_at_min_isr",
			"1 if the ISR equals the topic's effective min.insync.replicas, so one more loss blocks acks=all writes"+fromRefresh, partition...),
		partitionOffline: table.Gauge("kafka_partition_offline",
			"1 if the partition has no leader"+fromRefresh, partition...),
		partitionLeaderIsPreferred: table.Gauge("kafka_partition_leader_is_preferred",
			"1 if the leader is the first assigned (preferred) replica"+fromRefresh, partition...),
		partitionLeaderChanges: table.Counter("kafka_partition_leader_changes_total",
			"Leader changes this exporter observed between consecutive refreshes, including to and from no leader.", partition...),
		partitionISRShrinks: table.Counter("kafka_partition_isr_shrinks_total",
			"Refreshes in which this exporter observed the partition's ISR lose members; one that also gained members (a replacement, e.g. [3] to [1]) counts here and in kafka_partition_isr_expands_total.", partition...),
		partitionISRExpands: table.Counter("kafka_partition_isr_expands_total",
			"Refreshes in which this exporter observed the partition's ISR gain members; one that also lost members (a replacement, e.g. [3] to [1]) counts here and in kafka_partition_isr_shrinks_total.", partition...),
		partitionReassigning: table.Gauge("kafka_partition_reassigning",
			"1 while a reassignment of the partition is in progress (ListPartitionReassignments)"+fromRefresh, partition...),
		partitionAddingReplicas: table.Gauge("kafka_partition_adding_replicas",
			"Replicas an in-progress reassignment is adding to the partition; served only while it is reassigning"+fromRefresh, partition...),
		partitionRemovingReplicas: table.Gauge("kafka_partition_removing_replicas",
			"Replicas an in-progress reassignment is removing from the partition; served only while it is reassigning"+fromRefresh, partition...),
		partitionELR: table.Gauge("kafka_partition_eligible_leader_replicas",
			"Eligible leader replicas (KIP-966, Kafka 3.9+): replicas out of an ISR below min.insync.replicas that may still lead without losing acknowledged writes; served only for partitions below min ISR, the only ones that can have any"+fromRefresh, partition...),
		partitionLastKnownELR: table.Gauge("kafka_partition_last_known_elr",
			"Last known eligible leader replicas of a partition whose ELR emptied (KIP-966); served only for partitions below min ISR"+fromRefresh, partition...),
		partitionUncleanElections: table.Counter("kafka_partition_unclean_leader_elections_total",
			"Leader changes this exporter observed to a replica that was in neither the previous ISR nor its eligible or last known eligible leader replicas: unclean elections, which lose acknowledged writes.", partition...),
		partitionReplicaRacks: table.Gauge("kafka_partition_replica_racks",
			"Distinct racks (broker.rack) among the partition's replicas, without those a reassignment is still adding; served when brokers have racks"+fromRefresh, partition...),
		partitionISRRacks: table.Gauge("kafka_partition_isr_racks",
			"Distinct racks (broker.rack) among the partition's in-sync replicas; served when brokers have racks"+fromRefresh, partition...),
		partitionNoCleanLeader: table.Gauge("kafka_partition_no_clean_leader",
			"1 if the partition has no leader and neither an ISR nor an eligible leader replica left: only an unclean election, losing data, can bring it back; served only for partitions below min ISR"+fromRefresh, partition...),

		brokerFenced: table.Gauge("kafka_broker_fenced",
			"1 if the controller fenced the broker: registered, but serving nothing (dead, paused, or alive and not caught up with the metadata log); 0 if it serves. Only on Kafka 4.0+, which lists fenced brokers (DescribeCluster v2, KIP-1073); absent before"+fromRefresh, broker...),
		brokerLogDirs: table.Gauge("kafka_broker_log_dirs",
			"Log directories the broker reports (DescribeLogDirs), as of the previous refresh: they are read beside the refreshes, so that a hung broker never holds one up. "+
				"Only on Kafka 4.3+, whose brokers say whether a directory is cordoned (DescribeLogDirs v5, KIP-1066); absent for a broker that is down or did not answer"+fromRefresh, broker...),
		brokerCordonedLogDirs: table.Gauge("kafka_broker_cordoned_log_dirs",
			"Log directories of the broker an operator cordoned (cordoned.log.dirs, KIP-1066): no new replica is placed there. Equal to kafka_broker_log_dirs, the broker takes no new replica at all, "+
				"and the controller refuses reassignments onto it; as kafka_broker_log_dirs, Kafka 4.3+ only"+fromRefresh, broker...),
		brokerLogDirCordoned: table.Gauge("kafka_broker_log_dir_cordoned",
			"1 if the log directory is cordoned, 0 if not; one series per directory the broker reports (label log_dir, its path), Kafka 4.3+ only"+fromRefresh, "broker", "log_dir"),
		internalPartitions: table.Gauge("kafka_internal_topic_partitions",
			"Partitions of an internal topic whose loss stops a feature of the cluster (feature: consumer_offsets, transactions, share_groups, tiered_storage_metadata), served whatever the topic filter and only once the topic exists"+fromRefresh, internal...),
		internalUnderReplicated: table.Gauge("kafka_internal_topic_under_replicated_partitions",
			"Partitions of the internal topic whose ISR is smaller than their assigned replicas"+fromRefresh, internal...),
		internalUnderMinISR: table.Gauge("kafka_internal_topic_under_min_isr_partitions",
			"Partitions of the internal topic whose ISR is below its min.insync.replicas, or that have no leader: the feature's writes fail there (offset commits, transaction markers, share-group state, remote log metadata); absent while min.insync.replicas is unknown"+fromRefresh, internal...),
		internalOffline: table.Gauge("kafka_internal_topic_offline_partitions",
			"Partitions of the internal topic without a leader: the feature stops for the groups, transactions or topics they hold"+fromRefresh, internal...),
		topicPartitions: table.Gauge("kafka_topic_partitions",
			"Number of partitions of the topic"+fromRefresh, topic...),
		topicReplicationFactor: table.Gauge("kafka_topic_replication_factor",
			"Replication factor of the topic: the largest of its partitions', without replicas a reassignment is still adding (KIP-352)"+fromRefresh, topic...),
		topicMinISR: table.Gauge("kafka_topic_min_insync_replicas",
			"Effective min.insync.replicas of the topic: its override, else the broker or cluster default"+fromRefresh, topic...),
		topicUnderReplicated: table.Gauge("kafka_topic_under_replicated_partitions",
			"Partitions of the topic whose ISR is smaller than their assigned replicas"+fromRefresh, topic...),
		topicUnderMinISR: table.Gauge("kafka_topic_under_min_isr_partitions",
			"Partitions of the topic whose ISR is below min.insync.replicas, or that have no leader"+fromRefresh, topic...),
		topicAtMinISR: table.Gauge("kafka_topic_at_min_isr_partitions",
			"Partitions of the topic whose ISR equals min.insync.replicas"+fromRefresh, topic...),
		topicOffline: table.Gauge("kafka_topic_offline_partitions",
			"Partitions of the topic without a leader"+fromRefresh, topic...),
		topicReassigning: table.Gauge("kafka_topic_reassigning_partitions",
			"Partitions of the topic with a reassignment in progress"+fromRefresh, topic...),
		topicUncleanEnabled: table.Gauge("kafka_topic_unclean_leader_election_enabled",
			"1 if the topic's effective unclean.leader.election.enable is true: a replica outside the ISR may be elected, losing acknowledged writes"+fromRefresh, topic...),
		topicUntieredRecords: table.Gauge("kafka_topic_untiered_records",
			"Records of a topic with tiered storage (remote.storage.enable) that only its local replicas hold: per partition, the high watermark minus the first offset not copied to tiered storage "+
				"(the newest tiered offset + 1, or the log start offset), summed over the partitions whose leader answered; lost if every replica of their partition is. "+
				"The active segment is never copied, so a topic being written always has some; growing means the uploads stall. Read from the leaders beside the refreshes, so one refresh behind; "+
				"a partition whose leader's offsets leave records neither local nor tiered (a new leader before its remote log task ran) is left out; "+
				"Kafka 3.9+ (ListOffsets latest-tiered, KIP-1005), absent for topics without tiered storage"+fromRefresh, topic...),
		topicUntieredOldest: table.Gauge("kafka_topic_oldest_untiered_record_timestamp_seconds",
			"Timestamp (Unix seconds) of the oldest record of the topic that only its local replicas hold: the earliest, over its partitions, of the first record not copied to tiered storage "+
				"(the append time on topics that use it, else the producer's create time; fetched once per partition each time its first untiered offset moves, at most 16 partitions per leader and read). "+
				"time() minus it is how far back a loss of every replica would reach. Served with kafka_topic_untiered_records when every partition of the topic was read and each holding untiered records told it; "+
				"absent when none holds any"+fromRefresh, topic...),
		topicRemoteCopyLag: table.Gauge("kafka_topic_remote_copy_lag_seconds",
			"The topic's remote.copy.lag.ms in seconds (KIP-1241, Kafka 4.4+): a rolled segment waits this long after its newest record before it is copied to tiered storage, "+
				"unless kafka_topic_remote_copy_lag_bytes newer bytes follow it first; 0 copies at once, -1 follows the local retention (local.retention.ms). "+
				"Served for topics with tiered storage, absent before Kafka 4.4"+fromRefresh, topic...),
		topicRemoteCopyLagBytes: table.Gauge("kafka_topic_remote_copy_lag_bytes",
			"The topic's remote.copy.lag.bytes (KIP-1241, Kafka 4.4+): a rolled segment is copied once this many newer bytes follow it, or once kafka_topic_remote_copy_lag_seconds passed; "+
				"0 copies at once, -1 follows the local retention (local.retention.bytes). Served for topics with tiered storage, absent before Kafka 4.4"+fromRefresh, topic...),
		topicRackUnsafe: table.Gauge("kafka_topic_rack_unsafe_partitions",
			"Partitions of the topic whose replicas sit in fewer racks than they could: min(replication factor, racks in the cluster); served when brokers have racks"+fromRefresh, topic...),
		topicNoCleanLeader: table.Gauge("kafka_topic_no_clean_leader_partitions",
			"Partitions of the topic without a leader, an ISR or an eligible leader replica: only an unclean election can bring them back"+fromRefresh, topic...),
		topicNonPreferred: table.Gauge("kafka_topic_non_preferred_leader_partitions",
			"Partitions of the topic led by a replica other than the preferred (first assigned) one, or by none"+fromRefresh, topic...),
		topicOfflineReplicas: table.Gauge("kafka_topic_offline_replicas",
			"Replicas of the topic's partitions on brokers that are down or on offline log directories"+fromRefresh, topic...),
		topicLeaderChanges: table.Counter("kafka_topic_leader_changes_total",
			"Leader changes of the topic's partitions this exporter observed between consecutive refreshes, including to and from no leader.", topic...),
		topicISRShrinks: table.Counter("kafka_topic_isr_shrinks_total",
			"Refreshes in which this exporter observed a partition's ISR lose members, summed over the topic's partitions; a replacement (e.g. [3] to [1]) counts here and in kafka_topic_isr_expands_total.", topic...),
		topicISRExpands: table.Counter("kafka_topic_isr_expands_total",
			"Refreshes in which this exporter observed a partition's ISR gain members, summed over the topic's partitions; a replacement counts here and in kafka_topic_isr_shrinks_total.", topic...),
		topicUncleanElections: table.Counter("kafka_topic_unclean_leader_elections_total",
			"Unclean leader elections (to a replica in neither the previous ISR nor its eligible or last known eligible leader replicas) this exporter observed in the topic's partitions; they lose acknowledged writes.", topic...),

		brokerUp: table.Gauge("kafka_broker_up",
			"1 if the broker is registered and live, 0 if replicas are assigned to it but it is not"+fromRefresh, broker...),
		brokerReachable: table.Gauge("kafka_broker_reachable",
			"1 if the broker answered the exporter's ApiVersions request at its address during the last successful refresh (a port that accepts connections is not enough). "+
				"A broker that is up but unreachable from every exporter is dead and unfenced (KRaft quorum lost, metadata frozen) or cut off by the network.",
			broker...),
		brokerInfo: table.Gauge("kafka_broker_info",
			"Always 1; carries the broker's advertised address and rack (last known address for a broker that is down)"+fromRefresh,
			"broker", "address", "rack"),
		brokerLeaderPartitions: table.Gauge("kafka_broker_leader_partitions",
			"Partitions this broker leads, across all topics"+fromRefresh, broker...),
		brokerReplicaPartitions: table.Gauge("kafka_broker_replica_partitions",
			"Partition replicas assigned to this broker, across all topics"+fromRefresh, broker...),
		brokerOutOfSync: table.Gauge("kafka_broker_out_of_sync_replicas",
			"Replicas on this broker that are not in their partition's ISR, across all topics"+fromRefresh, broker...),
		brokerCatchUpRecords: table.Gauge("kafka_broker_catchup_records_behind",
			"Records the broker's out-of-sync replicas still lack: the sum of each one's leader log end offset minus its own, "+
				"read beside the refreshes from the replicas themselves (ListOffsets with the debugging replica id), so as of the previous refresh. "+
				"Served while the broker is live and has replicas out of the ISR.", broker...),
		brokerCatchUpPartitions: table.Gauge("kafka_broker_catchup_partitions_behind",
			"Of the broker's out-of-sync replicas, those the catch-up read found behind their leader's log end (as kafka_broker_catchup_records_behind).", broker...),
		brokerCatchUpUnread: table.Gauge("kafka_broker_catchup_partitions_unread",
			"Of the broker's out-of-sync replicas, those the catch-up read could not measure (the broker or the leader did not answer, or the partition has no live leader): "+
				"kafka_broker_catchup_records_behind leaves them out.", broker...),
		brokerCatchUpRate: table.Gauge("kafka_broker_catchup_records_per_second",
			"How fast kafka_broker_catchup_records_behind has shrunk since it was largest in this catch-up, in records per second: "+
				"the replicas' fetching minus the writes they must also fetch. Absent until it has shrunk.", broker...),
		brokerCatchUpETA: table.Gauge("kafka_broker_catchup_eta_seconds",
			"Seconds until the broker's out-of-sync replicas reach their leaders' log ends, at kafka_broker_catchup_records_per_second; "+
				"they rejoin the ISR then. Absent while the rate is unknown.", broker...),
		brokerLeadingBehind: table.Gauge("kafka_broker_leading_while_behind",
			"Partitions the broker leads while some of its other replicas are out of the ISR: leadership returned before it caught up "+
				"(a preferred-leader election too early), 0 otherwise"+fromRefresh, broker...),
		brokerAddingReplicas: table.Gauge("kafka_broker_adding_replicas",
			"Replicas in-progress reassignments are adding to this broker, across all topics"+fromRefresh, broker...),
		brokerRemovingReplicas: table.Gauge("kafka_broker_removing_replicas",
			"Replicas in-progress reassignments are removing from this broker, across all topics"+fromRefresh, broker...),
		brokerLeadershipsGained: table.Counter("kafka_broker_leaderships_gained_total",
			"Leader changes this exporter observed that made this broker a partition's leader.", broker...),
		brokerLeadershipsLost: table.Counter("kafka_broker_leaderships_lost_total",
			"Leader changes this exporter observed that took a partition's leadership from this broker.", broker...),
		brokerISRShrinks: table.Counter("kafka_broker_isr_shrinks_total",
			"Times this exporter observed one of this broker's replicas leave its partition's ISR.", broker...),
		brokerISRExpands: table.Counter("kafka_broker_isr_expands_total",
			"Times this exporter observed one of this broker's replicas join its partition's ISR.", broker...),
		brokerUncleanElections: table.Counter("kafka_broker_unclean_leader_elections_total",
			"Unclean leader elections this exporter observed that made this broker the leader; they lose acknowledged writes.", broker...),

		clusterBrokers: table.Gauge("kafka_cluster_brokers",
			"Live brokers"+fromRefresh),
		clusterExpectedBrokers: table.Gauge("kafka_cluster_expected_brokers",
			"Brokers that are live or hold replica assignments; fewer live than expected means brokers are down"+fromRefresh),
		detailedPartitions: table.Gauge("kafka_detailed_partitions",
			"Partitions served in detail: unhealthy (under-replicated, at or under min ISR, offline, with offline replicas, reassigning or in an open episode) now or within partition_metrics_hold; "+
				"in the unhealthy mode, the only partitions with per-partition series"+fromRefresh),

		clusterRacks: table.Gauge("kafka_cluster_racks",
			"Distinct racks (broker.rack) of the brokers, down ones by their last known rack; served when brokers have racks"+fromRefresh),

		quorumLeader: table.Gauge("kafka_quorum_leader",
			"Node ID of the KRaft quorum leader, which is the active controller, -1 while there is none (DescribeQuorum)"+fromRefresh),
		quorumLeaderEpoch: table.Gauge("kafka_quorum_leader_epoch",
			"Epoch of the KRaft quorum leader; it rises with every controller election"+fromRefresh),
		quorumHighWatermark: table.Gauge("kafka_quorum_high_watermark",
			"High watermark of the KRaft metadata log (__cluster_metadata)"+fromRefresh),
		quorumVoters: table.Gauge("kafka_quorum_voters",
			"Controllers voting in the KRaft quorum"+fromRefresh),
		quorumObservers: table.Gauge("kafka_quorum_observers",
			"Observers of the KRaft quorum: brokers (and controllers not voting) that replicate the metadata log"+fromRefresh),
		quorumVoterLogEndOffset: table.Gauge("kafka_quorum_voter_log_end_offset",
			"Log end offset of the voter's copy of the metadata log, as the quorum leader knows it"+fromRefresh, voter...),
		quorumVoterLag: table.Gauge("kafka_quorum_voter_lag",
			"Metadata log records the voter is behind the quorum leader (0 for the leader)"+fromRefresh, voter...),
		quorumVoterCaughtUpAge: table.Gauge("kafka_quorum_voter_caught_up_age_seconds",
			"Seconds since the voter last caught up with the quorum leader, by the leader's clock; absent while the leader does not know"+fromRefresh, voter...),
		quorumVoterInfo: table.Gauge("kafka_quorum_voter_info",
			"Always 1: the voter's metadata log directory ID (KIP-853; a voter is an ID and a directory, so a controller whose disk was replaced is another voter). "+
				"Served on Kafka 3.9+ (DescribeQuorum v2) for quorums with directory IDs"+fromRefresh, "voter", "directory_id"),
		quorumVoterOnline: table.Gauge("kafka_quorum_voter_online",
			"1 if the voter is the quorum leader or fetched from it within the last 10 s, by the leader's clock; 0 if it did not (down, paused, cut off, or never since this leader's election). "+
				"Absent when the leader does not say when voters fetched (DescribeQuorum v0)"+fromRefresh, voter...),
		quorumVoterLastFetchAge: table.Gauge("kafka_quorum_voter_last_fetch_age_seconds",
			"Seconds since the quorum leader last had a fetch from the voter, by its clock; absent for the leader itself and while the leader does not know"+fromRefresh, voter...),
		quorumVoterCaughtUp: table.Gauge("kafka_quorum_voter_caught_up",
			"1 if the voter counts toward a caught-up majority, as the failure budget counts it (the leader, or last caught up within 10 s, and available as a broker in combined mode); else 0"+fromRefresh, voter...),
		quorumControllerObservers: table.Gauge("kafka_quorum_controller_observers",
			"Observers of the KRaft quorum that are not brokers and fetched within the last 10 s: controllers outside the voter set (not yet added, removed, or waiting to auto-join), "+
				"which add nothing to the quorum's failure tolerance. A combined node removed from the voters is a broker and is not counted. "+
				"Absent when the leader does not say when observers fetched"+fromRefresh),
		quorumControllerObserverInfo: table.Gauge("kafka_quorum_controller_observer_info",
			"Always 1, for each observer counted in kafka_quorum_controller_observers: its node ID and metadata log directory ID"+fromRefresh, "node", "directory_id"),

		brokerSafeToStop: table.Gauge("kafka_broker_safe_to_stop",
			"1 if stopping the broker now would take no watched or internal partition offline, under min.insync.replicas or below failure_budget.min_isr_headroom, "+
				"leave a majority of caught-up KRaft voters, and deepen no damage already there (and, with failure_budget.coordinators: settled, the coordinators have settled); else 0 (the failure budget, docs/runbooks.md)"+fromRefresh, broker...),
		brokerStopAffected: table.Gauge("kafka_broker_stop_affected_partitions",
			"Partitions (of the topics the budget judges: all unless failure_budget.unwatched_topics is name) that stopping the broker now would put in the effect's state: offline (no leader candidate left), under_min_isr (acks=all writes refused), "+
				"below_headroom (served when failure_budget.min_isr_headroom > 0); each partition counted once, at its worst"+fromRefresh, "broker", "effect"),
		brokerStopUnsafe: table.Gauge("kafka_broker_stop_unsafe",
			"1 if the reason makes stopping the broker now unsafe, 0 if it was checked and does not: partitions_offline, partitions_under_min_isr, min_isr_headroom, "+
				"quorum_majority (the stop leaves too few caught-up KRaft voters), cluster_degraded (it would deepen damage already there), "+
				"coordinators_unsettled (only with failure_budget.coordinators: settled: a group or transaction coordinator is loading or unavailable, or a group the broker coordinates is rebalancing), "+
				"not_judged (an input the verdict needs is unknown: the broker is live to the cluster but unreachable by the exporter, the quorum unread, min.insync.replicas unknown; with coordinators: settled, the coordinator read missing, stale or incomplete)"+fromRefresh, "broker", "reason"),
		rackSafeToStop: table.Gauge("kafka_rack_safe_to_stop",
			"1 if losing every broker of the rack (broker.rack) now would be safe, by kafka_broker_safe_to_stop's rules; served when brokers have racks"+fromRefresh, "rack"),
		rackStopAffected: table.Gauge("kafka_rack_stop_affected_partitions",
			"Partitions that losing the rack now would put in the effect's state (as kafka_broker_stop_affected_partitions); served when brokers have racks"+fromRefresh, "rack", "effect"),
		rackStopUnsafe: table.Gauge("kafka_rack_stop_unsafe",
			"1 if the reason makes losing the rack now unsafe, 0 if checked and fine (reasons as kafka_broker_stop_unsafe); served when brokers have racks"+fromRefresh, "rack", "reason"),
		brokerLossesTolerated: table.Gauge("kafka_broker_losses_tolerated",
			"In-sync replica losses the worst watched or internal partition tolerates before it goes under_min_isr (ISR minus min.insync.replicas, over partitions whose min ISR is known) "+
				"or offline (ISR plus eligible leader replicas, minus 1); 0 for a partition already there. Only available brokers count"+fromRefresh, "until"),
		quorumVoterLossesTolerated: table.Gauge("kafka_quorum_voter_losses_tolerated",
			"Caught-up KRaft voters minus a majority of the voters, floor 0: how many more voters the quorum can lose; absent without quorum data"+fromRefresh),
	}
	x.episodeSeconds = [conditionCount]*exposition.Desc{
		ConditionOffline: table.Histogram("kafka_partition_offline_episode_seconds",
			"How long partitions of the topic had no leader"+episodeHelp, topic...),
		ConditionUnderMinISR: table.Histogram("kafka_partition_under_min_isr_episode_seconds",
			"How long partitions of the topic had fewer in-sync replicas than min.insync.replicas (acks=all writes refused)"+episodeHelp, topic...),
		ConditionUnderReplicated: table.Histogram("kafka_partition_under_replicated_episode_seconds",
			"How long partitions of the topic had out-of-sync replicas"+episodeHelp, topic...),
	}
	x.openEpisodeSeconds = [conditionCount]*exposition.Desc{
		ConditionOffline: table.Gauge("kafka_partition_offline_open_episode_seconds",
			"Age of the oldest ongoing episode of a partition of the topic without a leader"+openEpisodeHelp, topic...),
		ConditionUnderMinISR: table.Gauge("kafka_partition_under_min_isr_open_episode_seconds",
			"Age of the oldest ongoing episode of a partition of the topic under min.insync.replicas"+openEpisodeHelp, topic...),
		ConditionUnderReplicated: table.Gauge("kafka_partition_under_replicated_open_episode_seconds",
			"Age of the oldest ongoing episode of an under-replicated partition of the topic"+openEpisodeHelp, topic...),
	}
	kind := []string{"kind"}
	coordinatorOf := " The coordinators are read beside the refreshes (FindCoordinator for one key per partition, then the coordinator named is asked OffsetFetch, DescribeTransactions or ReadShareGroupStateSummary for it), " +
		"so they are as of the previous refresh's read; kind: group (__consumer_offsets), transaction (__transaction_state) or share (__share_group_state, Kafka 4.1+); absent while the kind's topic does not exist or its brokers lack the requests (Kafka before 3.0), " +
		"and for share while the brokers refuse its question (an inter-broker request: ClusterAction)."
	x.coordinatorPartitions = table.Gauge("kafka_coordinator_partitions",
		"Partitions of the kind's internal topic by how their coordinator answered the last read: answering; loading (COORDINATOR_LOAD_IN_PROGRESS: clients fail until it loaded); "+
			"unavailable (no coordinator, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, or the coordinator did not answer); unknown (the read could not tell: no broker answered FindCoordinator, or an ACL refused the question)."+coordinatorOf, "kind", "state")
	x.coordinatorReadTimestamp = table.Gauge("kafka_coordinator_last_read_timestamp_seconds",
		"When the last coordinator read of the kind began, in seconds since the epoch: the time the kafka_coordinator_* series describe."+coordinatorOf, kind...)
	x.coordinatorEpisodeSeconds = table.Histogram("kafka_coordinator_unavailable_episode_seconds",
		"How long a coordinator partition of the kind failed its clients (loading or unavailable), from the exporter's first failed probe of the coordinator the previous read named (else the first read that saw it) "+
			"to the first read in which it answered; one observation per partition episode when it ends; served from the first episode on. Episodes already under way when the exporter started are not observed.", kind...)
	x.coordinatorOpenEpisode = table.Gauge("kafka_coordinator_unavailable_open_episode_seconds",
		"Age of the oldest ongoing episode of a coordinator partition of the kind failing its clients, at the last read; absent while none is open.", kind...)
	x.coordinatorPartitionState = table.Gauge("kafka_coordinator_partition_state",
		"1 for the state the partition's coordinator had at the last read (state: answering, loading, unavailable, unknown). "+
			"With partition_metrics lean or unhealthy served only for partitions not answering (a partition without the series answers); full: every partition; none: none."+coordinatorOf, "kind", "partition", "state")
	x.coordinatorPartitionBroker = table.Gauge("kafka_coordinator_partition_coordinator",
		"Broker ID FindCoordinator named as the partition's coordinator at the last read, -1 when none; served for the partitions kafka_coordinator_partition_state is served for.", "kind", "partition")
	x.brokerCoordinatorPartitions = table.Gauge("kafka_broker_coordinator_partitions",
		"Partitions of the kind's internal topic whose coordinator the last read found to be the broker: what stopping it moves, each a pause while the new leader loads it "+
			"(the failure budget's answer gives the sum for a stop: the facts group_coordinator_partitions_moved, transaction_coordinator_partitions_moved and share_coordinator_partitions_moved)."+coordinatorOf, "broker", "kind")
	x.brokerCoordinatedGroups = table.Gauge("kafka_broker_coordinated_groups",
		"Consumer groups the broker coordinates, by protocol type (consumer, connect, share: a share group, none: a group that only commits offsets, other), as its ListGroups answered in the last coordinator read: "+
			"the groups a stop of it disturbs (the fact groups_moved). Absent for a broker that did not answer, and while the cluster has no __consumer_offsets.", "broker", "protocol")
	x.brokerCoordinatedTxIDs = table.Gauge("kafka_broker_coordinated_transactional_ids",
		"Transactional ids the broker coordinates, by state (ongoing; completing: preparing a commit, an abort or an epoch fence; idle: empty or complete; dead; unknown), as its ListTransactions answered in the last coordinator read: "+
			"the transactional producers a stop of it makes wait for a new coordinator (the facts transactional_ids_moved and transactions_in_flight_moved). "+
			"Absent for a broker that did not answer, while the cluster has no __transaction_state, and while the exporter may not describe every transactional id (an ACL would hide some without an error).", "broker", "state")
	x.groupsByState = table.Gauge("kafka_groups",
		"Consumer groups of the cluster by state (stable; rebalancing: preparing or completing a rebalance, or assigning; reconciling; empty; dead; unknown), summed over every live broker's ListGroups in the last coordinator read; "+
			"absent when a broker did not answer or does not say (ListGroups before v4).", "state")
	transactionsMetrics(&x, partition)
	uncleanMetrics(&x, partition)
	return x
}()

// uncleanMetrics defines the series of what an unclean election would
// lose.
func uncleanMetrics(x *descs, partition []string) {
	served := " Served only for watched partitions without a leader whose live replicas are all out of the ISR and ELR (only kafka-leader-election.sh --election-type unclean brings them back), with every partition_metrics setting but none;" +
		" read beside the refreshes: the high watermark from the leader (ListOffsets, as a consumer asks) while a replica is out of the ISR, and kept once the leader is gone."
	x.partitionUncleanBehind = table.Gauge("kafka_partition_unclean_candidate_records_behind",
		"Records a live replica of a partition without a clean leader lacks of the partition's last known high watermark (its log end offset, read with ListOffsets' debugging replica id): "+
			"at least what an unclean election of that replica would lose; the writes acknowledged after the last read of the high watermark are not counted. "+
			"Absent for a replica that did not answer, and for every replica of a partition whose high watermark this exporter never read (it started after the leader was lost)."+served, append(slices.Clone(partition), "broker")...)
	x.partitionLastWatermark = table.Gauge("kafka_partition_last_high_watermark",
		"The high watermark the partition's leader last answered before the partition lost its last clean leader: the offset kafka_partition_unclean_candidate_records_behind counts from."+served, partition...)
	x.partitionLastWatermarkAt = table.Gauge("kafka_partition_last_high_watermark_timestamp_seconds",
		"When kafka_partition_last_high_watermark was read, in seconds since the epoch: writes acknowledged after it are not counted in what an unclean election would lose."+served, partition...)
}

// transactionsMetrics defines the series of the transaction read.
func transactionsMetrics(x *descs, partition []string) {
	readBeside := " Read beside the refreshes (ListOffsets of each leader's partitions at both isolation levels: the high watermark, then the last stable offset), so as of the previous refresh's read; absent before the first read."
	stalled := " A partition is stalled when two reads in a row found its last stable offset behind its high watermark at the same offset: read_committed consumers of it read nothing new in between."
	x.readCommittedGapPartitions = table.Gauge("kafka_read_committed_gap_partitions",
		"Watched partitions whose last stable offset was behind their high watermark at the last read: records read_uncommitted consumers see and read_committed ones do not yet (an open transaction). "+
			"Absent when a leader did not answer: a count of the others would say none of its partitions has a gap."+readBeside)
	x.readCommittedStalledPartitions = table.Gauge("kafka_read_committed_stalled_partitions",
		"Watched partitions stalled at the last read; absent when a leader did not answer."+stalled+readBeside)
	x.partitionReadCommittedGap = table.Gauge("kafka_partition_read_committed_gap_records",
		"High watermark minus last stable offset of a stalled partition: the records its read_committed consumers wait for. Served only for stalled partitions, with every partition_metrics setting but none."+stalled+readBeside, partition...)
	x.partitionReadCommittedStalled = table.Gauge("kafka_partition_read_committed_stalled_seconds",
		"How long a stalled partition's last stable offset has stayed where it is, from the first read that found it there with a gap (so at least this long). Served for the partitions kafka_partition_read_committed_gap_records is."+stalled+readBeside, partition...)
	x.partitionOpenTransactionIdle = table.Gauge("kafka_partition_open_transaction_idle_seconds",
		"Of the open transactions on a stalled partition (its leader's DescribeProducers), the longest time since the producer's last write to it: what kafka-transactions.sh find-hanging compares with transaction.max.timeout.ms. "+
			"Served for the stalled partitions the read described (at most 1000 per read), when one has an open transaction; the producer's id is in the event log, never in a label.", partition...)
	x.hangingTransactions = table.Gauge("kafka_hanging_transactions",
		"Open transactions on watched partitions that no coordinator will end, by the rule of kafka-transactions.sh find-hanging: idle longer than transaction.max.timeout.ms, and no coordinator lists the producer, or its coordinator does not know its transactional id, "+
			"or the coordinator's transaction does not include the partition. They hold read_committed consumers until aborted by hand (kafka-transactions.sh abort). "+
			"Absent when the read could not tell (a leader or coordinator did not answer, the timeout unread, an ACL hides transactional ids, the exporter's first read); the log says why.")
	x.transactionMaxTimeout = table.Gauge("kafka_transaction_max_timeout_seconds",
		"The brokers' transaction.max.timeout.ms in seconds, as DescribeConfigs answered in the last transaction read: no transaction may stay open longer before its coordinator aborts it. Absent when it could not be read.")
	x.transactionsReadTimestamp = table.Gauge("kafka_transactions_last_read_timestamp_seconds",
		"When the last transaction read began, in seconds since the epoch: the time the kafka_read_committed_*, kafka_partition_read_committed_* and kafka_hanging_transactions series describe.")
}

// Sets returns the collector's metric tables, in exposition order, for
// documentation and contract tests.
func Sets() []*exposition.Set { return table.Sets() }

// Collector serves the latest snapshot of every watched Kafka cluster. It
// never talks to a cluster: Collect only reads published snapshots.
type Collector = exposition.Collector[Snapshot]

// NewCollector returns a collector with no clusters; Set serves a cluster
// with the default partition series, SetEmit(name, w, EmitState(mode))
// with another mode's.
func NewCollector() *Collector {
	return exposition.NewCollector(EmitState(settings.DefaultPartitionMetrics), table.Sets()...)
}

// EmitState emits one cluster's health series and, when its last refresh
// succeeded, its snapshot series, with mode's per-partition series.
func EmitState(mode settings.PartitionMetrics) exposition.EmitStateFunc[Snapshot] {
	return func(health, snapshotSink exposition.Sink, name string, state *watch.State[Snapshot]) {
		emitState(health, snapshotSink, name, state, mode)
	}
}

// emitState emits one cluster's health series to health and, when its last
// refresh succeeded, its snapshot series to snapshotSink.
func emitState(health, snapshotSink exposition.Sink, name string, state *watch.State[Snapshot], mode settings.PartitionMetrics) {
	exposition.EmitHealth(metrics.health, health, name, state)
	// A snapshot from before a failed refresh is not served as current.
	if !state.Up || state.Snapshot == nil {
		return
	}
	emitSnapshot(snapshotSink, name, state.Snapshot, mode)
}

// partitionFamilies lists every family the partition loop of emitSnapshot
// emits; one missing here would be left out of the text path, which
// TestWriteTextMatchesCollect catches.
func (x *descs) partitionFamilies() []*exposition.Desc {
	return []*exposition.Desc{
		x.partitionLeader, x.partitionReplicas, x.partitionISR, x.partitionOfflineReplicas,
		x.partitionUnderReplicated, x.partitionUnderMinISR, x.partitionAtMinISR, x.partitionOffline,
		x.partitionLeaderIsPreferred, x.partitionLeaderChanges, x.partitionISRShrinks, x.partitionISRExpands,
		x.partitionReassigning, x.partitionAddingReplicas, x.partitionRemovingReplicas,
		x.partitionELR, x.partitionLastKnownELR, x.partitionNoCleanLeader,
		x.partitionUncleanElections, x.partitionReplicaRacks, x.partitionISRRacks,
	}
}

// leanFamilies are the per-partition series the lean mode serves for every
// partition, and the unhealthy mode for every detailed one.
func (x *descs) leanFamilies() []*exposition.Desc {
	return []*exposition.Desc{x.partitionLeader, x.partitionReplicas, x.partitionISR, x.partitionUnderReplicated, x.partitionUnderMinISR}
}

// counterFamilies are the per-partition counters only the full mode serves.
func (x *descs) counterFamilies() []*exposition.Desc {
	return []*exposition.Desc{x.partitionLeaderChanges, x.partitionISRShrinks, x.partitionISRExpands, x.partitionUncleanElections}
}

// ServedFamilies tells, for each metric family of the Kafka collector,
// whether mode may serve it: every family outside the partition loop in
// every mode, the per-partition counters only in full, and no
// per-partition family in none. The contract tests check that every alert
// and panel reads something each mode serves.
func ServedFamilies(mode settings.PartitionMetrics) map[string]bool {
	served := map[string]bool{}
	for _, name := range exposition.Names(Sets()...) {
		served[name] = true
	}
	for _, d := range metrics.partitionFamilies() {
		served[d.Name] = mode != settings.PartitionMetricsNone
	}
	for _, d := range metrics.counterFamilies() {
		served[d.Name] = mode == settings.PartitionMetricsFull
	}
	return served
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func emitSnapshot(ch exposition.Sink, cluster string, s *Snapshot, mode settings.PartitionMetrics) {
	// Label values are filled into slices reused for every series: a fresh
	// variadic slice per series would be over 100,000 allocations per
	// rendering at 10,000 partitions. Sinks copy what they keep.
	topicLabels := []string{cluster, ""}
	partLabels := []string{cluster, "", ""}
	ch.Add(metrics.clusterBrokers, float64(s.LiveBrokers()), cluster)
	ch.Add(metrics.clusterExpectedBrokers, float64(len(s.Brokers)), cluster)
	ch.Add(metrics.detailedPartitions, float64(s.DetailedPartitions()), cluster)
	if s.Racks > 0 {
		ch.Add(metrics.clusterRacks, float64(s.Racks), cluster)
	}
	if q := s.Quorum; q != nil {
		emitQuorum(ch, cluster, s, q)
	}
	emitBudget(ch, cluster, s.Budget)
	emitBrokers(ch, cluster, s)
	emitInternal(ch, cluster, s.Internal)
	emitCoordinators(ch, cluster, s, mode)
	emitTransactions(ch, cluster, s.Transactions, mode)
	if mode != settings.PartitionMetricsNone {
		emitUnclean(ch, cluster, s)
	}
	// While rendering one non-partition family, skip the partition loop,
	// nine tenths of the work.
	partitions := mode != settings.PartitionMetricsNone && exposition.Wants(ch, metrics.partitionFamilies()...)
	for ti := range s.Topics {
		t := &s.Topics[ti]
		topicLabels[1] = t.Name
		emitTopic(ch, s, t, topicLabels)
		emitEpisodes(ch, s, t.Name, topicLabels)
		if !partitions {
			continue
		}
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if mode == settings.PartitionMetricsUnhealthy && !p.Detailed {
				continue
			}
			partLabels[1], partLabels[2] = t.Name, strconv.FormatInt(int64(p.ID), 10)
			if mode == settings.PartitionMetricsFull {
				emitFullPartition(ch, s, t, p, partLabels)
			} else {
				emitLeanPartition(ch, s, t, p, partLabels)
			}
		}
	}
}

// emitUnclean emits, for each partition without a clean leader, its last
// known high watermark and what each live candidate lacks of it.
func emitUnclean(ch exposition.Sink, cluster string, s *Snapshot) {
	for _, e := range s.UncleanEstimates() {
		if !e.WatermarkKnown {
			continue
		}
		partition := strconv.FormatInt(int64(e.Key.Partition), 10)
		ch.Add(metrics.partitionLastWatermark, float64(e.Watermark.Offset), cluster, e.Key.Topic, partition)
		ch.Add(metrics.partitionLastWatermarkAt, float64(e.Watermark.ReadAt.UnixMilli())/1000, cluster, e.Key.Topic, partition)
		for _, c := range e.Candidates {
			if n, ok := e.Behind(c); ok {
				ch.Add(metrics.partitionUncleanBehind, float64(n), cluster, e.Key.Topic, partition, brokerLabel(c.Broker))
			}
		}
	}
}

// emitInternal emits the health of the internal topics that exist.
func emitInternal(ch exposition.Sink, cluster string, topics []InternalTopic) {
	for i := range topics {
		t := &topics[i]
		labels := []string{cluster, t.Name, t.Feature}
		ch.Add(metrics.internalPartitions, float64(t.Partitions), labels...)
		ch.Add(metrics.internalUnderReplicated, float64(t.UnderReplicated), labels...)
		if t.MinISR > 0 {
			ch.Add(metrics.internalUnderMinISR, float64(t.UnderMinISR), labels...)
		}
		ch.Add(metrics.internalOffline, float64(t.Offline), labels...)
	}
}

// emitQuorum emits the KRaft quorum's series and its voters'.
func emitQuorum(ch exposition.Sink, cluster string, s *Snapshot, q *Quorum) {
	ch.Add(metrics.quorumLeader, float64(q.LeaderID), cluster)
	ch.Add(metrics.quorumLeaderEpoch, float64(q.LeaderEpoch), cluster)
	ch.Add(metrics.quorumHighWatermark, float64(q.HighWatermark), cluster)
	ch.Add(metrics.quorumVoters, float64(len(q.Voters)), cluster)
	ch.Add(metrics.quorumObservers, float64(len(q.Observers)), cluster)
	voterLabels := []string{cluster, ""}
	for _, v := range q.Voters {
		voterLabels[1] = brokerLabel(v.ID)
		ch.Add(metrics.quorumVoterLogEndOffset, float64(v.LogEndOffset), voterLabels...)
		ch.Add(metrics.quorumVoterLag, float64(v.Lag), voterLabels...)
		if v.CaughtUpAge >= 0 {
			ch.Add(metrics.quorumVoterCaughtUpAge, v.CaughtUpAge.Seconds(), voterLabels...)
		}
		if v.DirectoryID != "" {
			ch.Add(metrics.quorumVoterInfo, 1, cluster, voterLabels[1], v.DirectoryID)
		}
		if q.FetchTimesKnown {
			ch.Add(metrics.quorumVoterOnline, bool01(v.Online(q)), voterLabels...)
		}
		if v.ID != q.LeaderID && v.LastFetchAge >= 0 {
			ch.Add(metrics.quorumVoterLastFetchAge, v.LastFetchAge.Seconds(), voterLabels...)
		}
		if b := s.Budget; b != nil && b.QuorumCaughtUp != nil {
			ch.Add(metrics.quorumVoterCaughtUp, bool01(b.QuorumCaughtUp[v.ID]), voterLabels...)
		}
	}
	if controllers, known := q.ControllerObservers(s.HasBroker); known {
		ch.Add(metrics.quorumControllerObservers, float64(len(controllers)), cluster)
		for _, o := range controllers {
			ch.Add(metrics.quorumControllerObserverInfo, 1, cluster, brokerLabel(o.ID), o.DirectoryID)
		}
	}
}

// emitBrokers emits every broker's series.
func emitBrokers(ch exposition.Sink, cluster string, s *Snapshot) {
	brokerLabels := []string{cluster, ""}
	for i := range s.Brokers {
		b := &s.Brokers[i]
		id := brokerLabel(b.ID)
		brokerLabels[1] = id
		ch.Add(metrics.brokerUp, bool01(b.Up), brokerLabels...)
		if b.Address != "" {
			ch.Add(metrics.brokerReachable, bool01(b.Reachable), brokerLabels...)
		}
		if s.FencedKnown {
			ch.Add(metrics.brokerFenced, bool01(b.Fenced), brokerLabels...)
		}
		if b.LogDirs != nil {
			ch.Add(metrics.brokerLogDirs, float64(len(b.LogDirs)), brokerLabels...)
			ch.Add(metrics.brokerCordonedLogDirs, float64(b.CordonedLogDirs()), brokerLabels...)
			for _, d := range b.LogDirs {
				ch.Add(metrics.brokerLogDirCordoned, bool01(d.Cordoned), cluster, id, d.Path)
			}
		}
		ch.Add(metrics.brokerInfo, 1, cluster, id, b.Address, b.Rack)
		ch.Add(metrics.brokerLeaderPartitions, float64(b.LeaderPartitions), brokerLabels...)
		ch.Add(metrics.brokerReplicaPartitions, float64(b.ReplicaPartitions), brokerLabels...)
		ch.Add(metrics.brokerOutOfSync, float64(b.OutOfSyncReplicas), brokerLabels...)
		emitCatchUp(ch, s, b, brokerLabels)
		if s.ReassignmentsKnown {
			ch.Add(metrics.brokerAddingReplicas, float64(b.AddingReplicas), brokerLabels...)
			ch.Add(metrics.brokerRemovingReplicas, float64(b.RemovingReplicas), brokerLabels...)
		}
		ch.Add(metrics.brokerLeadershipsGained, float64(b.Transitions.LeadershipsGained), brokerLabels...)
		ch.Add(metrics.brokerLeadershipsLost, float64(b.Transitions.LeadershipsLost), brokerLabels...)
		ch.Add(metrics.brokerISRShrinks, float64(b.Transitions.ISRShrinks), brokerLabels...)
		ch.Add(metrics.brokerISRExpands, float64(b.Transitions.ISRExpands), brokerLabels...)
		ch.Add(metrics.brokerUncleanElections, float64(b.Transitions.UncleanElections), brokerLabels...)
	}
}

// emitCatchUp emits the broker's catch-up series: while it is live with
// replicas out of the ISR, from the last catch-up read that measured it.
func emitCatchUp(ch exposition.Sink, s *Snapshot, b *Broker, brokerLabels []string) {
	leading := 0
	if b.Up && b.OutOfSyncReplicas > 0 {
		leading = b.LeaderPartitions
	}
	ch.Add(metrics.brokerLeadingBehind, float64(leading), brokerLabels...)
	c, ok := s.CatchUpOf(b.ID)
	if !ok {
		return
	}
	ch.Add(metrics.brokerCatchUpRecords, float64(c.Records), brokerLabels...)
	ch.Add(metrics.brokerCatchUpPartitions, float64(c.Partitions), brokerLabels...)
	ch.Add(metrics.brokerCatchUpUnread, float64(c.Unread), brokerLabels...)
	if rate, ok := c.Rate(s.CatchUp.ReadAt); ok {
		ch.Add(metrics.brokerCatchUpRate, rate, brokerLabels...)
		eta, _ := c.ETA(s.CatchUp.ReadAt)
		ch.Add(metrics.brokerCatchUpETA, eta.Seconds(), brokerLabels...)
	}
}

// emitTopic emits a topic's own series (its episodes' are emitEpisodes').
func emitTopic(ch exposition.Sink, s *Snapshot, t *Topic, topicLabels []string) {
	ch.Add(metrics.topicPartitions, float64(len(t.Partitions)), topicLabels...)
	ch.Add(metrics.topicReplicationFactor, float64(t.ReplicationFactor), topicLabels...)
	ch.Add(metrics.topicUnderReplicated, float64(t.UnderReplicated), topicLabels...)
	ch.Add(metrics.topicOffline, float64(t.Offline), topicLabels...)
	ch.Add(metrics.topicNonPreferred, float64(t.NonPreferredLeaders), topicLabels...)
	ch.Add(metrics.topicOfflineReplicas, float64(t.OfflineReplicas), topicLabels...)
	if s.ReassignmentsKnown {
		ch.Add(metrics.topicReassigning, float64(t.ReassigningPartitions), topicLabels...)
	}
	if s.ELRKnown {
		ch.Add(metrics.topicNoCleanLeader, float64(t.NoCleanLeader), topicLabels...)
	}
	if s.Racks > 0 {
		ch.Add(metrics.topicRackUnsafe, float64(t.RackUnsafe), topicLabels...)
	}
	if u := t.Untiered; u != nil {
		ch.Add(metrics.topicUntieredRecords, float64(u.Records), topicLabels...)
		if !u.Oldest.IsZero() {
			ch.Add(metrics.topicUntieredOldest, float64(u.Oldest.UnixMilli())/1000, topicLabels...)
		}
	}
	if c := t.Tiered; c.Enabled && c.CopyLagKnown {
		lag := float64(c.CopyLagMs) / 1000
		if c.CopyLagMs < 0 {
			lag = -1 // follows the local retention: a flag, not a time
		}
		ch.Add(metrics.topicRemoteCopyLag, lag, topicLabels...)
		ch.Add(metrics.topicRemoteCopyLagBytes, float64(c.CopyLagBytes), topicLabels...)
	}
	if t.UncleanElectionKnown {
		ch.Add(metrics.topicUncleanEnabled, bool01(t.UncleanElectionEnabled), topicLabels...)
	}
	if t.MinISR > 0 {
		ch.Add(metrics.topicMinISR, float64(t.MinISR), topicLabels...)
		ch.Add(metrics.topicUnderMinISR, float64(t.UnderMinISR), topicLabels...)
		ch.Add(metrics.topicAtMinISR, float64(t.AtMinISR), topicLabels...)
	}
	ch.Add(metrics.topicLeaderChanges, float64(t.Transitions.LeaderChanges), topicLabels...)
	ch.Add(metrics.topicISRShrinks, float64(t.Transitions.ISRShrinks), topicLabels...)
	ch.Add(metrics.topicISRExpands, float64(t.Transitions.ISRExpands), topicLabels...)
	ch.Add(metrics.topicUncleanElections, float64(t.Transitions.UncleanElections), topicLabels...)
}

// emitLeanPartition emits a partition's series in the lean and unhealthy
// modes: the five every partition gets, and, while the partition is
// detailed, every other gauge of the full mode. Outside the detail, a
// gauge that is rarely off its healthy value is served where it is off
// it: a leader that is not the preferred one, an ISR at min ISR, replicas
// or an ISR in fewer racks than they could be.
func emitLeanPartition(ch exposition.Sink, s *Snapshot, t *Topic, p *Partition, labels []string) {
	ch.Add(metrics.partitionLeader, float64(p.Leader), labels...)
	ch.Add(metrics.partitionReplicas, float64(p.ReplicationFactor()), labels...)
	ch.Add(metrics.partitionISR, float64(len(p.ISR)), labels...)
	ch.Add(metrics.partitionUnderReplicated, bool01(p.UnderReplicated()), labels...)
	if t.MinISR > 0 {
		ch.Add(metrics.partitionUnderMinISR, bool01(p.UnderMinISR(t.MinISR)), labels...)
	}
	if !p.Detailed {
		if !p.LeaderIsPreferred() {
			ch.Add(metrics.partitionLeaderIsPreferred, 0, labels...)
		}
		if p.AtMinISR(t.MinISR) {
			ch.Add(metrics.partitionAtMinISR, 1, labels...)
		}
		if s.Racks > 0 && (p.RackUnsafe(s.Racks) || p.ISRRacks < p.ReplicaRacks) {
			ch.Add(metrics.partitionReplicaRacks, float64(p.ReplicaRacks), labels...)
			ch.Add(metrics.partitionISRRacks, float64(p.ISRRacks), labels...)
		}
		return
	}
	ch.Add(metrics.partitionOfflineReplicas, float64(len(p.OfflineReplicas())), labels...)
	ch.Add(metrics.partitionOffline, bool01(p.Offline()), labels...)
	ch.Add(metrics.partitionLeaderIsPreferred, bool01(p.LeaderIsPreferred()), labels...)
	if t.MinISR > 0 {
		ch.Add(metrics.partitionAtMinISR, bool01(p.AtMinISR(t.MinISR)), labels...)
	}
	if s.Racks > 0 {
		ch.Add(metrics.partitionReplicaRacks, float64(p.ReplicaRacks), labels...)
		ch.Add(metrics.partitionISRRacks, float64(p.ISRRacks), labels...)
	}
	emitRareStates(ch, s, t, p, labels)
}

// emitFullPartition emits every per-partition series of the full mode.
func emitFullPartition(ch exposition.Sink, s *Snapshot, t *Topic, p *Partition, labels []string) {
	ch.Add(metrics.partitionLeader, float64(p.Leader), labels...)
	ch.Add(metrics.partitionReplicas, float64(p.ReplicationFactor()), labels...)
	ch.Add(metrics.partitionISR, float64(len(p.ISR)), labels...)
	ch.Add(metrics.partitionOfflineReplicas, float64(len(p.OfflineReplicas())), labels...)
	ch.Add(metrics.partitionUnderReplicated, bool01(p.UnderReplicated()), labels...)
	ch.Add(metrics.partitionOffline, bool01(p.Offline()), labels...)
	ch.Add(metrics.partitionLeaderIsPreferred, bool01(p.LeaderIsPreferred()), labels...)
	if t.MinISR > 0 {
		ch.Add(metrics.partitionUnderMinISR, bool01(p.UnderMinISR(t.MinISR)), labels...)
		ch.Add(metrics.partitionAtMinISR, bool01(p.AtMinISR(t.MinISR)), labels...)
	}
	ch.Add(metrics.partitionLeaderChanges, float64(p.LeaderChanges), labels...)
	ch.Add(metrics.partitionISRShrinks, float64(p.ISRShrinks), labels...)
	ch.Add(metrics.partitionISRExpands, float64(p.ISRExpands), labels...)
	ch.Add(metrics.partitionUncleanElections, float64(p.UncleanElections), labels...)
	if s.Racks > 0 {
		ch.Add(metrics.partitionReplicaRacks, float64(p.ReplicaRacks), labels...)
		ch.Add(metrics.partitionISRRacks, float64(p.ISRRacks), labels...)
	}
	emitRareStates(ch, s, t, p, labels)
}

// emitRareStates emits the series that say something only in a rare
// state, and only in it, in every mode: reassignment (two fewer series per
// partition while nothing moves) and the ELR (three fewer while every ISR
// is at or above min ISR).
func emitRareStates(ch exposition.Sink, s *Snapshot, t *Topic, p *Partition, labels []string) {
	if s.ReassignmentsKnown {
		ch.Add(metrics.partitionReassigning, bool01(p.Reassigning()), labels...)
		if p.Reassigning() {
			ch.Add(metrics.partitionAddingReplicas, float64(len(p.AddingReplicas())), labels...)
			ch.Add(metrics.partitionRemovingReplicas, float64(len(p.RemovingReplicas())), labels...)
		}
	}
	if s.ELRKnown && !p.ELRStale() && p.UnderMinISR(t.MinISR) {
		ch.Add(metrics.partitionELR, float64(len(p.ELR())), labels...)
		ch.Add(metrics.partitionLastKnownELR, float64(len(p.LastKnownELR())), labels...)
		ch.Add(metrics.partitionNoCleanLeader, bool01(p.NoCleanLeader()), labels...)
	}
}

// emitBudget emits the failure budget's series, in every partition mode:
// a fixed few per broker and rack, none per partition.
func emitBudget(ch exposition.Sink, cluster string, b *Budget) {
	if b == nil {
		return
	}
	if b.LossesUntilUnderMinISR >= 0 {
		ch.Add(metrics.brokerLossesTolerated, float64(b.LossesUntilUnderMinISR), cluster, effectUnderMinISR)
	}
	if b.LossesUntilOffline >= 0 {
		ch.Add(metrics.brokerLossesTolerated, float64(b.LossesUntilOffline), cluster, effectOffline)
	}
	if b.QuorumLossesTolerated >= 0 {
		ch.Add(metrics.quorumVoterLossesTolerated, float64(b.QuorumLossesTolerated), cluster)
	}
	emitStops := func(safe, affected, unsafe *exposition.Desc, effects []StopEffect) {
		labels := []string{cluster, "", ""}
		for i := range effects {
			e := &effects[i]
			labels[1] = e.ID
			ch.Add(safe, bool01(e.Safe()), labels[:2]...)
			labels[2] = effectOffline
			ch.Add(affected, float64(e.Offline), labels...)
			labels[2] = effectUnderMinISR
			ch.Add(affected, float64(e.UnderMinISR), labels...)
			if b.Headroom > 0 {
				labels[2] = effectBelowHeadroom
				ch.Add(affected, float64(e.BelowHeadroom), labels...)
			}
			for _, r := range StopReasons {
				labels[2] = string(r)
				ch.Add(unsafe, bool01(e.Unsafe(r)), labels...)
			}
		}
	}
	emitStops(metrics.brokerSafeToStop, metrics.brokerStopAffected, metrics.brokerStopUnsafe, b.Brokers)
	emitStops(metrics.rackSafeToStop, metrics.rackStopAffected, metrics.rackStopUnsafe, b.Racks)
}

// emitEpisodes emits a topic's episode histograms (once some episode ended)
// and the age of its oldest open episodes.
func emitEpisodes(ch exposition.Sink, s *Snapshot, topic string, topicLabels []string) {
	if ended := s.Episodes.Ended[topic]; ended != nil {
		for c, h := range ended {
			if h != nil {
				ch.AddHistogram(metrics.episodeSeconds[c], h.Count, h.Sum, h.Cumulative, topicLabels...)
			}
		}
	}
	if oldest := s.Episodes.Oldest[topic]; oldest != nil {
		for c, since := range oldest {
			if !since.IsZero() {
				ch.Add(metrics.openEpisodeSeconds[c], s.ReadAt.Sub(since).Seconds(), topicLabels...)
			}
		}
	}
}

// emitCoordinators emits the coordinator series of each kind read, and
// the groups each broker coordinates.
func emitCoordinators(ch exposition.Sink, cluster string, s *Snapshot, mode settings.PartitionMetrics) {
	c := &s.Coordinators
	emitGroups(ch, cluster, c)
	emitTransactionalIDs(ch, cluster, c)
	for k := range coordinatorKinds {
		kind := k.String()
		if h := c.Ended[k]; h != nil {
			ch.AddHistogram(metrics.coordinatorEpisodeSeconds, h.Count, h.Sum, h.Cumulative, cluster, kind)
		}
		read := c.Reads[k]
		if read == nil {
			continue
		}
		for state := range coordinatorStates {
			ch.Add(metrics.coordinatorPartitions, float64(read.Count(state)), cluster, kind, state.String())
		}
		ch.Add(metrics.coordinatorReadTimestamp, float64(read.ReadAt.UnixMilli())/1000, cluster, kind)
		var oldest time.Time
		for _, o := range c.Open[k] {
			if oldest.IsZero() || o.Since.Before(oldest) {
				oldest = o.Since
			}
		}
		if !oldest.IsZero() {
			ch.Add(metrics.coordinatorOpenEpisode, read.ReadAt.Sub(oldest).Seconds(), cluster, kind)
		}
		perBroker := map[int32]int{}
		for _, p := range read.Partitions {
			perBroker[p.Coordinator]++
		}
		for i := range s.Brokers {
			id := s.Brokers[i].ID
			ch.Add(metrics.brokerCoordinatorPartitions, float64(perBroker[id]), cluster, brokerLabel(id), kind)
		}
		if mode == settings.PartitionMetricsNone {
			continue
		}
		for i, p := range read.Partitions {
			if p.State == CoordinatorAnswering && mode != settings.PartitionMetricsFull {
				continue
			}
			partition := strconv.Itoa(i)
			ch.Add(metrics.coordinatorPartitionState, 1, cluster, kind, partition, p.State.String())
			ch.Add(metrics.coordinatorPartitionBroker, float64(p.Coordinator), cluster, kind, partition)
		}
	}
}

// emitGroups emits the groups each broker coordinates, and the cluster's
// groups by state when every live broker told.
func emitGroups(ch exposition.Sink, cluster string, c *Coordinators) {
	if c.Groups == nil {
		return
	}
	ids := slices.Sorted(maps.Keys(c.Groups))
	byState := map[string]int{}
	statesKnown := c.GroupsComplete
	for _, id := range ids {
		g := c.Groups[id]
		for _, p := range GroupProtocols {
			ch.Add(metrics.brokerCoordinatedGroups, float64(g.ByProtocol[p]), cluster, brokerLabel(id), p)
		}
		if g.ByState == nil {
			statesKnown = false
		}
		for state, n := range g.ByState {
			byState[state] += n
		}
	}
	if statesKnown {
		for _, state := range GroupStates {
			ch.Add(metrics.groupsByState, float64(byState[state]), cluster, state)
		}
	}
}

// emitTransactionalIDs emits the transactional ids each broker
// coordinates, by state.
func emitTransactionalIDs(ch exposition.Sink, cluster string, c *Coordinators) {
	for _, id := range slices.Sorted(maps.Keys(c.Transactions)) {
		for _, state := range TransactionStates {
			ch.Add(metrics.brokerCoordinatedTxIDs, float64(c.Transactions[id].ByState[state]), cluster, brokerLabel(id), state)
		}
	}
}

// emitTransactions emits the transaction read's series.
func emitTransactions(ch exposition.Sink, cluster string, r *TransactionRead, mode settings.PartitionMetrics) {
	if r == nil {
		return
	}
	ch.Add(metrics.transactionsReadTimestamp, float64(r.ReadAt.UnixMilli())/1000, cluster)
	if r.Complete {
		// A count over the partitions that answered would say "none"
		// of those that did not.
		ch.Add(metrics.readCommittedGapPartitions, float64(len(r.Gaps)), cluster)
		ch.Add(metrics.readCommittedStalledPartitions, float64(r.Stalled()), cluster)
	}
	if r.MaxTimeout > 0 {
		ch.Add(metrics.transactionMaxTimeout, r.MaxTimeout.Seconds(), cluster)
	}
	if r.HangingKnown {
		ch.Add(metrics.hangingTransactions, float64(len(r.Hanging)), cluster)
	}
	if mode == settings.PartitionMetricsNone {
		return
	}
	keys := slices.SortedFunc(maps.Keys(r.Gaps), comparePartitionKeys)
	for _, key := range keys {
		g := r.Gaps[key]
		if !g.Stalled(r.ReadAt) {
			continue
		}
		partition := strconv.FormatInt(int64(key.Partition), 10)
		ch.Add(metrics.partitionReadCommittedGap, float64(g.Records), cluster, key.Topic, partition)
		ch.Add(metrics.partitionReadCommittedStalled, r.ReadAt.Sub(g.StalledSince).Seconds(), cluster, key.Topic, partition)
		if g.Open > 0 {
			ch.Add(metrics.partitionOpenTransactionIdle, g.OldestIdle.Seconds(), cluster, key.Topic, partition)
		}
	}
}
