// Package episode times conditions seen in consecutive snapshots (a
// partition without a leader, a Redis master failing): when one begins, how
// old it is while it lasts, and how long it took once it ends. It knows
// nothing about Kafka, Redis or the metric format; the sources call Step
// while carrying state from one snapshot to the next, and the collectors
// emit the results.
//
// An episode begins at the first refresh that sees the condition, or, when
// the cluster confirms a failure the exporter's own probes saw first, at
// the first failed probe (Backdate, in backdate.go); it ends at the first
// refresh that no longer sees the condition. Resolution is one refresh: a
// measured duration is within one refresh interval of the real one, and an
// episode shorter than a refresh may be missed altogether.
package episode

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/histogram"
)

// Buckets are the histogram upper bounds in seconds: from a refresh-short
// blip to an hour-long outage, dense where failovers usually end (a Kafka
// leader election takes seconds, a Redis failover a couple of node
// timeouts).
var Buckets = []float64{0.5, 1, 2.5, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600}

// Histogram counts the durations of ended episodes over Buckets
// (histogram.Histogram: immutable, nil is empty).
type Histogram = histogram.Histogram[durationBounds]

// durationBounds gives episode histograms their Buckets.
type durationBounds struct{}

func (durationBounds) Bounds() []float64 { return Buckets }

// Empty returns a histogram without observations. Collectors serve one as
// soon as an episode could end, so that the first observation is an
// increase Prometheus sees: a series that appears already at 1 looks to
// increase() and rate() as if nothing had happened.
func Empty() *Histogram { return histogram.Empty[durationBounds]() }

// Open is an episode that has begun and not yet ended.
type Open struct {
	// Since is when the first refresh that saw the condition read the
	// cluster, or the first failed probe that explains it (Backdate).
	Since time.Time
	// StartSeen is false when the condition already held at the exporter's
	// first refresh (it was restarted mid-outage): the episode's real start
	// is unknown, Since is only a lower bound, and its duration is not
	// observed when it ends, so that a restart never records a made-up
	// duration.
	StartSeen bool
}

// Age is how long the episode had lasted at now.
func (o Open) Age(now time.Time) time.Duration { return now.Sub(o.Since) }

// Ended is an episode that ended in this refresh.
type Ended[K comparable] struct {
	Key      K
	Duration time.Duration
	// StartSeen is false for an episode that was under way before the
	// exporter's first refresh; its Duration is a lower bound.
	StartSeen bool
}

// Step carries the open episodes of the previous snapshot into the next,
// read at now. active lists the keys whose condition holds now (duplicates
// are harmless). begin opens the episode of a key not open before: Since
// is now, or earlier when the outage clock dates it back (Backdate), and
// StartSeen is false when the previous snapshot could not tell that its
// condition did not hold: the exporter's first snapshot of the cluster, a
// subject it had not seen, or one whose condition it could not evaluate,
// so that the episode is one of unknown start. It is called in the order
// of active. Step returns the episodes open now and those that ended, in
// no particular order.
func Step[K comparable](prev map[K]Open, now time.Time, active []K, begin func(K) Open) (open map[K]Open, ended []Ended[K]) {
	if len(active) > 0 {
		open = make(map[K]Open, len(active))
	}
	for _, k := range active {
		if o, ok := prev[k]; ok {
			open[k] = o
			continue
		}
		if _, dup := open[k]; !dup {
			o := begin(k)
			if !o.StartSeen || o.Since.After(now) {
				// Only a seen start is dated back, and never past now.
				o.Since = now
			}
			open[k] = o
		}
	}
	for k, o := range prev {
		if _, still := open[k]; still {
			continue
		}
		ended = append(ended, Ended[K]{Key: k, Duration: now.Sub(o.Since), StartSeen: o.StartSeen})
	}
	return open, ended
}
