// Package canary holds what the Kafka and Redis write canaries share: the
// latency buckets and the histogram they accumulate into, the families
// every canary serves and how (Metrics, Round), and what completes their
// registry entries (Spec). Their rounds are served by the collector every
// system uses (exposition.Collector).
//
// Their snapshots carry what a round saw as events (EventWriteFailing,
// CanaryWriteRecovered, CanaryAcknowledgedWritesLost), which the collector
// manager records in the event log like the watchers' transitions.
//
// A write canary is the one part of the exporter that writes to a cluster.
// It is off unless a cluster's config enables it, owns its own clients and
// touches nothing but its own topic (Kafka) or keys (Redis). Metadata says
// who leads; the canary says whether the leader really takes writes, and
// whether writes it acknowledged survived the next failover.
package canary

import (
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/histogram"
)

// LatencyBuckets are the upper bounds, in seconds, of the write latency
// histograms: a healthy write on a LAN takes about a millisecond, a write
// waiting on a slow replica or a leader election takes up to seconds.
var LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// Histogram is a histogram of write latencies over LatencyBuckets
// (histogram.Histogram: immutable, so a published snapshot never
// changes; nil is empty).
type Histogram = histogram.Histogram[latencyBounds]

// latencyBounds gives latency histograms their LatencyBuckets.
type latencyBounds struct{}

func (latencyBounds) Bounds() []float64 { return LatencyBuckets }

// EmitLeader emits a canary's *_canary_leader: 1 if this exporter holds
// the lease (holder: the snapshot's Leader) and its last round succeeded,
// else 0. A holder whose rounds fail writes nothing: not the writer now.
func EmitLeader(sink exposition.Sink, leader *exposition.Desc, cluster string, holder, up bool) {
	value := 0.0
	if holder && up {
		value = 1
	}
	sink.Add(leader, value, cluster)
}
