package kafkacanary

import (
	"fmt"
	"slices"
)

// topicState is the canary topic as one round sees it: the input of
// planHealing and assess, plain data so that tests can build it.
type topicState struct {
	// live are the brokers the cluster's metadata lists, sorted.
	live       []int32
	partitions []partitionState // by ID
	// minISR is the topic's min.insync.replicas, 0 when unknown.
	minISR int
	// adding are the replicas in-progress reassignments are adding, by
	// partition; reassigning is true while any is in progress (or while
	// that cannot be read).
	adding      map[int32][]int32
	reassigning bool
}

type partitionState struct {
	id int32
	// replicas, preferred leader first. During a reassignment they include
	// the replicas being added.
	replicas []int32
	leader   int32 // -1: none
}

// healPlan is what brings the topic to the configured shape, in order: a
// reassignment raising the replication factor first (new partitions must
// have as many replicas as the existing ones, so they wait for it), then
// min.insync.replicas, then a partition for each broker that leads none.
type healPlan struct {
	// wait: a reassignment is in progress; nothing else until it is done.
	wait bool
	// reassign gives partitions below the target replication factor their
	// new replicas: the old ones in their order (so the preferred leader
	// stays) plus live brokers.
	reassign map[int32][]int32
	// minISR > 0 is the min.insync.replicas to set.
	minISR int
	// add are the replicas of partitions to add, each led by a live broker
	// that is the preferred leader of no partition.
	add [][]int32
}

func (p healPlan) empty() bool {
	return !p.wait && len(p.reassign) == 0 && p.minISR == 0 && len(p.add) == 0
}

// planHealing plans the next step towards wantRF replicas per partition
// (capped at the live brokers), min.insync.replicas wantMinISR (capped at
// the replication factor) and a partition preferring each live broker. It
// never lowers either setting and never moves a replica.
func planHealing(st topicState, wantRF, wantMinISR int) healPlan {
	var plan healPlan
	if st.reassigning {
		plan.wait = true
		return plan
	}
	if len(st.partitions) == 0 || len(st.live) == 0 {
		return plan
	}
	targetRF := min(wantRF, len(st.live))
	for _, p := range st.partitions {
		if len(p.replicas) > 0 && len(p.replicas) < targetRF {
			if plan.reassign == nil {
				plan.reassign = map[int32][]int32{}
			}
			plan.reassign[p.id] = extendReplicas(p.replicas, st.live, targetRF)
		}
	}
	if len(plan.reassign) > 0 {
		return plan
	}
	if want := min(wantMinISR, lowestRF(st)); st.minISR > 0 && st.minISR < want {
		plan.minISR = want
	}
	// Kafka wants new partitions to have as many replicas as partition 0.
	if rf := len(st.partitions[0].replicas); rf > 0 && rf <= len(st.live) {
		for _, b := range unpreferred(st) {
			plan.add = append(plan.add, ledBy(b, st.live, rf))
		}
	}
	return plan
}

// extendReplicas appends live brokers to replicas until it has rf, taking
// them in ID order after the preferred leader, as assignment does.
func extendReplicas(replicas, live []int32, rf int) []int32 {
	out := slices.Clone(replicas)
	start, _ := slices.BinarySearch(live, replicas[0])
	for i := range live {
		if len(out) >= rf {
			break
		}
		if b := live[(start+i)%len(live)]; !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// ledBy returns rf replicas with leader first and the next brokers of
// brokers (sorted) after it as followers.
func ledBy(leader int32, brokers []int32, rf int) []int32 {
	out := []int32{leader}
	start, _ := slices.BinarySearch(brokers, leader)
	for i := range brokers {
		if len(out) >= rf {
			break
		}
		if b := brokers[(start+i)%len(brokers)]; b != leader {
			out = append(out, b)
		}
	}
	return out
}

// lowestRF is the smallest number of replicas of a partition, not counting
// those a reassignment is still adding.
func lowestRF(st topicState) int {
	lowest := -1
	for _, p := range st.partitions {
		n := 0
		for _, r := range p.replicas {
			if !slices.Contains(st.adding[p.id], r) {
				n++
			}
		}
		if lowest < 0 || n < lowest {
			lowest = n
		}
	}
	return max(lowest, 0)
}

// unpreferred are the live brokers that are the preferred leader (first
// replica) of no partition.
func unpreferred(st topicState) []int32 {
	var out []int32
	for _, b := range st.live {
		if !slices.ContainsFunc(st.partitions, func(p partitionState) bool { return len(p.replicas) > 0 && p.replicas[0] == b }) {
			out = append(out, b)
		}
	}
	return out
}

// notLeading are the live brokers that lead no partition now.
func notLeading(st topicState) []int32 {
	var out []int32
	for _, b := range st.live {
		if !slices.ContainsFunc(st.partitions, func(p partitionState) bool { return p.leader == b }) {
			out = append(out, b)
		}
	}
	return out
}

// assess compares the topic with the configured shape.
func assess(st topicState, wantRF, wantMinISR int) *TopicHealth {
	return &TopicHealth{
		Partitions:            len(st.partitions),
		ReplicationFactor:     lowestRF(st),
		WantReplicationFactor: wantRF,
		MinInsyncReplicas:     st.minISR,
		WantMinInsyncReplicas: min(wantMinISR, wantRF),
		Reassigning:           st.reassigning,
		Unpreferred:           unpreferred(st),
		NotLeading:            notLeading(st),
	}
}

// TopicHealth is the canary topic against its configured shape, as the
// round's metadata showed it.
type TopicHealth struct {
	Partitions int
	// ReplicationFactor is the lowest number of replicas of a partition,
	// not counting those a reassignment is still adding.
	ReplicationFactor, WantReplicationFactor int
	// MinInsyncReplicas is the topic's min.insync.replicas, 0 when unknown.
	MinInsyncReplicas, WantMinInsyncReplicas int
	Reassigning                              bool
	// Unpreferred are live brokers that are the preferred leader of no
	// partition; NotLeading those that lead none right now (after a
	// failover, until leadership is spread again).
	Unpreferred, NotLeading []int32
	// Managed is false with create_topic: false: the canary reports the
	// topic's shape and never changes it.
	Managed bool
	// Healing is the step the canary took or waits on this round;
	// HealError the error of a step that failed ("" when none).
	Healing, HealError string
}

// Degraded reports whether the topic is weaker than configured: fewer
// replicas or a lower min.insync.replicas, or a live broker without a
// partition to lead. Such a topic fails writes on failures the configured
// one survives, or tests a broker less.
func (h *TopicHealth) Degraded() bool { return len(h.Reasons()) > 0 }

// Reasons says why the topic is degraded, one phrase each.
func (h *TopicHealth) Reasons() []string {
	var out []string
	if h.ReplicationFactor < h.WantReplicationFactor {
		out = append(out, fmt.Sprintf("replication factor %d of %d", h.ReplicationFactor, h.WantReplicationFactor))
	}
	if h.Reassigning {
		out = append(out, "reassignment in progress")
	}
	if h.MinInsyncReplicas > 0 && h.MinInsyncReplicas < h.WantMinInsyncReplicas {
		out = append(out, fmt.Sprintf("min.insync.replicas %d of %d", h.MinInsyncReplicas, h.WantMinInsyncReplicas))
	}
	if len(h.Unpreferred) > 0 {
		out = append(out, fmt.Sprintf("no partition for brokers %v", h.Unpreferred))
	}
	return out
}
