package redis

// The failure budget's slot_migration rule (see budget.go): which slot
// migrations are in progress, from either end's report, and what a stop of
// one of their ends interrupts.

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

// slotMovesInProgress lists the slot migrations in progress in snap: every
// slot a member's own CLUSTER NODES has migrating (to its target) or
// importing (from its source), and every running atomic slot migration job.
// Either end's report is enough, so a move is seen while one end is
// unread. Moves of a classic reshard between the same two nodes are merged
// into runs of consecutive slots.
func slotMovesInProgress(snap *Snapshot) []SlotMove {
	seen := map[SlotMove]bool{}
	var moves []SlotMove
	add := func(m SlotMove) {
		if !seen[m] {
			seen[m] = true
			moves = append(moves, m)
		}
	}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		for _, m := range n.Migrating {
			add(SlotMove{First: m.Slot, Last: m.Slot, Source: n.ID, Target: m.NodeID})
		}
		for _, m := range n.Importing {
			add(SlotMove{First: m.Slot, Last: m.Slot, Source: m.NodeID, Target: n.ID})
		}
	}
	for _, job := range snap.RunningMigrations() {
		for _, span := range job.Slots {
			add(SlotMove{First: span.First, Last: span.Last, Source: job.Source, Target: job.Target, Job: job.Name})
		}
	}
	slices.SortFunc(moves, func(x, y SlotMove) int {
		return cmp.Or(cmp.Compare(x.Job, y.Job), cmp.Compare(x.Source, y.Source), cmp.Compare(x.Target, y.Target), cmp.Compare(x.First, y.First))
	})
	merged := moves[:0]
	for _, m := range moves {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			if last.Job == m.Job && last.Source == m.Source && last.Target == m.Target && m.First <= last.Last+1 {
				last.Last = max(last.Last, m.Last)
				continue
			}
		}
		merged = append(merged, m)
	}
	slices.SortFunc(merged, func(x, y SlotMove) int { return cmp.Or(cmp.Compare(x.First, y.First), cmp.Compare(x.Job, y.Job)) })
	return merged
}

// assessMoves adds to tally and o the slot migrations with an end in
// stopped: the slots in flight are at risk.
func (a *stopAssessor) assessMoves(stopped map[string]bool, o *StopOutcome, tally *stopTally) {
	var inFlight map[int]bool
	classic, atomic := false, false
	for _, m := range a.b.Moves {
		if !stopped[m.Source] && !stopped[m.Target] {
			continue
		}
		if inFlight == nil {
			inFlight = map[int]bool{}
		}
		for slot := m.First; slot <= m.Last; slot++ {
			inFlight[slot] = true
		}
		o.AtRisk = append(o.AtRisk, SlotRange{First: m.First, Last: m.Last, Owner: m.Source})
		how := "CLUSTER SETSLOT MIGRATING/IMPORTING"
		if m.Job != "" {
			how = "atomic slot migration job " + m.Job
			atomic = true
		} else {
			classic = true
		}
		tally.moving = append(tally.moving, fmt.Sprintf("%s %s from %s to %s (%s)", pluralSlot(m), moveSlots(m), a.nameOf(m.Source), a.nameOf(m.Target), how))
	}
	tally.movingSlots = len(inFlight)
	const (
		classicRisk = "keys already moved live only on the target, reached by ASK through the source, until CLUSTER SETSLOT NODE ends the move: stopping the target makes them unreachable (lost, if not persisted), stopping the source strands them"
		atomicRisk  = "stopping either end fails the atomic job"
	)
	switch {
	case classic && atomic:
		tally.migrationRisk = classicRisk + "; " + atomicRisk
	case classic:
		tally.migrationRisk = classicRisk
	case atomic:
		tally.migrationRisk = atomicRisk
	}
	switch {
	case classic && atomic:
		tally.migrationAdvice = "finish the slot migrations first: MIGRATE the remaining keys and run CLUSTER SETSLOT <slot> NODE <target id> on the target and the source, and let the atomic jobs end"
	case classic:
		tally.migrationAdvice = "finish the slot migration first: MIGRATE the slot's remaining keys, then CLUSTER SETSLOT <slot> NODE <target id> on the target and the source (redis-cli --cluster fix finishes a stuck one)"
	case atomic:
		tally.migrationAdvice = "let the atomic slot migration end first (CLUSTER GETSLOTMIGRATIONS or CLUSTER MIGRATION STATUS shows it)"
	}
}

// nameOf is the address of the member with id, else the id.
func (a *stopAssessor) nameOf(id string) string {
	if n := a.node(id); n != nil {
		return nodeName(n)
	}
	return id
}

func pluralSlot(m SlotMove) string {
	if m.First == m.Last {
		return "slot"
	}
	return "slots"
}

// moveSlots is "100" or "100-200".
func moveSlots(m SlotMove) string {
	if m.First == m.Last {
		return strconv.Itoa(m.First)
	}
	return slotRangeName(SlotRange{First: m.First, Last: m.Last})
}
