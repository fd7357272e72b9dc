package redis

import "net"

// Failure domains: a replica only protects its master's slots from what it
// does not share with the master. A replica on the master's host dies with
// the host; one in the master's availability zone (Valkey 8.1
// availability-zone) dies with the zone. Only healthy replicas count, as
// for replica coverage: a failed replica protects nothing anyway.

// assessFailureDomains fills, for every master with healthy replicas, how
// many are on another host and in another zone, and the cluster's slots
// whose every copy shares one host or one zone. Slots of masters without a
// healthy replica are SlotsWithoutReplica already, and are not counted here.
func assessFailureDomains(snap *Snapshot) {
	index := make(map[string]int, len(snap.Nodes))
	for i, n := range snap.Nodes {
		index[n.ID] = i
		if n.Zone != "" {
			snap.ZonesKnown = true
		}
	}
	healthy := map[string][]*Node{} // by master id
	for i := range snap.Nodes {
		r := &snap.Nodes[i]
		if r.IsHealthyReplica() {
			healthy[r.MasterID] = append(healthy[r.MasterID], r)
		}
	}
	for i := range snap.Nodes {
		m := &snap.Nodes[i]
		replicas := healthy[m.ID]
		if m.Role != RoleMaster || len(replicas) == 0 {
			continue
		}
		host := hostOf(m.Addr)
		m.HasZoneSpread = m.Zone != ""
		for _, r := range replicas {
			if host == "" || hostOf(r.Addr) != host {
				m.ReplicasOtherHost++
			}
			if r.Zone == "" {
				m.HasZoneSpread = false
			} else if r.Zone != m.Zone {
				m.ReplicasOtherZone++
			}
		}
		if !m.HasZoneSpread {
			m.ReplicasOtherZone = 0
		}
		if m.ReplicasOtherHost == 0 {
			snap.SlotsOneHost += m.Slots
		}
		if m.HasZoneSpread && m.ReplicasOtherZone == 0 {
			snap.SlotsOneZone += m.Slots
		}
	}
}

// hostOf is the IP (or name) part of "host:port", empty if there is none.
func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return host
}
