package kafka

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-kit/log/level"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiDescribeQuorum is DescribeQuorum (KRaft, Kafka 3.3+), which brokers
// forward to the active controller.
const apiDescribeQuorum int16 = 55

// clusterMetadataTopic is the KRaft metadata log, partition 0 of which the
// controller quorum replicates.
const clusterMetadataTopic = "__cluster_metadata"

// Quorum is the KRaft controller quorum as the active controller reports it.
type Quorum struct {
	// LeaderID is the active controller's node ID, -1 while there is none.
	LeaderID      int32
	LeaderEpoch   int32
	HighWatermark int64
	// Voters are sorted by ID.
	Voters []QuorumVoter
	// Observers replicate the metadata log without voting: brokers, and
	// controllers that are not (or not yet) voters. Sorted by ID.
	Observers []QuorumObserver
	// FetchTimesKnown is true when the leader reports when each replica
	// last fetched (DescribeQuorum v1+, Kafka 3.3+).
	FetchTimesKnown bool
}

// QuorumVoter is one controller voting in the quorum.
type QuorumVoter struct {
	ID int32
	// DirectoryID is the voter's metadata log directory ID, as Kafka
	// prints it (KIP-853: a voter is an ID and a directory); "" before
	// DescribeQuorum v2 (Kafka 3.9), or for a static quorum, which has none.
	DirectoryID  string
	LogEndOffset int64
	// Lag is how many records of the metadata log the voter is behind the
	// leader (the leader's log end offset minus its own; 0 for the leader).
	Lag int64
	// CaughtUpAge is how long before the refresh the voter last caught up
	// with the leader, by the leader's clock; -1 when the leader does not
	// know (DescribeQuorum before v1, or never since it became leader).
	CaughtUpAge time.Duration
	// LastFetchAge is how long before the refresh the leader last had a
	// fetch from the voter, by its clock; 0 for the leader itself, -1 when
	// it does not know.
	LastFetchAge time.Duration
}

// QuorumObserver is one replica of the metadata log that does not vote.
type QuorumObserver struct {
	ID           int32
	DirectoryID  string
	LastFetchAge time.Duration
}

// quorumFetchMaxAge is how long ago the leader may last have had a fetch
// from a replica for it to count as online. A live replica fetches all the
// time (a fetch waits at most controller.quorum.fetch.timeout.ms, 2 s by
// default, for data, and the log gets a record every 500 ms); the leader
// itself resigns when a majority has not fetched for 1.5 fetch timeouts.
// Ten seconds is several missed fetches, and a stopped controller is seen
// within one refresh after that.
const quorumFetchMaxAge = 10 * time.Second

// Online reports whether the voter is fetching from the leader: the
// leader itself, or a voter whose last fetch is at most quorumFetchMaxAge
// old. Meaningful only when Quorum.FetchTimesKnown.
func (v QuorumVoter) Online(q *Quorum) bool {
	return v.ID == q.LeaderID || fetchedLately(v.LastFetchAge)
}

func fetchedLately(age time.Duration) bool { return age >= 0 && age <= quorumFetchMaxAge }

// ControllerObservers are the observers that are not brokers of the
// cluster (isBroker: a registered broker, fenced or not, or one the
// exporter remembers) and fetched lately: controllers outside the voter
// set, which add nothing to the quorum's failure tolerance (KIP-853: not
// yet added, removed, or waiting for controller.quorum.auto.join.enable).
// This is the derivation KAFKA-16524 leaves to tools: a client reaching
// the brokers cannot ask for the controllers. Its limits: a combined node
// (broker and controller) removed from the voters is a broker, so it is
// not counted; a broker that has not registered yet is, for the seconds
// it takes to register. known is false when the leader does not say when
// observers fetched (an observer that stopped stays listed for minutes).
func (q *Quorum) ControllerObservers(isBroker func(id int32) bool) (controllers []QuorumObserver, known bool) {
	if !q.FetchTimesKnown {
		return nil, false
	}
	for _, o := range q.Observers {
		if !isBroker(o.ID) && fetchedLately(o.LastFetchAge) {
			controllers = append(controllers, o)
		}
	}
	return controllers, true
}

// quorumRead is what readQuorum hands back to the watcher goroutine: the
// quorum, or the error that left it unknown, and the franz-go state the
// request updated (seed broker, ApiVersions answer), to be stored.
type quorumRead struct {
	quorum *Quorum
	err    error
	franz  franzConn
}

// readQuorum sends one DescribeQuorum request (API 55) with franz-go. It
// runs on a goroutine of its own beside the broker probes, so it touches no
// field of the source: franz is its own copy, returned with the outcome for
// storeQuorum. ctx bounds it: when the quorum is lost the brokers cannot
// forward it, and it must not hold up the rest of the refresh.
func readQuorum(ctx context.Context, franz franzConn, now func() time.Time) quorumRead {
	q, err := describeQuorum(ctx, &franz, now)
	return quorumRead{quorum: q, err: err, franz: franz}
}

// storeQuorum stores what readQuorum updated and returns the quorum, or nil
// when the cluster does not offer the API (ZooKeeper mode, Kafka before
// 3.3; a debug log says so) or the request failed (logged once at warn).
// The watcher goroutine calls it after joining readQuorum's.
func (s *source) storeQuorum(r quorumRead) (*Quorum, string) {
	s.franz = r.franz
	switch {
	case errors.Is(r.err, errAPIMissing):
		level.Debug(s.logger).Log("msg", "cluster does not offer DescribeQuorum (API 55, KRaft); quorum series are not served")
		return nil, ""
	case r.err != nil:
		s.logFailure("quorum", "describing the KRaft quorum failed; quorum series are not served", r.err)
		return nil, r.err.Error()
	}
	s.logFailure("quorum", "", nil)
	return r.quorum, ""
}

func describeQuorum(ctx context.Context, franz *franzConn, now func() time.Time) (*Quorum, error) {
	if err := franz.offers(ctx, apiDescribeQuorum, now); err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = clusterMetadataTopic
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := franz.request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("describe quorum: %w", err)
	}
	resp := kresp.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe quorum: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("describe quorum: answer has %d topics, want %s partition 0", len(resp.Topics), clusterMetadataTopic)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe quorum: %w", err)
	}
	return quorumFrom(p, resp.GetVersion(), now()), nil
}

// quorumFrom turns the metadata partition's quorum state, from a
// DescribeQuorum answer of the given version, into a Quorum as of now.
func quorumFrom(p kmsg.DescribeQuorumResponseTopicPartition, version int16, now time.Time) *Quorum {
	q := &Quorum{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark, FetchTimesKnown: version >= 1}
	if q.LeaderID < 0 {
		q.LeaderID = NoLeader
	}
	// Without a leader entry, the high watermark is the best reference.
	leaderEnd := p.HighWatermark
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			leaderEnd = v.LogEndOffset
			// Ages by one clock: the leader stamps its own entry with its
			// time of answering, and the others' with its times of their
			// fetches, so their ages are the leader's differences and no
			// skew between its clock and the exporter's enters them. now
			// stands in only for a leader that stamps nothing.
			if leaderNow := max(v.LastCaughtUpTimestamp, v.LastFetchTimestamp); leaderNow > 0 {
				now = time.UnixMilli(leaderNow)
			}
		}
	}
	age := func(ms int64) time.Duration {
		if ms < 0 {
			return -1
		}
		return max(0, now.Sub(time.UnixMilli(ms)))
	}
	for _, v := range p.CurrentVoters {
		voter := QuorumVoter{
			ID: v.ReplicaID, DirectoryID: directoryID(v.ReplicaDirectoryID), LogEndOffset: v.LogEndOffset,
			Lag: max(0, leaderEnd-v.LogEndOffset), CaughtUpAge: age(v.LastCaughtUpTimestamp), LastFetchAge: age(v.LastFetchTimestamp),
		}
		if v.ReplicaID == p.LeaderID {
			voter.LastFetchAge = 0 // the leader reports -1 for itself
		}
		q.Voters = append(q.Voters, voter)
	}
	for _, o := range p.Observers {
		q.Observers = append(q.Observers, QuorumObserver{ID: o.ReplicaID, DirectoryID: directoryID(o.ReplicaDirectoryID), LastFetchAge: age(o.LastFetchTimestamp)})
	}
	slices.SortFunc(q.Voters, func(a, b QuorumVoter) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(q.Observers, func(a, b QuorumObserver) int { return cmp.Compare(a.ID, b.ID) })
	return q
}

// directoryID writes a directory ID as Kafka does (Uuid.toString: URL-safe
// base64 without padding); "" for the zero ID, which stands for none.
func directoryID(id [16]byte) string {
	if id == [16]byte{} {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}
