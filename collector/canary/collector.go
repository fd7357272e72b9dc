package canary

import (
	"sort"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// Metrics are the families every write canary serves, each canary with
// names and help texts of its own: its round health, whether it is the
// exporter that writes, its read-backs, and the write counters of each
// leader or master it wrote to.
type Metrics struct {
	Health exposition.Health

	Attempts     *exposition.Desc
	Acknowledged *exposition.Desc
	Failures     *exposition.Desc
	Duration     *exposition.Desc
	Lost         *exposition.Desc
	Unverifiable *exposition.Desc
	Checks       *exposition.Desc
	Leader       *exposition.Desc
}

// Round emits the round health of a canary's state and, when it has a
// snapshot, its *_canary_leader (EmitLeader: leader is the snapshot's
// Leader) and, when this exporter writes, its read-backs (checks). It
// returns the snapshot whose write counters are to be served, which stay
// served when a round fails (they count what happened), or nil: none yet,
// or another exporter writes and its counters are the cluster's.
func Round[S any](m *Metrics, health, sink exposition.Sink, cluster string, state *watch.State[S], leader func(*S) (holder bool, checks uint64)) *S {
	exposition.EmitHealth(m.Health, health, cluster, state)
	s := state.Snapshot
	if s == nil {
		return nil
	}
	holder, checks := leader(s)
	EmitLeader(sink, m.Leader, cluster, holder, state.Up)
	if !holder {
		return nil
	}
	sink.Add(m.Checks, float64(checks), cluster)
	return s
}

// EmitWrites emits the write counters of one leader or master, labels
// being the cluster's and its own: the failures by error kind, in kind
// order (the error label last).
func (m *Metrics) EmitWrites(sink exposition.Sink, labels []string, attempts, acknowledged uint64, failures map[string]uint64, lost, unverifiable uint64) {
	sink.Add(m.Attempts, float64(attempts), labels...)
	sink.Add(m.Acknowledged, float64(acknowledged), labels...)
	kinds := make([]string, 0, len(failures))
	for kind := range failures {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		sink.Add(m.Failures, float64(failures[kind]), append(labels[:len(labels):len(labels)], kind)...)
	}
	sink.Add(m.Lost, float64(lost), labels...)
	sink.Add(m.Unverifiable, float64(unverifiable), labels...)
}
