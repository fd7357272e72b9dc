package mirror

import (
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/systems/mirror/settings"
)

// Spec is the mirror flow as the registry knows it (systems.All).
var Spec = system.Spec[Snapshot, settings.Flow]{
	Name:       "mirror",
	Section:    settings.Key,
	Source:     system.Reads[Snapshot, settings.Flow](NewSource),
	Events:     func(s *Snapshot) []events.Event { return s.Events.All() },
	EventKinds: []events.Kind{EventStalled, EventResumed, EventTopicMissing, EventTopicAppeared, EventConnectorState, events.EventsTruncated},
	NewCollector: func() system.Collector[Snapshot, settings.Flow] {
		return servingCollector{NewCollector()}
	},
	Sets: Sets,
	// One flow at a time ($mirror); its annotations mark leader elections
	// in its source and target clusters.
	Dashboards: []system.Dashboard{{File: "grafana/dashboards/kafka-mirror.json", UID: "failover-mirror", ClusterVar: "mirror",
		LinksTo: "failover-kafka", FailoverCounters: []string{"kafka_topic_leader_changes_total"}}},
	Doc: system.Doc{
		Title: "MirrorMaker 2 flows",
		Intro: "One section per `mirrors:` entry of the config: a MirrorMaker 2 flow from one Kafka cluster of the config to another, read from the two clusters " +
			"(MM2's offset syncs, checkpoints and heartbeats, both clusters' offsets). Every series carries `mirror`, `source_cluster` and `target_cluster`. " +
			"The topic series need the source (`kafka_mirror_source_up`), the heartbeat and group series the target. " +
			"The `kafka_mirror_partition_*` and `kafka_mirror_group_resume_offset` series are served only with the flow's `partition_metrics: true`. " +
			"docs/mirror.md says how exact each figure is.",
	},
	Views: Views,
}

// System is the mirror flow's registry entry.
var System = system.Define(Spec)

// servingCollector serves each flow with its settings' cluster names and
// choice of partition series.
type servingCollector struct{ *Collector }

func (c servingCollector) Serve(name string, w *watch.Watcher[Snapshot], m settings.Flow) {
	c.SetEmit(name, w, Emitter(m.Source, m.Target, m.PartitionMetrics))
}
