package system

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// Head is the status page's head of a cluster whose watcher published st,
// as of now. It lives with the registry, whose Spec carries the views: not
// in status/model, which imports nothing of the exporter, nor in
// collector/watch, which imports no page.
func Head[S any](st *watch.State[S], now time.Time) *model.Head {
	h := &model.Head{Up: st.Up, HasData: st.Snapshot != nil, Refreshes: st.Refreshes, Failures: st.Failures}
	if st.LastError != nil {
		h.LastError = st.LastError.Error()
	}
	if !st.LastSuccess.IsZero() {
		h.LastOK = model.Ago(now.Sub(st.LastSuccess))
	}
	return h
}

// Views is a Spec.Views that shows each cluster as a section of the
// status page: of the system called system, titled title followed by the
// cluster's name, under its Head. parts fills in the rest from the
// cluster's snapshot, when it has one.
func Views[S any](system, title string, parts func(c *model.Cluster, s *S)) func(states []watch.Named[S], now time.Time) []model.Cluster {
	return func(states []watch.Named[S], now time.Time) []model.Cluster {
		out := make([]model.Cluster, 0, len(states))
		for _, named := range states {
			c := model.Cluster{System: system, Name: named.Name, Head: Head(named.State, now), Title: title + named.Name}
			if s := named.State.Snapshot; s != nil {
				parts(&c, s)
			}
			out = append(out, c)
		}
		return out
	}
}
