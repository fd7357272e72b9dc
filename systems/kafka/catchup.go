package kafka

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Catch-up: a broker back from a restart (or a pause) is out of the ISR of
// its partitions until each replica has fetched up to its leader's log end.
// The ISR says only whether it has; the catch-up read says how far it still
// is. Beside the refreshes, it asks each live broker with replicas out of
// the ISR for the log end offsets of those replicas, then their leaders for
// theirs: ListOffsets for the latest offset with the debugging replica id
// (-2), which a broker answers from its own log, follower or leader, and
// which returns the log end offset rather than the high watermark (Kafka's
// ReplicaManager; checked on 3.9, 4.1, 4.3 and 4.4 by e2e's
// TestKafkaVersions, and the whole read by TestKafkaCatchUp). The
// followers are asked first, so that records written between the two
// answers can only make the gap look larger, never smaller. Every request
// is read-only and needs only Describe on the topic, as a consumer's
// ListOffsets does.

// debuggingReplicaID is ListOffsets' replica id that lets any replica, not
// only the leader, answer from its own log (ListOffsetsRequest.
// DEBUGGING_REPLICA_ID).
const debuggingReplicaID = -2

// consumerReplicaID is ListOffsets' replica id of a consumer: only the
// leader answers, and the latest offset is the high watermark.
const consumerReplicaID = -1

// CatchUp is one read of the out-of-sync replicas' distance to their
// leaders. It is shared between snapshots until the next read ends, and
// never modified.
type CatchUp struct {
	ReadAt time.Time
	// Brokers are the brokers with replicas out of the ISR that the read
	// measured, by ID.
	Brokers map[int32]BrokerCatchUp
	// Watermarks are the high watermarks last read of the watched
	// partitions with a replica out of the ISR, carried from read to read
	// while the leader does not answer (or there is none); a partition back
	// in sync is dropped (unclean.go).
	Watermarks map[PartitionKey]Watermark
	// Candidates are, for each watched partition without a clean leader,
	// the log end offsets of its live replicas that answered, by broker.
	Candidates map[PartitionKey]map[int32]int64
}

// BrokerCatchUp is how far one broker's out-of-sync replicas are behind
// their leaders' log ends.
type BrokerCatchUp struct {
	// Records is the sum over the measured replicas of the leader's log end
	// offset minus the replica's (0 for a replica at or past it).
	Records int64
	// Partitions counts the measured replicas that were behind; Unread the
	// out-of-sync replicas not measured (the broker or the leader did not
	// answer for them).
	Partitions, Unread int
	// Peak is the largest Records of the current catch-up, and PeakAt
	// when the gap began to shrink from it (carryPeaks): the catch-up's
	// rate is measured from then.
	Peak   int64
	PeakAt time.Time
}

// minCatchUpTiming is how long the gap must have been shrinking before
// its rate is told: replication catches up in bursts (a throttled one
// waits out its quota for seconds between them), and a rate over one or
// two reads is a burst's.
const minCatchUpTiming = 10 * time.Second

// Rate is how fast Records has shrunk since it began to shrink from its
// peak, in records per second, as of at; false before it has been
// shrinking for minCatchUpTiming.
func (b BrokerCatchUp) Rate(at time.Time) (float64, bool) {
	elapsed := at.Sub(b.PeakAt)
	if b.Peak <= b.Records || elapsed < minCatchUpTiming {
		return 0, false
	}
	return float64(b.Peak-b.Records) / elapsed.Seconds(), true
}

// ETA is how long the broker needs, at Rate, to have no records left to
// fetch; false while the rate is unknown.
func (b BrokerCatchUp) ETA(at time.Time) (time.Duration, bool) {
	rate, ok := b.Rate(at)
	if !ok {
		return 0, false
	}
	return time.Duration(float64(b.Records) / rate * float64(time.Second)), true
}

type catchUpRead struct {
	read *CatchUp
	readOutcome
}

type catchUpReader = brokerReader[catchUpRead]

var catchUpKind = readKind{
	kind:        "catch_up",
	unsupported: "brokers do not answer ListOffsets from a follower's log; the catch-up series are not served",
	failed:      "reading the out-of-sync replicas' log end offsets failed for some brokers; their catch-up series count only what answered",
}

// catchUpRequests are, per broker, the partitions the read asks it about:
// its own out-of-sync replicas (followers) and the partitions it leads
// that have one (leaders). Only live brokers are asked; an out-of-sync
// replica on a broker that is down, or of a partition without a live
// leader, is counted unread.
//
// For the unclean election's estimate (unclean.go), the watched partitions
// with a replica out of the ISR are tracked: their live leaders are asked
// for the high watermark (watermarks), and the live replicas of those
// without a clean leader for their log end (candidates).
type catchUpRequests struct {
	followers, leaders     map[int32][]PartitionKey
	watermarks, candidates map[int32][]PartitionKey
	leaderOf               map[PartitionKey]int32
	unread                 map[int32]int
	tracked                map[PartitionKey]bool
}

func catchUpRequestsOf(snap *Snapshot, live map[int32]string) catchUpRequests {
	r := catchUpRequests{followers: map[int32][]PartitionKey{}, leaders: map[int32][]PartitionKey{},
		watermarks: map[int32][]PartitionKey{}, candidates: map[int32][]PartitionKey{},
		leaderOf: map[PartitionKey]int32{}, unread: map[int32]int{}, tracked: map[PartitionKey]bool{}}
	for i, topics := range [][]Topic{snap.Topics, snap.UnwatchedJudged} {
		for ti := range topics {
			t := &topics[ti]
			for pi := range t.Partitions {
				p := &t.Partitions[pi]
				if i == 0 {
					r.trackUnclean(t.Name, p, live)
				}
				led := false
				_, leaderLive := live[p.Leader]
				for _, id := range p.Replicas {
					if slices.Contains(p.ISR, id) {
						continue
					}
					_, followerLive := live[id]
					if !followerLive || !leaderLive {
						if followerLive {
							r.unread[id]++
						}
						continue
					}
					key := PartitionKey{Topic: t.Name, Partition: p.ID}
					r.followers[id] = append(r.followers[id], key)
					if !led {
						r.leaders[p.Leader] = append(r.leaders[p.Leader], key)
						r.leaderOf[key] = p.Leader
						led = true
					}
				}
			}
		}
	}
	return r
}

// trackUnclean adds a watched partition's requests for the unclean
// election's estimate: its leader's high watermark while a replica is out
// of the ISR, its candidates' log ends while it has no clean leader.
func (r *catchUpRequests) trackUnclean(topic string, p *Partition, live map[int32]string) {
	if len(p.ISR) >= len(p.Replicas) && !p.Offline() {
		return
	}
	key := PartitionKey{Topic: topic, Partition: p.ID}
	r.tracked[key] = true
	if _, ok := live[p.Leader]; ok {
		r.watermarks[p.Leader] = append(r.watermarks[p.Leader], key)
	}
	for _, id := range uncleanCandidates(p, live) {
		r.candidates[id] = append(r.candidates[id], key)
	}
}

// nothingToAsk is true when no live broker has anything to answer.
func (r *catchUpRequests) nothingToAsk() bool {
	return len(r.followers) == 0 && len(r.watermarks) == 0 && len(r.candidates) == 0
}

// readCatchUp takes the outcome of the read the previous refreshes
// started, starts the next one while some live broker has replicas out of
// the ISR, and gives snap the last read (nil once none has).
func (s *source) readCatchUp(brokers map[int32]string, snap *Snapshot) {
	r := &s.catchUp
	r.keep(s, catchUpKind)
	reqs := catchUpRequestsOf(snap, brokers)
	if len(reqs.tracked) == 0 {
		// Nothing to measure: every replica in sync.
		r.last = nil
		return
	}
	var prev *CatchUp
	if r.last != nil {
		prev = r.last.read
	}
	if reqs.nothingToAsk() {
		// Only replicas on brokers that are down, or partitions without a
		// leader nor a live replica: their high watermarks are carried.
		if !r.running() {
			r.last = &catchUpRead{read: carryOnly(reqs, prev, s.now())}
		}
		if r.last != nil {
			snap.CatchUp = r.last.read
		}
		return
	}
	if !r.running() && !r.paused(s.now()) {
		timeout, at := s.cfg.RequestTimeout, s.now()
		err := r.start(s.cfg, brokers, func(handles map[int32]*kgo.Broker) catchUpRead {
			return readLogEnds(handles, reqs, prev, timeout, at)
		})
		if err != nil {
			s.logFailure("catch_up", "reading the out-of-sync replicas' log end offsets failed; the catch-up series are not served", err)
		}
	}
	if r.last != nil {
		snap.CatchUp = r.last.read
	}
}

// readLogEnds asks the followers, then the leaders, for their log end
// offsets, and sums each follower's distance.
func readLogEnds(handles map[int32]*kgo.Broker, reqs catchUpRequests, prev *CatchUp, timeout time.Duration, at time.Time) catchUpRead {
	replicaEnds, o := logEndOffsets(handles, joinKeys(reqs.followers, reqs.candidates), timeout, debuggingReplicaID)
	if o.unsupported {
		return catchUpRead{readOutcome: o}
	}
	leaderEnds, lo := logEndOffsets(handles, reqs.leaders, timeout, debuggingReplicaID)
	o = o.plus(lo)
	watermarks, wo := logEndOffsets(handles, reqs.watermarks, timeout, consumerReplicaID)
	o = o.plus(wo)
	read := carryOnly(reqs, prev, at)
	read.keepUnclean(reqs, watermarks, replicaEnds)
	if len(reqs.followers) > 0 {
		for id, unread := range reqs.unread {
			read.Brokers[id] = BrokerCatchUp{Unread: unread}
		}
	}
	for id, keys := range reqs.followers {
		b := read.Brokers[id]
		for _, key := range keys {
			f, fok := replicaEnds[id][key]
			l, lok := leaderEnds[reqs.leaderOf[key]][key]
			if !fok || !lok {
				b.Unread++
				continue
			}
			if behind := l - f; behind > 0 {
				b.Records += behind
				b.Partitions++
			}
		}
		read.Brokers[id] = b
	}
	carryPeaks(read, prev)
	return catchUpRead{read: read, readOutcome: o}
}

// keepUnclean records the high watermarks the leaders answered and the
// log ends of the unclean candidates.
func (read *CatchUp) keepUnclean(reqs catchUpRequests, watermarks, replicaEnds map[int32]map[PartitionKey]int64) {
	for leader, keys := range reqs.watermarks {
		for _, key := range keys {
			if hw, ok := watermarks[leader][key]; ok {
				read.Watermarks[key] = Watermark{Offset: hw, ReadAt: read.ReadAt}
			}
		}
	}
	for id, keys := range reqs.candidates {
		for _, key := range keys {
			if end, ok := replicaEnds[id][key]; ok {
				if read.Candidates[key] == nil {
					read.Candidates[key] = map[int32]int64{}
				}
				read.Candidates[key][id] = end
			}
		}
	}
}

// carryOnly is a read that asked nothing: the tracked partitions' high
// watermarks carried from prev.
func carryOnly(reqs catchUpRequests, prev *CatchUp, at time.Time) *CatchUp {
	read := &CatchUp{ReadAt: at, Brokers: map[int32]BrokerCatchUp{}, Watermarks: map[PartitionKey]Watermark{},
		Candidates: map[PartitionKey]map[int32]int64{}}
	if prev == nil {
		return read
	}
	for key, w := range prev.Watermarks {
		if reqs.tracked[key] {
			read.Watermarks[key] = w
		}
	}
	return read
}

// joinKeys is the union of two requests by broker (whose partitions do
// not overlap: one asks about partitions with a leader, one without).
func joinKeys(a, b map[int32][]PartitionKey) map[int32][]PartitionKey {
	out := make(map[int32][]PartitionKey, len(a)+len(b))
	for _, m := range []map[int32][]PartitionKey{a, b} {
		for id, keys := range m {
			out[id] = append(out[id], keys...)
		}
	}
	return out
}

// carryPeaks sets each broker's peak and when its gap began to shrink
// from it. A read within 1% of the peak moves that time forward: a broker
// just resumed spends seconds reconnecting and unfenced before it fetches,
// and a small partition caught up at once (one record of a topic beside
// the big one) does not start the clock. A broker the previous read found
// with nothing behind starts a new catch-up.
func carryPeaks(read, prev *CatchUp) {
	for id, b := range read.Brokers {
		b.Peak, b.PeakAt = b.Records, read.ReadAt
		if prev != nil {
			if p, ok := prev.Brokers[id]; ok && p.Records > 0 && p.Peak > b.Records {
				b.Peak, b.PeakAt = p.Peak, p.PeakAt
				if b.Records*100 >= p.Peak*99 {
					b.PeakAt = read.ReadAt
				}
			}
		}
		read.Brokers[id] = b
	}
}

// logEndOffsets asks each broker of byBroker, at once, for the log end
// offsets of its partitions (the debugging replica id), and returns those
// it answered without an error, by broker.
func logEndOffsets(handles map[int32]*kgo.Broker, byBroker map[int32][]PartitionKey, timeout time.Duration, replicaID int32) (map[int32]map[PartitionKey]int64, readOutcome) {
	if len(byBroker) == 0 {
		return nil, readOutcome{}
	}
	asked, missing := liveLeaders(handles, byBroker, func(keys []PartitionKey) int { return len(keys) }, "out-of-sync partitions")
	ends := map[int32]map[PartitionKey]int64{}
	o := askBrokers(asked, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		got, err := listLogEnds(ctx, broker, byBroker[id], replicaID)
		if err != nil {
			return nil, false, fmt.Errorf("list the log end offsets of %d partitions on broker %d: %w", len(byBroker[id]), id, err)
		}
		return func() { ends[id] = got }, true, nil
	})
	return ends, o.plus(missing)
}

// listLogEnds sends one ListOffsets request for the latest offsets of
// keys with replicaID: with the debugging replica id, the log end offsets
// of any replica; with the consumer's, the leader's high watermarks. A
// partition answered with an error (the broker no longer holds it, or is
// not its replica, or not its leader) is left out.
func listLogEnds(ctx context.Context, broker *kgo.Broker, keys []PartitionKey, replicaID int32) (map[PartitionKey]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = replicaID
	byTopic := map[string][]int32{}
	for _, k := range keys {
		byTopic[k.Topic] = append(byTopic[k.Topic], k.Partition)
	}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range byTopic[topic] {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, latestTimestamp
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	got := map[PartitionKey]int64{}
	for _, t := range kresp.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			if kerr.ErrorForCode(p.ErrorCode) == nil && p.Offset >= 0 {
				got[PartitionKey{Topic: t.Topic, Partition: p.Partition}] = p.Offset
			}
		}
	}
	return got, nil
}

// CatchUpOf is broker id's catch-up from the last read, while the broker
// is live and still has replicas out of the ISR in snap.
func (s *Snapshot) CatchUpOf(id int32) (BrokerCatchUp, bool) {
	if s.CatchUp == nil {
		return BrokerCatchUp{}, false
	}
	b := findBroker(s.Brokers, id)
	if b == nil || !b.Up || b.OutOfSyncReplicas == 0 {
		return BrokerCatchUp{}, false
	}
	c, ok := s.CatchUp.Brokers[id]
	return c, ok
}
