package canary

import "testing"

func TestHistogramObserveIsCumulativeAndLeavesTheOriginal(t *testing.T) {
	var h *Histogram
	h1 := h.Observe(0.0007) // first bucket above it is 0.001
	h2 := h1.Observe(3)     // only the 5s bucket
	h3 := h2.Observe(60)    // above every bucket: only the count
	if h1.Count != 1 || h1.Cumulative[0] != 0 || h1.Cumulative[1] != 1 || h1.Cumulative[len(LatencyBuckets)-1] != 1 {
		t.Errorf("after one observation: %+v", h1)
	}
	last := len(LatencyBuckets) - 1
	if h3.Count != 3 || h3.Cumulative[last] != 2 || h3.Cumulative[last-1] != 1 || h3.Sum != 63.0007 {
		t.Errorf("after three observations: %+v", h3)
	}
	if h1.Count != 1 || h1.Cumulative[last] != 1 {
		t.Errorf("Observe changed an earlier value: %+v", h1)
	}
	if _, _, got := h.Values(); len(got) != len(LatencyBuckets) {
		t.Errorf("empty histogram has %d buckets", len(got))
	}
}
