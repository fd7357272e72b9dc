package redis

import "github.com/failover-exporter/failover_exporter/collector/events"

// Redis Cluster transitions.
const (
	EventNodePFail     events.Kind = "node_pfail"
	EventNodeFail      events.Kind = "node_fail"
	EventNodeRecovered events.Kind = "node_recovered"
	// EventNodeState is any other change of a node's state (handshake, noaddr).
	EventNodeState    events.Kind = "node_state"
	EventPromotion    events.Kind = "promotion"
	EventRoleChange   events.Kind = "role_change"
	EventSlotsMoved   events.Kind = "slots_moved"
	EventClusterState events.Kind = "cluster_state"
	EventNodeJoined   events.Kind = "node_joined"
	EventNodeLeft     events.Kind = "node_left"
	// A node that answered but is not a member (forgotten, reset, or of
	// another cluster); After (or Before, when it went) is why.
	EventForeignNodeSeen events.Kind = "foreign_node_seen"
	EventForeignNodeGone events.Kind = "foreign_node_gone"
	// An atomic slot migration job (Valkey 9.0+, Redis 8.4+) started, or
	// finished: succeeded, failed or was cancelled. The subject is the
	// source node; Before is the job's previous outcome (empty while it
	// ran), After the slots, source → target, the server's state, how
	// long it took and its message. One that began and ended between two
	// refreshes shows as started and finished at once.
	EventSlotMigrationStarted   events.Kind = "slot_migration_started"
	EventSlotMigrationFinished  events.Kind = "slot_migration_finished"
	EventSlotMigrationFailed    events.Kind = "slot_migration_failed"
	EventSlotMigrationCancelled events.Kind = "slot_migration_cancelled"
	// Clients on a stale topology (stalerouting.go): a demoted master
	// answering MOVED or READONLY after the promotion (After: how many and
	// how long after), and that node quiet again for a minute (Before: how
	// many in all, After: how long after the promotion the last came).
	EventStaleRoutingStarted events.Kind = "stale_routing_started"
	EventStaleRoutingEnded   events.Kind = "stale_routing_ended"
)
