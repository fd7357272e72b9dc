package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-kit/log/level"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiDescribeCluster is DescribeCluster (KIP-700); from v2 (Kafka 4.0,
// KIP-1073) it lists the registered brokers that are fenced too, which
// Metadata leaves out.
const apiDescribeCluster int16 = 60

// readFenced marks the brokers the controller fenced: registered, but
// serving nothing (dead, paused, or alive and not caught up with the
// metadata log). Metadata lists only unfenced brokers, so without it a
// fenced broker and one that left the cluster look the same. On clusters
// without DescribeCluster v2 (before Kafka 4.0) snap.FencedKnown stays
// false and the fenced series are absent, not 0.
func (s *source) readFenced(ctx context.Context, snap *Snapshot) {
	registered, err := describeRegistered(ctx, &s.franz, s)
	switch {
	case errors.Is(err, errAPIMissing):
		level.Debug(s.logger).Log("msg", "cluster does not list fenced brokers (DescribeCluster v2, Kafka 4.0+); kafka_broker_fenced is not served")
		return
	case err != nil:
		s.logFailure("fenced", "describing the cluster's fenced brokers failed; kafka_broker_fenced is not served", err)
		return
	}
	s.logFailure("fenced", "", nil)
	snap.FencedKnown = true
	snap.registered = registered
	for i := range snap.Brokers {
		snap.Brokers[i].Fenced = registered[snap.Brokers[i].ID]
	}
}

// describeRegistered returns every registered broker, by ID: true for the
// fenced ones.
func describeRegistered(ctx context.Context, franz *franzConn, s *source) (map[int32]bool, error) {
	if err := franz.offers(ctx, apiDescribeCluster, s.now); err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	kresp, err := franz.request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	resp := kresp.(*kmsg.DescribeClusterResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe cluster: %w", err)
	}
	if resp.GetVersion() < 2 {
		// The broker answered an older version: it cannot list fenced ones.
		return nil, fmt.Errorf("describe cluster v%d: %w", resp.GetVersion(), errAPIMissing)
	}
	registered := make(map[int32]bool, len(resp.Brokers))
	for _, b := range resp.Brokers {
		registered[b.NodeID] = b.IsFenced
	}
	return registered, nil
}
