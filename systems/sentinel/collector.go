package sentinel

import (
	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

const clusterLabel = "sentinel_cluster"

// fromRefresh ends every HELP text of the snapshot series: values are read
// by the background refresh, not at scrape time.
const fromRefresh = " As of the last refresh."

// table holds the refresh health families, served first, and every other
// family, in exposition order.
var table = &exposition.Table{Labels: []string{clusterLabel}, Buckets: episode.Buckets}

// Label sets of the families.
var (
	masterLabel   = []string{"master"}
	sentinelLabel = []string{"sentinel"}
	nodeLabels    = []string{"master", "address"}
)

// metrics is the collector's metric table: every family it can emit, each
// name a literal.
var metrics = struct {
	health                                                                   exposition.Health
	sentinelUp                                                               *exposition.Desc
	reportedAddr, disagree, quorum, sentinels, sentinelsRead, ckquorum, flag *exposition.Desc
	masterUp, promotable, candidate, candidateLoss, failovers, tolerated     *exposition.Desc
	failoverSeconds, failoverOpen                                            *exposition.Desc
	nodeUp, nodeRole, linkUp, linkDown, lag, priority, nodePromotable        *exposition.Desc
	nodeSafe, nodeUnsafe, sentinelSafe, sentinelUnsafe, zoneSafe, zoneUnsafe *exposition.Desc
}{
	health: exposition.Health{
		Up: table.Health.Gauge("redis_sentinel_up",
			"1 if the last refresh read at least one sentinel.", clusterLabel),
		Duration:    table.Health.Gauge("redis_sentinel_exporter_refresh_duration_seconds", exposition.HelpRefreshDuration, clusterLabel),
		LastSuccess: table.Health.Gauge("redis_sentinel_exporter_last_refresh_success_timestamp_seconds", exposition.HelpLastRefreshSuccess, clusterLabel),
		Refreshes:   table.Health.Counter("redis_sentinel_exporter_refreshes_total", exposition.HelpRefreshes, clusterLabel),
		Failures:    table.Health.Counter("redis_sentinel_exporter_refresh_failures_total", exposition.HelpRefreshFailures, clusterLabel),
	},
	sentinelUp: table.Gauge("redis_sentinel_sentinel_up",
		"1 if the exporter read the sentinel this refresh: the seeds, and every sentinel a sentinel read lists."+fromRefresh, sentinelLabel...),

	reportedAddr: table.Gauge("redis_sentinel_master_reported_address",
		"Always 1: the master's address as the sentinel reports it (SENTINEL GET-MASTER-ADDR-BY-NAME), one series per sentinel read."+fromRefresh, "master", "sentinel", "address"),
	disagree: table.Gauge("redis_sentinel_master_sentinels_disagree",
		"1 while the sentinels read report more than one address for the master (split brain, or a failover some have not heard of yet), 0 otherwise."+fromRefresh, masterLabel...),
	quorum: table.Gauge("redis_sentinel_master_quorum",
		"The master's quorum: how many sentinels must agree it is down (the highest a sentinel read reports)."+fromRefresh, masterLabel...),
	sentinels: table.Gauge("redis_sentinel_master_sentinels",
		"Sentinels known to monitor the master: read by the exporter, or listed by one it read (SENTINEL SENTINELS)."+fromRefresh, masterLabel...),
	sentinelsRead: table.Gauge("redis_sentinel_master_sentinels_reachable",
		"Of the sentinels known to monitor the master, those the exporter read this refresh."+fromRefresh, masterLabel...),
	ckquorum: table.Gauge("redis_sentinel_master_ckquorum_ok",
		"1 if the sentinel's SENTINEL CKQUORUM says it can reach the quorum and the majority a failover needs, 0 if it says it cannot."+fromRefresh, "master", "sentinel"),
	flag: table.Gauge("redis_sentinel_master_flag",
		"1 if the sentinel flags the master with flag (s_down: it sees it down; o_down: the quorum agrees; failover_in_progress), 0 if not."+fromRefresh, "master", "sentinel", "flag"),
	masterUp: table.Gauge("redis_sentinel_master_up",
		"1 if the exporter read the node at the master's address and it says it is a master (INFO replication), 0 otherwise."+fromRefresh, masterLabel...),
	promotable: table.Gauge("redis_sentinel_master_promotable_replicas",
		"Replicas of the master the sentinels could promote now (redis_sentinel_replica_promotable)."+fromRefresh, masterLabel...),
	candidate: table.Gauge("redis_sentinel_master_promotion_candidate",
		"Always 1: the replica the sentinels would promote now, by Sentinel's order (lowest replica-priority, then highest replication offset, then run id); absent when none could be."+fromRefresh, "master", "address"),
	candidateLoss: table.Gauge("redis_sentinel_master_promotion_loss_bytes",
		"What a failover now would lose: the master's replication offset minus the promotion candidate's; absent when either was not read."+fromRefresh, masterLabel...),
	failovers: table.Counter("redis_sentinel_master_failovers_total",
		"Times the sentinels' master address changed, observed by this exporter."+fromRefresh, masterLabel...),
	tolerated: table.Gauge("redis_sentinel_master_sentinel_losses_tolerated",
		"How many more sentinels could be lost with the rest able to agree the master is down (quorum) and to elect a failover's leader (a majority of the known ones); sentinels the exporter could not read count as lost; negative when a failover already could not happen."+fromRefresh, masterLabel...),
	failoverSeconds: table.Histogram("redis_sentinel_failover_seconds",
		"How long failovers took, as clients lived them: from the exporter's first failed read of the master, once a sentinel flagged it down (else the first refresh that saw the flag), to the first refresh that read the master the sentinels name, a promoted replica, as a master with no sentinel flagging it. "+
			"A master that recovers without a replica taking over is not a failover. Failovers already under way when the exporter started are not observed.", masterLabel...),
	failoverOpen: table.Gauge("redis_sentinel_failover_open_episode_seconds",
		"Age of the master's outage under way (flagged down or failing over by a sentinel, or a replica at its address); absent while none is. Counted as redis_sentinel_failover_seconds is."+fromRefresh, masterLabel...),

	nodeUp: table.Gauge("redis_sentinel_node_up",
		"1 if the exporter read the data node itself this refresh."+fromRefresh, nodeLabels...),
	nodeRole: table.Gauge("redis_sentinel_node_role",
		"Always 1: the role the data node itself reports (INFO replication), master or replica; absent when it was not read."+fromRefresh, "master", "address", "role"),
	linkUp: table.Gauge("redis_sentinel_replica_link_up",
		"For a replica, 1 if its replication link to its master is up (master_link_status)."+fromRefresh, nodeLabels...),
	linkDown: table.Gauge("redis_sentinel_replica_link_down_seconds",
		"For a replica whose link is down, how long it has been (master_link_down_since_seconds)."+fromRefresh, nodeLabels...),
	lag: table.Gauge("redis_sentinel_replica_lag_bytes",
		"For a replica of the master the sentinels name, the master's replication offset minus the offset the replica acknowledged; absent when the master was not read."+fromRefresh, nodeLabels...),
	priority: table.Gauge("redis_sentinel_replica_priority",
		"For a replica, its replica-priority: lower is promoted first, 0 never."+fromRefresh, nodeLabels...),
	nodePromotable: table.Gauge("redis_sentinel_replica_promotable",
		"For a replica, 1 if the sentinels could promote it now: read by the exporter, replicating the master they name, priority above 0, flagged down or disconnected by no sentinel read, link not down for over ten down-after periods."+fromRefresh, nodeLabels...),

	nodeSafe: table.Gauge("redis_sentinel_node_safe_to_stop",
		"1 if stopping the data node now is safe: a replica that was read, whose master was read, while the sentinels agree and no failover is under way (and, with healthy_replica_headroom, not the last promotable caught-up replica); 0 otherwise (redis_sentinel_node_stop_unsafe says why)."+fromRefresh, nodeLabels...),
	nodeUnsafe: table.Gauge("redis_sentinel_node_stop_unsafe",
		"1 if the reason makes stopping the data node unsafe, 0 if not, for every reason: master (fail over first), last_promotable_replica (with healthy_replica_headroom), not_read (it or its master was not read: cannot know), sentinels_disagree, failover_in_progress."+fromRefresh, "master", "address", "reason"),
	sentinelSafe: table.Gauge("redis_sentinel_sentinel_safe_to_stop",
		"1 if stopping the sentinel now is safe: for every watched master it monitors, the sentinels left (those the exporter read) still reach the quorum and a majority of the known ones, they agree, and no failover is under way; 0 otherwise."+fromRefresh, sentinelLabel...),
	sentinelUnsafe: table.Gauge("redis_sentinel_sentinel_stop_unsafe",
		"1 if the reason makes stopping the sentinel unsafe, 0 if not, for every reason: quorum, majority, sentinels_disagree, failover_in_progress."+fromRefresh, "sentinel", "reason"),
	zoneSafe: table.Gauge("redis_sentinel_zone_safe_to_stop",
		"1 if losing every sentinel and data node of the zone (failure_budget.zones) now would be safe, by the node and sentinel rules; present only where zones are configured."+fromRefresh, "zone"),
	zoneUnsafe: table.Gauge("redis_sentinel_zone_stop_unsafe",
		"1 if the reason makes losing the zone unsafe, 0 if not, for every reason of the node and sentinel series."+fromRefresh, "zone", "reason"),
}

// Sets returns the collector's metric tables, in exposition order, for
// documentation and contract tests.
func Sets() []*exposition.Set { return table.Sets() }

// NewCollector returns a collector with no clusters.
func NewCollector() *exposition.Collector[Snapshot] {
	return exposition.NewCollector(emitState, table.Sets()...)
}

// emitState emits one deployment's health series and, when its last
// refresh succeeded, its snapshot's.
func emitState(health, sink exposition.Sink, name string, state *watch.State[Snapshot]) {
	exposition.EmitHealth(metrics.health, health, name, state)
	if !state.Up || state.Snapshot == nil {
		return
	}
	s := state.Snapshot
	for _, st := range s.Sentinels {
		sink.Add(metrics.sentinelUp, bool01(st.Read), name, st.Addr)
	}
	for i := range s.Masters {
		emitMaster(sink, name, s, &s.Masters[i])
	}
	emitBudget(sink, name, s.Budget)
}

// emitMaster emits one master's series and its nodes'.
func emitMaster(sink exposition.Sink, cluster string, s *Snapshot, m *Master) {
	for _, r := range m.Reports {
		sink.Add(metrics.reportedAddr, 1, cluster, m.Name, r.Sentinel, r.Addr)
		sink.Add(metrics.ckquorum, bool01(r.CKQuorum), cluster, m.Name, r.Sentinel)
		sink.Add(metrics.flag, bool01(r.SDown), cluster, m.Name, r.Sentinel, "s_down")
		sink.Add(metrics.flag, bool01(r.ODown), cluster, m.Name, r.Sentinel, "o_down")
		sink.Add(metrics.flag, bool01(r.Failover), cluster, m.Name, r.Sentinel, "failover_in_progress")
	}
	sink.Add(metrics.disagree, bool01(m.Disagree), cluster, m.Name)
	sink.Add(metrics.quorum, float64(m.Quorum), cluster, m.Name)
	sink.Add(metrics.sentinels, float64(len(m.KnownSentinels)), cluster, m.Name)
	sink.Add(metrics.sentinelsRead, float64(len(m.ReadSentinels)), cluster, m.Name)
	sink.Add(metrics.masterUp, bool01(m.Up), cluster, m.Name)
	promotable := 0
	for i := range m.Nodes {
		if m.Nodes[i].Promotable {
			promotable++
		}
		emitNode(sink, cluster, m, &m.Nodes[i])
	}
	sink.Add(metrics.promotable, float64(promotable), cluster, m.Name)
	if m.Candidate != "" {
		sink.Add(metrics.candidate, 1, cluster, m.Name, m.Candidate)
	}
	if m.CandidateLoss >= 0 {
		sink.Add(metrics.candidateLoss, float64(m.CandidateLoss), cluster, m.Name)
	}
	e := &s.Episodes
	sink.Add(metrics.failovers, float64(e.Failovers[m.Name]), cluster, m.Name)
	if h := e.FailoverSeconds[m.Name]; h != nil {
		sink.AddHistogram(metrics.failoverSeconds, h.Count, h.Sum, h.Cumulative, cluster, m.Name)
	}
	if o, ok := e.Open[m.Name]; ok {
		sink.Add(metrics.failoverOpen, o.Age(s.ReadAt).Seconds(), cluster, m.Name)
	}
	if s.Budget != nil {
		sink.Add(metrics.tolerated, float64(s.Budget.Tolerated[m.Name]), cluster, m.Name)
	}
}

// emitNode emits one data node's series.
func emitNode(sink exposition.Sink, cluster string, m *Master, n *Node) {
	sink.Add(metrics.nodeUp, bool01(n.Read), cluster, m.Name, n.Addr)
	if !n.Read {
		return
	}
	sink.Add(metrics.nodeRole, 1, cluster, m.Name, n.Addr, n.Role)
	if n.Role != roleReplica {
		return
	}
	sink.Add(metrics.linkUp, bool01(n.LinkUp), cluster, m.Name, n.Addr)
	if !n.LinkUp {
		sink.Add(metrics.linkDown, n.LinkDownFor.Seconds(), cluster, m.Name, n.Addr)
	}
	if n.Lag >= 0 {
		sink.Add(metrics.lag, float64(n.Lag), cluster, m.Name, n.Addr)
	}
	if n.Priority >= 0 {
		sink.Add(metrics.priority, float64(n.Priority), cluster, m.Name, n.Addr)
	}
	sink.Add(metrics.nodePromotable, bool01(n.Promotable), cluster, m.Name, n.Addr)
}

// emitBudget emits the failure budget's series.
func emitBudget(sink exposition.Sink, cluster string, b *Budget) {
	if b == nil {
		return
	}
	for _, addr := range sortedKeys(b.Nodes) {
		a, master := b.Nodes[addr], b.nodeMaster[addr]
		sink.Add(metrics.nodeSafe, bool01(a.Safe), cluster, master, addr)
		for _, r := range NodeReasons {
			sink.Add(metrics.nodeUnsafe, bool01(has(a, r)), cluster, master, addr, string(r))
		}
	}
	for _, addr := range sortedKeys(b.Sentinels) {
		a := b.Sentinels[addr]
		sink.Add(metrics.sentinelSafe, bool01(a.Safe), cluster, addr)
		for _, r := range SentinelReasons {
			sink.Add(metrics.sentinelUnsafe, bool01(has(a, r)), cluster, addr, string(r))
		}
	}
	for _, zone := range sortedKeys(b.Zones) {
		a := b.Zones[zone]
		sink.Add(metrics.zoneSafe, bool01(a.Safe), cluster, zone)
		for _, r := range ZoneReasons {
			sink.Add(metrics.zoneUnsafe, bool01(has(a, r)), cluster, zone, string(r))
		}
	}
}

// has reports whether the answer has a finding of reason r.
func has(a budget.Answer, r budget.Reason) bool {
	for _, f := range a.Findings {
		if f.Reason == r {
			return true
		}
	}
	return false
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
