package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-kit/log/level"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// API keys of the requests sent with franz-go because sarama lacks them,
// and of ApiVersions, which tells whether the cluster offers them.
const (
	apiApiVersions             int16 = 18
	apiDescribeTopicPartitions int16 = 75
)

// apiVersionsMaxAge is how long an ApiVersions answer is trusted. Brokers
// gain APIs only when upgraded, so a rolling upgrade shows within minutes.
const apiVersionsMaxAge = 5 * time.Minute

// errAPIMissing marks an API the cluster does not offer.
var errAPIMissing = errors.New("not offered by the cluster (ApiVersions)")

// franzConn is the franz-go client and what the requests sent with it
// keep between refreshes. It is a value: the source's copy belongs to the
// watcher goroutine, and a request run beside it (readQuorum) works on a
// copy and hands it back. The client itself is safe for concurrent use.
type franzConn struct {
	// client connects on first use and finds brokers by itself.
	client *kgo.Client
	// target is the address of the broker that answered this refresh's
	// Metadata request; requests go to it (seed is the one franz-go has as
	// its seed).
	target, seed string
	// apis is the last ApiVersions answer, and when it came. offers
	// replaces the map, never changes it, so copies may share it.
	apis   map[int16]bool
	apisAt time.Time
}

// request sends req with franz-go to the broker that answered this
// refresh's Metadata request (target), which is known to be alive, as
// franz-go's only seed broker: so franz-go never needs metadata of its own
// (a Metadata request is what the refresh already paid for). Left to
// itself it would pick the next broker in turn, or for DescribeQuorum the
// "controller" of its cached metadata, which in KRaft is a random broker:
// a hung one would fail every refresh.
func (f *franzConn) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if f.target == "" {
		return nil, errors.New("no broker answered this refresh")
	}
	if f.seed != f.target {
		if err := f.client.UpdateSeedBrokers(f.target); err != nil {
			return nil, fmt.Errorf("franz-go seed %s: %w", f.target, err)
		}
		f.seed = f.target
	}
	return f.client.SeedBrokers()[0].Request(ctx, req)
}

// offers reports whether the cluster offers the API key, from an
// ApiVersions answer at most apiVersionsMaxAge old.
func (f *franzConn) offers(ctx context.Context, key int16, now func() time.Time) error {
	if f.apis == nil || now().Sub(f.apisAt) >= apiVersionsMaxAge {
		req := kmsg.NewPtrApiVersionsRequest()
		// Brokers reject ApiVersions v3+ without a valid software name and
		// version (KIP-511); franz-go fills them only on its own handshake.
		req.ClientSoftwareName, req.ClientSoftwareVersion = "failover-exporter", "1"
		kresp, err := f.request(ctx, req)
		resp, _ := kresp.(*kmsg.ApiVersionsResponse)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return fmt.Errorf("api versions: %w", err)
		}
		apis := make(map[int16]bool, len(resp.ApiKeys))
		for _, k := range resp.ApiKeys {
			apis[k.ApiKey] = true
		}
		f.apis, f.apisAt = apis, now()
	}
	if !f.apis[key] {
		return fmt.Errorf("api key %d: %w", key, errAPIMissing)
	}
	return nil
}

// readELR fills in the eligible leader replicas (KIP-966) of every watched
// partition whose ISR is below its topic's min.insync.replicas, from
// DescribeTopicPartitions requests (API 75) for the topics holding them.
// Kafka keeps the ELR empty while the ISR is at or above min ISR, so a
// healthy cluster costs no request at all. On success snap.ELRKnown is set;
// when the API is missing or the request fails, the ELR series are absent.
func (s *source) readELR(ctx context.Context, snap *Snapshot) {
	topics := topicsBelowMinISR(snap)
	err := s.franz.offers(ctx, apiDescribeTopicPartitions, s.now)
	if err == nil && len(topics) > 0 {
		err = s.describeTopicPartitions(ctx, snap, topics)
	}
	switch {
	case errors.Is(err, errAPIMissing):
		snap.ELRUnsupported = true
		level.Debug(s.logger).Log("msg", "cluster does not offer DescribeTopicPartitions (API 75, Kafka 3.9+); eligible leader replica series are not served")
	case err != nil:
		s.logFailure("elr", "reading eligible leader replicas failed; their series are not served", err, "topics", len(topics))
	default:
		s.logFailure("elr", "", nil)
		snap.ELRKnown = true
	}
}

// describeTopicPartitions asks for the topics' partitions, following the
// response's cursor, and copies ELR and last known ELR into snap.
func (s *source) describeTopicPartitions(ctx context.Context, snap *Snapshot, topics []string) error {
	byName := make(map[string]*Topic, len(topics))
	for i := range snap.Topics {
		byName[snap.Topics[i].Name] = &snap.Topics[i]
	}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	for {
		kresp, err := s.franz.request(ctx, req)
		if err != nil {
			return fmt.Errorf("describe topic partitions of %d topics: %w", len(topics), err)
		}
		resp := kresp.(*kmsg.DescribeTopicPartitionsResponse)
		var errs []error
		for _, rt := range resp.Topics {
			if rt.Topic == nil {
				continue
			}
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
				// A topic deleted since the Metadata request has nothing to show.
				if !errors.Is(err, kerr.UnknownTopicOrPartition) {
					errs = append(errs, fmt.Errorf("topic %s: %w", *rt.Topic, err))
				}
				continue
			}
			t := byName[*rt.Topic]
			if t == nil {
				continue
			}
			for _, rp := range rt.Partitions {
				if p := findPartition(t.Partitions, rp.Partition); p != nil {
					applyDescribed(p, &rp)
				}
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if resp.NextCursor == nil {
			return nil
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
}

// topicsBelowMinISR names the watched topics with a partition whose ISR is
// below min.insync.replicas: the only ones that can have an ELR.
func topicsBelowMinISR(snap *Snapshot) []string {
	var topics []string
	for i := range snap.Topics {
		t := &snap.Topics[i]
		for j := range t.Partitions {
			if t.Partitions[j].UnderMinISR(t.MinISR) {
				topics = append(topics, t.Name)
				break
			}
		}
	}
	return topics
}

// applyDescribed copies a partition's ELR from DescribeTopicPartitions and
// marks it stale when the answer's leader or ISR is not the Metadata's.
func applyDescribed(p *Partition, rp *kmsg.DescribeTopicPartitionsResponseTopicPartition) {
	p.setELR(rp.EligibleLeaderReplicas, rp.LastKnownELR, rp.LeaderID != p.Leader || !sameMembers(rp.ISR, p.ISR))
}

// sameMembers reports whether two replica lists hold the same brokers, in
// any order.
func sameMembers(a, b []int32) bool {
	return len(a) == len(b) && !lostMember(a, b) && !lostMember(b, a)
}
