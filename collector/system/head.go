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
