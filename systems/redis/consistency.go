package redis

import (
	"time"

	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// Consistency: do the members agree, or are they merely converging?
//
// Redis Cluster nodes disagree by design for a while: during a reshard a
// slot has one owner in some views and another in the rest until CLUSTER
// SETSLOT ... NODE has reached everyone, and after any config change gossip
// needs some time to spread it. Neither is a split brain. A disagreement is
// a conflict only when it is not explained by a migration in progress and
// has outlived disputeSettleTime.

// disputeSettleTime is how long the members may disagree about a slot's
// owner, or about whether a node has failed, before it counts as a
// conflict. Gossip spreads a config change in well under a second on a
// healthy cluster; 15 s is Redis's default cluster-node-timeout, the time
// after which the cluster itself acts on a silent node.
const disputeSettleTime = 15 * time.Second

// disputeKey names one thing the members disagree about: a slot's owner
// (NodeID empty) or whether node NodeID has failed (Slot -1).
type disputeKey struct {
	Slot   int
	NodeID string
}

// findDisputes lists the disputes that a migration does not explain, and
// counts the slots some member has in migrating or importing state (only a
// node itself reports those, so only reached members count).
func findDisputes(views []nodeView, merged map[string]*redisproto.MergedNode[nodeView], disputedSlots []int) (map[disputeKey]disputeAge, int) {
	// inMigration: slots in migrating or importing state, or in an atomic
	// slot migration job in progress (Valkey 9.0+, Redis 8.4+); explained
	// also holds the slots of jobs that just succeeded (markMigrationSlots).
	var inMigration, explained [redisproto.SlotCount]bool
	mark := func(moves []redisproto.SlotMove) {
		for _, mv := range moves {
			if mv.Slot >= 0 && mv.Slot < redisproto.SlotCount {
				inMigration[mv.Slot], explained[mv.Slot] = true, true
			}
		}
	}
	for i := range views {
		self := views[i].Self()
		mark(self.Migrating)
		mark(self.Importing)
		markMigrationSlots(&views[i], &inMigration, &explained)
	}
	slotsInMigration := 0
	for _, in := range inMigration {
		if in {
			slotsInMigration++
		}
	}
	disputes := map[disputeKey]disputeAge{}
	for _, slot := range disputedSlots {
		if !explained[slot] {
			disputes[disputeKey{Slot: slot}] = disputeAge{}
		}
	}
	for id, m := range merged {
		if m.FailSeen && m.NotFailSeen {
			disputes[disputeKey{Slot: -1, NodeID: id}] = disputeAge{}
		}
	}
	return disputes, slotsInMigration
}

// disputeGap is how long a dispute may go unseen and still keep its age:
// a refresh that misses one side of it (a slow node, a dropped query) must
// not restart the settling clock of a lasting conflict.
const disputeGap = 5 * time.Second

// disputeAge is when a dispute was first seen, and last seen.
type disputeAge struct{ since, seen time.Time }

// settleDisputes dates each dispute of next from when it was first seen
// (carried over from prev, across gaps up to disputeGap) and sets
// ViewsConsistent and SlotsInConflict from those older than
// disputeSettleTime.
func settleDisputes(prev, next *Snapshot, now time.Time) {
	conflicts := 0
	for key := range next.disputes {
		age := disputeAge{since: now, seen: now}
		if prev != nil {
			if p, ok := prev.disputes[key]; ok {
				age.since = p.since
			}
		}
		next.disputes[key] = age
		if now.Sub(age.since) < disputeSettleTime {
			continue
		}
		conflicts++
		if key.NodeID == "" {
			next.SlotsInConflict++
		}
	}
	if prev != nil {
		// Unseen this time, but recently: remembered, not counted.
		for key, p := range prev.disputes {
			if _, ok := next.disputes[key]; !ok && now.Sub(p.seen) < disputeGap {
				next.disputes[key] = p
			}
		}
	}
	next.ViewsConsistent = conflicts == 0
}
