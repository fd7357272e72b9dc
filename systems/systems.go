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
	"github.com/failover-exporter/failover_exporter/systems/redis/slotcmd"
	"github.com/failover-exporter/failover_exporter/systems/sentinel"
	sentinelcanary "github.com/failover-exporter/failover_exporter/systems/sentinel/canary"
)

// All is the registry; the manager, the config check, the status page,
// METRICS.md and the contract tests read it.
var All = []system.System{
	kafka.System,
	redis.System,
	kafkacanary.System,
	rediscanary.System,
	mirror.System,
	sentinel.System,
	sentinelcanary.System,
}

// Commands are the systems' own commands, beside the server and
// safe-to-stop.
var Commands = []system.Command{slotcmd.Command}

// Summary is the binary's one-line description, in its --help.
const Summary = "Prometheus exporter for Kafka replication, Redis Cluster sharding and Redis Sentinel failover."
