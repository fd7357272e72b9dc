package kafka

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/config"
)

// mockCluster is a sarama MockBroker answering Metadata and DescribeConfigs.
// It stands in for Kafka only to count the requests the source sends; the
// replication behaviour itself is tested against real brokers in e2e/.
type mockCluster struct {
	t      *testing.T
	broker *sarama.MockBroker
}

func newMockCluster(t *testing.T) *mockCluster {
	m := &mockCluster{t: t, broker: sarama.NewMockBrokerAddr(t, 1, "127.0.0.1:0")}
	t.Cleanup(m.broker.Close)
	return m
}

// serve sets the topics (3 partitions each) and their min.insync.replicas.
func (m *mockCluster) serve(minISR map[string]string) {
	md := &sarama.MetadataResponse{Version: 11}
	md.AddBroker(m.broker.Addr(), 1)
	configs := &sarama.DescribeConfigsResponse{Version: 4}
	for topic, v := range minISR {
		for p := int32(0); p < 3; p++ {
			md.AddTopicPartition(topic, p, 1, []int32{1}, []int32{1}, nil, sarama.ErrNoError)
		}
		configs.Resources = append(configs.Resources, &sarama.ResourceResponse{
			Type: sarama.TopicResource, Name: topic,
			Configs: []*sarama.ConfigEntry{{Name: minISRConfig, Value: v}},
		})
	}
	m.broker.SetHandlerByMap(map[string]sarama.MockResponse{
		"ApiVersionsRequest": sarama.NewMockApiVersionsResponse(m.t).SetApiKeys([]sarama.ApiVersionsResponseKey{
			{ApiKey: 3, MaxVersion: 12}, {ApiKey: 18, MaxVersion: 3}, {ApiKey: 32, MaxVersion: 4},
		}),
		"MetadataRequest":        sarama.NewMockWrapper(md),
		"DescribeConfigsRequest": sarama.NewMockWrapper(configs),
	})
}

// requests returns, per request kind, how many were sent, and the topics
// of each DescribeConfigs request.
func (m *mockCluster) requests() (metadata int, describes [][]string) {
	for _, rr := range m.broker.History() {
		switch req := rr.Request.(type) {
		case *sarama.MetadataRequest:
			metadata++
		case *sarama.DescribeConfigsRequest:
			var topics []string
			for _, r := range req.Resources {
				topics = append(topics, r.Name)
			}
			sort.Strings(topics)
			describes = append(describes, topics)
		}
	}
	return metadata, describes
}

func testSource(t *testing.T, addr string) (*source, *time.Time) {
	cfg := config.Config{Kafka: []config.KafkaCluster{{Name: "k", BootstrapServers: []string{addr}}}}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	src, err := newSource(cfg.Kafka[0], log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.close)
	now := time.Unix(1_700_000_000, 0)
	src.now = func() time.Time { return now }
	return src, &now
}

func TestTopicConfigsAreBatchedAndCached(t *testing.T) {
	m := newMockCluster(t)
	m.serve(map[string]string{"a": "2", "b": "3"})
	src, now := testSource(t, m.broker.Addr())
	ctx := context.Background()

	var snap *Snapshot
	refresh := func() {
		t.Helper()
		next, err := src.refresh(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		snap = next
	}
	for i := 0; i < 3; i++ {
		refresh()
		*now = now.Add(5 * time.Second)
	}
	metadata, describes := m.requests()
	if metadata != 3 || len(describes) != 1 || strings.Join(describes[0], ",") != "a,b" {
		t.Fatalf("3 refreshes sent %d Metadata and DescribeConfigs %v; want 3 and one for [a b]", metadata, describes)
	}
	if snap.Topics[0].MinISR != 2 || snap.Topics[1].MinISR != 3 {
		t.Errorf("min ISR a=%d b=%d, want 2 and 3", snap.Topics[0].MinISR, snap.Topics[1].MinISR)
	}

	// A new topic is described at once, alone.
	m.serve(map[string]string{"a": "2", "b": "3", "c": "1"})
	refresh()
	if _, describes = m.requests(); len(describes) != 2 || strings.Join(describes[1], ",") != "c" {
		t.Fatalf("after topic c appeared, DescribeConfigs = %v; want a second request for [c] only", describes)
	}
	if snap.Topics[2].Name != "c" || snap.Topics[2].MinISR != 1 {
		t.Errorf("topic c = %+v, want min ISR 1", snap.Topics[2])
	}

	// After the config refresh interval every topic is described again, in
	// one request, and a changed value is picked up.
	m.serve(map[string]string{"a": "1", "b": "3", "c": "1"})
	*now = now.Add(time.Minute)
	refresh()
	if _, describes = m.requests(); len(describes) != 3 || strings.Join(describes[2], ",") != "a,b,c" {
		t.Fatalf("after a minute, DescribeConfigs = %v; want a third request for [a b c]", describes)
	}
	if snap.Topics[0].MinISR != 1 {
		t.Errorf("topic a min ISR = %d after its override changed, want 1", snap.Topics[0].MinISR)
	}
}

func TestRefreshFailsClearlyWhenNoBrokerAnswers(t *testing.T) {
	src, _ := testSource(t, "127.0.0.1:1")
	_, err := src.refresh(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "no broker answered a metadata request") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("err = %v, want one naming the unreachable broker", err)
	}
}

// A broker slower than the refresh deadline gets one Metadata request, not
// one more per refresh: each would carry a whole cluster's response, and at
// 100,000 partitions they piled up to hundreds of megabytes. The refresh
// after the slow answer arrives uses it.
func TestSlowBrokerGetsOneMetadataRequestAtATime(t *testing.T) {
	// At the deadline the source asks what answers at an address that never
	// answered Metadata (peer.Cache), with a probe the mock cannot decode;
	// the mock reports that to its reporter, which only logs it here.
	m := &mockCluster{t: t, broker: sarama.NewMockBrokerAddr(loggingReporter{t}, 1, "127.0.0.1:0")}
	t.Cleanup(m.broker.Close)
	m.serve(map[string]string{"a": "2"})
	m.broker.SetLatency(700 * time.Millisecond)
	src, _ := testSource(t, m.broker.Addr())
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := src.refresh(ctx, nil)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "no answer before the refresh deadline") {
			t.Fatalf("refresh %d: err = %v, want the deadline", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := src.refresh(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Topics) != 1 {
		t.Errorf("topics %+v, want a", snap.Topics)
	}
	if metadata, _ := m.requests(); metadata != 1 {
		t.Errorf("%d Metadata requests over 4 refreshes of a slow broker, want 1", metadata)
	}
}

// loggingReporter is a sarama.TestReporter that logs errors instead of
// failing the test.
type loggingReporter struct{ t *testing.T }

func (r loggingReporter) Error(args ...any)                 { r.t.Log(args...) }
func (r loggingReporter) Errorf(format string, args ...any) { r.t.Logf(format, args...) }
func (r loggingReporter) Fatal(args ...any)                 { r.t.Fatal(args...) }
func (r loggingReporter) Fatalf(format string, args ...any) { r.t.Fatalf(format, args...) }
func (r loggingReporter) Helper()                           { r.t.Helper() }
