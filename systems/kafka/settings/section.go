// Package settings is the kafka section of the config file: a Kafka
// cluster's settings (Cluster), their defaults and checks, its modules
// (kafka_modules) and its fingerprint. Importing the package registers the
// section with config, so that config.Parse reads the kafka key.
package settings

import (
	"fmt"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
)

// Key is the file's key of the Kafka clusters.
const Key = "kafka"

// Rank places the section first in config's table: mirrors, which name
// its clusters, are completed after it.
const Rank = 1

// section is the kafka list of the file.
var section = config.NewSection(config.SectionSpec[Cluster]{
	Key: Key, Noun: "kafka cluster", Rank: Rank,
	// The messages for an unknown key name the types as they were named
	// when they were config's.
	TypeNames: map[string]string{"settings.Cluster": "config.KafkaCluster", "settings.Canary": "config.KafkaCanary", "settings.SASL": "config.SASL", "settings.TopicFilter": "config.TopicFilter", "settings.UnwatchedTopics": "config.UnwatchedTopics"},
	Defaults:  (*Cluster).applyDefaults,
	Name:      func(k *Cluster) string { return k.Name },
	Validate:  func(*config.Config) func(*Cluster) error { return (*Cluster).validate },
	Modules: &config.ModuleSpec[Cluster]{
		AddrKey: "bootstrap_servers",
		Addrs:   func(k *Cluster) []string { return k.BootstrapServers },
		At:      Cluster.At,
		Check:   (*Cluster).validate,
		Targets: func(k *Cluster) config.ModuleTargets {
			return config.ModuleTargets{Allowed: k.AllowedTargets, AllowAny: k.AllowAnyTarget, Credentials: k.credentials(), TLS: k.TLS}
		},
	},
})

func init() {
	if err := config.Register(section); err != nil {
		panic(err)
	}
}

// Clusters are cfg's Kafka clusters.
func Clusters(cfg *config.Config) []Cluster { return config.Entries[Cluster](cfg, Key) }

// SetClusters replaces cfg's Kafka clusters, for configs built in code;
// cfg.Complete then completes them.
func SetClusters(cfg *config.Config, clusters []Cluster) { config.SetEntries(cfg, Key, clusters) }

// At is the module's cluster at addrs, called name. Whether the module
// allows addrs is CheckTarget's to say.
func (k Cluster) At(name string, addrs []string) Cluster {
	k.Name, k.BootstrapServers = name, addrs
	return k
}

// CheckTarget reports whether the module allows the cluster's addresses.
func (k Cluster) CheckTarget() error {
	return config.CheckAllowedTargets(k.AllowedTargets, k.AllowAnyTarget, k.BootstrapServers)
}

// credentials are what secrets a Kafka module carries, by their keys.
func (k Cluster) credentials() []string {
	var keys []string
	if k.SASL.Mechanism != "" || k.SASL.Username != "" || k.SASL.Password.IsSet() {
		keys = append(keys, "sasl")
	}
	keys = append(keys, k.TLS.Credentials()...)
	if k.Canary.Enabled {
		keys = append(keys, "canary.enabled, a write canary")
	}
	return keys
}

// Fingerprint identifies the cluster's settings together with the current
// contents of its TLS files and SASL password. It reads those files and
// variables on every call.
func (k Cluster) Fingerprint() (string, error) {
	return config.Fingerprint(k, k.TLS, k.SASL.Password)
}

// MaxReplicationFactor bounds canary.replication_factor (and so
// min_insync_replicas): Kafka's replication factor is an INT16 in
// CreateTopics and CreatePartitions.
const MaxReplicationFactor = 32767

// MinVersion is the oldest protocol version the exporter may speak.
// Kafka 4 brokers refuse requests of protocol versions older than 2.1
// (KIP-896): with 1.0.0 the exporter starts, then every DescribeConfigs
// fails with EOF and no min-ISR series is ever served.
var MinVersion = Version{2, 1, 0, 0}

// CheckVersion reports whether v is a Kafka version sarama knows and
// no older than MinVersion.
func CheckVersion(v string) error {
	parsed, ok := ParseVersion(v)
	if !ok {
		return fmt.Errorf("%q is not a Kafka version; give one such as %s", v, DefaultVersion)
	}
	if !parsed.IsAtLeast(MinVersion) {
		return fmt.Errorf("%s is older than %s, the oldest protocol version Kafka 4 brokers accept", v, MinVersion)
	}
	return nil
}

// ClusterName is the entry's name (system.Settings).
func (k Cluster) ClusterName() string { return k.Name }

// Timing is the refresh interval and the bound on one refresh
// (system.Settings).
func (k Cluster) Timing() (interval, timeout time.Duration) {
	return k.RefreshInterval, k.RefreshTimeout
}
