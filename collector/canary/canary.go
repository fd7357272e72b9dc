// Package canary holds what the Kafka and Redis write canaries share: the
// latency buckets and the histogram they accumulate into. Their rounds are
// served by the collector every system uses (exposition.Collector).
//
// Their snapshots carry what a round saw as events (events.CanaryWriteFailing,
// CanaryWriteRecovered, CanaryAcknowledgedWritesLost), which the collector
// manager records in the event log like the watchers' transitions.
//
// A write canary is the one part of the exporter that writes to a cluster.
// It is off unless a cluster's config enables it, owns its own clients and
// touches nothing but its own topic (Kafka) or keys (Redis). Metadata says
// who leads; the canary says whether the leader really takes writes, and
// whether writes it acknowledged survived the next failover.
package canary

// LatencyBuckets are the upper bounds, in seconds, of the write latency
// histograms: a healthy write on a LAN takes about a millisecond, a write
// waiting on a slow replica or a leader election takes up to seconds.
var LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// Histogram is a classic histogram of write latencies. It is a value: a
// snapshot holds copies, so a published snapshot never changes.
type Histogram struct {
	Count uint64
	Sum   float64
	// Cumulative[i] counts observations at most LatencyBuckets[i].
	Cumulative []uint64
}

// Observe returns h with one more observation of seconds.
func (h Histogram) Observe(seconds float64) Histogram {
	cumulative := make([]uint64, len(LatencyBuckets))
	copy(cumulative, h.Cumulative)
	for i, bound := range LatencyBuckets {
		if seconds <= bound {
			cumulative[i]++
		}
	}
	return Histogram{Count: h.Count + 1, Sum: h.Sum + seconds, Cumulative: cumulative}
}

// Buckets returns the cumulative counts, zeros if nothing was observed.
func (h Histogram) Buckets() []uint64 {
	if h.Cumulative == nil {
		return make([]uint64, len(LatencyBuckets))
	}
	return h.Cumulative
}
