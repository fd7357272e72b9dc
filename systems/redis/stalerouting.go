package redis

import (
	"fmt"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/events"
)

// Clients on a stale topology (issue 46): a client learns of a new master
// only from the MOVED replies of the old one, so one that misses or
// ignores them keeps sending the demoted node keys of slots it no longer
// serves, for seconds or until it restarts. The node counts those replies
// (INFO errorstats); after a failover, the exporter watches the demoted
// master's count and times how long after the promotion clients still
// reached it.

// staleRoutingQuiet is how long a demoted node must take no misrouted
// command, while the exporter reads it, before its stale-routing episode
// ends (or, with none, before the exporter stops watching it). A minute:
// clients that write less often than that are not told apart from none.
var staleRoutingQuiet = time.Minute

// StaleRouting is a demoted master the exporter watches for clients still
// routed to it.
type StaleRouting struct {
	// DemotedAt is the refresh that first saw the node lose its slots to a
	// promoted replica (or rejoin as a replica).
	DemotedAt time.Time
	// Redirections counts the node's MOVED and READONLY replies since
	// DemotedAt, as far as the exporter read them.
	Redirections uint64
	// LastRedirectionAt is the refresh that last saw the count grow; zero
	// while it has not since DemotedAt.
	LastRedirectionAt time.Time
	// counted is the node's counter (MOVED + READONLY) at the last refresh
	// that read it; read is false until one did since DemotedAt.
	counted uint64
	read    bool
	// quietSince is when the exporter last saw the count grow, or first
	// read the node after its demotion: the quiet window runs from there,
	// only while the node is read.
	quietSince time.Time
}

// Open reports whether clients were seen routed to the node: the
// episode is open until the node stays quiet for staleRoutingQuiet.
func (s *StaleRouting) Open() bool { return !s.LastRedirectionAt.IsZero() }

// Stale is how long after its demotion clients were last seen routed to
// the node.
func (s *StaleRouting) Stale() time.Duration { return s.LastRedirectionAt.Sub(s.DemotedAt) }

// misrouted is what a node counts against clients on a stale topology:
// MOVED (a key of a slot it does not serve) and READONLY (a write sent to
// a replica); ok is false when the node's counters were not read.
func misrouted(n *Node) (count uint64, ok bool) {
	if !n.Reachable || n.ErrorReplies == nil {
		return 0, false
	}
	return n.ErrorReplies["MOVED"] + n.ErrorReplies["READONLY"], true
}

// demoted reports whether a node that was a master serving slots in prev
// is now a replica, or a failing master without slots (its slots went to a
// promoted replica). A healthy master whose slots were all resharded away
// is not: MOVED replies are what a reshard makes clients learn from.
func demoted(p, n *Node) bool {
	return p.Role == RoleMaster && p.Slots > 0 && (n.Role == RoleReplica || n.Slots == 0 && failing(n))
}

// carryStaleRouting carries the watched demoted masters from prev to next,
// starts watching the masters next shows demoted, and ends the episodes of
// those quiet for staleRoutingQuiet, observing them in
// next.StaleRoutingSeconds. Events say when clients are first seen on a
// demoted node and when they are seen no more.
func carryStaleRouting(prev, next *Snapshot) {
	if prev == nil {
		next.StaleRoutingSeconds = episode.Empty()
		return
	}
	next.StaleRoutingSeconds = prev.StaleRoutingSeconds
	before := make(map[string]*Node, len(prev.Nodes))
	for i := range prev.Nodes {
		before[prev.Nodes[i].ID] = &prev.Nodes[i]
	}
	watched := map[string]*StaleRouting{}
	for i := range next.Nodes {
		n := &next.Nodes[i]
		w := prev.StaleRouting[n.ID]
		if p := before[n.ID]; p != nil && demoted(p, n) {
			w = &StaleRouting{DemotedAt: next.ReadAt}
		}
		if w == nil {
			continue
		}
		if n.Role == RoleMaster && n.Slots > 0 {
			// Serving slots again: its MOVED replies no longer tell a
			// stale client from a migration.
			endStaleRouting(next, n, w)
			continue
		}
		w = w.advance(next, n)
		if next.ReadAt.Sub(w.quietSince) >= staleRoutingQuiet && w.read {
			endStaleRouting(next, n, w)
			continue
		}
		watched[n.ID] = w
	}
	if len(watched) > 0 {
		next.StaleRouting = watched
	}
}

// advance is w after next's reading of node n.
func (w *StaleRouting) advance(next *Snapshot, n *Node) *StaleRouting {
	count, ok := misrouted(n)
	if !ok {
		return w // not read (down, restarting): the quiet window waits
	}
	c := *w
	switch {
	case !c.read:
		// The first reading since the demotion: clients may have been
		// misrouted between the demotion and now only if the node kept
		// its counters (it did not restart) and was read before; the
		// count starts here.
		c.read, c.counted, c.quietSince = true, count, next.ReadAt
		return &c
	case count < c.counted:
		// The node restarted (or CONFIG RESETSTAT): what it counts now
		// came after.
		c.counted = 0
	}
	if count > c.counted {
		if !c.Open() {
			text := fmt.Sprintf("clients still routing to the demoted node: %d MOVED or READONLY replies, %s after the promotion", count-c.counted, next.ReadAt.Sub(c.DemotedAt).Round(time.Second))
			if n.Clients != nil {
				text += "; " + n.Clients.String()
			}
			next.Events.Add(next.ReadAt, EventStaleRoutingStarted, events.NodeSubject(n.ID, n.Addr), "", text)
		}
		c.Redirections += count - c.counted
		c.LastRedirectionAt, c.quietSince = next.ReadAt, next.ReadAt
	}
	c.counted = count
	return &c
}

// staleRoutingAddrs are the addresses of the demoted nodes prev watches
// for stale routing: the nodes whose clients a refresh lists.
func staleRoutingAddrs(prev *Snapshot) map[string]bool {
	if prev == nil || len(prev.StaleRouting) == 0 {
		return nil
	}
	addrs := make(map[string]bool, len(prev.StaleRouting))
	for i := range prev.Nodes {
		if prev.StaleRouting[prev.Nodes[i].ID] != nil {
			addrs[prev.Nodes[i].Addr] = true
		}
	}
	return addrs
}

// endStaleRouting ends w's episode, if clients were seen on the node.
func endStaleRouting(next *Snapshot, n *Node, w *StaleRouting) {
	if !w.Open() {
		return
	}
	next.StaleRoutingSeconds = next.StaleRoutingSeconds.ObserveDuration(w.Stale())
	next.Events.Add(next.ReadAt, EventStaleRoutingEnded, events.NodeSubject(n.ID, n.Addr),
		fmt.Sprintf("%d MOVED or READONLY replies since the promotion", w.Redirections),
		fmt.Sprintf("none since %s after the promotion", w.Stale().Round(time.Second)))
}
