// Package redis watches a Redis Cluster: how its 16384 hash slots are split
// across masters, which node replicates which, which nodes are failing, how
// far replicas lag, and how often shards fail over.
//
// Data flows one way, in the same steps and file names as systems/kafka:
// source.go reads every node with rueidis, the pure parsers (those of
// systems/redis/proto, and info.go) decode the replies, redisproto.Merge
// decides which nodes the cluster counts and who owns each slot, build.go
// turns the merged views into a Snapshot, transitions.go counts transitions against the previous
// Snapshot, watcher.go refreshes it on an interval, and collector.go turns
// the current Snapshot into metrics without talking to the cluster.
package redis

import (
	"github.com/failover-exporter/failover_exporter/collector/episode"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// NodeState is a node's health in the cluster's view.
type NodeState string

// Node states, most severe first where a node carries several flags.
const (
	NodeStateOK        NodeState = "ok"
	NodeStatePFail     NodeState = "pfail"
	NodeStateFail      NodeState = "fail"
	NodeStateHandshake NodeState = "handshake"
	NodeStateNoAddr    NodeState = "noaddr"
)

// nodeStates is every state, in the order the node_state series are sent.
var nodeStates = []NodeState{NodeStateOK, NodeStatePFail, NodeStateFail, NodeStateHandshake, NodeStateNoAddr}

// Role is what a node does for its shard.
type Role string

// Roles.
const (
	RoleMaster  Role = "master"
	RoleReplica Role = "replica"
)

// Snapshot is one Redis Cluster as read by one refresh. It is immutable once
// published; the counters (Failovers, Node.RoleChanges) are carried forward
// from the previous snapshot by carryTransitions.
type Snapshot struct {
	// ReadAt is when the refresh that built it finished reading the nodes.
	ReadAt time.Time
	// ProbedAt is when the refresh sent its queries to the nodes it knew:
	// the time of each node's probe (Node.ProbeFailedSince). Zero in
	// snapshots built by hand, where ReadAt stands in.
	ProbedAt time.Time
	// backdateLimit bounds how far back an episode may start at the
	// exporter's first failed probe (episode.Backdate); 0 turns it off.
	backdateLimit time.Duration
	// StateOK is true when every reachable member master that serves slots
	// says cluster_state:ok (every reachable member when none was reached).
	StateOK bool
	// Slots by the state of their owner; the four add up to SlotCount.
	SlotsOK, SlotsPFail, SlotsFail, SlotsUnassigned int
	// SlotsWithoutReplica are slots whose master has no healthy replica.
	SlotsWithoutReplica int
	// Masters is the number of masters owning at least one slot.
	Masters int
	// KnownNodes is the number of members (len(Nodes)).
	KnownNodes int
	// CurrentEpoch is the highest cluster_current_epoch of any reachable node.
	CurrentEpoch uint64
	// ViewsConsistent is false when the members disagree about which master
	// owns some slot, or whether some node has failed, for longer than
	// disputeSettleTime and not because of a migration (consistency.go).
	ViewsConsistent bool
	// SlotsInMigration are slots some member has in migrating or importing
	// state (a reshard in progress) or in an atomic slot migration job it
	// reports running.
	SlotsInMigration int
	// SlotsInConflict are slots whose owner the members have disputed for
	// longer than disputeSettleTime, outside any migration.
	SlotsInConflict int
	// disputes dates every current disagreement from when it was first
	// seen, and keeps those unseen for less than disputeGap.
	disputes map[disputeKey]disputeAge
	// SlotsOneHost are slots whose master has healthy replicas, all on the
	// master's host (IP). SlotsOneZone is the same for availability zones,
	// over the masters whose copies all report a zone; ZonesKnown is false
	// when no member reports one (then SlotsOneZone means nothing).
	SlotsOneHost, SlotsOneZone int
	ZonesKnown                 bool
	// Failovers counts shards whose master changed to one of its replicas.
	Failovers uint64
	// MigrationsFinished counts the atomic slot migration jobs this
	// exporter saw finish, by outcome (migrationOutcomes' order);
	// migrations remembers the jobs seen (carryMigrations).
	MigrationsFinished [3]uint64
	migrations         map[string]migrationSeen
	// Nodes are the cluster's members, sorted by address, then id.
	Nodes []Node
	// Foreign are the nodes that answered but are not members (see
	// redisproto.Merge), sorted by address, then id. They count in no other
	// field.
	Foreign []ForeignNode
	// SlotRanges is the merged slot map as runs of consecutive slots with
	// one owner, covering all 16384 slots in order.
	SlotRanges []SlotRange
	// Episodes times failovers and unserved slots across refreshes.
	Episodes Episodes
	// StaleRouting are the demoted masters watched for clients still
	// routed to them, by node ID (stalerouting.go); nil when none is.
	// StaleRoutingSeconds holds the durations of the stale-routing
	// episodes that ended (empty from the exporter's first snapshot on).
	StaleRouting        map[string]*StaleRouting
	StaleRoutingSeconds *episode.Histogram
	// FailureBudget is what stopping each node or zone would do now
	// (budget.go); nil in snapshots built without assessBudget.
	FailureBudget *FailureBudget
	// Events are the transitions between the previous snapshot and this one.
	Events events.List
}

// SlotRange is slots First to Last (inclusive) owned by the node with ID
// Owner, or unassigned when Owner is empty.
type SlotRange struct {
	First, Last int
	Owner       string
}

// Node is one node of the merged topology.
type Node struct {
	ID string
	// Addr is "ip:port", empty for a node without an address (noaddr).
	Addr     string
	Role     Role
	MasterID string // for a replica, the id of its master
	State    NodeState
	// LinkConnected is whether the cluster bus link to the node is up, as
	// another node sees it.
	LinkConnected bool
	ConfigEpoch   uint64
	// Slots is how many slots the node owns in the merged slot map.
	Slots int
	// HealthyReplicas, for a master, counts its replicas that pass
	// IsHealthyReplica.
	HealthyReplicas int

	// ProbeFailedSince is when the exporter's queries of the node began to
	// fail, in its current run of failures: zero while it answers, or when
	// the run began before the exporter could see it (episode.FailedSince).
	ProbeFailedSince time.Time

	// Reachable is whether the exporter read the node itself in this refresh.
	// The fields up to the next blank line are only meaningful when it is.
	Reachable bool
	// ClusterStateOK is the node's own cluster_state. An empty master's
	// counts for itself only (clusterStateOK).
	ClusterStateOK bool
	// Migrating and Importing are the slots the node's own CLUSTER NODES
	// has in migrating state (NodeID: the target) and importing state
	// (NodeID: the source): a classic reshard in progress.
	Migrating    []redisproto.SlotMove
	Importing    []redisproto.SlotMove
	MasterLinkUp bool // replicas only
	Zone         string
	// For a master with healthy replicas: how many are on another host
	// (IP) than the master, and, when HasZoneSpread, in another zone.
	ReplicasOtherHost, ReplicasOtherZone int
	HasZoneSpread                        bool
	Keys                                 int64
	MemoryUsed                           uint64
	// ErrorReplies counts, per kind of RedirectErrors, the error replies
	// the node sent since its start (INFO errorstats); nil when not read.
	ErrorReplies map[string]uint64
	// Syncs are the syncs the node served its replicas since its start
	// (INFO stats); nil when not read.
	Syncs *SyncCounts
	// Clients are the libraries of the clients that may send a demoted
	// node misrouted commands (CLIENT LIST, read only while the exporter
	// watches it for stale routing); nil when not read or not named.
	Clients *ClientLibraries
	// Sync is, for a reachable or loading replica, its sync from its
	// master in progress, if any: while it runs the replica's link is down
	// and it protects nothing.
	Sync replicaSync
	// Loading is set for a node that answered the exporter LOADING: it is
	// loading its data set (after a restart, or a full sync's RDB) and
	// serves nothing until it has; not Reachable, but known to be there.
	Loading bool
	// Load is a loading node's progress (INFO persistence), when it said.
	Load loadProgress

	// HasReplicationLag is set for a replica whose master was reachable and
	// lists it in INFO replication.
	HasReplicationLag   bool
	ReplicationLagBytes int64
	// PartialResync is, for the same replicas when the master's backlog
	// was read, whether a reconnect now could resume from the master's
	// backlog (false: it would need a full sync of the data set).
	HasPartialResync bool
	PartialResync    bool
	// For a reachable master: its replication backlog's size and what it
	// holds, when read.
	HasBacklog                bool
	BacklogBytes, BacklogHeld int64
	// ReplOffset is, with HasBacklog, the master's replication offset
	// (master_repl_offset): the bytes of writes it has replicated.
	ReplOffset int64

	// RoleChanges counts role changes this exporter observed.
	RoleChanges uint64

	// Migrations are the node's atomic slot migration jobs (migrations.go);
	// nil when the server has none or they were not read this refresh.
	Migrations *NodeMigrations

	// SlotStats are a master's hottest slots (slot_stats, slotstats.go);
	// nil when off, unsupported by the server, or not read this refresh.
	SlotStats *SlotStats
}

// IsHealthyReplica is the one rule for a replica that protects its master's
// slots: in state ok, with its link to the master up, or unknown because
// the exporter could not reach it (its master and the other nodes still
// count it ok) unless it answered LOADING. HealthyReplicas, the slots without a replica and the
// failure domains all count by it.
func (n *Node) IsHealthyReplica() bool {
	return n.Role == RoleReplica && n.State == NodeStateOK && (!n.Reachable && !n.Loading || n.MasterLinkUp)
}
