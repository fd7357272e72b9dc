package watch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
)

// HealthDescs are the series every cluster type exports about its own
// refresh loop, named like their twins across cluster types so that
// dashboards and alerts read the same for Kafka and Redis.
type HealthDescs struct {
	set         *exposition.Set
	up          *exposition.Desc
	duration    *exposition.Desc
	lastSuccess *exposition.Desc
	refreshes   *exposition.Desc
	failures    *exposition.Desc
}

// NewHealthDescs builds the descriptors. upName is the name of the up
// gauge (kafka_up, redis_cluster_up); prefix is the prefix of the refresh
// series (kafka_exporter, redis_cluster_exporter); clusterLabel is the label
// carrying the cluster name.
func NewHealthDescs(upName, upHelp, prefix, clusterLabel string) HealthDescs {
	set := &exposition.Set{}
	return HealthDescs{
		set: set,
		up:  set.Gauge(upName, upHelp, clusterLabel),
		duration: set.Gauge(prefix+"_refresh_duration_seconds",
			"How long the last refresh of this cluster took, successful or not.", clusterLabel),
		lastSuccess: set.Gauge(prefix+"_last_refresh_success_timestamp_seconds",
			"Unix time when this cluster was last read successfully; time() minus this is the age of the data.", clusterLabel),
		refreshes: set.Counter(prefix+"_refreshes_total",
			"Refreshes of this cluster attempted since the exporter started.", clusterLabel),
		failures: set.Counter(prefix+"_refresh_failures_total",
			"Refreshes of this cluster that failed since the exporter started.", clusterLabel),
	}
}

// Set is the descriptor set, for text rendering and metric name lists.
func (h HealthDescs) Set() *exposition.Set { return h.set }

// Describe sends the descriptors.
func (h HealthDescs) Describe(ch chan<- *prometheus.Desc) { h.set.Describe(ch) }

// Collect sends the health series for one cluster's state as const metrics.
func Collect[S any](h HealthDescs, ch chan<- prometheus.Metric, cluster string, st *State[S]) {
	Emit(h, exposition.ChanSink(ch), cluster, st)
}

// Emit adds the health series for one cluster's state to sink.
func Emit[S any](h HealthDescs, sink exposition.Sink, cluster string, st *State[S]) {
	up := 0.0
	if st.Up {
		up = 1
	}
	sink.Add(h.up, up, cluster)
	if st.Refreshes > 0 {
		sink.Add(h.duration, st.LastDuration.Seconds(), cluster)
	}
	if !st.LastSuccess.IsZero() {
		sink.Add(h.lastSuccess, float64(st.LastSuccess.UnixNano())/1e9, cluster)
	}
	sink.Add(h.refreshes, float64(st.Refreshes), cluster)
	sink.Add(h.failures, float64(st.Failures), cluster)
}
