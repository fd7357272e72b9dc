// Package model holds the status page's view models: what one cluster's
// section shows, as plain values already counted, bounded and formatted.
// Each system builds them from its own snapshots (a Views function next to
// its collector); the page only renders them, so it links no client
// library and never reads a snapshot. It imports nothing of the exporter
// (a test holds it to that), so that every system can build it.
package model

// Cluster is one cluster's part of the status page. Parts with the same
// System and Name make one section: a write canary's part joins its
// cluster's. A cluster whose System has no specific part below is shown
// with its head, its generic parts (stats, notes, tables) and its events,
// so a new system needs no template work.
type Cluster struct {
	// System is "kafka" or "redis": with Name it names the cluster, as in
	// the event log (names are unique only within a system).
	System string
	Name   string
	// Head is the cluster's refresh state; nil in a part that only adds to
	// a cluster's section, such as a canary's.
	Head *Head

	// System-specific parts, nil when absent.
	Redis *Redis

	// Title is the section's heading; empty for the system's own (or
	// "<system> cluster <name>").
	Title string
	// Generic parts (parts.go), for a system with no specific part: boxes
	// in the summary row, paragraphs under it and tables. The parts of one
	// section add up.
	Stats  []Stat
	Notes  []Note
	Tables []Table
}

// Head is what every system shows: how its watcher's refreshes go.
type Head struct {
	Up bool
	// HasData is true once a snapshot was read; the system's part is from
	// the last successful refresh, stale when Up is false.
	HasData   bool
	LastError string
	// LastOK is when the last refresh succeeded, as an age ("3s ago");
	// empty when none did.
	LastOK    string
	Refreshes uint64
	Failures  uint64
}

// Redis is a Redis Cluster's slot map, shards and foreign nodes; its
// summary row is generic stats.
type Redis struct {
	// Strip is the slot map: consecutive slots with the same owner.
	Strip []SlotRun
	// Keys shades the slot map by keys; nil unless slot_stats is on and
	// some master answered CLUSTER SLOT-STATS.
	Keys *KeyMap
	// Moving are the atomic slot migration jobs in flight, oldest first,
	// bounded; MovingMore counts those left out (their slots are not
	// marked on the slot map).
	Moving     []SlotMove
	MovingMore int
	Shards     []Shard
	ShardsMore int
	Foreign    []ForeignNode
}

// SlotRun is a range of slots with one owner.
type SlotRun struct {
	First, Last int
	// Owner is the owning master's address, or "unassigned".
	Owner string
	// State is ok, pfail, fail, noaddr, handshake or unassigned.
	State string
	// Color is a #rrggbb colour; the page refuses anything else.
	Color string
	// Percent is the run's share of the strip's width.
	Percent string
}

// Shard is a master and its replicas.
type Shard struct {
	Master   Node
	Replicas []Node
}

// Node is one Redis node of a shard.
type Node struct {
	ID        string
	ShortID   string
	Address   string
	State     string
	Reachable bool
	Slots     int
	// Lag is the replication lag ("12 B"), empty when unknown.
	Lag       string
	LinkUp    bool
	IsReplica bool
}

// ForeignNode is a node that answered but is not a member of the cluster.
type ForeignNode struct {
	ShortID string
	Address string
	Reason  string
}
