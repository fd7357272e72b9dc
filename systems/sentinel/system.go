// Package sentinel watches Redis deployments that fail over with Redis
// Sentinel: one master and its replicas per master name, and the sentinels
// that decide when to promote a replica. It reads every sentinel (SENTINEL
// MASTERS, GET-MASTER-ADDR-BY-NAME, REPLICAS, SENTINELS, CKQUORUM) and every
// data node they name (INFO replication, the node's own word on its role),
// and serves whether the sentinels agree on the master, which replica they
// would promote and what that would lose, the failovers as clients live
// them, and what stopping a node, a sentinel or a zone now would do.
package sentinel

import (
	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// Spec is Redis Sentinel as the registry knows it (systems.All).
var Spec = system.Spec[Snapshot, settings.Set]{
	Name:    "sentinel",
	Section: settings.Key,
	Modules: true,
	Members: members,
	Source:  system.Reads[Snapshot, settings.Set](newSource),
	Events:  func(s *Snapshot) []events.Event { return s.Events.All() },
	EventKinds: []events.Kind{
		EventSDown, EventODown, EventFailoverStarted, EventSwitchMaster, EventReplicaReconfigured,
		EventSentinelLost, EventSentinelBack, EventSentinelAdded, EventDisagreementStarted, EventDisagreementEnded,
		EventMasterWritable, EventMasterNotWritable, events.EventsTruncated,
	},
	NewCollector: system.Unconfigured[Snapshot, settings.Set](NewCollector),
	Sets:         func() []*exposition.Set { return append(Sets(), maintenanceFamilies.Set) },
	Maintenance:  maintenanceFamilies,
	Dashboards: []system.Dashboard{{File: "grafana/dashboards/redis-sentinel.json", UID: "failover-sentinel", ClusterVar: "sentinel_cluster",
		LinksTo: "failover-redis", FailoverCounters: []string{"redis_sentinel_master_failovers_total"}}},
	Doc: system.Doc{
		Title: "Redis Sentinel",
		Intro: "Every series carries `sentinel_cluster`, the entry's name; a master's carry `master`, its name as the sentinels know it; a sentinel's `sentinel`, its address; a data node's `address`. " +
			"While `redis_sentinel_up` is 0 only it and the `redis_sentinel_exporter_*` series are served.",
	},
	Views:  Views,
	Budget: answerBudget,
	Flags:  declareFlags,
	BudgetScopes: []budget.ScopeSpec{
		{Scope: ScopeNode, Member: "ADDR", Help: "A Sentinel data node, ip:port."},
		{Scope: ScopeSentinel, Member: "ADDR", Help: "A sentinel, ip:port."},
		{Scope: ScopeZone, Member: "NAME", Help: "A Sentinel zone: its sentinels and nodes."},
	},
}

// maintenanceFamilies serve the open maintenance windows with the
// clusters' series: redis_sentinel_maintenance_active{sentinel_cluster, scope, address}.
var maintenanceFamilies = maintenance.NewFamilies("redis_sentinel_", "sentinel_cluster", "address", "node or sentinel")

// System is Redis Sentinel's registry entry.
var System = system.Define(Spec)

// members are the sentinels' and data nodes' addresses a deployment is
// known by: its seeds and every one the snapshot holds.
func members(c settings.Set, snap *Snapshot) (ids, addrs []string) {
	addrs = append(addrs, c.Sentinels...)
	if snap == nil {
		return nil, addrs
	}
	for _, s := range snap.Sentinels {
		addrs = append(addrs, s.Addr)
	}
	for _, m := range snap.Masters {
		for _, n := range m.Nodes {
			addrs = append(addrs, n.Addr)
		}
	}
	return nil, addrs
}
