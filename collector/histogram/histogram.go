// Package histogram is the one histogram type the exporter keeps in its
// snapshots: a classic histogram over fixed upper bounds, immutable, so
// snapshots share the ones that did not change. The bounds are part of
// the type (B), so a histogram's zero value and nil already know them.
// The failover episodes (collector/episode) and the write canaries'
// latencies (collector/canary) are each one instantiation.
package histogram

import (
	"sort"
	"time"
)

// Bounds gives a histogram type its upper bounds, in seconds, ascending.
type Bounds interface {
	Bounds() []float64
}

// Histogram counts observations by bucket. It is never changed once made:
// Observe returns a new one.
type Histogram[B Bounds] struct {
	// Cumulative[i] counts the observations at most the i-th bound.
	Cumulative []uint64
	Count      uint64
	// Sum is the total of the observations, in seconds.
	Sum float64
}

// Empty returns a histogram without observations, for a series that must
// be served at zero before its first observation.
func Empty[B Bounds]() *Histogram[B] {
	var b B
	return &Histogram[B]{Cumulative: make([]uint64, len(b.Bounds()))}
}

// Observe returns a copy of h (which may be nil: empty) with one more
// observation of seconds.
func (h *Histogram[B]) Observe(seconds float64) *Histogram[B] {
	var b B
	bounds := b.Bounds()
	next := &Histogram[B]{Cumulative: make([]uint64, len(bounds))}
	if h != nil {
		copy(next.Cumulative, h.Cumulative)
		next.Count, next.Sum = h.Count, h.Sum
	}
	for i := sort.SearchFloat64s(bounds, seconds); i < len(bounds); i++ {
		next.Cumulative[i]++
	}
	next.Count++
	next.Sum += seconds
	return next
}

// ObserveDuration is Observe of a duration.
func (h *Histogram[B]) ObserveDuration(d time.Duration) *Histogram[B] { return h.Observe(d.Seconds()) }

// Values returns the count, sum and cumulative bucket counts to serve,
// zeros for nil.
func (h *Histogram[B]) Values() (count uint64, sum float64, cumulative []uint64) {
	if h == nil || h.Cumulative == nil {
		var b B
		return 0, 0, make([]uint64, len(b.Bounds()))
	}
	return h.Count, h.Sum, h.Cumulative
}
