package keycanary

import (
	"maps"
	"slices"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
)

// Snapshot is the canary's counters after one round. It is immutable once
// published; each round starts from a copy of the previous one.
type Snapshot struct {
	// Masters is keyed by Target.ID: a master's counters stay after it
	// dies, since its lost writes are counted after it is gone.
	Masters map[string]*MasterStats
	// Checks counts reads of a key from a new master after the key changed
	// master: each is a chance to find acknowledged writes lost.
	Checks uint64
	// Leader is set when this exporter holds the cluster's canary lease (or
	// the lease is off): only the leader writes, and serves the counters.
	Leader bool
	// Events are what this round saw, for the event log (write_failing,
	// write_recovered, acknowledged_writes_lost).
	Events events.List
}

// MasterStats are the canary's counters for one master.
type MasterStats struct {
	Addr string
	// Set is the Sentinel master name, "" for Redis Cluster.
	Set string
	// Key is the canary key this master holds; empty once it holds none
	// (it owns no slot, or is no longer the set's master).
	Key string
	// Attempts counts rounds that tried to write the master's key.
	Attempts uint64
	// Acknowledged counts writes the master acknowledged (and, with WAIT,
	// a replica confirmed).
	Acknowledged uint64
	// Failures counts failed attempts by error kind.
	Failures map[string]uint64
	// Lost counts writes this master acknowledged that the master which
	// took over its key did not have.
	Lost uint64
	// Unverifiable counts writes this master acknowledged whose key the
	// master that took over its key did not have, when the key's TTL may
	// have run out before it was read: expired or lost, nobody can tell.
	// Never counted lost.
	Unverifiable uint64
	// Latency of acknowledged writes, SET and WAIT together.
	Latency *canary.Histogram
	// Stalls are the clients' stall clock of the writes this master
	// acknowledged last before a failed one: from that acknowledgement to
	// the first acknowledged write after, by whichever master; one
	// observation per stall, when it ends.
	Stalls *episode.Histogram
	// LastError is the last attempt's error kind, "" if it succeeded.
	LastError string
}

// clone returns a deep copy without events, for the next round to update.
func (s *Snapshot) clone() *Snapshot {
	out := &Snapshot{Masters: map[string]*MasterStats{}}
	if s == nil {
		return out
	}
	out.Checks = s.Checks
	for id, m := range s.Masters {
		c := *m
		c.Failures = maps.Clone(m.Failures)
		out.Masters[id] = &c
	}
	return out
}

// master returns the stats of a target's master, created if new.
func (s *Snapshot) master(t Target) *MasterStats {
	m, ok := s.Masters[t.ID]
	if !ok {
		m = &MasterStats{Failures: map[string]uint64{}}
		s.Masters[t.ID] = m
	}
	if t.Addr != "" {
		m.Addr = t.Addr
	}
	if t.Set != "" {
		m.Set = t.Set
	}
	return m
}

// EmitMasters emits every master's write counters, latency histogram and
// (to stall, once one ended) stall clock of
// s with m's families, in the order of the masters' ids; labels gives a
// master's label values (its deployment's first).
func EmitMasters(m *canary.Metrics, stall *exposition.Desc, sink exposition.Sink, s *Snapshot, labels func(id string, ms *MasterStats) []string) {
	for _, id := range slices.Sorted(maps.Keys(s.Masters)) {
		ms := s.Masters[id]
		values := labels(id, ms)
		m.EmitWrites(sink, values, ms.Attempts, ms.Acknowledged, ms.Failures, ms.Lost, ms.Unverifiable)
		count, sum, cumulative := ms.Latency.Values()
		sink.AddHistogram(m.Duration, count, sum, cumulative, values...)
		if h := ms.Stalls; h != nil && stall != nil {
			sink.AddHistogram(stall, h.Count, h.Sum, h.Cumulative, values...)
		}
	}
}
