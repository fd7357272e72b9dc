package kafka

import (
	"time"

	"github.com/failover-exporter/failover_exporter/collector/episode"
)

// Condition is a partition state whose episodes are timed.
type Condition int

// Timed conditions, in the order their series are emitted.
const (
	// ConditionOffline: the partition has no leader.
	ConditionOffline Condition = iota
	// ConditionUnderMinISR: acks=all writes are refused. Only timed for
	// topics whose min.insync.replicas is known.
	ConditionUnderMinISR
	// ConditionUnderReplicated: some assigned replica is out of sync.
	ConditionUnderReplicated
	conditionCount
)

// PartitionKey names a partition across topics.
type PartitionKey struct {
	Topic     string
	Partition int32
}

// Episodes are the timed conditions of a cluster, carried from snapshot to
// snapshot by carryEpisodes.
type Episodes struct {
	// Open holds, per condition, the partitions in that condition now and
	// since when. Healthy clusters keep these maps empty, so their cost
	// grows with the trouble, not with the partition count.
	Open [conditionCount]map[PartitionKey]episode.Open
	// Oldest holds, per topic with an open episode, when its oldest open
	// episode of each condition began (zero when none is open).
	Oldest map[string]*[conditionCount]time.Time
	// Ended holds, per topic, the durations of the episodes that ended
	// while this exporter watched, from the start of the topic's first
	// episode of each condition (empty until one ends). Entries are shared
	// between snapshots until they change.
	Ended map[string]*TopicEpisodes
}

// TopicEpisodes are the histograms of one topic's ended episodes, per
// condition (nil while none ended).
type TopicEpisodes [conditionCount]*episode.Histogram

// carryEpisodes times the conditions of next's partitions against prev's
// (nil for the exporter's first snapshot). A condition already present
// when the exporter first sees a topic, or first knows its min ISR, is an
// episode of unknown start. It opens an episode where a condition begins, observes
// its duration in the topic's histogram where it ends, and drops the
// histograms of topics that are gone.
func carryEpisodes(prev, next *Snapshot) {
	var active [conditionCount][]PartitionKey
	for ti := range next.Topics {
		t := &next.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			key := PartitionKey{t.Name, p.ID}
			if p.Offline() {
				active[ConditionOffline] = append(active[ConditionOffline], key)
			}
			if p.UnderMinISR(t.MinISR) {
				active[ConditionUnderMinISR] = append(active[ConditionUnderMinISR], key)
			}
			if p.UnderReplicated() {
				active[ConditionUnderReplicated] = append(active[ConditionUnderReplicated], key)
			}
		}
	}

	var before Episodes
	prevMinISR := map[string]int{} // by topic, for topics prev had
	if prev != nil {
		before = prev.Episodes
		for i := range prev.Topics {
			prevMinISR[prev.Topics[i].Name] = prev.Topics[i].MinISR
		}
	}
	topics := make(map[string]bool, len(next.Topics))
	for i := range next.Topics {
		topics[next.Topics[i].Name] = true
	}
	ended := make(map[string]*TopicEpisodes, len(before.Ended))
	for topic, h := range before.Ended {
		if topics[topic] {
			ended[topic] = h
		}
	}
	oldest := map[string]*[conditionCount]time.Time{}
	for c := range conditionCount {
		// The start is seen when prev had the topic and, for min ISR,
		// knew the topic's min.insync.replicas (it may be read late).
		startSeen := func(k PartitionKey) bool {
			minISR, ok := prevMinISR[k.Topic]
			return ok && (c != ConditionUnderMinISR || minISR > 0)
		}
		open, closed := episode.Step(before.Open[c], next.ReadAt, active[c], startSeen)
		next.Episodes.Open[c] = open
		for _, e := range closed {
			// A partition that vanished with its topic ended nothing; an
			// episode that began before the exporter did has no duration.
			if !e.StartSeen || !topics[e.Key.Topic] {
				continue
			}
			h := &TopicEpisodes{}
			if old := ended[e.Key.Topic]; old != nil {
				*h = *old
			}
			h[c] = h[c].Observe(e.Duration)
			ended[e.Key.Topic] = h
		}
		for key, o := range open {
			// The topic's histogram is served from the start of its first
			// episode, at zero, so that the episode's end is an increase.
			if h := ended[key.Topic]; h == nil || h[c] == nil {
				withEmpty := &TopicEpisodes{}
				if h != nil {
					*withEmpty = *h
				}
				withEmpty[c] = episode.Empty()
				ended[key.Topic] = withEmpty
			}
			o2 := oldest[key.Topic]
			if o2 == nil {
				o2 = &[conditionCount]time.Time{}
				oldest[key.Topic] = o2
			}
			if o2[c].IsZero() || o.Since.Before(o2[c]) {
				o2[c] = o.Since
			}
		}
	}
	next.Episodes.Ended = ended
	next.Episodes.Oldest = oldest
}
