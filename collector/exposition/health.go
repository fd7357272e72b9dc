package exposition

import (
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// Help texts of the refresh health series, shared so that the series read
// the same for every cluster type.
const (
	HelpRefreshDuration    = "How long the last refresh of this cluster took, successful or not."
	HelpLastRefreshSuccess = "Unix time when this cluster was last read successfully; time() minus this is the age of the data."
	HelpRefreshes          = "Refreshes of this cluster attempted since the exporter started."
	HelpRefreshFailures    = "Refreshes of this cluster that failed since the exporter started."
)

// Health are the series every cluster type exports about its own refresh
// loop, named like their twins across cluster types so that dashboards and
// alerts read the same for Kafka and Redis. Each collector fills it from
// its own metric table, with literal names.
type Health struct {
	Up          *Desc
	Duration    *Desc
	LastSuccess *Desc
	Refreshes   *Desc
	Failures    *Desc
}

// EmitHealth adds the health series for one cluster's state to sink.
func EmitHealth[S any](h Health, sink Sink, cluster string, st *watch.State[S]) {
	up := 0.0
	if st.Up {
		up = 1
	}
	sink.Add(h.Up, up, cluster)
	if st.Refreshes > 0 {
		sink.Add(h.Duration, st.LastDuration.Seconds(), cluster)
	}
	if !st.LastSuccess.IsZero() {
		sink.Add(h.LastSuccess, float64(st.LastSuccess.UnixNano())/1e9, cluster)
	}
	sink.Add(h.Refreshes, float64(st.Refreshes), cluster)
	sink.Add(h.Failures, float64(st.Failures), cluster)
}
