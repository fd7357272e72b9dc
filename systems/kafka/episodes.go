package kafka

import (
	"slices"
	"sort"
	"strconv"
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
// (nil for the exporter's first snapshot). An episode begins at the
// exporter's first failed probe of the broker that caused it, once the
// metadata confirms it (outageClock), or else at the refresh that sees it.
// A condition already present when the exporter first sees a topic, or
// first knows its min ISR, is an episode of unknown start. It opens an
// episode where a condition begins, observes its duration in the topic's
// histogram where it ends, and drops the histograms of topics that are
// gone.
func carryEpisodes(prev, next *Snapshot) {
	var before Episodes
	var prevTopics map[string]*Topic // by name, for topics prev had
	if prev != nil {
		before = prev.Episodes
		prevTopics = topicsByName(prev)
	}
	active := activeConditions(next)
	clock := newOutageClock(prev, next)

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
		begin := episodeBegin(c, prevTopics, next, clock)
		open, closed := episode.Step(before.Open[c], next.ReadAt, active[c], begin)
		next.Episodes.Open[c] = open
		observeEnded(ended, c, closed, topics)
		noteOpen(ended, oldest, c, open)
	}
	next.Episodes.Ended = ended
	next.Episodes.Oldest = oldest
}

// activeConditions lists, for each condition, the partitions of next in
// it, in topic and partition order.
func activeConditions(next *Snapshot) [conditionCount][]PartitionKey {
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
	return active
}

// episodeBegin returns episode.Step's begin for condition c: when an
// episode that opens in next began.
func episodeBegin(c Condition, prevTopics map[string]*Topic, next *Snapshot, clock *outageClock) func(PartitionKey) episode.Open {
	// Keys come in topic and partition order: the topic found for
	// one serves the next, and partitions are read in memory order.
	var nt *Topic
	return func(k PartitionKey) episode.Open {
		// The start is seen when prev had the topic and, for min
		// ISR, knew the topic's min.insync.replicas (it may be read late).
		pt, ok := prevTopics[k.Topic]
		if !ok || (c == ConditionUnderMinISR && pt.MinISR == 0) {
			return episode.Open{Since: next.ReadAt}
		}
		o := episode.Open{Since: next.ReadAt, StartSeen: true}
		if clock == nil {
			return o
		}
		if nt == nil || nt.Name != k.Topic {
			nt = findTopic(next.Topics, k.Topic)
		}
		if np := findPartition(nt.Partitions, k.Partition); np != nil {
			if start := clock.start(c, pt, np); !start.IsZero() {
				o.Since = start
			}
		}
		return o
	}
}

// observeEnded observes the durations of condition c's episodes that
// ended in their topics' histograms (ended, copied on write).
func observeEnded(ended map[string]*TopicEpisodes, c Condition, closed []episode.Ended[PartitionKey], topics map[string]bool) {
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
		h[c] = h[c].ObserveDuration(e.Duration)
		ended[e.Key.Topic] = h
	}
}

// noteOpen gives each topic with an open episode of condition c its
// histogram, and records the topic's oldest open episode's start.
func noteOpen(ended map[string]*TopicEpisodes, oldest map[string]*[conditionCount]time.Time, c Condition, open map[PartitionKey]episode.Open) {
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

// carryProbes dates each broker's run of failed probes
// (Broker.ProbeFailedSince) from prev's: the evidence the outage clock
// backdates episodes to.
func carryProbes(prev, next *Snapshot) {
	probedAt := next.ProbedAt
	if probedAt.IsZero() {
		probedAt = next.ReadAt
	}
	for i := range next.Brokers {
		nb := &next.Brokers[i]
		if nb.Address == "" {
			continue // never probed
		}
		var pb *Broker
		if prev != nil {
			pb = findBroker(prev.Brokers, nb.ID)
		}
		var sinceBefore time.Time
		reachedBefore := pb != nil && pb.Reachable
		if pb != nil {
			sinceBefore = pb.ProbeFailedSince
		}
		nb.ProbeFailedSince = episode.FailedSince(pb != nil, reachedBefore, sinceBefore, nb.Reachable, probedAt)
	}
}

// outageClock dates the episodes that open in next from the exporter's
// first failed probe of the broker that caused them (episode.Backdate),
// each broker's date worked out once.
type outageClock struct {
	prev, next *Snapshot
	failedAt   map[int32]time.Time
}

// newOutageClock returns nil when nothing can be dated: on the exporter's
// first snapshot, or with the clock off.
func newOutageClock(prev, next *Snapshot) *outageClock {
	if prev == nil || next.backdateLimit <= 0 {
		return nil
	}
	return &outageClock{prev: prev, next: next, failedAt: map[int32]time.Time{}}
}

// brokerFailedAt is the first failed probe of broker id that explains a
// failure the metadata confirms in next, by the outage clock's rule:
// next.ReadAt when there is none.
func (o *outageClock) brokerFailedAt(id int32) time.Time {
	if at, ok := o.failedAt[id]; ok {
		return at
	}
	at := o.next.ReadAt
	if nb := findBroker(o.next.Brokers, id); nb != nil {
		evidence := nb.ProbeFailedSince
		if pb := findBroker(o.prev.Brokers, id); pb != nil {
			evidence = episode.Evidence(nb.ProbeFailedSince, pb.ProbeFailedSince, pb.Reachable)
		}
		at = episode.Backdate(o.next.ReadAt, evidence, o.next.backdateLimit)
	}
	o.failedAt[id] = at
	return at
}

// start is when condition c of partition np, not open in prev, began:
// for a partition gone offline, the first failed probe of the leader it
// lost; for one whose ISR shrank, the last of the first failed probes of
// the members it lost (the condition began when the last of them went).
// A member that left the ISR while the exporter still reached it (a
// lagging replica) dates the condition to this refresh, as does a
// condition no lost member explains. Zero means this refresh.
func (o *outageClock) start(c Condition, pt *Topic, np *Partition) time.Time {
	pp := findPartition(pt.Partitions, np.ID)
	if pp == nil {
		return time.Time{}
	}
	if c == ConditionOffline {
		if pp.Leader == NoLeader {
			return time.Time{}
		}
		return o.brokerFailedAt(pp.Leader)
	}
	var start time.Time
	for _, id := range pp.ISR {
		if slices.Contains(np.ISR, id) {
			continue
		}
		if at := o.brokerFailedAt(id); at.After(start) {
			start = at
		}
	}
	return start
}

// findTopic finds a topic by name in topics sorted by name.
func findTopic(topics []Topic, name string) *Topic {
	i := sort.Search(len(topics), func(i int) bool { return topics[i].Name >= name })
	if i == len(topics) || topics[i].Name != name {
		return nil
	}
	return &topics[i]
}

// annotateFirstFailures gives the events that report a confirmed failure
// (a broker down, a partition offline or under min ISR) the first failed
// probe that began it, when that came first: the broker's own, or the
// start the outage clock gave the partition's episode.
func annotateFirstFailures(prev, next *Snapshot) {
	clock := newOutageClock(prev, next)
	for i := range next.Events.Events {
		ev := &next.Events.Events[i]
		var first time.Time
		switch ev.Kind {
		case EventBrokerDown:
			if id, err := strconv.ParseInt(ev.Subject.NodeID, 10, 32); err == nil && clock != nil {
				first = clock.brokerFailedAt(int32(id))
			}
		case EventPartitionOffline, EventUnderMinISRBegin:
			c := ConditionOffline
			if ev.Kind == EventUnderMinISRBegin {
				c = ConditionUnderMinISR
			}
			if ev.Subject.Partition != nil {
				if o, ok := next.Episodes.Open[c][PartitionKey{ev.Subject.Topic, *ev.Subject.Partition}]; ok {
					first = o.Since
				}
			}
		}
		if !first.IsZero() && first.Before(ev.Time) {
			ev.FirstFailure = first
		}
	}
}
