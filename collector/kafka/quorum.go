package kafka

import (
	"context"
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
	Voters    []QuorumVoter
	Observers int
}

// QuorumVoter is one controller voting in the quorum.
type QuorumVoter struct {
	ID           int32
	LogEndOffset int64
	// Lag is how many records of the metadata log the voter is behind the
	// leader (the leader's log end offset minus its own; 0 for the leader).
	Lag int64
	// CaughtUpAge is how long before the refresh the voter last caught up
	// with the leader, by the leader's clock; -1 when the leader does not
	// know (DescribeQuorum before v1, or never since it became leader).
	CaughtUpAge time.Duration
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
func (s *source) storeQuorum(r quorumRead) *Quorum {
	s.franz = r.franz
	switch {
	case errors.Is(r.err, errAPIMissing):
		level.Debug(s.logger).Log("msg", "cluster does not offer DescribeQuorum (API 55, KRaft); quorum series are not served")
		return nil
	case r.err != nil:
		s.logFailure("quorum", "describing the KRaft quorum failed; quorum series are not served", r.err)
		return nil
	}
	s.logFailure("quorum", "", nil)
	return r.quorum
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
	return quorumFrom(p, now()), nil
}

// quorumFrom turns the metadata partition's quorum state into a Quorum as
// of now.
func quorumFrom(p kmsg.DescribeQuorumResponseTopicPartition, now time.Time) *Quorum {
	q := &Quorum{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark, Observers: len(p.Observers)}
	if q.LeaderID < 0 {
		q.LeaderID = NoLeader
	}
	// Without a leader entry, the high watermark is the best reference.
	leaderEnd := p.HighWatermark
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			leaderEnd = v.LogEndOffset
		}
	}
	for _, v := range p.CurrentVoters {
		voter := QuorumVoter{ID: v.ReplicaID, LogEndOffset: v.LogEndOffset, Lag: max(0, leaderEnd-v.LogEndOffset), CaughtUpAge: -1}
		if v.LastCaughtUpTimestamp >= 0 {
			voter.CaughtUpAge = max(0, now.Sub(time.UnixMilli(v.LastCaughtUpTimestamp)))
		}
		q.Voters = append(q.Voters, voter)
	}
	slices.SortFunc(q.Voters, func(a, b QuorumVoter) int { return int(a.ID - b.ID) })
	return q
}
