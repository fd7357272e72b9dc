package kafka

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
)

// carryTransitions copies the transition counters of prev into next and adds
// the transitions between the two snapshots. A partition seen for the first
// time starts at zero. It also remembers the address and rack of brokers
// that went down, since the Metadata response no longer lists them.
//
// Counting rules (at most one of each per partition per refresh, as a
// refresh only sees two states):
//   - a leader change is any change of the leader ID, including to and from
//     "no leader";
//   - an ISR shrink is a refresh in which the ISR lost at least one member;
//   - an ISR expand is a refresh in which it gained at least one member;
//     one that replaced members ([3] → [1]) is both, as Kafka counts it,
//     but one isr_change event (isrEventKind);
//   - an unclean election is a leader change to a replica that was neither
//     in the previous ISR, nor in its ELR or last known ELR, nor being added
//     by a reassignment, and whose new ISR keeps no member of the previous one
//     (an unclean election resets the ISR to the new leader). Counted only
//     when the previous snapshot knew the ELR, or the cluster has none.
//     A replica that rejoins the ISR and is elected within one refresh
//     with the rest of the ISR gone would be miscounted; that takes two
//     failures within one refresh interval.
//
// It also times episodes (carryEpisodes), which the first snapshot starts,
// and lists every transition as an event in next.Events; the first
// snapshot has none, so a restarted exporter reports no made-up changes.
// Reassignment events (reassignmentEvent) need ListPartitionReassignments
// answered in both snapshots: without it a reassigning partition only
// looks like one with more replicas.
func carryTransitions(prev, next *Snapshot) {
	rememberDownBrokers(prev, next)
	carryProbes(prev, next)
	carryEpisodes(prev, next)
	if prev != nil {
		countTransitions(prev, next)
	}
	carryCoordinators(prev, next)
	carryTransactions(prev, next)
	carryDetail(prev, next)
	sumTopicTransitions(next)
}

// countTransitions is carryTransitions between two snapshots: it carries
// and advances the partition and broker counters and lists the events.
func countTransitions(prev, next *Snapshot) {
	countBrokerTransitions(prev, next)
	listVoterChanges(prev, next)
	prevTopics := topicsByName(prev)
	base := carryReassignmentBase(prev, next)
	baseTopics := prevTopics
	if base != nil && base != prev {
		baseTopics = topicsByName(base)
	}
	at := next.ReadAt
	for ti := range next.Topics {
		nt := &next.Topics[ti]
		pt, ok := prevTopics[nt.Name]
		if !ok {
			continue
		}
		for pi := range nt.Partitions {
			np := &nt.Partitions[pi]
			pp := findPartition(pt.Partitions, np.ID)
			if pp == nil {
				continue
			}
			carryPartitionCounters(pp, np)
			if base != nil && next.ReassignmentsKnown {
				bp := pp
				if base != prev {
					bp = nil
					if bt, ok := baseTopics[nt.Name]; ok {
						bp = findPartition(bt.Partitions, np.ID)
					}
				}
				if bp != nil {
					addReassignmentEvents(&next.Events, at, events.PartitionSubject(nt.Name, np.ID), bp, np)
				}
			}
			countPartitionTransitions(prev, next, pt, nt, pp, np)
		}
	}

	annotateFirstFailures(prev, next)
}

// countBrokerTransitions carries the brokers' counters and lists the
// brokers that came up or went down.
func countBrokerTransitions(prev, next *Snapshot) {
	at := next.ReadAt
	for i := range next.Brokers {
		nb := &next.Brokers[i]
		pb := findBroker(prev.Brokers, nb.ID)
		if pb != nil {
			nb.Transitions = pb.Transitions
		}
		wasUp := pb != nil && pb.Up
		switch {
		case nb.Up && !wasUp:
			next.Events.Add(at, EventBrokerUp, events.BrokerSubject(nb.ID, nb.Address), "", "")
		case !nb.Up && wasUp:
			next.Events.Add(at, EventBrokerDown, events.BrokerSubject(nb.ID, pb.Address), "", "")
		}
		if pb != nil && prev.FencedKnown && next.FencedKnown && pb.Fenced != nb.Fenced {
			kind := EventBrokerUnfenced
			if nb.Fenced {
				kind = EventBrokerFenced
			}
			next.Events.Add(at, kind, events.BrokerSubject(nb.ID, nb.Address), "", "")
		}
		if pb != nil {
			listCordonChanges(&next.Events, at, pb, nb)
		}
	}
	for i := range prev.Brokers {
		// A broker that vanished from the metadata holds no assignment any
		// more; if it was live, it went down.
		if pb := &prev.Brokers[i]; pb.Up && findBroker(next.Brokers, pb.ID) == nil {
			next.Events.Add(at, EventBrokerDown, events.BrokerSubject(pb.ID, pb.Address), "", "")
		}
	}
}

// listCordonChanges lists the log directories of a broker cordoned or
// uncordoned between two reads of them; a directory that appeared or went
// is neither.
func listCordonChanges(list *events.List, at time.Time, pb, nb *Broker) {
	if pb.LogDirs == nil || nb.LogDirs == nil {
		return
	}
	for _, nd := range nb.LogDirs {
		i := slices.IndexFunc(pb.LogDirs, func(pd LogDir) bool { return pd.Path == nd.Path })
		switch {
		case i < 0 || pb.LogDirs[i].Cordoned == nd.Cordoned:
		case nd.Cordoned:
			list.Add(at, EventLogDirCordoned, events.BrokerSubject(nb.ID, nb.Address), "", nd.Path)
		default:
			list.Add(at, EventLogDirUncordoned, events.BrokerSubject(nb.ID, nb.Address), nd.Path, "")
		}
	}
}

// listVoterChanges lists the controllers that joined or left the KRaft
// voter set, each voter known by its ID and directory. Both refreshes must
// have read the quorum: one that could not says nothing of its voters.
func listVoterChanges(prev, next *Snapshot) {
	if prev.Quorum == nil || next.Quorum == nil {
		return
	}
	type voterKey struct {
		id  int32
		dir string
	}
	keys := func(q *Quorum) map[voterKey]bool {
		m := make(map[voterKey]bool, len(q.Voters))
		for _, v := range q.Voters {
			m[voterKey{v.ID, v.DirectoryID}] = true
		}
		return m
	}
	before, after := keys(prev.Quorum), keys(next.Quorum)
	// Removals first, in ID order (Voters are sorted), so a replaced
	// directory reads as removed, then added.
	for _, v := range prev.Quorum.Voters {
		if !after[voterKey{v.ID, v.DirectoryID}] {
			next.Events.Add(next.ReadAt, EventQuorumVoterRemoved, events.BrokerSubject(v.ID, ""), v.DirectoryID, "")
		}
	}
	for _, v := range next.Quorum.Voters {
		if !before[voterKey{v.ID, v.DirectoryID}] {
			next.Events.Add(next.ReadAt, EventQuorumVoterAdded, events.BrokerSubject(v.ID, ""), "", v.DirectoryID)
		}
	}
}

func topicsByName(snap *Snapshot) map[string]*Topic {
	topics := make(map[string]*Topic, len(snap.Topics))
	for i := range snap.Topics {
		topics[snap.Topics[i].Name] = &snap.Topics[i]
	}
	return topics
}

// carryPartitionCounters carries a partition's counters from its previous
// entry, and its ELR when this refresh's read of it raced an election.
func carryPartitionCounters(pp, np *Partition) {
	np.LeaderChanges = pp.LeaderChanges
	np.ISRShrinks = pp.ISRShrinks
	np.ISRExpands = pp.ISRExpands
	np.UncleanElections = pp.UncleanElections
	if np.ELRStale() && !pp.ELRStale() && pp.Leader == np.Leader && sameMembers(pp.ISR, np.ISR) {
		// The ELR read raced an election, but the partition's
		// state is the previous refresh's: so is its ELR.
		np.setELR(pp.ELR(), pp.LastKnownELR(), false)
	}
}

// countPartitionTransitions advances one partition's counters and its
// brokers' from its previous entry pp to np, and lists the events:
// leader changes, unclean elections, ISR changes, min ISR crossings.
func countPartitionTransitions(prev, next *Snapshot, pt, nt *Topic, pp, np *Partition) {
	at := next.ReadAt
	if np.Leader != pp.Leader {
		np.LeaderChanges++
		if b := findBroker(next.Brokers, pp.Leader); b != nil {
			b.Transitions.LeadershipsLost++
		}
		if b := findBroker(next.Brokers, np.Leader); b != nil {
			b.Transitions.LeadershipsGained++
		}
		kind := EventLeaderChange
		switch {
		case np.Offline():
			kind = EventPartitionOffline
		case pp.Offline():
			kind = EventPartitionOnline
		}
		next.Events.Add(at, kind, events.PartitionSubject(nt.Name, np.ID), leaderText(pp.Leader), leaderText(np.Leader))
	}
	if elrKnown(prev, pt) && !pp.ELRStale() && uncleanElection(pp, np) {
		np.UncleanElections++
		if b := findBroker(next.Brokers, np.Leader); b != nil {
			b.Transitions.UncleanElections++
		}
		next.Events.Add(at, EventUncleanElection, events.PartitionSubject(nt.Name, np.ID), leaderText(pp.Leader), leaderText(np.Leader))
	}
	shrank, expanded := lostMember(pp.ISR, np.ISR), lostMember(np.ISR, pp.ISR)
	if shrank {
		np.ISRShrinks++
		countMembers(next.Brokers, pp.ISR, np.ISR, func(t *BrokerTransitions) { t.ISRShrinks++ })
	}
	if expanded {
		np.ISRExpands++
		countMembers(next.Brokers, np.ISR, pp.ISR, func(t *BrokerTransitions) { t.ISRExpands++ })
	}
	if kind, ok := isrEventKind(shrank, expanded); ok {
		next.Events.Add(at, kind, events.PartitionSubject(nt.Name, np.ID), brokerIDsText(pp.ISR), brokerIDsText(np.ISR))
	}
	if nt.MinISR > 0 && pt.MinISR > 0 {
		was, is := pp.UnderMinISR(pt.MinISR), np.UnderMinISR(nt.MinISR)
		switch {
		case is && !was:
			next.Events.Add(at, EventUnderMinISRBegin, events.PartitionSubject(nt.Name, np.ID), brokerIDsText(pp.ISR), brokerIDsText(np.ISR))
		case was && !is:
			next.Events.Add(at, EventUnderMinISREnd, events.PartitionSubject(nt.Name, np.ID), brokerIDsText(pp.ISR), brokerIDsText(np.ISR))
		}
	}
}

// countMembers calls count for the transitions of each broker in from that
// is not in to: the brokers an ISR lost, or gained with the two swapped.
func countMembers(brokers []Broker, from, to []int32, count func(*BrokerTransitions)) {
	for _, id := range from {
		if slices.Contains(to, id) {
			continue
		}
		if b := findBroker(brokers, id); b != nil {
			count(&b.Transitions)
		}
	}
}

// sumTopicTransitions sets each topic's transition counters to the sum of
// its partitions'. A partition is never removed from a topic, so the sums
// only grow while the topic exists.
func sumTopicTransitions(s *Snapshot) {
	for i := range s.Topics {
		t := &s.Topics[i]
		var sum TopicTransitions
		for j := range t.Partitions {
			p := &t.Partitions[j]
			sum.LeaderChanges += p.LeaderChanges
			sum.ISRShrinks += p.ISRShrinks
			sum.ISRExpands += p.ISRExpands
			sum.UncleanElections += p.UncleanElections
		}
		t.Transitions = sum
	}
}

// rememberDownBrokers gives brokers that went down the address and rack
// prev knew, since the Metadata response no longer lists them: the
// exporter keeps probing the address, and racks keep counting. It only
// fills what is missing, so calling it twice is harmless.
func rememberDownBrokers(prev, next *Snapshot) {
	if prev == nil {
		return
	}
	for i := range next.Brokers {
		nb := &next.Brokers[i]
		if nb.Up || nb.Address != "" {
			continue
		}
		if pb := findBroker(prev.Brokers, nb.ID); pb != nil {
			nb.Address, nb.Rack = pb.Address, pb.Rack
		}
	}
}

// leaderText is a leader ID as events show it: "none" for no leader.
func leaderText(id int32) string {
	if id == NoLeader {
		return "none"
	}
	return strconv.FormatInt(int64(id), 10)
}

// maxReassignmentsUnanswered bounds how many refreshes in a row may go
// without ListPartitionReassignments before reassignment events stop
// comparing with the last snapshot that had it: that snapshot stays in
// memory meanwhile, and after a long gap its events would be stale news.
const maxReassignmentsUnanswered = 10

// carryReassignmentBase returns the snapshot that next's reassignment
// events compare with: prev when prev has its reassignments, else the last
// snapshot before it that had them (prev.reassignmentBase), or nil when
// there is none. A next without reassignments keeps that snapshot for the
// refresh after it.
func carryReassignmentBase(prev, next *Snapshot) *Snapshot {
	base := prev
	if !prev.ReassignmentsKnown {
		base = prev.reassignmentBase
	}
	if !next.ReassignmentsKnown {
		next.reassignmentsUnanswered = prev.reassignmentsUnanswered + 1
		if next.reassignmentsUnanswered <= maxReassignmentsUnanswered {
			next.reassignmentBase = base
		}
	}
	return base
}

// addReassignmentEvents adds the reassignment events of a partition
// between prev and next (reassignmentEvent), except that it holds back, by
// one refresh, a reassignment that seems to finish on the replicas it had
// while in progress.
//
// ListPartitionReassignments is answered by the controller and Metadata by
// any broker, whose cache may lag the controller by a moment: right after
// a cancel, the refresh can read "no reassignment" and still the in-progress
// replicas (the old ones and those being added). In one refresh that is
// exactly a reassignment that finished by adding replicas, so the event
// waits for the next refresh: its replicas tell a finish from a cancel.
// The held event carries the time the refresh first saw the reassignment
// ended.
func addReassignmentEvents(list *events.List, at time.Time, subject events.Subject, prev, next *Partition) {
	if origin, seenAt, held := prev.heldFinish(); held {
		if !next.Reassigning() {
			list.Add(seenAt, EventReassignmentFinished, subject, brokerIDsText(origin), brokerIDsText(next.Replicas))
			return
		}
		// Another reassignment began within the refresh: the held one had
		// finished on the replicas prev read.
		list.Add(seenAt, EventReassignmentFinished, subject, brokerIDsText(origin), brokerIDsText(prev.Replicas))
		list.Add(at, EventReassignmentStarted, subject, brokerIDsText(prev.Replicas), brokerIDsText(reassignmentTarget(next)))
		return
	}
	if prev.Reassigning() && !next.Reassigning() && len(prev.AddingReplicas()) > 0 && slices.Equal(prev.Replicas, next.Replicas) {
		next.holdFinish(reassignmentOrigin(prev), at)
		return
	}
	if kind, before, after, ok := reassignmentEvent(prev, next); ok {
		list.Add(at, kind, subject, before, after)
	}
}

// reassignmentEvent tells whether a reassignment of the partition started
// or finished between prev and next, and the replicas the event shows:
//   - started: the assignment before, and the target;
//   - started again (a new target while one is in progress): the replicas
//     it started from, and the new target;
//   - finished: the replicas it started from, and the assignment now. A
//     cancelled one restores the replicas it started from, in the order
//     Kafka lists them, so Before equals After;
//   - an assignment that changed with no reassignment seen in progress
//     (it began and ended between two refreshes, or only reordered the
//     replicas, which Kafka does at once) is finished: the assignment
//     before, and the assignment now.
func reassignmentEvent(prev, next *Partition) (kind events.Kind, before, after string, ok bool) {
	switch {
	case next.Reassigning() && !prev.Reassigning():
		return EventReassignmentStarted, brokerIDsText(prev.Replicas), brokerIDsText(reassignmentTarget(next)), true
	case next.Reassigning() && !slices.Equal(reassignmentTarget(prev), reassignmentTarget(next)):
		return EventReassignmentStarted, brokerIDsText(reassignmentOrigin(next)), brokerIDsText(reassignmentTarget(next)), true
	case prev.Reassigning() && !next.Reassigning():
		return EventReassignmentFinished, brokerIDsText(reassignmentOrigin(prev)), brokerIDsText(next.Replicas), true
	case !prev.Reassigning() && !next.Reassigning() && !slices.Equal(prev.Replicas, next.Replicas):
		return EventReassignmentFinished, brokerIDsText(prev.Replicas), brokerIDsText(next.Replicas), true
	}
	return "", "", "", false
}

// reassignmentTarget is where a reassignment moves the partition: its
// replicas without those being removed. Replicas being added are appended
// when the metadata was read before the reassignment began (the
// reassignments are read just after it).
func reassignmentTarget(p *Partition) []int32 {
	target := slices.DeleteFunc(slices.Clone(p.Replicas), func(id int32) bool { return slices.Contains(p.RemovingReplicas(), id) })
	for _, id := range p.AddingReplicas() {
		if !slices.Contains(target, id) {
			target = append(target, id)
		}
	}
	return target
}

// reassignmentOrigin is the assignment a reassignment moves away from, and
// the one a cancellation restores: the replicas without those being added.
func reassignmentOrigin(p *Partition) []int32 {
	origin := slices.DeleteFunc(slices.Clone(p.Replicas), func(id int32) bool { return slices.Contains(p.AddingReplicas(), id) })
	for _, id := range p.RemovingReplicas() {
		if !slices.Contains(origin, id) {
			origin = append(origin, id)
		}
	}
	return origin
}

// brokerIDsText is an ISR or a replica list as events show it, e.g. "[1 2 3]".
func brokerIDsText(ids []int32) string { return fmt.Sprint(ids) }

// isrEventKind names the event of an ISR change: a change that both lost
// and gained members is one replacement (isr_change), not a shrink and an
// expand, since a refresh sees neither their order nor the ISR between
// them; ok is false when the members are the same.
func isrEventKind(shrank, expanded bool) (kind events.Kind, ok bool) {
	switch {
	case shrank && expanded:
		return EventISRChange, true
	case shrank:
		return EventISRShrink, true
	case expanded:
		return EventISRExpand, true
	}
	return "", false
}

// lostMember reports whether some member of from is missing from to.
func lostMember(from, to []int32) bool {
	for _, id := range from {
		if !slices.Contains(to, id) {
			return true
		}
	}
	return false
}

// findPartition looks a partition up in a slice sorted by ID.
func findPartition(ps []Partition, id int32) *Partition {
	// By index: a comparison function taking a Partition would copy the
	// whole struct at every step, which dominated a broker death's refresh.
	i := sort.Search(len(ps), func(i int) bool { return ps[i].ID >= id })
	if i == len(ps) || ps[i].ID != id {
		return nil
	}
	return &ps[i]
}

// findBroker looks a broker up in a slice sorted by ID.
func findBroker(bs []Broker, id int32) *Broker {
	i := sort.Search(len(bs), func(i int) bool { return bs[i].ID >= id })
	if i == len(bs) || bs[i].ID != id {
		return nil
	}
	return &bs[i]
}

// elrKnown reports whether prev knew the ELR of topic t's partitions that
// could have one: those below a known min ISR.
func elrKnown(prev *Snapshot, t *Topic) bool {
	return prev.ELRUnsupported || (prev.ELRKnown && t.MinISR > 0)
}

// uncleanElection reports whether the leader changed from prev to next to a
// replica that could not have been elected cleanly.
func uncleanElection(prev, next *Partition) bool {
	if next.Leader == prev.Leader || next.Leader == NoLeader {
		return false
	}
	// Kafka with unclean elections off may still elect the last known ELR
	// member that was the last leader (KIP-966); that is not counted either.
	for _, cleanly := range [][]int32{prev.ISR, prev.ELR(), prev.LastKnownELR(), prev.AddingReplicas()} {
		if slices.Contains(cleanly, next.Leader) {
			return false
		}
	}
	for _, id := range prev.ISR {
		if slices.Contains(next.ISR, id) {
			return false
		}
	}
	return true
}
