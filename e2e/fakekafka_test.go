package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/IBM/sarama"
)

// fakeKafka describes a fake cluster for the issue-19 figures: what
// fakeLargeCluster serves (3 brokers, RF 3, min.insync.replicas 2, no
// reassignment), with a choice of topic size, partitions that are
// unhealthy throughout or flap, the Metadata version to answer, and the
// requests kafka_exporter sends besides Metadata.
type fakeKafka struct {
	partitions int
	// perTopic is the number of partitions per topic (default 100).
	perTopic int
	// unhealthyEvery makes every n-th partition (0, n, 2n, ...) lose its
	// last replica from the ISR for the whole run: under-replicated and at
	// min ISR. 0: a healthy cluster.
	unhealthyEvery int
	// flap, when set, makes the Metadata responses a sequence, one per
	// refresh: see flapSchedule.
	flap *flapSchedule
	// version is the Metadata response version: the one the client asks
	// for (the mock does not adapt it). Default 11, what the exporter's
	// sarama sends for Kafka 3.0.0.
	version int16
	// kafkaExporter answers the requests kafka_exporter sends besides
	// Metadata: ListOffsets (newest and oldest offset of every partition),
	// ListGroups and DescribeGroups (no consumer groups).
	kafkaExporter bool
}

// flapSchedule is a churn test's cluster: every every refreshes, on
// refresh j (the j-th Metadata request, from 0), an episode starts on
// partition (j/every × stride) mod partitions and lasts episode refreshes,
// during which the partition is under-replicated on every other refresh
// (the first, third, ...) and healthy on the others: it flaps faster than
// any hold. With every 1, a new partition starts an episode every refresh
// and about episode partitions are in one at any time. The sequence has
// refreshes responses; after it the last one is answered forever.
type flapSchedule struct {
	refreshes, episode, every, stride int
}

// flapping returns the partitions under-replicated on refresh k.
func (f *flapSchedule) flapping(k, partitions int) []int {
	var out []int
	for j := max(0, k-f.episode+1); j <= k; j++ {
		if j%f.every == 0 && (k-j)%2 == 0 {
			out = append(out, j/f.every*f.stride%partitions)
		}
	}
	return out
}

func (f fakeKafka) topicName(i int) string { return fmt.Sprintf("topic-%05d", i/f.perTopic) }

// start serves the cluster and returns its bootstrap address. The sarama
// MockBroker stands behind a replaying proxy (kafkaReplay) so that the
// test process encodes a large response once, not on every refresh: at a
// million partitions the encoding would otherwise compete with the
// exporter for the machine's two cores and be counted in its refresh.
func (f fakeKafka) start(t *testing.T) string {
	t.Helper()
	if f.perTopic == 0 {
		f.perTopic = 100
	}
	if f.version == 0 {
		f.version = 11
	}
	broker := sarama.NewMockBrokerAddr(t, 1, "127.0.0.1:0")
	t.Cleanup(broker.Close)
	replay := startKafkaReplay(t, broker.Addr())
	// Responses that do not depend on the request body, or do not change
	// over the run, are replayed; Metadata changes on every refresh of a
	// flapping cluster.
	replay.static[18] = true // ApiVersions
	replay.static[32] = true // DescribeConfigs: min.insync.replicas of every topic
	replay.static[46] = true // ListPartitionReassignments: none (the request names every partition)
	replay.static[3] = f.flap == nil
	replay.static[16] = true // ListGroups: none
	replay.static[15] = true // DescribeGroups of no group
	replay.byBody[2] = true  // ListOffsets: one partition and time per request (kafka_exporter)

	// The healthy cluster's topics; unhealthy and flapping partitions are
	// copies, so that the responses of a flapping run share everything else.
	healthy := &sarama.MetadataResponse{Version: f.version}
	for id := int32(1); id <= 3; id++ {
		healthy.AddBroker(replay.addr, id)
	}
	unhealthyCopy := func(p *sarama.PartitionMetadata) *sarama.PartitionMetadata {
		c := *p
		c.Isr = p.Replicas[:2]
		return &c
	}
	// Built directly: AddTopicPartition looks its topic up in a list, which
	// is quadratic at a million partitions. Partitions share their three
	// replica lists.
	lists := [3][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}
	none := []int32{}
	for i := 0; i < f.partitions; i++ {
		p := int32(i % f.perTopic)
		if p == 0 {
			healthy.Topics = append(healthy.Topics, &sarama.TopicMetadata{Name: f.topicName(i), Partitions: make([]*sarama.PartitionMetadata, 0, f.perTopic)})
		}
		topic := healthy.Topics[len(healthy.Topics)-1]
		replicas := lists[p%3]
		pm := &sarama.PartitionMetadata{ID: p, Leader: replicas[0], Replicas: replicas, Isr: replicas, OfflineReplicas: none}
		if f.unhealthyEvery > 0 && i%f.unhealthyEvery == 0 {
			pm = unhealthyCopy(pm)
		}
		topic.Partitions = append(topic.Partitions, pm)
	}
	// with returns a response with the given partitions unhealthy, sharing
	// the healthy topics.
	with := func(unhealthy []int) *sarama.MetadataResponse {
		md := *healthy
		md.Topics = append([]*sarama.TopicMetadata(nil), healthy.Topics...)
		copied := map[int]bool{}
		for _, i := range unhealthy {
			ti := i / f.perTopic
			if !copied[ti] {
				c := *md.Topics[ti]
				c.Partitions = append([]*sarama.PartitionMetadata(nil), c.Partitions...)
				md.Topics[ti], copied[ti] = &c, true
			}
			md.Topics[ti].Partitions[i%f.perTopic] = unhealthyCopy(md.Topics[ti].Partitions[i%f.perTopic])
		}
		return &md
	}
	var metadata sarama.MockResponse = sarama.NewMockWrapper(healthy)
	if f.flap != nil {
		sequence := make([]any, f.flap.refreshes)
		for k := range sequence {
			sequence[k] = with(f.flap.flapping(k, f.partitions))
		}
		metadata = sarama.NewMockSequence(sequence...)
	}

	configs := &sarama.DescribeConfigsResponse{Version: 4}
	for topic := 0; topic*f.perTopic < f.partitions; topic++ {
		configs.Resources = append(configs.Resources, &sarama.ResourceResponse{
			Type: sarama.TopicResource, Name: f.topicName(topic * f.perTopic),
			Configs: []*sarama.ConfigEntry{{Name: "min.insync.replicas", Value: "2", Source: sarama.SourceStaticBroker}},
		})
	}
	handlers := map[string]sarama.MockResponse{
		"ApiVersionsRequest": sarama.NewMockApiVersionsResponse(t).SetApiKeys([]sarama.ApiVersionsResponseKey{
			{ApiKey: 2, MinVersion: 0, MaxVersion: 7},  // ListOffsets
			{ApiKey: 3, MinVersion: 0, MaxVersion: 12}, // Metadata
			{ApiKey: 15, MinVersion: 0, MaxVersion: 5}, // DescribeGroups
			{ApiKey: 16, MinVersion: 0, MaxVersion: 4}, // ListGroups
			{ApiKey: 18, MinVersion: 0, MaxVersion: 3}, // ApiVersions
			{ApiKey: 32, MinVersion: 0, MaxVersion: 4}, // DescribeConfigs
			{ApiKey: 46, MinVersion: 0, MaxVersion: 0}, // ListPartitionReassignments
		}),
		"MetadataRequest":                   metadata,
		"DescribeConfigsRequest":            sarama.NewMockWrapper(configs),
		"ListPartitionReassignmentsRequest": sarama.NewMockWrapper(&sarama.ListPartitionReassignmentsResponse{}),
	}
	if f.kafkaExporter {
		offsets := sarama.NewMockOffsetResponse(t)
		for i := 0; i < f.partitions; i++ {
			offsets.SetOffset(f.topicName(i), int32(i%f.perTopic), sarama.OffsetNewest, 1000)
			offsets.SetOffset(f.topicName(i), int32(i%f.perTopic), sarama.OffsetOldest, 0)
		}
		handlers["OffsetRequest"] = offsets
		handlers["ListGroupsRequest"] = sarama.NewMockListGroupsResponse(t)
		handlers["DescribeGroupsRequest"] = sarama.NewMockDescribeGroupsResponse(t)
	}
	broker.SetHandlerByMap(handlers)
	return replay.addr
}

// kafkaReplay is a TCP proxy in front of a MockBroker that answers a
// request it has answered before from the recorded response, with the new
// request's correlation ID. For API keys in static the first response is
// replayed whatever the request says; for those in byBody, a response is
// replayed for a byte-identical request (client ID and body); the others
// always go to the broker. Besides the encoding, this keeps the
// MockBroker's request history (it keeps every request it decodes) from
// growing over a long run.
type kafkaReplay struct {
	addr, upstream string
	static, byBody map[int16]bool

	mu       sync.Mutex
	recorded map[string][]byte
}

func startKafkaReplay(t *testing.T, upstream string) *kafkaReplay {
	t.Helper()
	r := &kafkaReplay{upstream: upstream, static: map[int16]bool{}, byBody: map[int16]bool{}, recorded: map[string][]byte{}}
	r.addr = startLoopbackServer(t, func(s *loopbackServer, c net.Conn) {
		defer c.Close()
		if err := r.serve(c, func(up net.Conn) { s.Track(up) }); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			t.Logf("kafka replay: %v", err)
		}
	}).Addr
	return r
}

// readFrame reads one size-prefixed Kafka frame, prefix included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// serve answers one client connection, request by request (a client that
// pipelines gets its responses in order).
func (r *kafkaReplay) serve(c net.Conn, track func(net.Conn)) error {
	var up net.Conn
	defer func() {
		if up != nil {
			up.Close()
		}
	}()
	for {
		req, err := readFrame(c)
		if err != nil {
			return err
		}
		if len(req) < 12 {
			return fmt.Errorf("short request of %d bytes", len(req))
		}
		// Request header: size, API key, API version, correlation ID, then
		// the client ID and (flexible versions) tagged fields and the body.
		apiKey := int16(binary.BigEndian.Uint16(req[4:6]))
		key := string(req[4:8])
		replayable := r.static[apiKey] || r.byBody[apiKey]
		if r.byBody[apiKey] {
			key += string(req[12:])
		}
		r.mu.Lock()
		rest, ok := r.recorded[key]
		r.mu.Unlock()
		if !ok || !replayable {
			if up == nil {
				if up, err = net.Dial("tcp", r.upstream); err != nil {
					return err
				}
				track(up)
			}
			if _, err := up.Write(req); err != nil {
				return err
			}
			resp, err := readFrame(up)
			if err != nil {
				return err
			}
			if len(resp) < 8 {
				return fmt.Errorf("short response of %d bytes", len(resp))
			}
			rest = resp[8:]
			if replayable {
				r.mu.Lock()
				r.recorded[key] = rest
				r.mu.Unlock()
			}
		}
		// Response: size, the request's correlation ID, the rest as recorded.
		header := make([]byte, 8)
		binary.BigEndian.PutUint32(header, uint32(4+len(rest)))
		copy(header[4:8], req[8:12])
		buffers := net.Buffers{header, rest}
		if _, err := buffers.WriteTo(c); err != nil {
			return err
		}
	}
}
