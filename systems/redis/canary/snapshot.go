// Package rediscanary is the Redis Cluster write canary: per master, one
// key whose hash tag lands in a slot that master owns, SET with the next
// value every interval (optionally followed by WAIT), and, after the slot
// changes master, a read of the key from the new master to count the
// writes the old one acknowledged that the new one does not have.
//
// source.go owns the canary's clients and runs one round; snapshot.go is
// what a round publishes; collector.go turns it into metrics; watcher.go
// runs the rounds on the canary's interval.
package rediscanary

import (
	"maps"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
)

// Snapshot is the canary's counters after one round. It is immutable once
// published; each round starts from a copy of the previous one.
type Snapshot struct {
	// Masters is keyed by node id: a master's counters stay after it dies,
	// since its lost writes are counted after it is gone.
	Masters map[string]*MasterStats
	// Checks counts reads of a key from a new master after its slot changed
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
	// Key is the canary key in a slot this master owns; empty once the
	// master owns no slot.
	Key string
	// Attempts counts rounds that tried to write the master's key.
	Attempts uint64
	// Acknowledged counts writes the master acknowledged (and, with WAIT,
	// a replica confirmed).
	Acknowledged uint64
	// Failures counts failed attempts by error kind.
	Failures map[string]uint64
	// Lost counts writes this master acknowledged that the master which
	// took over its slot did not have.
	Lost uint64
	// Unverifiable counts writes this master acknowledged whose key the
	// master that took over its slot did not have, when the key's TTL may
	// have run out before it was read: expired or lost, nobody can tell.
	// Never counted lost.
	Unverifiable uint64
	// Latency of acknowledged writes, SET and WAIT together.
	Latency *canary.Histogram
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

// master returns the stats of a master, created if new.
func (s *Snapshot) master(id, addr string) *MasterStats {
	m, ok := s.Masters[id]
	if !ok {
		m = &MasterStats{Failures: map[string]uint64{}}
		s.Masters[id] = m
	}
	if addr != "" {
		m.Addr = addr
	}
	return m
}
