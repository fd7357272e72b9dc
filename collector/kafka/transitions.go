package kafka

import "slices"

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
//   - an ISR expand is a refresh in which it gained at least one member.
//
// It also times episodes (carryEpisodes), which the first snapshot starts.
func carryTransitions(prev, next *Snapshot) {
	carryEpisodes(prev, next)
	if prev == nil {
		return
	}
	prevTopics := make(map[string]*Topic, len(prev.Topics))
	for i := range prev.Topics {
		prevTopics[prev.Topics[i].Name] = &prev.Topics[i]
	}
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
			np.LeaderChanges = pp.LeaderChanges
			np.ISRShrinks = pp.ISRShrinks
			np.ISRExpands = pp.ISRExpands
			if np.Leader != pp.Leader {
				np.LeaderChanges++
			}
			if lostMember(pp.ISR, np.ISR) {
				np.ISRShrinks++
			}
			if lostMember(np.ISR, pp.ISR) {
				np.ISRExpands++
			}
		}
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
	i, ok := slices.BinarySearchFunc(ps, id, func(p Partition, id int32) int { return int(p.ID - id) })
	if !ok {
		return nil
	}
	return &ps[i]
}

// findBroker looks a broker up in a slice sorted by ID.
func findBroker(bs []Broker, id int32) *Broker {
	i, ok := slices.BinarySearchFunc(bs, id, func(b Broker, id int32) int { return int(b.ID - id) })
	if !ok {
		return nil
	}
	return &bs[i]
}
