package redis

import (
	"strconv"

	"github.com/failover-exporter/failover_exporter/collector/events"
)

// carryTransitions carries the counters of prev forward into next and adds
// the transitions between the two: a node whose role changed, and a replica
// that became a master owning slots (a failover, automatic or manual). It is
// called with prev == nil for the first snapshot, which starts every counter
// at zero. A node that left the topology takes its counter with it; if it
// comes back its counter restarts at zero, which Prometheus reads as a
// counter reset.
//
// It also times failover and unserved-slot episodes (carryEpisodes), which
// the first snapshot starts, and lists every transition as an event in
// next.Events (none for the first snapshot).
func carryTransitions(prev, next *Snapshot) {
	carryProbes(prev, next)
	carryEpisodes(prev, next)
	carryStaleRouting(prev, next)
	if prev == nil {
		carryMigrations(nil, next)
		return
	}
	next.Failovers = prev.Failovers
	before := make(map[string]*Node, len(prev.Nodes))
	for i := range prev.Nodes {
		before[prev.Nodes[i].ID] = &prev.Nodes[i]
	}
	for i := range next.Nodes {
		n := &next.Nodes[i]
		p, ok := before[n.ID]
		if !ok {
			continue
		}
		n.RoleChanges = p.RoleChanges
		if p.Role == n.Role {
			continue
		}
		n.RoleChanges++
		// A promoted replica takes over its old master's slots at once (it
		// bumps its config epoch to win them), so owning slots is what tells a
		// failover from a replica merely detached to an empty master.
		if p.Role == RoleReplica && n.Role == RoleMaster && n.Slots > 0 {
			next.Failovers++
		}
	}
	transitionEvents(prev, next)
	carryMigrations(prev, next)
	annotateFirstFailures(prev, next)
}

// transitionEvents lists the transitions between prev and next as events:
// cluster state first, then node by node in next's order, then nodes that
// left the topology, then foreign nodes that appeared or went.
func transitionEvents(prev, next *Snapshot) {
	at := next.ReadAt
	if prev.StateOK != next.StateOK {
		next.Events.Add(at, EventClusterState, events.Subject{}, clusterStateText(prev.StateOK), clusterStateText(next.StateOK))
	}
	before := make(map[string]*Node, len(prev.Nodes))
	for i := range prev.Nodes {
		before[prev.Nodes[i].ID] = &prev.Nodes[i]
	}
	seen := make(map[string]bool, len(next.Nodes))
	for i := range next.Nodes {
		n := &next.Nodes[i]
		seen[n.ID] = true
		subject := events.NodeSubject(n.ID, n.Addr)
		p, ok := before[n.ID]
		if !ok {
			next.Events.Add(at, EventNodeJoined, subject, "", roleText(n))
			continue
		}
		if p.State != n.State {
			kind := EventNodeState // handshake, noaddr
			switch n.State {
			case NodeStatePFail:
				kind = EventNodePFail
			case NodeStateFail:
				kind = EventNodeFail
			case NodeStateOK:
				kind = EventNodeRecovered
			}
			next.Events.Add(at, kind, subject, string(p.State), string(n.State))
		}
		if p.Role != n.Role || p.MasterID != n.MasterID {
			kind := EventRoleChange
			if p.Role == RoleReplica && n.Role == RoleMaster && n.Slots > 0 {
				kind = EventPromotion
			}
			next.Events.Add(at, kind, subject, roleText(p), roleText(n))
		}
		if p.Slots != n.Slots {
			next.Events.Add(at, EventSlotsMoved, subject, strconv.Itoa(p.Slots), strconv.Itoa(n.Slots))
		}
	}
	for i := range prev.Nodes {
		if p := &prev.Nodes[i]; !seen[p.ID] {
			next.Events.Add(at, EventNodeLeft, events.NodeSubject(p.ID, p.Addr), roleText(p), "")
		}
	}
	foreignBefore := make(map[string]bool, len(prev.Foreign))
	for _, f := range prev.Foreign {
		foreignBefore[f.ID] = true
	}
	foreignNow := make(map[string]bool, len(next.Foreign))
	for _, f := range next.Foreign {
		foreignNow[f.ID] = true
		if !foreignBefore[f.ID] {
			next.Events.Add(at, EventForeignNodeSeen, events.NodeSubject(f.ID, f.Addr), "", string(f.Reason))
		}
	}
	for _, f := range prev.Foreign {
		if !foreignNow[f.ID] {
			next.Events.Add(at, EventForeignNodeGone, events.NodeSubject(f.ID, f.Addr), string(f.Reason), "")
		}
	}
}

func clusterStateText(ok bool) string {
	if ok {
		return "ok"
	}
	return "fail"
}

// roleText is a node's role as events show it: "master", or "replica of ID".
func roleText(n *Node) string {
	if n.Role == RoleReplica {
		return "replica of " + n.MasterID
	}
	return string(n.Role)
}
