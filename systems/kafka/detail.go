package kafka

import "time"

// A partition is served in detail (every series that says something about
// it, in the lean and unhealthy modes) while it is unhealthy and for a hold
// after it was last unhealthy. The hold lets Prometheus see the recovery
// (a detailed series reads the healthy value before it goes) and keeps a
// flapping partition's series from coming and going refresh by refresh:
// they appear once per episode of trouble, and a new series is what costs
// Prometheus memory.

// unhealthy reports whether partition p of topic t needs its detail now:
// it is under-replicated, at or under its topic's min ISR, offline, has
// replicas on dead brokers or offline log directories, is reassigning, or
// is in an open episode (one that began before the exporter could date
// it, say). Every per-partition alert fires on one of these, so an alert
// always finds its partition's series.
func unhealthy(s *Snapshot, t *Topic, p *Partition) bool {
	if p.UnderReplicated() || p.Offline() || len(p.OfflineReplicas()) > 0 || p.Reassigning() ||
		(t.MinISR > 0 && len(p.ISR) <= t.MinISR) {
		return true
	}
	for c := range s.Episodes.Open {
		if open := s.Episodes.Open[c]; len(open) > 0 {
			if _, ok := open[PartitionKey{t.Name, p.ID}]; ok {
				return true
			}
		}
	}
	return false
}

// carryDetail marks next's detailed partitions and remembers when each
// was last unhealthy: now for the unhealthy ones, and prev's time for
// those that recovered less than the hold ago. It runs after the episodes
// are carried, since an open episode makes a partition unhealthy.
func carryDetail(prev, next *Snapshot) {
	var last map[PartitionKey]time.Time
	if prev != nil {
		last = prev.Unhealthy
	}
	var detailed map[PartitionKey]time.Time
	for ti := range next.Topics {
		t := &next.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			key := PartitionKey{t.Name, p.ID}
			since, recent := last[key]
			switch {
			case unhealthy(next, t, p):
				since = next.ReadAt
			case !recent || next.ReadAt.Sub(since) >= next.detailHold:
				continue
			}
			if detailed == nil {
				detailed = make(map[PartitionKey]time.Time)
			}
			detailed[key] = since
			p.Detailed = true
		}
	}
	next.Unhealthy = detailed
}

// DetailedPartitions counts the partitions served in detail.
func (s *Snapshot) DetailedPartitions() int { return len(s.Unhealthy) }
