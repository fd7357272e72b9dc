package rediscanary

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// Spec is the Redis write canary as the registry knows it: a watcher of
// its own for each Redis Cluster that enables it.
var Spec = canary.Spec(settings.Key, system.Spec[Snapshot, settings.Cluster]{
	Timing: func(c settings.Cluster) (time.Duration, time.Duration) {
		return c.Canary.Interval, c.Canary.Interval
	},
	Source: system.Opened(newSource, func(s *source) system.Source[Snapshot] {
		return system.Source[Snapshot]{Refresh: s.round, Close: s.close}
	}),
	Events:       func(s *Snapshot) []events.Event { return s.Events.All() },
	NewCollector: system.Unconfigured[Snapshot, settings.Cluster](NewCollector),
	Sets:         Sets,
	Doc: system.Doc{
		Title: "Redis write canary",
		Intro: "Only for clusters whose config enables `canary` (it writes to the cluster; see docs/canary.md). Every series carries `redis_cluster`; the counters stay served while `redis_canary_up` is 0.",
	},
}, func(c settings.Cluster) bool { return c.Canary.Enabled })

// System is the Redis write canary's registry entry.
var System = system.Define(Spec)
