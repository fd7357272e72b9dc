package watch

import (
	"github.com/prometheus/client_golang/prometheus"
)

// HealthDescs are the series every cluster type exports about its own
// refresh loop, named like their twins across cluster types so that
// dashboards and alerts read the same for Kafka and Redis.
type HealthDescs struct {
	up           *prometheus.Desc
	duration     *prometheus.Desc
	lastSuccess  *prometheus.Desc
	refreshes    *prometheus.Desc
	failures     *prometheus.Desc
	clusterLabel string
}

// NewHealthDescs builds the descriptors. upName is the name of the up
// gauge (kafka_up, redis_cluster_up); prefix is the prefix of the refresh
// series (kafka_exporter, redis_cluster_exporter); clusterLabel is the label
// carrying the cluster name.
func NewHealthDescs(upName, upHelp, prefix, clusterLabel string) HealthDescs {
	labels := []string{clusterLabel}
	return HealthDescs{
		up: prometheus.NewDesc(upName, upHelp, labels, nil),
		duration: prometheus.NewDesc(prefix+"_refresh_duration_seconds",
			"How long the last refresh of this cluster took, successful or not.", labels, nil),
		lastSuccess: prometheus.NewDesc(prefix+"_last_refresh_success_timestamp_seconds",
			"Unix time when this cluster was last read successfully; time() minus this is the age of the data.", labels, nil),
		refreshes: prometheus.NewDesc(prefix+"_refreshes_total",
			"Refreshes of this cluster attempted since the exporter started.", labels, nil),
		failures: prometheus.NewDesc(prefix+"_refresh_failures_total",
			"Refreshes of this cluster that failed since the exporter started.", labels, nil),
		clusterLabel: clusterLabel,
	}
}

// Describe sends the descriptors.
func (h HealthDescs) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.up
	ch <- h.duration
	ch <- h.lastSuccess
	ch <- h.refreshes
	ch <- h.failures
}

// Collect sends the health series for one cluster's state.
func Collect[S any](h HealthDescs, ch chan<- prometheus.Metric, cluster string, st *State[S]) {
	up := 0.0
	if st.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(h.up, prometheus.GaugeValue, up, cluster)
	if st.Refreshes > 0 {
		ch <- prometheus.MustNewConstMetric(h.duration, prometheus.GaugeValue, st.LastDuration.Seconds(), cluster)
	}
	if !st.LastSuccess.IsZero() {
		ch <- prometheus.MustNewConstMetric(h.lastSuccess, prometheus.GaugeValue,
			float64(st.LastSuccess.UnixNano())/1e9, cluster)
	}
	ch <- prometheus.MustNewConstMetric(h.refreshes, prometheus.CounterValue, float64(st.Refreshes), cluster)
	ch <- prometheus.MustNewConstMetric(h.failures, prometheus.CounterValue, float64(st.Failures), cluster)
}
