package redis

import (
	"cmp"
	"slices"
	"time"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// nodeView is what one reachable node told the exporter in one refresh.
type nodeView struct {
	// View is the node's CLUSTER NODES and CLUSTER INFO, the part the
	// slot-ownership rule (redisproto.Merge) reads.
	redisproto.View
	Replication replicationInfo
	UsedMemory  uint64
	Keys        int64
	// Zone is the availability-zone from HELLO (Valkey 8.1+), empty when
	// the server has none or none is set.
	Zone string
	// Migrations are the node's atomic slot migration jobs (Valkey 9.0+,
	// Redis 8.4+), read when MigrationsRead.
	Migrations     []SlotMigration
	MigrationsRead bool
	// AnsweredAt is when the node's replies arrived.
	AnsweredAt time.Time
	// NodeTimeout is the node's cluster-node-timeout (CONFIG GET, read once
	// per connection), 0 when unread or refused.
	NodeTimeout time.Duration
	// ErrorReplies counts the node's replies of each of RedirectErrors
	// (INFO errorstats); nil when the server does not report them.
	ErrorReplies map[string]uint64
	// Syncs are the syncs the node served (INFO stats); nil when unread.
	Syncs *SyncCounts
	// Clients are the libraries of its clients (CLIENT LIST), read only
	// from a demoted node watched for stale routing; nil when unread.
	Clients *ClientLibraries
}

// buildSnapshot merges the views of the reachable nodes into one snapshot
// (redisproto.Merge decides membership and slot ownership). Counters are left at
// zero; carryTransitions fills them.
func buildSnapshot(nodeViews []nodeView) (*Snapshot, error) {
	return buildSnapshotLoading(nodeViews, nil)
}

// buildSnapshotLoading is buildSnapshot with the nodes that answered
// LOADING, by address: a node loading its data set (after a restart, or the
// RDB of a full sync) answers INFO but not CLUSTER NODES, so it is not
// read, and must not pass for a replica the exporter merely cannot reach.
func buildSnapshotLoading(nodeViews []nodeView, loading map[string]loadingNode) (*Snapshot, error) {
	mv, err := redisproto.Merge(nodeViews)
	if err != nil {
		return nil, err
	}
	views, merged, ids, owners := mv.Views, mv.Nodes, mv.IDs, mv.Owners

	snap := &Snapshot{Foreign: foreignNodes(mv.Foreign)}
	snap.disputes, snap.SlotsInMigration = findDisputes(views, merged, mv.Disputed)
	// Until settleDisputes has seen the disputes last, every one counts.
	snap.ViewsConsistent = len(snap.disputes) == 0
	index := map[string]int{}
	for _, id := range ids {
		index[id] = len(snap.Nodes)
		n := mergedNodeEntry(id, merged[id])
		if l, ok := loading[n.Addr]; ok && !n.Reachable {
			n.Loading, n.Sync, n.Load = true, l.sync, l.load
		}
		snap.Nodes = append(snap.Nodes, n)
	}
	for _, owner := range owners {
		if owner == "" {
			continue
		}
		snap.Nodes[index[owner]].Slots++
	}
	linkReplicas(snap, index, merged)
	snap.SlotRanges = slotRanges(owners)
	countSlotStates(snap, index, owners)

	assessFailureDomains(snap)
	snap.StateOK = clusterStateOK(snap, merged)
	for _, v := range views {
		snap.CurrentEpoch = max(snap.CurrentEpoch, v.Info.CurrentEpoch)
	}
	for _, n := range snap.Nodes {
		if n.Slots > 0 {
			snap.Masters++
		}
	}
	snap.KnownNodes = len(snap.Nodes)
	slices.SortFunc(snap.Nodes, func(a, b Node) int {
		if c := cmp.Compare(a.Addr, b.Addr); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return snap, nil
}

// mergedNodeEntry is the snapshot's entry for one member, from its merged
// line and, when it was reachable, its own view. Slots and replica counts
// are filled later, from the other members.
func mergedNodeEntry(id string, m *redisproto.MergedNode[nodeView]) Node {
	line := m.Line()
	n := Node{
		ID:            id,
		Addr:          m.Addr(),
		MasterID:      line.MasterID,
		ConfigEpoch:   line.ConfigEpoch,
		Role:          RoleMaster,
		LinkConnected: true,
	}
	if line.Flags.Replica {
		n.Role = RoleReplica
	}
	if m.Other != nil {
		// Link state is per observer; a node's own line always says connected.
		n.LinkConnected = m.Other.LinkConnected
	}
	switch {
	case m.FailSeen:
		n.State = NodeStateFail
	case m.PFailSeen:
		n.State = NodeStatePFail
	case m.NoAddrSeen || line.Flags.NoAddr:
		n.State = NodeStateNoAddr
	case m.HandshakeSeen || line.Flags.Handshake:
		n.State = NodeStateHandshake
	default:
		n.State = NodeStateOK
	}
	if v := m.View; v != nil {
		n.Reachable = true
		n.ClusterStateOK = v.Info.StateOK
		n.Migrating = slices.Clone(m.Own.Migrating)
		n.Importing = slices.Clone(m.Own.Importing)
		n.MasterLinkUp = !v.Replication.IsMaster && v.Replication.MasterLinkUp
		n.Keys = v.Keys
		n.MemoryUsed = v.UsedMemory
		if v.Replication.IsMaster && v.Replication.BacklogRead {
			n.HasBacklog, n.BacklogBytes, n.BacklogHeld = true, v.Replication.Backlog.Size, v.Replication.Backlog.History
			n.ReplOffset = v.Replication.MasterReplOffset
		}
		n.ErrorReplies = v.ErrorReplies
		n.Syncs = v.Syncs
		n.Clients = v.Clients
		if !v.Replication.IsMaster {
			n.Sync = v.Replication.Sync
		}
		n.Zone = v.Zone
		if v.MigrationsRead {
			n.Migrations = &NodeMigrations{Jobs: v.Migrations}
		}
	}
	return n
}

// linkReplicas counts each master's healthy replicas and reads each
// replica's replication lag from its master's view: both need the
// master's entry.
func linkReplicas(snap *Snapshot, index map[string]int, merged map[string]*redisproto.MergedNode[nodeView]) {
	for i := range snap.Nodes {
		r := &snap.Nodes[i]
		if r.Role != RoleReplica || r.MasterID == "" {
			continue
		}
		mi, ok := index[r.MasterID]
		if !ok {
			continue
		}
		master := &snap.Nodes[mi]
		if r.IsHealthyReplica() {
			master.HealthyReplicas++
		}
		mv := merged[r.MasterID].View
		if mv == nil || !mv.Replication.IsMaster || r.Addr == "" {
			continue
		}
		for _, ro := range mv.Replication.Replicas {
			if ro.Addr == r.Addr {
				r.HasReplicationLag = true
				r.ReplicationLagBytes = max(mv.Replication.MasterReplOffset-ro.Offset, 0)
				if mv.Replication.BacklogRead {
					r.HasPartialResync, r.PartialResync = true, mv.Replication.Backlog.resumes(ro.Offset)
				}
				break
			}
		}
	}
}

// countSlotStates counts the slots by their owner's state, and those
// whose owner has no healthy replica.
func countSlotStates(snap *Snapshot, index map[string]int, owners *[redisproto.SlotCount]string) {
	for _, owner := range owners {
		if owner == "" {
			snap.SlotsUnassigned++
			continue
		}
		master := &snap.Nodes[index[owner]]
		switch master.State {
		case NodeStateFail:
			snap.SlotsFail++
		case NodeStatePFail:
			snap.SlotsPFail++
		default:
			snap.SlotsOK++
		}
		if master.HealthyReplicas == 0 {
			snap.SlotsWithoutReplica++
		}
	}
}

// clusterStateOK is false as soon as one reachable master that serves slots
// reports cluster_state:fail. An empty master's state is its own (see
// redisproto.Merge); replicas and empty masters only decide when no slot-serving
// master was reached.
func clusterStateOK(snap *Snapshot, merged map[string]*redisproto.MergedNode[nodeView]) bool {
	reachedMaster := false
	for _, n := range snap.Nodes {
		if n.Role != RoleMaster || !n.Reachable || n.Slots == 0 {
			continue
		}
		reachedMaster = true
		if !merged[n.ID].View.Info.StateOK {
			return false
		}
	}
	if reachedMaster {
		return true
	}
	for _, n := range snap.Nodes {
		if n.Reachable && !merged[n.ID].View.Info.StateOK {
			return false
		}
	}
	return true
}

// slotRanges turns the slot map into runs of consecutive slots with the
// same owner ("" for unassigned), in slot order.
func slotRanges(owners *[redisproto.SlotCount]string) []SlotRange {
	var runs []SlotRange
	for slot, owner := range owners {
		if n := len(runs); n > 0 && runs[n-1].Owner == owner {
			runs[n-1].Last = slot
			continue
		}
		runs = append(runs, SlotRange{First: slot, Last: slot, Owner: owner})
	}
	return runs
}
