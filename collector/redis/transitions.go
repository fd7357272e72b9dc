package redis

// carryTransitions carries the counters of prev forward into next and adds
// the transitions between the two: a node whose role changed, and a replica
// that became a master owning slots (a failover, automatic or manual). It is
// called with prev == nil for the first snapshot, which starts every counter
// at zero. A node that left the topology takes its counter with it; if it
// comes back its counter restarts at zero, which Prometheus reads as a
// counter reset.
func carryTransitions(prev, next *Snapshot) {
	if prev == nil {
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
}
