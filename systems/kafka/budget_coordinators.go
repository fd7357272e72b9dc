package kafka

import (
	"fmt"
	"time"
)

// budgetCoordinators applies failure_budget.coordinators: settled to the
// stops of b. A stop moves the group and transaction coordinators its
// brokers hold, each a pause for the clients hashed to it while the new
// leader loads the partition; in a rolling restart the next stop should
// wait until the last one's moves have settled. So every stop is
// coordinators_unsettled while:
//   - a partition of __consumer_offsets, __transaction_state or
//     __share_group_state has a coordinator that is loading or unavailable (moving more now
//     lengthens its clients' pause);
//   - a group a live broker of the stop coordinates is rebalancing or
//     reconciling (its coordinator's move starts it over).
//
// And not_judged, never safe, while the read that would say is missing
// (a kind whose topic exists not read yet, or its brokers lack the
// requests: Kafka before 3.0), older than maxAge at the snapshot's read,
// holds partitions it could not tell (unknown), or a live broker of the
// stop did not answer ListGroups or gave no group states (before v4).
func (s *Snapshot) budgetCoordinators(b *Budget, maxAge time.Duration) {
	if b == nil {
		return
	}
	unsettled, unread := s.coordinatorsUnsettled(maxAge)
	live := make(map[int32]bool, len(s.Brokers))
	for _, br := range s.Brokers {
		live[br.ID] = br.Up
	}
	groupsExist := internalPartitionCounts(s)[CoordinatorGroup] > 0
	apply := func(e *StopEffect) {
		e.Unsettled = append(e.Unsettled, unsettled...)
		e.NotJudged = append(e.NotJudged, unread...)
		if groupsExist && s.Coordinators.Reads[CoordinatorGroup] != nil {
			s.groupsUnsettled(e, live)
		}
	}
	for i := range b.Brokers {
		apply(&b.Brokers[i])
	}
	for i := range b.Racks {
		apply(&b.Racks[i])
	}
}

// coordinatorsUnsettled is what every stop's verdict says of the
// coordinator partitions: those not answering, and what is unknown.
func (s *Snapshot) coordinatorsUnsettled(maxAge time.Duration) (unsettled []budgetFinding, unread []string) {
	counts := internalPartitionCounts(s)
	for k := range coordinatorKinds {
		if counts[k] == 0 || k == CoordinatorShare && s.Coordinators.ShareRefused {
			// A share question the brokers refuse (ClusterAction, which a
			// monitor should not hold) is never asked: settled judges the
			// other kinds (docs/coordinators.md).
			continue
		}
		kind, read := CoordinatorKind(k), s.Coordinators.Reads[k]
		if read == nil {
			unread = append(unread, fmt.Sprintf("the %s coordinators (%s) have not been read (not yet, or the brokers lack batched FindCoordinator: Kafka before 3.0), which failure_budget.coordinators: settled needs: whether they answer is unknown", kind, kind.Topic()))
			continue
		}
		if age := s.ReadAt.Sub(read.ReadAt); age > maxAge {
			unread = append(unread, fmt.Sprintf("the last read of the %s coordinators began %s before this refresh (more than %s): whether they answer now is unknown", kind, age.Round(time.Second), maxAge))
			continue
		}
		if n := read.Count(CoordinatorUnknown); n > 0 {
			unread = append(unread, fmt.Sprintf("the last read could not tell whether %d %s coordinator partition(s) answer (refused, or no broker answered FindCoordinator)", n, kind))
		}
		if n := read.Count(CoordinatorLoading) + read.Count(CoordinatorUnavailable); n > 0 {
			unsettled = append(unsettled, budgetFinding{n, fmt.Sprintf("%d partition(s) of %s have a %s coordinator loading or unavailable: their clients are paused, and a stop now would pause more", n, kind.Topic(), kind)})
		}
	}
	return unsettled, unread
}

// groupsUnsettled adds to e the groups its live brokers coordinate that
// are rebalancing or reconciling, and what it cannot tell of them.
func (s *Snapshot) groupsUnsettled(e *StopEffect, live map[int32]bool) {
	busy := 0
	for _, id := range e.Members {
		if !live[id] {
			// A broker down coordinates nothing: its partitions moved.
			continue
		}
		switch g := s.Coordinators.Groups[id]; {
		case g == nil:
			e.NotJudged = append(e.NotJudged, fmt.Sprintf("broker %d did not answer ListGroups in the last coordinator read: whether the groups it coordinates are rebalancing is unknown", id))
		case g.ByState == nil:
			e.NotJudged = append(e.NotJudged, fmt.Sprintf("broker %d's ListGroups gives no group states (Kafka before 2.6): whether the groups it coordinates are rebalancing is unknown", id))
		default:
			busy += g.ByState["rebalancing"] + g.ByState["reconciling"]
		}
	}
	if busy > 0 {
		e.Unsettled = append(e.Unsettled, budgetFinding{busy, fmt.Sprintf("%d group(s) the stop's brokers coordinate are rebalancing or reconciling: moving their coordinator now starts that over", busy)})
	}
}
