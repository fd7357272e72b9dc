package model

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// HeadOf is the head of a cluster whose watcher published st, as of now.
func HeadOf[S any](st *watch.State[S], now time.Time) *Head {
	h := &Head{Up: st.Up, HasData: st.Snapshot != nil, Refreshes: st.Refreshes, Failures: st.Failures}
	if st.LastError != nil {
		h.LastError = st.LastError.Error()
	}
	if !st.LastSuccess.IsZero() {
		h.LastOK = Ago(now.Sub(st.LastSuccess))
	}
	return h
}
