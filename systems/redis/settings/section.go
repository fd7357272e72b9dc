// Package settings is the redis section of the config file: a Redis
// Cluster's settings (Cluster), their defaults and checks, its modules
// (redis_modules) and its fingerprint. Importing the package registers the
// section with config, so that config.Parse reads the redis key.
package settings

import (
	"github.com/failover-exporter/failover_exporter/config"
	"time"
)

// Key is the file's key of the Redis Clusters.
const Key = "redis"

// Rank places the section after kafka's in config's table.
const Rank = 2

// section is the redis list of the file.
var section = config.NewSection(config.SectionSpec[Cluster]{
	Key: Key, Noun: "redis cluster", Rank: Rank,
	// The messages for an unknown key name the types as they were named
	// when they were config's.
	TypeNames: map[string]string{"settings.Cluster": "config.RedisCluster", "settings.Canary": "config.RedisCanary", "settings.SlotStats": "config.RedisSlotStats"},
	Defaults:  (*Cluster).applyDefaults,
	Name:      func(r *Cluster) string { return r.Name },
	Validate:  func(*config.Config) func(*Cluster) error { return (*Cluster).validate },
	Modules: &config.ModuleSpec[Cluster]{
		AddrKey: "addrs",
		Addrs:   func(r *Cluster) []string { return r.Addrs },
		At:      Cluster.At,
		Check:   (*Cluster).validate,
		Targets: func(r *Cluster) config.ModuleTargets {
			return config.ModuleTargets{Allowed: r.AllowedTargets, AllowAny: r.AllowAnyTarget, Credentials: r.credentials(), TLS: r.TLS}
		},
	},
})

func init() {
	if err := config.Register(section); err != nil {
		panic(err)
	}
}

// Clusters are cfg's Redis Clusters.
func Clusters(cfg *config.Config) []Cluster { return config.Entries[Cluster](cfg, Key) }

// SetClusters replaces cfg's Redis Clusters, for configs built in code;
// cfg.Complete then completes them.
func SetClusters(cfg *config.Config, clusters []Cluster) { config.SetEntries(cfg, Key, clusters) }

// At is the module's cluster at addrs, called name. Whether the module
// allows addrs is CheckTarget's to say.
func (r Cluster) At(name string, addrs []string) Cluster {
	r.Name, r.Addrs = name, addrs
	return r
}

// CheckTarget reports whether the module allows the cluster's addresses.
func (r Cluster) CheckTarget() error {
	return config.CheckAllowedTargets(r.AllowedTargets, r.AllowAnyTarget, r.Addrs)
}

// credentials are what secrets a Redis module carries, by their keys.
func (r Cluster) credentials() []string {
	var keys []string
	if r.Username != "" {
		keys = append(keys, "username")
	}
	if r.Password.IsSet() {
		keys = append(keys, "password")
	}
	keys = append(keys, r.TLS.Credentials()...)
	if r.Canary.Enabled {
		keys = append(keys, "canary.enabled, a write canary")
	}
	return keys
}

// Fingerprint identifies the cluster's settings together with the current
// contents of its TLS files and password. It reads those files and
// variables on every call.
func (r Cluster) Fingerprint() (string, error) {
	return config.Fingerprint(r, r.TLS, r.Password)
}

// ClusterName is the entry's name (system.Settings).
func (r Cluster) ClusterName() string { return r.Name }

// Timing is the refresh interval and the bound on one refresh
// (system.Settings).
func (r Cluster) Timing() (interval, timeout time.Duration) {
	return r.RefreshInterval, r.RefreshTimeout
}
