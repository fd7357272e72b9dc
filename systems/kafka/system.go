package kafka

import (
	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// Spec is Kafka as the registry knows it (systems.All).
var Spec = system.Spec[Snapshot, settings.Cluster]{
	Name:    "kafka",
	Section: settings.Key,
	Modules: true,
	Members: members,
	Source:  system.Reads[Snapshot, settings.Cluster](newSource),
	Events:  func(s *Snapshot) []events.Event { return s.Events.All() },
	EventKinds: []events.Kind{
		EventBrokerDown, EventBrokerUp, EventBrokerFenced, EventBrokerUnfenced,
		EventQuorumVoterAdded, EventQuorumVoterRemoved, EventLogDirCordoned, EventLogDirUncordoned, EventLeaderChange,
		EventPartitionOffline, EventPartitionOnline,
		EventISRShrink, EventISRExpand, EventISRChange,
		EventUnderMinISRBegin, EventUnderMinISREnd, EventUncleanElection,
		EventReassignmentStarted, EventReassignmentFinished,
		EventCoordinatorUnavailable, EventCoordinatorAvailable,
		EventTransactionHanging, EventTransactionHangingEnded, events.EventsTruncated,
	},
	NewCollector: func() system.Collector[Snapshot, settings.Cluster] { return servingCollector{NewCollector()} },
	Sets:         func() []*exposition.Set { return append(Sets(), maintenanceFamilies.Set) },
	Maintenance:  maintenanceFamilies,
	// kafka_topic_leader_changes_total is served with every partition_metrics
	// setting, kafka_partition_leader_changes_total only with full.
	Dashboards: []system.Dashboard{{File: "grafana/dashboards/kafka-replication.json", UID: "failover-kafka", ClusterVar: "kafka_cluster",
		LinksTo: "failover-redis", FailoverCounters: []string{"kafka_topic_leader_changes_total", "kafka_partition_leader_changes_total"}}},
	Doc: system.Doc{
		Title: "Kafka",
		Intro: "Every series carries `kafka_cluster`. While `kafka_up` is 0 only `kafka_up` and the `kafka_exporter_*` series are served. " +
			"Which per-partition series are served depends on the cluster's `partition_metrics` mode: see the table after this one. " +
			"Which depend on the Kafka version: the `kafka_quorum_*` series need KRaft (absent in ZooKeeper mode); " +
			"`kafka_partition_eligible_leader_replicas`, `kafka_partition_last_known_elr`, `kafka_partition_no_clean_leader` and " +
			"`kafka_topic_no_clean_leader_partitions` need DescribeTopicPartitions (absent in ZooKeeper mode; on 3.9 in KRaft mode, which has no ELR, always 0, as its kafka-topics.sh shows the ELR empty); " +
			"in ZooKeeper mode the reassignment series are served only while the broker the exporter reads Metadata from is the active controller. " +
			"The Kafka versions table of docs/kafka.md has the details (3.9 ZooKeeper, 3.9 KRaft, 4.1, 4.3, 4.4).",
		Notes: PartitionModesDoc(),
	},
	Views:  Views,
	Budget: answerBudget,
	Flags:  declareFlags,
	BudgetScopes: []budget.ScopeSpec{
		{Scope: ScopeBroker, Member: "ID", Help: "A Kafka broker id."},
		{Scope: ScopeRack, Member: "NAME", Help: "A Kafka broker.rack: every broker in it."},
	},
}

// maintenanceFamilies serve the open maintenance windows with the
// clusters' series: kafka_maintenance_active{kafka_cluster, scope, broker}.
var maintenanceFamilies = maintenance.NewFamilies("kafka_", "kafka_cluster", "broker", "broker")

// System is Kafka's registry entry.
var System = system.Define(Spec)

// servingCollector is the collector as the registry serves it: each
// cluster with its settings' choice of partition series.
type servingCollector struct{ *Collector }

func (c servingCollector) Serve(name string, w *watch.Watcher[Snapshot], cluster settings.Cluster) {
	c.SetEmit(name, w, EmitState(cluster.PartitionMetrics))
}

// members are the cluster's id and every address it is known by: its
// bootstrap servers and its brokers' advertised addresses.
func members(c settings.Cluster, snap *Snapshot) (ids, addrs []string) {
	addrs = append(addrs, c.BootstrapServers...)
	if snap == nil {
		return nil, addrs
	}
	if snap.ClusterID != "" {
		ids = append(ids, "kafka cluster id "+snap.ClusterID)
	}
	for _, b := range snap.Brokers {
		if b.Address != "" {
			addrs = append(addrs, b.Address)
		}
	}
	return ids, addrs
}
