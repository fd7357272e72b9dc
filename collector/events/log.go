package events

import (
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// DefaultCapacity is how many events a Log keeps unless configured.
const DefaultCapacity = 1000

// Log keeps the most recent events of every cluster in a ring buffer and
// logs each once as it is recorded.
type Log struct {
	logger log.Logger

	mu     sync.RWMutex
	ring   []Event
	next   int // where the next event goes
	filled bool
	// begins is when the kept history begins: the log's start (an exporter
	// started mid-incident saw nothing before it), then, once the ring is
	// full, the time of the newest event it let go.
	begins time.Time
}

// NewLog returns a log keeping the last capacity events (DefaultCapacity
// when capacity is not positive).
func NewLog(capacity int, logger log.Logger) *Log {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Log{logger: logger, ring: make([]Event, capacity), begins: time.Now()}
}

// Begins is when the kept history begins: nothing before it is known to
// this log, so an empty stretch before it is not a quiet one. Two
// exporters of one cluster agree on what both saw; one that started
// later says so here.
func (l *Log) Begins() time.Time {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.begins
}

// Record stamps the events with their system and cluster, logs each at
// info level and keeps them.
func (l *Log) Record(system, cluster string, evs []Event) {
	if len(evs) == 0 {
		return
	}
	for i := range evs {
		e := evs[i]
		e.System, e.Cluster = system, cluster
		l.logEvent(e)
		l.mu.Lock()
		if old := l.ring[l.next]; l.filled && old.Time.After(l.begins) {
			l.begins = old.Time
		}
		l.ring[l.next] = e
		l.next = (l.next + 1) % len(l.ring)
		l.filled = l.filled || l.next == 0
		l.mu.Unlock()
	}
}

func (l *Log) logEvent(e Event) {
	kv := []any{"msg", "cluster event", "system", e.System, "cluster", e.Cluster, "kind", string(e.Kind),
		"event_time", e.Time.UTC().Format(time.RFC3339Nano)}
	if e.Subject.Topic != "" {
		kv = append(kv, "topic", e.Subject.Topic)
	}
	if e.Subject.Partition != nil {
		kv = append(kv, "partition", *e.Subject.Partition)
	}
	if e.Subject.NodeID != "" {
		kv = append(kv, "node_id", e.Subject.NodeID)
	}
	if e.Subject.Address != "" {
		kv = append(kv, "address", e.Subject.Address)
	}
	if e.Before != "" {
		kv = append(kv, "before", e.Before)
	}
	if e.After != "" {
		kv = append(kv, "after", e.After)
	}
	if !e.FirstFailure.IsZero() {
		kv = append(kv, "first_failure", e.FirstFailure.UTC().Format(time.RFC3339Nano))
	}
	level.Info(l.logger).Log(kv...)
}

// Query returns the kept events of system's cluster (every system or
// cluster when the name is empty: a name is unique only within its system)
// at or after since (every time when zero), newest first, at most limit of
// them (all when limit is not positive). Events of one refresh keep their
// order relative to each other, reversed like the rest.
func (l *Log) Query(system, cluster string, since time.Time, limit int) []Event {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []Event
	l.newestFirst(func(e *Event) bool {
		if (system != "" && e.System != system) || (cluster != "" && e.Cluster != cluster) {
			return true
		}
		if !since.IsZero() && e.Time.Before(since) {
			return true
		}
		out = append(out, *e)
		return limit <= 0 || len(out) < limit
	})
	return out
}

// holds reports whether the log keeps an event of system's cluster (any
// system when system is empty, any cluster of it when cluster is empty).
func (l *Log) holds(system, cluster string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	found := false
	l.newestFirst(func(e *Event) bool {
		found = (system == "" || e.System == system) && (cluster == "" || e.Cluster == cluster)
		return !found
	})
	return found
}

// newestFirst calls yield with each kept event, newest first, until it
// returns false. The caller holds l.mu.
func (l *Log) newestFirst(yield func(*Event) bool) {
	n := l.next
	if l.filled {
		n = len(l.ring)
	}
	for i := 1; i <= n; i++ {
		if !yield(&l.ring[(l.next-i+len(l.ring))%len(l.ring)]) {
			return
		}
	}
}

// Follow records the events of every new snapshot w publishes, read from
// it by eventsOf. A failed refresh republishes the previous snapshot, whose
// events are not recorded twice. Call it before the watcher runs, after
// Resume if the watcher resumes.
func Follow[S any](l *Log, system, cluster string, w *watch.Watcher[S], eventsOf func(*S) []Event) {
	// A watcher resumed from another's state (watch.Watcher.Resume) starts
	// with a snapshot whose events that one recorded already.
	last := w.Current().Snapshot // only touched on the watcher's goroutine
	w.OnPublish(func() {
		s := w.Current().Snapshot
		if s == nil || s == last {
			return
		}
		last = s
		l.Record(system, cluster, eventsOf(s))
	})
}
