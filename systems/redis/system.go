package redis

import (
	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// Spec is Redis Cluster as the registry knows it (systems.All).
var Spec = system.Spec[Snapshot, settings.Cluster]{
	Name:    "redis",
	Section: settings.Key,
	Modules: true,
	Members: members,
	Source:  system.Reads[Snapshot, settings.Cluster](newSource),
	Events:  func(s *Snapshot) []events.Event { return s.Events.All() },
	EventKinds: []events.Kind{
		EventNodePFail, EventNodeFail, EventNodeRecovered, EventNodeState,
		EventPromotion, EventRoleChange, EventSlotsMoved, EventClusterState,
		EventNodeJoined, EventNodeLeft, EventForeignNodeSeen, EventForeignNodeGone,
		EventSlotMigrationStarted, EventSlotMigrationFinished, EventSlotMigrationFailed, EventSlotMigrationCancelled,
		EventStaleRoutingStarted, EventStaleRoutingEnded,
		events.EventsTruncated,
	},
	NewCollector: system.Unconfigured[Snapshot, settings.Cluster](NewCollector),
	Sets:         func() []*exposition.Set { return append(Sets(), maintenanceFamilies.Set) },
	Maintenance:  maintenanceFamilies,
	Dashboards: []system.Dashboard{{File: "grafana/dashboards/redis-cluster.json", UID: "failover-redis", ClusterVar: "redis_cluster",
		LinksTo: "failover-kafka", FailoverCounters: []string{"redis_cluster_failovers_total"}}},
	Doc: system.Doc{
		Title: "Redis Cluster",
		Intro: "Every series carries `redis_cluster`. While `redis_cluster_up` is 0 only it and the `redis_cluster_exporter_*` series are served.",
	},
	Views:  Views,
	Budget: answerBudget,
	Flags:  declareFlags,
	BudgetScopes: []budget.ScopeSpec{
		{Scope: ScopeNode, Member: "ID|ADDR", Help: "A Redis node id or ip:port."},
		{Scope: ScopeZone, Member: "NAME", Help: "A Redis availability zone: every node in it."},
	},
}

// maintenanceFamilies serve the open maintenance windows with the
// clusters' series: redis_cluster_maintenance_active{redis_cluster, scope, address}.
var maintenanceFamilies = maintenance.NewFamilies("redis_cluster_", "redis_cluster", "address", "node")

// System is Redis Cluster's registry entry.
var System = system.Define(Spec)

// members are the ids of the cluster's nodes and every address it is known
// by: its seeds and its nodes' addresses.
func members(c settings.Cluster, snap *Snapshot) (ids, addrs []string) {
	addrs = append(addrs, c.Addrs...)
	if snap == nil {
		return nil, addrs
	}
	for _, n := range snap.Nodes {
		if n.ID != "" {
			ids = append(ids, "redis node id "+n.ID)
		}
		if n.Addr != "" {
			addrs = append(addrs, n.Addr)
		}
	}
	return ids, addrs
}
