package sentinelcanary

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// Spec is the Sentinel write canary as the registry knows it: a watcher
// of its own for each Sentinel deployment that enables it.
var Spec = canary.Spec(settings.Key, system.Spec[Snapshot, settings.Set]{
	Timing: func(c settings.Set) (time.Duration, time.Duration) {
		return c.Canary.Interval, c.Canary.Interval
	},
	Source: system.Opened(newSource, func(s *source) system.Source[Snapshot] {
		return system.Source[Snapshot]{Refresh: s.round, Close: s.close}
	}),
	Events:       func(s *Snapshot) []events.Event { return s.Events.All() },
	NewCollector: system.Unconfigured[Snapshot, settings.Set](NewCollector),
	Sets:         Sets,
	Doc: system.Doc{
		Title: "Redis Sentinel write canary",
		Intro: "Only for Sentinel deployments whose config enables `canary` (it writes to the masters; see docs/canary.md). Every series carries `sentinel_cluster`; a master's carry `master`, its name as the sentinels know it, and `address`, the node that took the writes. The counters stay served while `redis_sentinel_canary_up` is 0.",
	},
}, func(c settings.Set) bool { return c.Canary.Enabled })

// System is the Sentinel write canary's registry entry.
var System = system.Define(Spec)
