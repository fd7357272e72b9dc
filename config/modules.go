package config

import (
	"errors"
	"fmt"
)

// Modules are the settings of clusters the exporter is not told about in
// the file but asked about by a /probe request (the multi-target exporter
// pattern, blackbox_exporter's modules): a module is a cluster entry with
// everything but the address, which each request's target= gives. The
// entry's name is the module's, and the cluster's name (its kafka_cluster
// or redis_cluster label) is the target.
//
//	kafka_modules:
//	  - name: sasl
//	    sasl: {mechanism: SCRAM-SHA-512, username: monitor, password: {file: /etc/kafka-password}}
//	    allowed_targets: ["*.kafka.prod.internal:9092"]
//	redis_modules:
//	  - name: acl
//	    username: monitor
//	    password: {env: REDIS_PASSWORD}
//	    allowed_targets: [10.2.0.0/16:6379]
//
// A module says where its targets may be (allowlist.go): the manager
// builds nothing for a target outside its allowed_targets.

// moduleAddr stands in for a module's address while it is checked as a
// cluster would be: the address is the request's, checked then.
const moduleAddr = "127.0.0.1:1"

// KafkaModule is cfg's Kafka module called name.
func (cfg *Config) KafkaModule(name string) (KafkaCluster, bool) {
	for _, m := range cfg.KafkaModules {
		if m.Name == name {
			return m, true
		}
	}
	return KafkaCluster{}, false
}

// RedisModule is cfg's Redis module called name.
func (cfg *Config) RedisModule(name string) (RedisCluster, bool) {
	for _, m := range cfg.RedisModules {
		if m.Name == name {
			return m, true
		}
	}
	return RedisCluster{}, false
}

// At is the module's cluster at addrs, called name. Whether the module
// allows addrs is CheckTarget's to say.
func (k KafkaCluster) At(name string, addrs []string) KafkaCluster {
	k.Name, k.BootstrapServers = name, addrs
	return k
}

// At is the module's cluster at addrs, called name. Whether the module
// allows addrs is CheckTarget's to say.
func (r RedisCluster) At(name string, addrs []string) RedisCluster {
	r.Name, r.Addrs = name, addrs
	return r
}

var kafkaModuleSection = NewSection(SectionSpec[KafkaCluster]{
	Key: "kafka_modules", Noun: "kafka module",
	List:     func(c *Config) *[]KafkaCluster { return &c.KafkaModules },
	Defaults: (*KafkaCluster).applyDefaults,
	Name:     func(k *KafkaCluster) string { return k.Name },
	Validate: func(*Config) func(*KafkaCluster) error {
		return func(k *KafkaCluster) error {
			if len(k.BootstrapServers) > 0 {
				return errNoModuleAddr("bootstrap_servers")
			}
			probe := k.At(k.Name, []string{moduleAddr})
			return errors.Join(probe.validate(), checkModuleTargets(k.AllowedTargets, k.AllowAnyTarget, k.credentials(), k.TLS))
		}
	},
})

var redisModuleSection = NewSection(SectionSpec[RedisCluster]{
	Key: "redis_modules", Noun: "redis module",
	List:     func(c *Config) *[]RedisCluster { return &c.RedisModules },
	Defaults: (*RedisCluster).applyDefaults,
	Name:     func(r *RedisCluster) string { return r.Name },
	Validate: func(*Config) func(*RedisCluster) error {
		return func(r *RedisCluster) error {
			if len(r.Addrs) > 0 {
				return errNoModuleAddr("addrs")
			}
			probe := r.At(r.Name, []string{moduleAddr})
			return errors.Join(probe.validate(), checkModuleTargets(r.AllowedTargets, r.AllowAnyTarget, r.credentials(), r.TLS))
		}
	},
})

func errNoModuleAddr(key string) error {
	return fmt.Errorf("%s is set: a module holds everything but the address, which each /probe request's target= gives", key)
}
