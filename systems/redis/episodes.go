package redis

import (
	"slices"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/episode"
)

// Episodes are the timed conditions of a cluster, carried from snapshot to
// snapshot by carryEpisodes.
type Episodes struct {
	// Failovers holds, by master node ID, the masters that are flagged
	// PFAIL or FAIL and not yet replaced.
	Failovers map[string]FailoverEpisode
	// SlotsUnserved is open while some slot has no owner or a failing one.
	SlotsUnserved *episode.Open

	// FailoverSeconds and SlotsUnservedSeconds count the durations of the
	// episodes that ended while this exporter watched (empty from the
	// exporter's first snapshot on).
	FailoverSeconds      *episode.Histogram
	SlotsUnservedSeconds *episode.Histogram
}

// FailoverEpisode is a failing master waiting to be replaced.
type FailoverEpisode struct {
	episode.Open
	// Replicas are the IDs of every node seen replicating the master
	// during the episode: one of them taking its slots ends it.
	Replicas []string
}

// OldestFailover is the oldest open failover episode, ok false when none.
func (e *Episodes) OldestFailover() (oldest episode.Open, ok bool) {
	for _, f := range e.Failovers {
		if !ok || f.Since.Before(oldest.Since) {
			oldest, ok = f.Open, true
		}
	}
	return oldest, ok
}

// failing reports whether some other node flags the node as unreachable.
func failing(n *Node) bool { return n.State == NodeStatePFail || n.State == NodeStateFail }

// carryProbes dates each node's run of failed queries by the exporter
// (Node.ProbeFailedSince) from prev's: the evidence the outage clock
// backdates failovers and unserved slots to.
func carryProbes(prev, next *Snapshot) {
	probedAt := next.ProbedAt
	if probedAt.IsZero() {
		probedAt = next.ReadAt
	}
	before := map[string]*Node{}
	if prev != nil {
		for i := range prev.Nodes {
			before[prev.Nodes[i].ID] = &prev.Nodes[i]
		}
	}
	for i := range next.Nodes {
		n := &next.Nodes[i]
		if n.Addr == "" {
			continue // never queried: no probe to date
		}
		var sinceBefore time.Time
		p, seen := before[n.ID]
		reachedBefore := seen && p.Reachable
		if seen {
			sinceBefore = p.ProbeFailedSince
		}
		n.ProbeFailedSince = episode.FailedSince(seen, reachedBefore, sinceBefore, n.Reachable, probedAt)
	}
}

// failureEvidence returns the first failed probe of node n that explains a
// failure the cluster confirms in next (zero when none): its current run
// of failed queries, or the one that ended in this very refresh.
func failureEvidence(prev *Snapshot, n *Node) time.Time {
	if prev != nil {
		for i := range prev.Nodes {
			if p := &prev.Nodes[i]; p.ID == n.ID {
				return episode.Evidence(n.ProbeFailedSince, p.ProbeFailedSince, p.Reachable)
			}
		}
	}
	return n.ProbeFailedSince
}

// annotateFirstFailures gives the events that report a node flagged PFAIL
// or FAIL the exporter's first failed probe of it, when that came first.
func annotateFirstFailures(prev, next *Snapshot) {
	for i := range next.Events.Events {
		ev := &next.Events.Events[i]
		if ev.Kind != EventNodePFail && ev.Kind != EventNodeFail {
			continue
		}
		for j := range next.Nodes {
			if n := &next.Nodes[j]; n.ID == ev.Subject.NodeID {
				if first := episode.Backdate(ev.Time, failureEvidence(prev, n), next.backdateLimit); first.Before(ev.Time) {
					ev.FirstFailure = first
				}
				break
			}
		}
	}
}

// carryEpisodes times failovers and unserved slots in next against prev
// (nil for the exporter's first snapshot, whose open conditions are
// episodes of unknown start).
//
// A failover episode begins when the exporter's queries of a master that
// owns slots first failed, once the cluster confirms it by flagging the
// master PFAIL or FAIL (episode.Backdate; without a failed query, at the
// first refresh that sees the flag), and ends at the first refresh that sees
// one of its replicas promoted: a master, not failing, owning slots. A
// master that recovers before any replica takes over ends its episode
// without a failover, so nothing is observed; the unserved-slots episode
// still records the outage.
//
// A failover can also be flagged and promoted between two refreshes, when
// the cluster takes less than a refresh from its flag to the promotion:
// the previous snapshot shows the master unflagged, this one shows it
// flagged and a replica serving its slots. It is observed from the
// exporter's first failed query of the master, as any other failover, or,
// when no query failed before the previous refresh, from that refresh (an
// upper bound at the resolution of one refresh); so are the unserved
// slots it caused. Leaving it out would leave the failover counted but
// never timed, the dashboard's "time to recover" empty after the fastest
// failovers.
func carryEpisodes(prev, next *Snapshot) {
	var before Episodes
	if prev != nil {
		before = prev.Episodes
	}
	// Only the exporter's first snapshot cannot tell when a condition began.
	first := prev == nil
	now := next.ReadAt
	byID := make(map[string]*Node, len(next.Nodes))
	for i := range next.Nodes {
		byID[next.Nodes[i].ID] = &next.Nodes[i]
	}

	next.Episodes.FailoverSeconds = before.FailoverSeconds
	next.Episodes.SlotsUnservedSeconds = before.SlotsUnservedSeconds
	if first {
		// Served at zero from the start: two series per cluster, and the
		// first failover is then an increase Prometheus sees.
		next.Episodes.FailoverSeconds = episode.Empty()
		next.Episodes.SlotsUnservedSeconds = episode.Empty()
	}
	failovers := carryFailovers(before.Failovers, next, byID)
	var between []time.Time
	if !first {
		between = failoversBetween(prev, next, byID, before.Failovers)
		for _, since := range between {
			next.Episodes.FailoverSeconds = next.Episodes.FailoverSeconds.ObserveDuration(now.Sub(since))
		}
	}
	openFailovers(prev, next, failovers)
	if len(failovers) > 0 {
		next.Episodes.Failovers = failovers
	}
	carrySlotsUnserved(prev, next, before.SlotsUnserved, between)
}

// replicasOf lists the IDs of next's replicas of the master.
func replicasOf(next *Snapshot, masterID string) []string {
	var ids []string
	for i := range next.Nodes {
		if next.Nodes[i].Role == RoleReplica && next.Nodes[i].MasterID == masterID {
			ids = append(ids, next.Nodes[i].ID)
		}
	}
	return ids
}

// carryFailovers carries the failovers open before (by master ID) that
// are still under way in next, adding the master's new replicas to each;
// those a replica ended by taking over are observed in
// next.Episodes.FailoverSeconds.
func carryFailovers(before map[string]FailoverEpisode, next *Snapshot, byID map[string]*Node) map[string]FailoverEpisode {
	now := next.ReadAt
	failovers := map[string]FailoverEpisode{}
	for id, f := range before {
		promoted := slices.ContainsFunc(f.Replicas, func(rid string) bool {
			r := byID[rid]
			return r != nil && r.Role == RoleMaster && r.Slots > 0 && !failing(r)
		})
		if promoted {
			if f.StartSeen {
				next.Episodes.FailoverSeconds = next.Episodes.FailoverSeconds.ObserveDuration(f.Age(now))
			}
			continue
		}
		m := byID[id]
		if m == nil || (m.Role == RoleMaster && !failing(m) && m.Slots > 0) || m.Role == RoleReplica {
			// Recovered in place, rejoined as a replica, or forgotten by
			// the cluster without a replica taking over: no failover to time.
			continue
		}
		for _, rid := range replicasOf(next, id) {
			if !slices.Contains(f.Replicas, rid) {
				f.Replicas = append(slices.Clip(f.Replicas), rid)
			}
		}
		failovers[id] = f
	}
	return failovers
}

// openFailovers opens a failover in failovers for each failing master of
// next that owns slots and has none open yet.
func openFailovers(prev, next *Snapshot, failovers map[string]FailoverEpisode) {
	first := prev == nil
	now := next.ReadAt
	for i := range next.Nodes {
		n := &next.Nodes[i]
		if n.Role != RoleMaster || n.Slots == 0 || !failing(n) {
			continue
		}
		if _, open := failovers[n.ID]; open {
			continue
		}
		replicas := replicasOf(next, n.ID)
		if prev != nil {
			// A replica promoted in the very refresh that first saw its
			// master fail is already listed as a master now.
			for j := range prev.Nodes {
				if p := &prev.Nodes[j]; p.Role == RoleReplica && p.MasterID == n.ID && !slices.Contains(replicas, p.ID) {
					replicas = append(replicas, p.ID)
				}
			}
		}
		// A master the previous snapshot did not know may have been
		// failing for a while.
		known := prev != nil && slices.ContainsFunc(prev.Nodes, func(p Node) bool { return p.ID == n.ID })
		since := now
		if !first && known {
			since = episode.Backdate(now, failureEvidence(prev, n), next.backdateLimit)
		}
		failovers[n.ID] = FailoverEpisode{Open: episode.Open{Since: since, StartSeen: !first && known}, Replicas: replicas}
	}
}

// carrySlotsUnserved carries, opens or ends the unserved-slots episode
// (before is prev's); between holds the starts of the failovers flagged
// and promoted between prev and next.
func carrySlotsUnserved(prev, next *Snapshot, before *episode.Open, between []time.Time) {
	first := prev == nil
	now := next.ReadAt
	unserved := next.SlotsPFail+next.SlotsFail+next.SlotsUnassigned > 0
	switch {
	case unserved && before != nil:
		next.Episodes.SlotsUnserved = before
	case unserved:
		next.Episodes.SlotsUnserved = &episode.Open{Since: unservedSince(prev, next), StartSeen: !first}
	case before != nil && before.StartSeen:
		next.Episodes.SlotsUnservedSeconds = next.Episodes.SlotsUnservedSeconds.ObserveDuration(before.Age(now))
	case before == nil && len(between) > 0:
		next.Episodes.SlotsUnservedSeconds = next.Episodes.SlotsUnservedSeconds.ObserveDuration(now.Sub(slices.MinFunc(between, time.Time.Compare)))
	}
}

// unservedSince is when slots that next sees unserved stopped being
// served: the earliest first failed probe of a failing master that owns
// slots, once the cluster confirms it, or next's refresh. Unassigned slots
// have no node to probe; they date from the refresh that sees them.
func unservedSince(prev, next *Snapshot) time.Time {
	since := next.ReadAt
	if prev == nil {
		return since
	}
	for i := range next.Nodes {
		n := &next.Nodes[i]
		if n.Role != RoleMaster || n.Slots == 0 || !failing(n) {
			continue
		}
		if start := episode.Backdate(next.ReadAt, failureEvidence(prev, n), next.backdateLimit); start.Before(since) {
			since = start
		}
	}
	return since
}

// failoversBetween returns when each failover flagged and promoted between
// prev and next began: for each master that prev saw unflagged and serving
// slots, with no failover episode open, and that next shows flagged PFAIL
// or FAIL while one of prev's replicas of it is a healthy master serving
// slots, the exporter's first failed query of the master (episode.Backdate)
// or, when none came before prev's refresh, that refresh. The flag tells a
// failover from a manual one (CLUSTER FAILOVER), after which the old
// master is a healthy replica.
func failoversBetween(prev, next *Snapshot, now map[string]*Node, open map[string]FailoverEpisode) []time.Time {
	var starts []time.Time
	for i := range prev.Nodes {
		old := &prev.Nodes[i]
		if old.Role != RoleMaster || old.Slots == 0 || failing(old) {
			continue
		}
		if _, ok := open[old.ID]; ok {
			continue
		}
		m := now[old.ID]
		if m == nil || !failing(m) {
			continue
		}
		promoted := slices.ContainsFunc(prev.Nodes, func(r Node) bool {
			p := now[r.ID]
			return r.Role == RoleReplica && r.MasterID == old.ID &&
				p != nil && p.Role == RoleMaster && p.Slots > 0 && !failing(p)
		})
		if !promoted {
			continue
		}
		// The cluster took less than a refresh from the flag to the
		// promotion, but the master may have stopped answering refreshes
		// before the flag (cluster-node-timeout): those failed queries
		// date the outage, as they would have had a refresh seen the flag.
		since := prev.ReadAt
		if first := episode.Backdate(next.ReadAt, failureEvidence(prev, m), next.backdateLimit); first.Before(since) {
			since = first
		}
		starts = append(starts, since)
	}
	return starts
}
