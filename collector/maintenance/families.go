package maintenance

import (
	"github.com/failover-exporter/failover_exporter/collector/exposition"
)

// Families are one system's own series of its clusters' open windows,
// served with each cluster's series (on /metrics and on /probe) and
// labelled as that system's series are, so that an alert rule can leave out
// what an announced stop explains with a join on the cluster's own labels
// (`unless on (kafka_cluster, broker) kafka_maintenance_active`): the
// exporter's failover_exporter_maintenance_active comes from another scrape
// job when clusters are probed, and rules must not join across jobs.
type Families struct {
	// Set holds the two families, for the system's metric tables.
	Set          *exposition.Set
	active, ends *exposition.Desc
}

// NewFamilies declares PREFIXmaintenance_active and
// PREFIXmaintenance_end_timestamp_seconds, labelled clusterLabel (the
// cluster's name), scope and memberLabel (each member the window covers,
// as the system's series label it: a broker id, a node's address).
func NewFamilies(prefix, clusterLabel, memberLabel, member string) *Families {
	set := &exposition.Set{}
	return &Families{
		Set: set,
		active: set.Gauge(prefix+"maintenance_active",
			"1 for each "+member+" an open maintenance window covers (POST /api/v1/maintenance, safe-to-stop --announce: a stop the failure budget called safe, until the "+member+" is back and caught up, its TTL or a withdrawal); scope is what was announced. Alert rules leave out what the stop explains while it is served (docs/maintenance.md).",
			clusterLabel, "scope", memberLabel),
		ends: set.Gauge(prefix+"maintenance_end_timestamp_seconds",
			"When the maintenance window covering the "+member+" reaches its TTL, in seconds since the Unix epoch.",
			clusterLabel, "scope", memberLabel),
	}
}

// Append adds the series of the windows (one system's) whose cluster keep
// accepts to st, as families of their own after the clusters' series.
func (f *Families) Append(st *exposition.Stream, windows []Window, keep func(cluster string) bool) {
	var kept []Window
	for _, w := range windows {
		if keep(w.Cluster) {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		return
	}
	r := f.Set.Render(nil, func(sink exposition.Sink) {
		for _, w := range kept {
			for _, m := range w.Members {
				sink.Add(f.active, 1, w.Cluster, string(w.Scope), m)
				sink.Add(f.ends, float64(w.Until.Unix()), w.Cluster, string(w.Scope), m)
			}
		}
	})
	st.AddSet(f.Set, []*exposition.Rendered{r})
}
