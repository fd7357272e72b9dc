// Package systems is the registry: every system the exporter watches, in
// the order their metrics are served. A system is a folder here
// (systems/<name>/) and one line in All; main.go hands All to the engine
// (collector), which names no system.
package systems

import (
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/systems/kafka"
	kafkacanary "github.com/failover-exporter/failover_exporter/systems/kafka/canary"
	"github.com/failover-exporter/failover_exporter/systems/mirror"
	"github.com/failover-exporter/failover_exporter/systems/redis"
	rediscanary "github.com/failover-exporter/failover_exporter/systems/redis/canary"
)

// All is the registry; the manager, the config check, the status page,
// METRICS.md and the contract tests read it.
var All = []system.System{
	kafka.System,
	redis.System,
	kafkacanary.System,
	rediscanary.System,
	mirror.System,
}
