package sentinel

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// The failure budget of a Sentinel deployment: what stopping one data
// node, one sentinel or one availability zone now would do. The rules:
//
//   - a master (the one the sentinels name, or a node that says it is
//     one) is never safe to stop: clients would fail until the sentinels
//     noticed and promoted a replica, and the writes it did not pass on
//     would be lost. The answer names the replica a SENTINEL FAILOVER now
//     would promote; once it has, the old master is a replica.
//   - a replica is safe, unless it or its master was not read this
//     refresh (its role, or whether it is the one a failover needs, is
//     unknown), or, with healthy_replica_headroom, it is the master's last
//     promotable replica within caught_up_bytes.
//   - a sentinel is safe when the sentinels left could still agree the
//     master is down (quorum) and authorise a failover (a majority of the
//     sentinels known to monitor it). Sentinels the exporter could not
//     read count as already down: it cannot know they are not.
//   - nothing is safe while the sentinels disagree on the master, or flag
//     it down or failing over.

// Scopes of the Sentinel failure budget.
const (
	ScopeNode     budget.Scope = "sentinel_node"
	ScopeSentinel budget.Scope = "sentinel"
	ScopeZone     budget.Scope = "sentinel_zone"
)

// Reasons a stop is not safe, labelling the *_stop_unsafe series.
const (
	ReasonMaster         budget.Reason = "master"
	ReasonLastPromotable budget.Reason = "last_promotable_replica"
	ReasonNotRead        budget.Reason = "not_read"
	ReasonDisagree       budget.Reason = "sentinels_disagree"
	ReasonFailover       budget.Reason = "failover_in_progress"
	ReasonQuorum         budget.Reason = "quorum"
	ReasonMajority       budget.Reason = "majority"
	ReasonNotCaughtUp    budget.Reason = "not_caught_up"
)

// NodeReasons and SentinelReasons are every reason of each kind, for the
// series that carry one line per reason.
var (
	NodeReasons     = []budget.Reason{ReasonMaster, ReasonLastPromotable, ReasonNotRead, ReasonDisagree, ReasonFailover}
	SentinelReasons = []budget.Reason{ReasonQuorum, ReasonMajority, ReasonDisagree, ReasonFailover}
	ZoneReasons     = []budget.Reason{ReasonMaster, ReasonLastPromotable, ReasonNotRead, ReasonDisagree, ReasonFailover, ReasonQuorum, ReasonMajority}
)

// Budget is the failure budget of one snapshot: the answers to "may I stop
// it now?" for every data node, sentinel and zone, by address or name.
type Budget struct {
	Nodes, Sentinels, Zones map[string]budget.Answer
	// Tolerated are, by master name, how many more sentinels could be lost
	// with the rest able to reach the quorum and authorise a failover.
	Tolerated map[string]int
	// nodeMaster is the master set of each data node, by address.
	nodeMaster map[string]string
	caughtUp   int64
}

// assessBudget judges every member and zone of snap.
func assessBudget(snap *Snapshot, cfg settings.Budget) *Budget {
	b := &Budget{Nodes: map[string]budget.Answer{}, Sentinels: map[string]budget.Answer{}, Zones: map[string]budget.Answer{},
		Tolerated: map[string]int{}, nodeMaster: map[string]string{}, caughtUp: cfg.CaughtUpBound()}
	zones := map[string]*stopSet{}
	zone := func(name string) *stopSet {
		if zones[name] == nil {
			zones[name] = &stopSet{}
		}
		return zones[name]
	}
	for _, m := range snap.Masters {
		b.Tolerated[m.Name] = len(m.ReadSentinels) - needed(&m)
		for _, n := range m.Nodes {
			b.nodeMaster[n.Addr] = m.Name
			b.Nodes[n.Addr] = b.judge(snap, stopSet{nodes: []string{n.Addr}}, cfg.HealthyReplicaHeadroom, ScopeNode, n.Addr)
			if n.Zone != "" {
				zone(n.Zone).nodes = append(zone(n.Zone).nodes, n.Addr)
			}
		}
	}
	for _, s := range snap.Sentinels {
		b.Sentinels[s.Addr] = b.judge(snap, stopSet{sentinels: []string{s.Addr}}, cfg.HealthyReplicaHeadroom, ScopeSentinel, s.Addr)
		if s.Zone != "" {
			zone(s.Zone).sentinels = append(zone(s.Zone).sentinels, s.Addr)
		}
	}
	for name, set := range zones {
		a := b.judge(snap, *set, cfg.HealthyReplicaHeadroom, ScopeZone, name)
		a.Members = append(slices.Clone(set.sentinels), set.nodes...)
		sort.Strings(a.Members)
		a.Members = slices.Compact(a.Members)
		b.Zones[name] = a
	}
	return b
}

// stopSet is what a question would stop: data nodes and sentinels.
type stopSet struct{ nodes, sentinels []string }

// needed is how many sentinels a failover of m needs: the quorum to agree
// it is down, and a majority of those known to monitor it to elect the
// leader that fails it over.
func needed(m *Master) int { return max(m.Quorum, len(m.KnownSentinels)/2+1) }

// judge answers the stop of set, by the rules above, for every master.
func (b *Budget) judge(snap *Snapshot, set stopSet, headroom bool, scope budget.Scope, id string) budget.Answer {
	a := budget.Answer{System: "sentinel", Scope: scope, ID: id, Safe: true, ReadAt: snap.ReadAt, Findings: []budget.Finding{}}
	for i := range snap.Masters {
		m := &snap.Masters[i]
		stopsNode := slices.ContainsFunc(m.Nodes, func(n Node) bool { return slices.Contains(set.nodes, n.Addr) })
		stopsSentinel := slices.ContainsFunc(m.KnownSentinels, func(s string) bool { return slices.Contains(set.sentinels, s) })
		if !stopsNode && !stopsSentinel {
			continue
		}
		if m.Disagree {
			a.Add(ReasonDisagree, 1, "the sentinels disagree on master %s's address (%s): a failover now could promote either side", m.Name, reportedAddrs(m))
		}
		if !m.writable() || m.flagged(func(r Report) bool { return r.SDown || r.ODown || r.Failover }) {
			a.Add(ReasonFailover, 1, "master %s is flagged down or failing over: stop nothing until it is writable again", m.Name)
		}
		if stopsSentinel {
			b.judgeSentinels(&a, m, set.sentinels)
		}
		if stopsNode {
			b.judgeNodes(&a, m, set.nodes, headroom)
		}
	}
	return a
}

// judgeSentinels adds what stopping the sentinels would do to m's
// failovers.
func (b *Budget) judgeSentinels(a *budget.Answer, m *Master, stopped []string) {
	left := 0
	for _, s := range m.ReadSentinels {
		if !slices.Contains(stopped, s) {
			left++
		}
	}
	unread := len(m.KnownSentinels) - len(m.ReadSentinels)
	note := ""
	if unread > 0 {
		note = fmt.Sprintf(" (%d the exporter could not read counted as down)", unread)
	}
	if left < m.Quorum {
		a.Add(ReasonQuorum, 1, "master %s: %d sentinels would be left to agree it is down, fewer than its quorum %d%s: its next failure would have no failover", m.Name, left, m.Quorum, note)
	}
	if majority := len(m.KnownSentinels)/2 + 1; left < majority {
		a.Add(ReasonMajority, 1, "master %s: %d sentinels would be left, fewer than a majority (%d) of the %d known to monitor it, which a failover needs to elect its leader%s", m.Name, left, majority, len(m.KnownSentinels), note)
	}
}

// judgeNodes adds what stopping the data nodes would do to m.
func (b *Budget) judgeNodes(a *budget.Answer, m *Master, stopped []string, headroom bool) {
	var caughtUpLeft int
	var stoppedCaughtUp bool
	for _, n := range m.Nodes {
		isStopped := slices.Contains(stopped, n.Addr)
		if n.Promotable && n.Lag >= 0 && n.Lag <= b.caughtUp {
			if isStopped {
				stoppedCaughtUp = true
			} else {
				caughtUpLeft++
			}
		}
		if !isStopped {
			continue
		}
		switch {
		case n.Addr == m.Addr || n.Read && n.Role == roleMaster:
			b.master(a, m, n.Addr)
		case !n.Read:
			a.Add(ReasonNotRead, 1, "node %s of master %s was not read this refresh (%s): whether it is a replica, or the master, is unknown", n.Addr, m.Name, n.Error)
		case !m.Up:
			a.Add(ReasonNotRead, 1, "master %s (%s) was not read as a master this refresh: replica %s may be the one its failover needs", m.Name, m.Addr, n.Addr)
		}
	}
	if headroom && stoppedCaughtUp && caughtUpLeft == 0 {
		a.Add(ReasonLastPromotable, 1, "master %s would be left with no promotable replica within %d bytes of it (healthy_replica_headroom)", m.Name, b.caughtUp)
	}
}

// master adds the finding of stopping m's master at addr, with the
// replica to fail over to first.
func (b *Budget) master(a *budget.Answer, m *Master, addr string) {
	if m.Candidate == "" {
		a.Add(ReasonMaster, 1, "%s is master %s's master, and no replica could be promoted now: its stop would leave the master set without a master", addr, m.Name)
		a.Advice = fmt.Sprintf("bring a promotable replica of %s back first (link up, replica-priority above 0)", m.Name)
		return
	}
	a.Add(ReasonMaster, 1, "%s is master %s's master: clients would fail until the sentinels promote a replica, and the writes it did not pass on would be lost", addr, m.Name)
	a.Advice = fmt.Sprintf("fail over first: SENTINEL FAILOVER %s on a sentinel; it would promote %s", m.Name, m.Candidate)
	a.FailoverTo = m.Candidate
	if m.CandidateLoss >= 0 {
		if a.Facts == nil {
			a.Facts = map[string]float64{}
		}
		a.Facts["failover_loss_bytes"] = float64(m.CandidateLoss)
	}
}

// answerBudget answers a question from a snapshot's budget (Spec.Budget).
func answerBudget(snap *Snapshot, q budget.Question) (budget.Answer, error) {
	b := snap.Budget
	if b == nil {
		return budget.Answer{}, fmt.Errorf("the snapshot has no failure budget: %w", budget.ErrUnsupported)
	}
	var answers map[string]budget.Answer
	switch q.Scope {
	case ScopeNode:
		answers = b.Nodes
	case ScopeSentinel:
		answers = b.Sentinels
	case ScopeZone:
		if len(b.Zones) == 0 {
			return budget.Answer{}, fmt.Errorf("failure_budget.zones names no zone of this deployment: %w", budget.ErrUnsupported)
		}
		answers = b.Zones
	default:
		return budget.Answer{}, fmt.Errorf("sentinel answers %s, %s and %s questions, not %q: %w", ScopeNode, ScopeSentinel, ScopeZone, q.Scope, budget.ErrWrongScope)
	}
	a, ok := answers[q.ID]
	if !ok {
		return budget.Answer{}, fmt.Errorf("%s %q: %w (known: %s)", q.Scope, q.ID, budget.ErrUnknown, strings.Join(keys(answers), ", "))
	}
	if q.Recovered {
		return b.recovered(snap, q, a.Members), nil
	}
	return a, nil
}

// recovered answers whether the members are back: a node read and, as a
// replica, linked and caught up; a sentinel read and agreeing on every
// master it monitors.
func (b *Budget) recovered(snap *Snapshot, q budget.Question, members []string) budget.Answer {
	a := budget.Answer{System: "sentinel", Scope: q.Scope, ID: q.ID, Recovered: true, Safe: true, ReadAt: snap.ReadAt, Findings: []budget.Finding{}, Members: members}
	ids := members
	if q.Scope != ScopeZone {
		ids = []string{q.ID}
	}
	for _, s := range snap.Sentinels {
		if slices.Contains(ids, s.Addr) && !s.Read {
			a.Add(ReasonNotRead, 1, "sentinel %s was not read: %s", s.Addr, s.Error)
		}
	}
	for i := range snap.Masters {
		m := &snap.Masters[i]
		for _, n := range m.Nodes {
			if !slices.Contains(ids, n.Addr) {
				continue
			}
			switch {
			case !n.Read:
				a.Add(ReasonNotRead, 1, "node %s was not read: %s", n.Addr, n.Error)
			case n.Role == roleReplica && (!n.LinkUp || n.Lag < 0 || n.Lag > b.caughtUp):
				a.Add(ReasonNotCaughtUp, 1, "replica %s of %s: link %s, %d bytes behind (caught up within %d)", n.Addr, m.Name, linkText(n.LinkUp), n.Lag, b.caughtUp)
			}
		}
		if m.Disagree && (slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(m.KnownSentinels, id) || m.node(id) != nil })) {
			a.Add(ReasonDisagree, 1, "the sentinels disagree on master %s's address (%s)", m.Name, reportedAddrs(m))
		}
	}
	return a
}

func linkText(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

// sortedKeys are the answers' keys, sorted.
func sortedKeys(m map[string]budget.Answer) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// keys are the answers' keys, sorted, the first 20 of them, for messages.
func keys(m map[string]budget.Answer) []string {
	out := sortedKeys(m)
	if len(out) > 20 {
		out = append(out[:20], "...")
	}
	return out
}
