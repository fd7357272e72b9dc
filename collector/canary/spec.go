package canary

import (
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
)

// Spec completes a write canary's registry entry. spec lists its
// system's clusters and finds its modules' (Clusters, Discover) as the
// cluster watcher does; the canary runs only for those whose settings
// enable it, as it writes to the cluster. It is the cluster's "canary"
// part (Spec.Part), and its events are the write canaries' kinds. Its
// clusters are those of the config section key (with its modules), whose
// system's name is key too: the canary's name is key_canary (its log
// lines read collector=kafka_canary cluster=NAME, apart from the cluster
// watcher's collector=kafka), and its events are recorded under key's.
func Spec[S, C any](key string, spec system.Spec[S, C], enabled func(C) bool) system.Spec[S, C] {
	spec.Name, spec.EventSystem, spec.Section, spec.Modules = key+"_canary", key, key, true
	spec = spec.Filled()
	clusters, discover := spec.Clusters, spec.Discover
	spec.Part = "canary"
	spec.Clusters = func(cfg *config.Config) []C {
		var on []C
		for _, c := range clusters(cfg) {
			if enabled(c) { // it writes to the cluster: only when asked
				on = append(on, c)
			}
		}
		return on
	}
	// A module's canary, like a cluster's, runs only when it enables it.
	spec.Discover = func(cfg *config.Config, module, name string, addrs []string) (C, bool) {
		c, ok := discover(cfg, module, name, addrs)
		return c, ok && enabled(c)
	}
	spec.EventKinds = []events.Kind{EventWriteFailing, EventWriteRecovered, EventAcknowledgedWritesLost}
	return spec
}
