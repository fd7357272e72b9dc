package histogram

import (
	"testing"
	"time"
)

type testBounds struct{}

func (testBounds) Bounds() []float64 { return []float64{0.5, 1, 5} }

func TestObserveIsCumulativeImmutableAndNilSafe(t *testing.T) {
	var h *Histogram[testBounds]
	if count, sum, cumulative := h.Values(); count != 0 || sum != 0 || len(cumulative) != 3 {
		t.Fatalf("nil histogram values %d %v %v", count, sum, cumulative)
	}
	h1 := h.Observe(0.5) // le is inclusive: in the 0.5 bucket
	h2 := h1.ObserveDuration(3 * time.Second)
	h3 := h2.Observe(60) // above every bound: only the count
	for _, tc := range []struct {
		h     *Histogram[testBounds]
		count uint64
		sum   float64
		cum   []uint64
	}{
		{h1, 1, 0.5, []uint64{1, 1, 1}},
		{h2, 2, 3.5, []uint64{1, 1, 2}},
		{h3, 3, 63.5, []uint64{1, 1, 2}},
	} {
		count, sum, cum := tc.h.Values()
		if count != tc.count || sum != tc.sum || len(cum) != 3 || cum[0] != tc.cum[0] || cum[1] != tc.cum[1] || cum[2] != tc.cum[2] {
			t.Errorf("got %d %v %v, want %d %v %v", count, sum, cum, tc.count, tc.sum, tc.cum)
		}
	}
	if e := Empty[testBounds](); e.Count != 0 || len(e.Cumulative) != 3 {
		t.Errorf("Empty() = %+v", e)
	}
}
