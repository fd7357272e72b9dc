package kafkacanary

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// Spec is the Kafka write canary as the registry knows it: a watcher of
// its own for each Kafka cluster that enables it.
var Spec = canary.Spec(settings.Key, system.Spec[Snapshot, settings.Cluster]{
	// A round may outlast the interval: after a broker dies, refreshing
	// the metadata and reading records back from a new leader each take up
	// to the request timeout, and a round cut at the interval would leave
	// the read-back for a next round that again runs out of time.
	Timing: func(c settings.Cluster) (time.Duration, time.Duration) {
		return c.Canary.Interval, max(c.Canary.Interval, 2*c.RequestTimeout+c.DialTimeout)
	},
	Source: system.Opened(newSource, func(src *source) system.Source[Snapshot] {
		out := system.Source[Snapshot]{Refresh: src.round, Close: src.close}
		if src.lease != nil {
			// A canary that takes the lease writes at once.
			out.Wake = func(trigger func()) { src.lease.wake = trigger }
		}
		return out
	}),
	Events:       func(s *Snapshot) []events.Event { return s.Events.All() },
	NewCollector: system.Unconfigured[Snapshot, settings.Cluster](NewCollector),
	Sets:         Sets,
	Doc: system.Doc{
		Title: "Kafka write canary",
		Intro: "Only for clusters whose config enables `canary` (it writes to the cluster; see docs/canary.md). Every series carries `kafka_cluster`; `broker` is the partition's leader when the record was produced. The counters stay served while `kafka_canary_up` is 0.",
	},
	Views: Views,
}, func(c settings.Cluster) bool { return c.Canary.Enabled })

// System is the Kafka write canary's registry entry.
var System = system.Define(Spec)
