package redis

import (
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
)

// Spec is Redis Cluster as the registry knows it (systems.All).
var Spec = system.Spec[Snapshot, config.RedisCluster]{
	Name:        "redis",
	Clusters:    func(cfg *config.Config) []config.RedisCluster { return cfg.Redis },
	ClusterName: func(c config.RedisCluster) string { return c.Name },
	Discover: func(cfg *config.Config, module, name string, addrs []string) (config.RedisCluster, bool) {
		return config.ModuleAt[config.RedisCluster](cfg, "redis", module, name, addrs)
	},
	Members:     members,
	Fingerprint: config.RedisCluster.Fingerprint,
	Timing:      func(c config.RedisCluster) (time.Duration, time.Duration) { return c.RefreshInterval, c.RefreshTimeout },
	Source: system.Opened(newSource, func(s *source) system.Source[Snapshot] {
		return system.Source[Snapshot]{Refresh: s.refresh, Close: s.close}
	}),
	Events: func(s *Snapshot) []events.Event { return s.Events.All() },
	EventKinds: []events.Kind{
		EventNodePFail, EventNodeFail, EventNodeRecovered, EventNodeState,
		EventPromotion, EventRoleChange, EventSlotsMoved, EventClusterState,
		EventNodeJoined, EventNodeLeft, EventForeignNodeSeen, EventForeignNodeGone,
		EventSlotMigrationStarted, EventSlotMigrationFinished, EventSlotMigrationFailed, EventSlotMigrationCancelled,
		events.EventsTruncated,
	},
	NewCollector: system.Unconfigured[Snapshot, config.RedisCluster](NewCollector),
	Sets:         Sets,
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

// System is Redis Cluster's registry entry.
var System = system.Define(Spec)

// NewWatcher returns a watcher that reads the cluster described by cfg, as
// the manager builds it. It does no network I/O; connections are made by
// the first refresh and closed when the watcher's Run returns, or by
// Close. cfg must have its defaults applied (config.Config.Complete).
func NewWatcher(cfg config.RedisCluster, logger log.Logger) (*watch.Watcher[Snapshot], error) {
	return system.NewWatcher(Spec, cfg, logger)
}

// members are the ids of the cluster's nodes and every address it is known
// by: its seeds and its nodes' addresses.
func members(c config.RedisCluster, snap *Snapshot) (ids, addrs []string) {
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
