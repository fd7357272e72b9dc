package sentinel

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// The event kinds a Sentinel deployment's refreshes record.
const (
	EventSDown               events.Kind = "sentinel_sdown"
	EventODown               events.Kind = "sentinel_odown"
	EventFailoverStarted     events.Kind = "sentinel_failover_started"
	EventSwitchMaster        events.Kind = "sentinel_switch_master"
	EventReplicaReconfigured events.Kind = "sentinel_replica_reconfigured"
	EventSentinelLost        events.Kind = "sentinel_lost"
	EventSentinelBack        events.Kind = "sentinel_back"
	EventSentinelAdded       events.Kind = "sentinel_added"
	EventDisagreementStarted events.Kind = "sentinel_disagreement_started"
	EventDisagreementEnded   events.Kind = "sentinel_disagreement_ended"
	EventMasterWritable      events.Kind = "sentinel_master_writable"
	EventMasterNotWritable   events.Kind = "sentinel_master_not_writable"
)

// carry dates the nodes' failed probes, steps the outage episodes and
// records the transitions from prev to next, then judges the failure
// budget of next.
func carry(prev, next *Snapshot, cfg settings.Set) {
	carrySettled(prev, next)
	carryProbes(prev, next)
	stepEpisodes(prev, next, cfg.BackdateLimit)
	if prev != nil {
		recordTransitions(prev, next)
	}
	next.Budget = assessBudget(next, cfg.FailureBudget)
}

// carrySettled carries each master's last agreed address into next.
func carrySettled(prev, next *Snapshot) {
	for i := range next.Masters {
		m := &next.Masters[i]
		switch {
		case !m.Disagree:
			m.Settled = m.Addr
		case prev != nil && prev.master(m.Name) != nil:
			m.Settled = prev.master(m.Name).Settled
		}
	}
}

// carryProbes dates each data node's run of failed reads from prev's.
func carryProbes(prev, next *Snapshot) {
	for i := range next.Masters {
		m := &next.Masters[i]
		var pm *Master
		if prev != nil {
			pm = prev.master(m.Name)
		}
		for j := range m.Nodes {
			n := &m.Nodes[j]
			var p *Node
			if pm != nil {
				p = pm.node(n.Addr)
			}
			var since time.Time
			if p != nil {
				since = p.ProbeFailedSince
			}
			n.ProbeFailedSince = episode.FailedSince(p != nil, p != nil && p.Read, since, n.Read, next.ProbedAt)
		}
	}
}

// writable reports whether clients can write to the master the sentinels
// name: no sentinel read flags the instance at that address down, and the
// node there, when read, says it is a master. During a failover the
// sentinels name the promoted replica while their flags are still the old
// master's; once it says it is a master, clients writing to it succeed. A
// master the exporter alone cannot read is not an outage (its own
// network, not the deployment's).
func (m *Master) writable() bool {
	if m.flagged(func(r Report) bool { return r.Instance == m.Addr && (r.SDown || r.ODown) }) {
		return false
	}
	n := m.node(m.Addr)
	return n == nil || !n.Read || n.Role == roleMaster
}

// stepEpisodes carries the masters' outages into next: an outage begins
// when the master stops being writable, backdated to the exporter's first
// failed read of it, and ends when the master the sentinels name (the
// same or a promoted replica) is writable again; an outage that ends on
// another master is a failover, and its length is observed.
func stepEpisodes(prev, next *Snapshot, limit time.Duration) {
	var before Episodes
	if prev != nil {
		before = prev.Episodes
	}
	e := Episodes{Open: map[string]Outage{}, FailoverSeconds: map[string]*episode.Histogram{}, Failovers: map[string]uint64{}}
	for k, v := range before.FailoverSeconds {
		e.FailoverSeconds[k] = v
	}
	for k, v := range before.Failovers {
		e.Failovers[k] = v
	}
	now := next.ReadAt
	for i := range next.Masters {
		m := &next.Masters[i]
		var pm *Master
		if prev != nil {
			pm = prev.master(m.Name)
		}
		if switched(pm, m) {
			e.Failovers[m.Name]++
		}
		if e.FailoverSeconds[m.Name] == nil {
			e.FailoverSeconds[m.Name] = episode.Empty()
		}
		o, open := before.Open[m.Name]
		switch {
		case !m.writable() && !open:
			from := m.Settled
			if pm != nil && pm.Settled != "" {
				from = pm.Settled
			}
			e.Open[m.Name] = Outage{Open: episode.Open{Since: begin(pm, m, from, now, limit), StartSeen: pm != nil}, From: from}
		case !m.writable():
			e.Open[m.Name] = o
		case open && m.Up && m.Addr != o.From && o.StartSeen:
			e.FailoverSeconds[m.Name] = e.FailoverSeconds[m.Name].Observe(now.Sub(o.Since).Seconds())
		case open && !m.Up:
			e.Open[m.Name] = o // writable by the sentinels' word, not yet read as a master
		}
	}
	next.Episodes = e
}

// switched reports whether the sentinels, agreeing, moved the master to
// another address between pm and m.
func switched(pm, m *Master) bool {
	return pm != nil && pm.Settled != "" && m.Settled != "" && pm.Settled != m.Settled
}

// begin dates an outage of the master at from that next confirms at now:
// the exporter's first failed read of it, when recent enough.
func begin(pm, m *Master, from string, now time.Time, limit time.Duration) time.Time {
	var failedNow, failedBefore time.Time
	reachedBefore := true
	if n := m.node(from); n != nil {
		failedNow = n.ProbeFailedSince
	}
	if pm != nil {
		if p := pm.node(from); p != nil {
			failedBefore, reachedBefore = p.ProbeFailedSince, p.Read
		}
	}
	return episode.Backdate(now, episode.Evidence(failedNow, failedBefore, reachedBefore), limit)
}

// recordTransitions records what changed between two refreshes.
func recordTransitions(prev, next *Snapshot) {
	at := next.ReadAt
	was := map[string]Sentinel{}
	for _, s := range prev.Sentinels {
		was[s.Addr] = s
	}
	for _, s := range next.Sentinels {
		p, seen := was[s.Addr]
		subject := events.Subject{Address: s.Addr}
		switch {
		case !seen:
			next.Events.Add(at, EventSentinelAdded, subject, "", readText(s.Read))
		case p.Read && !s.Read:
			next.Events.Add(at, EventSentinelLost, subject, "read", s.Error)
		case !p.Read && s.Read:
			next.Events.Add(at, EventSentinelBack, subject, "not read", "read")
		}
	}
	for i := range next.Masters {
		m := &next.Masters[i]
		if pm := prev.master(m.Name); pm != nil {
			recordMaster(&next.Events, at, pm, m)
		}
	}
}

// recordMaster records one master's transitions.
func recordMaster(list *events.List, at time.Time, pm, m *Master) {
	subject := events.Subject{NodeID: m.Name}
	if switched(pm, m) {
		list.Add(at, EventSwitchMaster, subject, pm.Settled, m.Settled)
	}
	rising := func(kind events.Kind, f func(Report) bool) {
		if m.flagged(f) && !pm.flagged(f) {
			list.Add(at, kind, subject, "", m.Addr)
		}
	}
	rising(EventSDown, func(r Report) bool { return r.SDown })
	rising(EventODown, func(r Report) bool { return r.ODown })
	rising(EventFailoverStarted, func(r Report) bool { return r.Failover })
	switch {
	case m.Disagree && !pm.Disagree:
		list.Add(at, EventDisagreementStarted, subject, pm.Addr, reportedAddrs(m))
	case !m.Disagree && pm.Disagree:
		list.Add(at, EventDisagreementEnded, subject, reportedAddrs(pm), m.Addr)
	}
	switch {
	case pm.writable() && !m.writable():
		list.Add(at, EventMasterNotWritable, subject, pm.Addr, m.Addr)
	case !pm.writable() && m.writable():
		list.Add(at, EventMasterWritable, subject, pm.Addr, m.Addr)
	}
	for _, n := range m.Nodes {
		p := pm.node(n.Addr)
		if p == nil || !p.Read || !n.Read {
			continue
		}
		if before, after := roleText(p), roleText(&n); before != after {
			list.Add(at, EventReplicaReconfigured, events.Subject{Address: n.Addr}, before, after)
		}
	}
}

// roleText says what a node is: "master", "replica of ADDR".
func roleText(n *Node) string {
	if n.Role == roleReplica {
		return "replica of " + n.MasterAddr
	}
	return n.Role
}

func readText(read bool) string {
	if read {
		return "read"
	}
	return "not read"
}

// reportedAddrs lists the master addresses the sentinels report, each
// with the sentinels that report it: "10.0.0.1:6379 (2), 10.0.0.2:6379 (1)".
func reportedAddrs(m *Master) string {
	count := map[string]int{}
	for _, r := range m.Reports {
		count[r.Addr]++
	}
	addrs := make([]string, 0, len(count))
	for a := range count {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	parts := make([]string, len(addrs))
	for i, a := range addrs {
		parts[i] = a + " (" + strconv.Itoa(count[a]) + ")"
	}
	return strings.Join(parts, ", ")
}
