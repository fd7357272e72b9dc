package redis

import "github.com/failover-exporter/failover_exporter/systems/redis/proto"

// Membership (which of the nodes that answered belong to the cluster) is
// decided by redisproto.Merge, by the majority of the slot-serving masters;
// the nodes it leaves out are reported apart as foreign nodes and kept out
// of every member metric.

// ForeignReason says why a node that answered is not a member.
type ForeignReason = redisproto.ForeignReason

// Why a node is not a member (redisproto's reasons).
const (
	ForeignNotListed  = redisproto.ForeignNotListed
	ForeignNotListing = redisproto.ForeignNotListing
)

// ForeignNode is a node that answered the exporter but is not a member.
type ForeignNode struct {
	ID string
	// Addr is the address the exporter dialled, so a node that never learnt
	// its own address (never met) still carries one.
	Addr   string
	Reason ForeignReason
	// What the node claims about itself.
	Role  Role
	Slots int
	// KnownNodes is how many nodes the node's own CLUSTER NODES lists.
	KnownNodes int
}

// foreignNodes are the snapshot's entries for the nodes Merge found not
// to be members, in its order.
func foreignNodes(foreign []redisproto.Foreign) []ForeignNode {
	var out []ForeignNode
	for _, f := range foreign {
		role := RoleMaster
		if f.Self.Flags.Replica {
			role = RoleReplica
		}
		out = append(out, ForeignNode{ID: f.Self.ID, Addr: f.Addr, Reason: f.Reason, Role: role, Slots: f.Self.SlotCount(), KnownNodes: f.KnownNodes})
	}
	return out
}
