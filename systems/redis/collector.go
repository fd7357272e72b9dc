package redis

import (
	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

const clusterLabel = "redis_cluster"

// fromRefresh is appended to every HELP text of the snapshot series: values
// are read by the background refresh, not at scrape time.
const fromRefresh = " As of the last refresh."

type descs struct {
	health exposition.Health

	stateOK             *exposition.Desc
	slots               *exposition.Desc
	slotsWithoutReplica *exposition.Desc
	masters             *exposition.Desc
	knownNodes          *exposition.Desc
	currentEpoch        *exposition.Desc
	viewsConsistent     *exposition.Desc
	slotsInMigration    *exposition.Desc
	slotsInConflict     *exposition.Desc
	failovers           *exposition.Desc
	slotsOneDomain      *exposition.Desc
	foreignNodes        *exposition.Desc
	foreignNodeInfo     *exposition.Desc

	nodeInfo            *exposition.Desc
	nodeMaster          *exposition.Desc
	nodeSlots           *exposition.Desc
	nodeReplicas        *exposition.Desc
	nodeState           *exposition.Desc
	nodeLinkConnected   *exposition.Desc
	nodeConfigEpoch     *exposition.Desc
	nodeMigrating       *exposition.Desc
	nodeImporting       *exposition.Desc
	nodeUp              *exposition.Desc
	nodeClusterStateOK  *exposition.Desc
	nodeMasterLinkUp    *exposition.Desc
	nodeLag             *exposition.Desc
	nodeKeys            *exposition.Desc
	nodeMemoryUsed      *exposition.Desc
	nodeErrorReplies    *exposition.Desc
	nodePartialResync   *exposition.Desc
	nodeSyncs           *exposition.Desc
	nodeLoading         *exposition.Desc
	nodeLoadedBytes     *exposition.Desc
	nodeLoadTotalBytes  *exposition.Desc
	nodeLoadETA         *exposition.Desc
	nodeSyncInProgress  *exposition.Desc
	nodeSyncReadBytes   *exposition.Desc
	nodeSyncTotalBytes  *exposition.Desc
	nodeBacklogBytes    *exposition.Desc
	nodeBacklogHeld     *exposition.Desc
	nodeReplOffset      *exposition.Desc
	nodeReplicasOutside *exposition.Desc
	nodeRoleChanges     *exposition.Desc

	nodeSafeToStop        *exposition.Desc
	nodeStopUnsafe        *exposition.Desc
	nodeStopUnserved      *exposition.Desc
	nodeFailoverDataLoss  *exposition.Desc
	zoneSafeToStop        *exposition.Desc
	zoneStopUnsafe        *exposition.Desc
	zoneStopUnserved      *exposition.Desc
	masterLossesTolerated *exposition.Desc

	failoverSeconds          *exposition.Desc
	slotsUnservedSeconds     *exposition.Desc
	failoverOpenSeconds      *exposition.Desc
	staleRoutingSeconds      *exposition.Desc
	nodeStaleRoutingSeconds  *exposition.Desc
	nodeStaleRedirections    *exposition.Desc
	slotsUnservedOpenSeconds *exposition.Desc
}

// table holds the refresh health families, served first, and every other
// family, in exposition order; its families' labels start with the
// cluster's, and its histograms are episode histograms.
var table = &exposition.Table{Labels: []string{clusterLabel}, Buckets: episode.Buckets}

// metrics is the collector's metric table: every family it can emit, each
// name a literal.
var metrics = func() descs {
	node := []string{"node_id", "address"}
	return descs{
		health: exposition.Health{
			Up: table.Health.Gauge("redis_cluster_up",
				"1 if the last refresh read the cluster topology from at least one node.", clusterLabel),
			Duration:    table.Health.Gauge("redis_cluster_exporter_refresh_duration_seconds", exposition.HelpRefreshDuration, clusterLabel),
			LastSuccess: table.Health.Gauge("redis_cluster_exporter_last_refresh_success_timestamp_seconds", exposition.HelpLastRefreshSuccess, clusterLabel),
			Refreshes:   table.Health.Counter("redis_cluster_exporter_refreshes_total", exposition.HelpRefreshes, clusterLabel),
			Failures:    table.Health.Counter("redis_cluster_exporter_refresh_failures_total", exposition.HelpRefreshFailures, clusterLabel),
		},

		stateOK: table.Gauge("redis_cluster_state_ok",
			"1 if every reachable member master that serves slots reports cluster_state:ok, 0 if any reports fail (with none reachable, every reachable member decides). An empty master's own state is in redis_cluster_node_cluster_state_ok."+fromRefresh),
		slots: table.Gauge("redis_cluster_slots",
			"Hash slots by the state of the master owning them in the cluster's view (unassigned: no owner); the states sum to 16384."+fromRefresh, "state"),
		slotsWithoutReplica: table.Gauge("redis_cluster_slots_without_replica",
			"Hash slots whose master has no healthy replica."+fromRefresh),
		masters: table.Gauge("redis_cluster_masters",
			"Masters that own at least one hash slot."+fromRefresh),
		knownNodes: table.Gauge("redis_cluster_known_nodes",
			"Member nodes: listed by the majority of slot-serving masters (foreign nodes are counted apart)."+fromRefresh),
		currentEpoch: table.Gauge("redis_cluster_current_epoch",
			"Highest cluster current epoch reported by a reachable node."+fromRefresh),
		viewsConsistent: table.Gauge("redis_cluster_views_consistent",
			"0 if the members have disagreed on a slot's owner or on a node's failure for over 15 s, outside any slot migration; 1 otherwise."+fromRefresh),
		slotsInMigration: table.Gauge("redis_cluster_slots_in_migration",
			"Hash slots some member has in migrating or importing state (a reshard in progress), or in an atomic slot migration job it reports running (Valkey 9.0+, Redis 8.4+)."+fromRefresh),
		slotsInConflict: table.Gauge("redis_cluster_slots_in_conflict",
			"Hash slots whose owner the members have disputed for over 15 s, outside any slot migration."+fromRefresh),
		failovers: table.Counter("redis_cluster_failovers_total",
			"Times a shard's master changed to a node that was its replica, observed by this exporter."+fromRefresh),
		slotsOneDomain: table.Gauge("redis_cluster_slots_in_one_failure_domain",
			"Hash slots whose master has healthy replicas, all in the master's failure domain: its host (IP), or its availability zone where every copy reports one (Valkey 8.1+)."+fromRefresh, "domain"),
		foreignNodes: table.Gauge("redis_cluster_foreign_nodes",
			"Nodes that answered but are not members: not listed by the majority of slot-serving masters, or not listing them."+fromRefresh),
		foreignNodeInfo: table.Gauge("redis_cluster_foreign_node_info",
			"Always 1 for a foreign node; reason is not_listed or not_listing_cluster, role what the node claims."+fromRefresh,
			"node_id", "address", "role", "reason"),

		nodeInfo: table.Gauge("redis_cluster_node_info",
			"Always 1; role is master or replica, master_id the id of a replica's master."+fromRefresh, "node_id", "address", "role", "master_id"),
		nodeMaster: table.Gauge("redis_cluster_node_master",
			"1 if the node is a master, 0 if a replica."+fromRefresh, node...),
		nodeSlots: table.Gauge("redis_cluster_node_slots",
			"Hash slots the node owns."+fromRefresh, node...),
		nodeReplicas: table.Gauge("redis_cluster_node_replicas",
			"For a master, its healthy replicas (state ok, link to the master up)."+fromRefresh, node...),
		nodeState: table.Gauge("redis_cluster_node_state",
			"1 for the node's state in the cluster's view, 0 for the other states."+fromRefresh, "node_id", "address", "state"),
		nodeLinkConnected: table.Gauge("redis_cluster_node_link_connected",
			"1 if the cluster bus link to the node is connected, as another node sees it."+fromRefresh, node...),
		nodeConfigEpoch: table.Gauge("redis_cluster_node_config_epoch",
			"The node's config epoch."+fromRefresh, node...),
		nodeMigrating: table.Gauge("redis_cluster_node_migrating_slots",
			"Slots the node is migrating to another node."+fromRefresh, node...),
		nodeImporting: table.Gauge("redis_cluster_node_importing_slots",
			"Slots the node is importing from another node."+fromRefresh, node...),
		nodeUp: table.Gauge("redis_cluster_node_up",
			"1 if the exporter read the node itself."+fromRefresh, node...),
		nodeClusterStateOK: table.Gauge("redis_cluster_node_cluster_state_ok",
			"1 if the node itself reports cluster_state:ok, 0 if fail; for reachable members. Only masters that serve slots decide redis_cluster_state_ok."+fromRefresh, node...),
		nodeMasterLinkUp: table.Gauge("redis_cluster_node_master_link_up",
			"For a replica, 1 if its replication link to its master is up."+fromRefresh, node...),
		nodeLag: table.Gauge("redis_cluster_node_replication_lag_bytes",
			"For a replica, its master's replication offset minus the offset the replica acknowledged."+fromRefresh, node...),
		nodeKeys: table.Gauge("redis_cluster_node_keys",
			"Keys stored on the node (DBSIZE)."+fromRefresh, node...),
		nodeMemoryUsed: table.Gauge("redis_cluster_node_memory_used_bytes",
			"Memory the node uses (used_memory)."+fromRefresh, node...),
		nodeErrorReplies: table.Counter("redis_cluster_node_error_replies_total",
			"Error replies the node sent since its start or CONFIG RESETSTAT, by kind: MOVED and ASK (a client sent a key to a node that does not serve its slot: its view of the cluster is stale, "+
				"or a migration runs), TRYAGAIN, CLUSTERDOWN, READONLY (a write sent to a replica, as to a demoted master); from INFO errorstats (Redis 6.2+, Valkey), absent where the server does not report them."+fromRefresh,
			"node_id", "address", "error"),
		nodePartialResync: table.Gauge("redis_cluster_node_partial_resync_possible",
			"For a replica whose master was read: 1 if, should its link break now, it could resume from the master's replication backlog (the offset the master last saw it acknowledge is still in it), 0 if it would need a full sync of the whole data set, "+
				"during which its shard has no usable replica. From the master's INFO replication (repl_backlog_*)."+fromRefresh, node...),
		nodeSyncs: table.Counter("redis_cluster_node_syncs_total",
			"Syncs the node served its replicas as a master since its start or CONFIG RESETSTAT, by result (sent for masters, and replicas that served any): full (a full sync of the whole data set), partial_ok (a reconnect resumed from its backlog), "+
				"partial_err (a PSYNC it refused, which became a full sync). Full syncs repeating while a replica's link never comes up are a resync loop. From INFO stats (sync_full, sync_partial_ok, sync_partial_err)."+fromRefresh,
			"node_id", "address", "result"),
		nodeLoading: table.Gauge("redis_cluster_node_loading",
			"1 for a node that answered the exporter LOADING, absent for the others: it is loading its data set (after a restart, or the RDB of a full sync) and serves nothing until it has; redis_cluster_node_up is 0 meanwhile, and a loading replica protects nothing."+fromRefresh, node...),
		nodeLoadedBytes: table.Gauge("redis_cluster_node_loading_loaded_bytes",
			"For a node that answered LOADING: the bytes of its RDB it has loaded (INFO persistence loading_loaded_bytes); absent for the others, and when it did not say."+fromRefresh, node...),
		nodeLoadTotalBytes: table.Gauge("redis_cluster_node_loading_total_bytes",
			"For a node that answered LOADING: the size of the RDB it loads (loading_total_bytes); absent as redis_cluster_node_loading_loaded_bytes is."+fromRefresh, node...),
		nodeLoadETA: table.Gauge("redis_cluster_node_loading_eta_seconds",
			"For a node that answered LOADING: the server's own estimate of the seconds its load has left (loading_eta_seconds: the time so far scaled by the bytes left); absent as redis_cluster_node_loading_loaded_bytes is."+fromRefresh, node...),
		nodeSyncInProgress: table.Gauge("redis_cluster_node_sync_in_progress",
			"For a replica the exporter read: 1 while a full sync from its master is in progress (master_sync_in_progress: from the start of the RDB's transfer until it is loaded); its link is down and its shard has no usable copy in it meanwhile."+fromRefresh, node...),
		nodeSyncReadBytes: table.Gauge("redis_cluster_node_sync_read_bytes",
			"For a replica in a full sync: the bytes of its master's RDB it has read (master_sync_read_bytes); absent outside a sync."+fromRefresh, node...),
		nodeSyncTotalBytes: table.Gauge("redis_cluster_node_sync_total_bytes",
			"For a replica in a full sync: the size of the RDB its master sends (master_sync_total_bytes); absent when the master did not announce one (a diskless sync streams it)."+fromRefresh, node...),
		nodeBacklogBytes: table.Gauge("redis_cluster_node_repl_backlog_bytes",
			"For a master: the size of its replication backlog (repl-backlog-size); 0 while it has none (no replica since its start)."+fromRefresh, node...),
		nodeBacklogHeld: table.Gauge("redis_cluster_node_repl_backlog_history_bytes",
			"For a master: the replication stream its backlog holds (repl_backlog_histlen): how far behind a replica may fall and still resume without a full sync."+fromRefresh, node...),
		nodeReplOffset: table.Gauge("redis_cluster_node_replication_offset_bytes",
			"For a master: its replication offset (master_repl_offset), the bytes of replication stream it has produced; its rate is the write rate its backlog must cover, and repl_backlog_bytes over that rate the seconds of writes a replica may miss and still resume. A restart without data or a full sync from another master can set it back."+fromRefresh, node...),
		nodeReplicasOutside: table.Gauge("redis_cluster_node_replicas_outside_failure_domain",
			"For a master with healthy replicas, how many are on another host (domain=host) or in another availability zone (domain=zone, when every copy reports one)."+fromRefresh,
			"node_id", "address", "domain"),
		nodeRoleChanges: table.Counter("redis_cluster_node_role_changes_total",
			"Role changes of the node observed by this exporter."+fromRefresh, node...),

		// The failure budget (budget.go): what stopping a node or a zone now
		// would do.
		nodeSafeToStop: table.Gauge("redis_cluster_node_safe_to_stop",
			"1 if stopping the node now is safe: it serves no slot (a replica, or an empty master), is neither end of a slot migration in progress nor the last read replica of a master the exporter could not read, the cluster is not degraded, and, with healthy_replica_headroom, it is not its master's last healthy replica the exporter read; 0 otherwise (redis_cluster_node_stop_unsafe says why)."+fromRefresh, node...),
		nodeStopUnsafe: table.Gauge("redis_cluster_node_stop_unsafe",
			"1 if the reason makes stopping the node unsafe, 0 if not, for every reason: serves_slots (a master that serves slots: fail over first), no_healthy_replica (its slots would be unserved for good), "+
				"masters_majority (too few slot-serving masters would be left to authorise a failover), last_healthy_replica (its master's last healthy replica, with healthy_replica_headroom), "+
				"master_not_read (the last read replica of a master the exporter could not read this refresh: not judged), slot_migration (the source or target of a slot migration in progress: keys already moved would be lost or stranded), cluster_degraded (the cluster already is), "+
				"shard_syncing (a replica of its shard is in a full sync), full_sync_on_return (a replica that could not resume from its master's backlog when back); the last two unless allow_resync_stops. "+
				"Only replicas the exporter read this refresh count as healthy."+fromRefresh,
			"node_id", "address", "reason"),
		nodeStopUnserved: table.Gauge("redis_cluster_node_stop_unserved_slots",
			"Hash slots that stopping the node now would leave unserved: until=failover until a replica is promoted (about cluster-node-timeout), until=never for good (no healthy replica, or no majority to authorise the failover)."+fromRefresh,
			"node_id", "address", "until"),
		nodeFailoverDataLoss: table.Gauge("redis_cluster_node_failover_data_loss_bytes",
			"For a master with a healthy replica whose lag is known, what a failover now would lose: the master's replication offset minus the best healthy replica's."+fromRefresh, node...),
		zoneSafeToStop: table.Gauge("redis_cluster_zone_safe_to_stop",
			"1 if losing every node of the zone (availability_zone, or failure_budget.zones) now would be safe, by the node rules; present only where zones are known."+fromRefresh, "zone"),
		zoneStopUnsafe: table.Gauge("redis_cluster_zone_stop_unsafe",
			"1 if the reason makes losing the zone unsafe, 0 if not, for every reason of redis_cluster_node_stop_unsafe."+fromRefresh, "zone", "reason"),
		zoneStopUnserved: table.Gauge("redis_cluster_zone_stop_unserved_slots",
			"Hash slots the zone's loss now would leave unserved: until=failover until replicas in other zones are promoted, until=never for good."+fromRefresh, "zone", "until"),
		masterLossesTolerated: table.Gauge("redis_cluster_master_losses_tolerated",
			"How many more slot-serving masters could fail with a majority of them still able to authorise a failover: the masters serving slots and not failing, minus the majority of all masters serving slots; negative when failovers already cannot be authorised."+fromRefresh),

		failoverSeconds: table.Histogram("redis_cluster_failover_seconds",
			"How long failovers took, from the exporter's first failed query of a master owning slots, once the cluster flagged it PFAIL or FAIL (else the first refresh that saw the flag), to the first refresh that saw one of its replicas promoted, "+
				"not failing and owning slots; one observation per failover. A failover flagged and promoted between two refreshes counts from the exporter's first failed query of the master too, or, with none before the earlier refresh, as the time between the two (an upper bound). "+
				"A master that recovers before a replica takes over is not a failover. Failovers already under way when the exporter started are not observed."),
		slotsUnservedSeconds: table.Histogram("redis_cluster_slots_unserved_episode_seconds",
			"How long some hash slots were unserved (owner flagged PFAIL or FAIL, or no owner), from the exporter's first failed query of the flagged owner (else the first refresh that saw it) to the first refresh that did not. "+
				"Episodes already under way when the exporter started are not observed."),
		staleRoutingSeconds: table.Histogram("redis_cluster_stale_routing_seconds",
			"How long after a failover clients were still routed to the demoted master: from the refresh that saw it lose its slots (or rejoin as a replica) to the last refresh that saw its MOVED or READONLY replies grow, "+
				"one observation per demoted master whose replies grew, once it has taken none for a minute while the exporter read it (INFO errorstats, Redis 6.2+ and Valkey)."),
		nodeStaleRoutingSeconds: table.Gauge("redis_cluster_node_stale_routing_seconds",
			"For a demoted master that clients are still routed to: how long after its demotion the exporter last saw its MOVED or READONLY replies grow; absent once it has taken none for a minute, and for every other node. "+
				"Rising means clients still have the old topology (RedisClientsOnStaleTopology)."+fromRefresh, "node_id", "address"),
		nodeStaleRedirections: table.Gauge("redis_cluster_node_stale_redirections",
			"For the same demoted masters: the MOVED and READONLY replies they sent since their demotion, as far as the exporter read them."+fromRefresh, "node_id", "address"),
		failoverOpenSeconds: table.Gauge("redis_cluster_failover_open_episode_seconds",
			"Age of the oldest failover under way (a master owning slots flagged PFAIL or FAIL, no replica promoted yet); absent while none is. "+
				"Counted from the exporter's first failed query of the master, as the histogram is; for one already under way when the exporter started, from its first refresh."+fromRefresh),
		slotsUnservedOpenSeconds: table.Gauge("redis_cluster_slots_unserved_open_episode_seconds",
			"Age of the ongoing episode of unserved hash slots; absent while every slot is served. "+
				"Counted from the exporter's first failed query of the flagged owner, as the histogram is; for one already under way when the exporter started, from its first refresh."+fromRefresh),
	}
}()

// Sets returns the collector's metric tables, in exposition order, for
// documentation and contract tests.
func Sets() []*exposition.Set { return table.Sets() }

// Collector serves the latest snapshot of every watched Redis Cluster. It
// never talks to a cluster.
type Collector = exposition.Collector[Snapshot]

// NewCollector returns a collector with no clusters.
func NewCollector() *Collector { return exposition.NewCollector(emitState, table.Sets()...) }

// emitState emits one cluster's health series to health and, when its last
// refresh succeeded, its snapshot series to snapshotSink.
func emitState(health, snapshotSink exposition.Sink, name string, state *watch.State[Snapshot]) {
	exposition.EmitHealth(metrics.health, health, name, state)
	// A snapshot from before a failed refresh is not served as current.
	if !state.Up || state.Snapshot == nil {
		return
	}
	emitSnapshot(snapshotSink, name, state.Snapshot)
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func emitSnapshot(ch exposition.Sink, cluster string, s *Snapshot) {
	emitCluster(ch, cluster, s)
	emitEpisodes(ch, cluster, s)
	emitSlotStats(ch, cluster, s)
	emitMigrations(ch, cluster, s)
	emitBudget(ch, cluster, s)
	emitNodes(ch, cluster, s)
}

// emitCluster emits the cluster-wide series: state, slot counts, epochs,
// failure domains and foreign nodes.
func emitCluster(ch exposition.Sink, cluster string, s *Snapshot) {
	slotLabels := []string{cluster, ""}
	ch.Add(metrics.stateOK, bool01(s.StateOK), cluster)
	for _, slots := range []struct {
		state string
		count int
	}{{"ok", s.SlotsOK}, {"pfail", s.SlotsPFail}, {"fail", s.SlotsFail}, {"unassigned", s.SlotsUnassigned}} {
		slotLabels[1] = slots.state
		ch.Add(metrics.slots, float64(slots.count), slotLabels...)
	}
	ch.Add(metrics.slotsWithoutReplica, float64(s.SlotsWithoutReplica), cluster)
	ch.Add(metrics.masters, float64(s.Masters), cluster)
	ch.Add(metrics.knownNodes, float64(s.KnownNodes), cluster)
	ch.Add(metrics.currentEpoch, float64(s.CurrentEpoch), cluster)
	ch.Add(metrics.viewsConsistent, bool01(s.ViewsConsistent), cluster)
	ch.Add(metrics.slotsInMigration, float64(s.SlotsInMigration), cluster)
	ch.Add(metrics.slotsInConflict, float64(s.SlotsInConflict), cluster)
	ch.Add(metrics.failovers, float64(s.Failovers), cluster)
	ch.Add(metrics.slotsOneDomain, float64(s.SlotsOneHost), cluster, "host")
	if s.ZonesKnown {
		ch.Add(metrics.slotsOneDomain, float64(s.SlotsOneZone), cluster, "zone")
	}
	ch.Add(metrics.foreignNodes, float64(len(s.Foreign)), cluster)
	for _, f := range s.Foreign {
		ch.Add(metrics.foreignNodeInfo, 1, cluster, f.ID, f.Addr, string(f.Role), string(f.Reason))
	}
}

// emitNodes emits every node's series.
func emitNodes(ch exposition.Sink, cluster string, s *Snapshot) {
	// Label values are filled into slices reused for every series, as in
	// the Kafka collector: a fresh variadic slice per series would be an
	// allocation per series. Sinks copy what they keep.
	nodeLabels := []string{cluster, "", ""}
	errorLabels := []string{cluster, "", "", ""}
	stateLabels := []string{cluster, "", "", ""}
	infoLabels := []string{cluster, "", "", "", ""}
	domainLabels := []string{cluster, "", "", ""}

	for i := range s.Nodes {
		n := &s.Nodes[i]
		nodeLabels[1], nodeLabels[2] = n.ID, n.Addr
		infoLabels[1], infoLabels[2], infoLabels[3], infoLabels[4] = n.ID, n.Addr, string(n.Role), n.MasterID
		ch.Add(metrics.nodeInfo, 1, infoLabels...)
		ch.Add(metrics.nodeMaster, bool01(n.Role == RoleMaster), nodeLabels...)
		ch.Add(metrics.nodeSlots, float64(n.Slots), nodeLabels...)
		if n.Role == RoleMaster {
			ch.Add(metrics.nodeReplicas, float64(n.HealthyReplicas), nodeLabels...)
			domainLabels[1], domainLabels[2] = n.ID, n.Addr
			if n.HealthyReplicas > 0 {
				domainLabels[3] = "host"
				ch.Add(metrics.nodeReplicasOutside, float64(n.ReplicasOtherHost), domainLabels...)
			}
			if n.HasZoneSpread {
				domainLabels[3] = "zone"
				ch.Add(metrics.nodeReplicasOutside, float64(n.ReplicasOtherZone), domainLabels...)
			}
		}
		stateLabels[1], stateLabels[2] = n.ID, n.Addr
		for _, state := range nodeStates {
			stateLabels[3] = string(state)
			ch.Add(metrics.nodeState, bool01(n.State == state), stateLabels...)
		}
		ch.Add(metrics.nodeLinkConnected, bool01(n.LinkConnected), nodeLabels...)
		ch.Add(metrics.nodeConfigEpoch, float64(n.ConfigEpoch), nodeLabels...)
		ch.Add(metrics.nodeUp, bool01(n.Reachable), nodeLabels...)
		ch.Add(metrics.nodeRoleChanges, float64(n.RoleChanges), nodeLabels...)
		if n.HasReplicationLag {
			ch.Add(metrics.nodeLag, float64(n.ReplicationLagBytes), nodeLabels...)
		}
		if n.HasPartialResync {
			ch.Add(metrics.nodePartialResync, bool01(n.PartialResync), nodeLabels...)
		}
		if n.HasBacklog {
			ch.Add(metrics.nodeBacklogBytes, float64(n.BacklogBytes), nodeLabels...)
			ch.Add(metrics.nodeBacklogHeld, float64(n.BacklogHeld), nodeLabels...)
			ch.Add(metrics.nodeReplOffset, float64(n.ReplOffset), nodeLabels...)
		}
		if n.Loading {
			ch.Add(metrics.nodeLoading, 1, nodeLabels...)
			if l := n.Load; l.Read {
				ch.Add(metrics.nodeLoadedBytes, float64(l.LoadedBytes), nodeLabels...)
				ch.Add(metrics.nodeLoadTotalBytes, float64(l.TotalBytes), nodeLabels...)
				ch.Add(metrics.nodeLoadETA, float64(l.ETASeconds), nodeLabels...)
			}
			if n.Role == RoleReplica {
				emitSync(ch, n.Sync, nodeLabels)
			}
		}
		if !n.Reachable {
			continue // the rest comes from the node itself
		}
		ch.Add(metrics.nodeClusterStateOK, bool01(n.ClusterStateOK), nodeLabels...)
		ch.Add(metrics.nodeMigrating, float64(len(n.Migrating)), nodeLabels...)
		ch.Add(metrics.nodeImporting, float64(len(n.Importing)), nodeLabels...)
		if n.Role == RoleReplica {
			ch.Add(metrics.nodeMasterLinkUp, bool01(n.MasterLinkUp), nodeLabels...)
			emitSync(ch, n.Sync, nodeLabels)
		}
		ch.Add(metrics.nodeKeys, float64(n.Keys), nodeLabels...)
		ch.Add(metrics.nodeMemoryUsed, float64(n.MemoryUsed), nodeLabels...)
		emitNodeCounters(ch, n, errorLabels)
	}
}

// emitNodeCounters emits a reached node's counters read from its INFO: the
// syncs it served and its redirect error replies. labels has room for the
// cluster, the node's id and address, and the result or error kind.
func emitNodeCounters(ch exposition.Sink, n *Node, labels []string) {
	labels[1], labels[2] = n.ID, n.Addr
	// A replica serves no sync (unless replicas chain to it): its zeros are
	// left out, a hundred series on a 100-node cluster.
	if s := n.Syncs; s != nil && (n.Role == RoleMaster || *s != SyncCounts{}) {
		for _, r := range []struct {
			result string
			count  uint64
		}{{"full", s.Full}, {"partial_ok", s.PartialOK}, {"partial_err", s.PartialErr}} {
			labels[3] = r.result
			ch.Add(metrics.nodeSyncs, float64(r.count), labels...)
		}
	}
	if n.ErrorReplies != nil {
		for _, kind := range RedirectErrors {
			labels[3] = kind
			ch.Add(metrics.nodeErrorReplies, float64(n.ErrorReplies[kind]), labels...)
		}
	}
}

// emitSync emits a read replica's sync in progress and, during the
// transfer, its progress.
func emitSync(ch exposition.Sink, s replicaSync, nodeLabels []string) {
	ch.Add(metrics.nodeSyncInProgress, bool01(s.InProgress), nodeLabels...)
	if !s.InProgress {
		return
	}
	ch.Add(metrics.nodeSyncReadBytes, float64(s.ReadBytes), nodeLabels...)
	if s.TotalBytes > 0 {
		ch.Add(metrics.nodeSyncTotalBytes, float64(s.TotalBytes), nodeLabels...)
	}
}

// emitEpisodes emits the failover and unserved-slot histograms (once one
// ended) and the age of the open episodes.
func emitEpisodes(ch exposition.Sink, cluster string, s *Snapshot) {
	e := &s.Episodes
	if h := e.FailoverSeconds; h != nil {
		ch.AddHistogram(metrics.failoverSeconds, h.Count, h.Sum, h.Cumulative, cluster)
	}
	if h := e.SlotsUnservedSeconds; h != nil {
		ch.AddHistogram(metrics.slotsUnservedSeconds, h.Count, h.Sum, h.Cumulative, cluster)
	}
	if oldest, ok := e.OldestFailover(); ok {
		ch.Add(metrics.failoverOpenSeconds, oldest.Age(s.ReadAt).Seconds(), cluster)
	}
	if e.SlotsUnserved != nil {
		ch.Add(metrics.slotsUnservedOpenSeconds, e.SlotsUnserved.Age(s.ReadAt).Seconds(), cluster)
	}
	emitStaleRouting(ch, cluster, s)
}

// emitStaleRouting emits the stale-routing histogram and, per demoted
// master clients are still routed to, how long and how often.
func emitStaleRouting(ch exposition.Sink, cluster string, s *Snapshot) {
	if h := s.StaleRoutingSeconds; h != nil {
		ch.AddHistogram(metrics.staleRoutingSeconds, h.Count, h.Sum, h.Cumulative, cluster)
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if w := s.StaleRouting[n.ID]; w != nil && w.Open() {
			ch.Add(metrics.nodeStaleRoutingSeconds, w.Stale().Seconds(), cluster, n.ID, n.Addr)
			ch.Add(metrics.nodeStaleRedirections, float64(w.Redirections), cluster, n.ID, n.Addr)
		}
	}
}
