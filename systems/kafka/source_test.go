package kafka

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// mockCluster is a sarama MockBroker answering Metadata and DescribeConfigs.
// It stands in for Kafka only to count the requests the source sends; the
// replication behaviour itself is tested against real brokers in e2e/.
type mockCluster struct {
	t      *testing.T
	broker *sarama.MockBroker
	// reassignments, when set, is served to ListPartitionReassignments and
	// the API (46) is advertised; when nil the broker lacks the API.
	reassignments *sarama.ListPartitionReassignmentsResponse
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
			Configs: []*sarama.ConfigEntry{{Name: minISRConfig, Value: v}, {Name: uncleanConfig, Value: fmt.Sprint(topic == "b")}},
		})
	}
	apis := []sarama.ApiVersionsResponseKey{{ApiKey: 3, MaxVersion: 12}, {ApiKey: 18, MaxVersion: 3}, {ApiKey: 32, MaxVersion: 4}}
	handlers := map[string]sarama.MockResponse{
		"MetadataRequest":        sarama.NewMockWrapper(md),
		"DescribeConfigsRequest": sarama.NewMockWrapper(configs),
	}
	if m.reassignments != nil {
		apis = append(apis, sarama.ApiVersionsResponseKey{ApiKey: 46, MaxVersion: 0})
		handlers["ListPartitionReassignmentsRequest"] = sarama.NewMockWrapper(m.reassignments)
	}
	handlers["ApiVersionsRequest"] = sarama.NewMockApiVersionsResponse(m.t).SetApiKeys(apis)
	m.broker.SetHandlerByMap(handlers)
}

// listReassignmentsRequests counts the ListPartitionReassignments requests
// sent and returns the partitions the last one asked for, as "topic/id".
func (m *mockCluster) listReassignmentsRequests() (n int, asked []string) {
	for _, rr := range m.broker.History() {
		req, ok := rr.Request.(*sarama.ListPartitionReassignmentsRequest)
		if !ok {
			continue
		}
		n++
		// sarama keeps the decoded topics in an unexported field.
		asked = asked[:0]
		blocks := reflect.ValueOf(req).Elem().FieldByName("blocks")
		for it := blocks.MapRange(); it.Next(); {
			for i := range it.Value().Len() {
				asked = append(asked, fmt.Sprintf("%s/%d", it.Key().String(), it.Value().Index(i).Int()))
			}
		}
	}
	sort.Strings(asked)
	return n, asked
}

// requests returns, per request kind, how many were sent, and the topics
// of each DescribeConfigs request of topics (the transaction read's of a
// broker, for its timeout, are left out).
func (m *mockCluster) requests() (metadata int, describes [][]string) {
	for _, rr := range m.broker.History() {
		switch req := rr.Request.(type) {
		case *sarama.MetadataRequest:
			metadata++
		case *sarama.DescribeConfigsRequest:
			var topics []string
			for _, r := range req.Resources {
				if r.Type == sarama.TopicResource {
					topics = append(topics, r.Name)
				}
			}
			if topics == nil {
				continue
			}
			sort.Strings(topics)
			describes = append(describes, topics)
		}
	}
	return metadata, describes
}

func testSource(t *testing.T, addr string) (*source, *time.Time) {
	return testSourceLogging(t, addr, log.NewNopLogger())
}

func testSourceLogging(t *testing.T, addr string, logger log.Logger) (*source, *time.Time) {
	cfg := config.Config{}
	settings.SetClusters(&cfg, []settings.Cluster{{Name: "k", BootstrapServers: []string{addr}}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	src, err := newSource(settings.Clusters(&cfg)[0], logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
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
		next, err := src.Refresh(ctx, snap)
		if err != nil {
			t.Fatal(err)
		}
		snap = next
	}
	for i := 0; i < 3; i++ {
		refresh()
		*now = now.Add(5 * time.Second)
	}
	// One Metadata request per refresh: franz-go (ApiVersions here) is
	// pointed at the broker that answered and needs no metadata of its own.
	metadata, describes := m.requests()
	if metadata != 3 || len(describes) != 1 || strings.Join(describes[0], ",") != "a,b" {
		t.Fatalf("3 refreshes sent %d Metadata and DescribeConfigs %v; want 3 and one for [a b]", metadata, describes)
	}
	for i := 0; i < 3; i++ {
		refresh()
	}
	if again, _ := m.requests(); again != metadata+3 {
		t.Fatalf("3 more refreshes sent %d Metadata requests, want 3", again-metadata)
	}
	if snap.Topics[0].MinISR != 2 || snap.Topics[1].MinISR != 3 {
		t.Errorf("min ISR a=%d b=%d, want 2 and 3", snap.Topics[0].MinISR, snap.Topics[1].MinISR)
	}
	// unclean.leader.election.enable comes in the same request.
	if a, b := snap.Topics[0], snap.Topics[1]; !a.UncleanElectionKnown || a.UncleanElectionEnabled || !b.UncleanElectionKnown || !b.UncleanElectionEnabled {
		t.Errorf("unclean election a=%v/%v b=%v/%v, want known false and known true", a.UncleanElectionKnown, a.UncleanElectionEnabled, b.UncleanElectionKnown, b.UncleanElectionEnabled)
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
	_, err := src.Refresh(context.Background(), nil)
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
		_, err := src.Refresh(ctx, nil)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "no answer before the refresh deadline") {
			t.Fatalf("refresh %d: err = %v, want the deadline", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := src.Refresh(ctx, nil)
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

// A broker whose ApiVersions answer lacks ListPartitionReassignments (Kafka
// before 2.4 and some Kafka-compatible servers) gets no such request; the
// refresh succeeds, the reassignment series are absent, a debug log says why.
func TestReassignmentsAbsentWhenTheBrokerLacksTheAPI(t *testing.T) {
	m := newMockCluster(t)
	m.serve(map[string]string{"a": "2"})
	var logs strings.Builder
	src, _ := testSourceLogging(t, m.broker.Addr(), log.NewLogfmtLogger(&logs))
	snap, err := src.Refresh(context.Background(), nil)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if snap.ReassignmentsKnown {
		t.Error("ReassignmentsKnown = true for a broker without the API")
	}
	if n, _ := m.listReassignmentsRequests(); n != 0 {
		t.Errorf("%d ListPartitionReassignments requests sent to a broker that does not offer the API", n)
	}
	if !strings.Contains(logs.String(), "level=debug") || !strings.Contains(logs.String(), "does not offer ListPartitionReassignments (API 46)") {
		t.Errorf("logs do not explain the missing series at debug level:\n%s", logs.String())
	}
	text := renderSnapshot(t, snap)
	for _, name := range []string{"kafka_partition_reassigning", "kafka_partition_adding_replicas", "kafka_topic_reassigning_partitions", "kafka_broker_adding_replicas"} {
		if strings.Contains(text, name+"{") {
			t.Errorf("%s served although reassignments are unknown", name)
		}
	}
	if !strings.Contains(text, `kafka_partition_under_replicated{kafka_cluster="k",partition="0",topic="a"} 0`) {
		t.Errorf("the rest of the partition series should be unchanged:\n%s", text)
	}
}

// With the API, every refresh sends exactly one request, however many
// topics there are, and its answer reaches the snapshot.
func TestReassignmentsListedOncePerRefresh(t *testing.T) {
	m := newMockCluster(t)
	m.reassignments = &sarama.ListPartitionReassignmentsResponse{}
	// Broker 1 is being removed from a/1 (the reassignment moves it away).
	m.reassignments.AddBlock("a", 1, []int32{1, 2}, []int32{2}, []int32{1})
	m.serve(map[string]string{"a": "2", "b": "2", "c": "2"})
	src, _ := testSource(t, m.broker.Addr())
	var snap *Snapshot
	for range 3 {
		next, err := src.Refresh(context.Background(), snap)
		if err != nil {
			t.Fatal(err)
		}
		snap = next
	}
	n, asked := m.listReassignmentsRequests()
	if n != 3 {
		t.Errorf("3 refreshes of 3 topics sent %d ListPartitionReassignments requests, want 3", n)
	}
	// An empty topic list would ask for nothing: every partition is named.
	if got := strings.Join(asked, " "); got != "a/0 a/1 a/2 b/0 b/1 b/2 c/0 c/1 c/2" {
		t.Errorf("the last request asked for %q, want every partition of a, b and c", got)
	}
	if !snap.ReassignmentsKnown || snap.Topics[0].ReassigningPartitions != 1 || !snap.Topics[0].Partitions[1].Reassigning() {
		t.Errorf("topic a = %+v (known %v), want partition 1 reassigning", snap.Topics[0], snap.ReassignmentsKnown)
	}
}

// renderSnapshot renders one snapshot as cluster "k", one line per series
// in text format (labels in declaration order).
func renderSnapshot(t *testing.T, snap *Snapshot) string {
	t.Helper()
	var sink lineSink
	emitSnapshot(&sink, "k", snap, settings.PartitionMetricsFull)
	return sink.String()
}

// lineSink writes each series as `name{label="value",...} value`.
type lineSink struct{ strings.Builder }

func (s *lineSink) Add(d *exposition.Desc, value float64, labelValues ...string) {
	var labels []string
	for i, name := range d.Labels {
		labels = append(labels, fmt.Sprintf("%s=%q", name, labelValues[i]))
	}
	sort.Strings(labels)
	fmt.Fprintf(s, "%s{%s} %g\n", d.Name, strings.Join(labels, ","), value)
}

func (s *lineSink) AddHistogram(d *exposition.Desc, count uint64, sum float64, cumulative []uint64, labelValues ...string) {
	s.Add(d, float64(count), labelValues...)
}

// A ZooKeeper-mode broker (Kafka 3.x) that is not the controller answers
// ListPartitionReassignments with NOT_CONTROLLER, where a KRaft broker
// forwards it. The source then asks the broker Metadata names as the
// controller, in the same refresh and in every later one, and says so once.
func TestReassignmentsAskTheControllerInZooKeeperMode(t *testing.T) {
	metadataBroker := sarama.NewMockBrokerAddr(t, 1, "127.0.0.1:0")
	controller := sarama.NewMockBrokerAddr(t, 2, "127.0.0.1:0")
	t.Cleanup(metadataBroker.Close)
	t.Cleanup(controller.Close)
	md := &sarama.MetadataResponse{Version: 11, ControllerID: 2}
	md.AddBroker(metadataBroker.Addr(), 1)
	md.AddBroker(controller.Addr(), 2)
	md.AddTopicPartition("a", 0, 1, []int32{1, 2}, []int32{1, 2}, nil, sarama.ErrNoError)
	configs := &sarama.DescribeConfigsResponse{Version: 4, Resources: []*sarama.ResourceResponse{{
		Type: sarama.TopicResource, Name: "a", Configs: []*sarama.ConfigEntry{{Name: minISRConfig, Value: "1"}},
	}}}
	apis := []sarama.ApiVersionsResponseKey{{ApiKey: 3, MaxVersion: 12}, {ApiKey: 18, MaxVersion: 3}, {ApiKey: 32, MaxVersion: 4}, {ApiKey: 46, MaxVersion: 0}}
	notController := &sarama.ListPartitionReassignmentsResponse{ErrorCode: sarama.ErrNotController}
	reassigning := &sarama.ListPartitionReassignmentsResponse{}
	reassigning.AddBlock("a", 0, []int32{1, 2}, []int32{2}, []int32{})
	for broker, answer := range map[*sarama.MockBroker]*sarama.ListPartitionReassignmentsResponse{metadataBroker: notController, controller: reassigning} {
		broker.SetHandlerByMap(map[string]sarama.MockResponse{
			"ApiVersionsRequest":                sarama.NewMockApiVersionsResponse(t).SetApiKeys(apis),
			"MetadataRequest":                   sarama.NewMockWrapper(md),
			"DescribeConfigsRequest":            sarama.NewMockWrapper(configs),
			"ListPartitionReassignmentsRequest": sarama.NewMockWrapper(answer),
		})
	}
	var logs strings.Builder
	src, _ := testSourceLogging(t, metadataBroker.Addr(), log.NewLogfmtLogger(&logs))
	var snap *Snapshot
	for refresh := 1; refresh <= 3; refresh++ {
		next, err := src.Refresh(context.Background(), snap)
		if err != nil {
			t.Fatal(err)
		}
		snap = next
		if !snap.ReassignmentsKnown || !snap.Topics[0].Partitions[0].Reassigning() {
			t.Fatalf("refresh %d: reassignments known %v, a/0 = %+v: want a/0 reassigning, from the controller", refresh, snap.ReassignmentsKnown, snap.Topics[0].Partitions[0])
		}
	}
	count := func(b *sarama.MockBroker) (n int) {
		for _, rr := range b.History() {
			if _, ok := rr.Request.(*sarama.ListPartitionReassignmentsRequest); ok {
				n++
			}
		}
		return n
	}
	if got, want := [2]int{count(metadataBroker), count(controller)}, [2]int{1, 3}; got != want {
		t.Errorf("ListPartitionReassignments requests (metadata broker, controller) = %v, want %v: one refused, then every one to the controller", got, want)
	}
	if n := strings.Count(logs.String(), "asking the controller"); n != 1 {
		t.Errorf("the switch to the controller logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestDescribeTieredConfigs: the copy lags of KIP-1241 are known only when
// the broker sends both (Kafka 4.4); a value that is not an integer is an
// error naming the topic, and leaves that topic's lags unknown rather than
// zero (which would mean "copied at once"). A broker cannot be made to send
// such a value, hence the mock.
func TestDescribeTieredConfigs(t *testing.T) {
	mock := sarama.NewMockBrokerAddr(t, 1, "127.0.0.1:0")
	t.Cleanup(mock.Close)
	entries := func(kv ...string) []*sarama.ConfigEntry {
		var out []*sarama.ConfigEntry
		for i := 0; i < len(kv); i += 2 {
			out = append(out, &sarama.ConfigEntry{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	configs := &sarama.DescribeConfigsResponse{Version: 4, Resources: []*sarama.ResourceResponse{
		{Type: sarama.TopicResource, Name: "delayed", Configs: entries(minISRConfig, "2", remoteStorageConfig, "true", remoteCopyLagMsConfig, "600000", remoteCopyLagBytesConfig, "-1")},
		{Type: sarama.TopicResource, Name: "before44", Configs: entries(minISRConfig, "2", remoteStorageConfig, "true")},
		{Type: sarama.TopicResource, Name: "local", Configs: entries(minISRConfig, "1", remoteStorageConfig, "false", remoteCopyLagMsConfig, "0", remoteCopyLagBytesConfig, "0")},
		{Type: sarama.TopicResource, Name: "broken", Configs: entries(minISRConfig, "2", remoteStorageConfig, "true", remoteCopyLagMsConfig, "soon", remoteCopyLagBytesConfig, "0")},
	}}
	mock.SetHandlerByMap(map[string]sarama.MockResponse{"DescribeConfigsRequest": sarama.NewMockWrapper(configs)})
	conf := sarama.NewConfig()
	conf.Version = sarama.V2_8_0_0
	conf.ApiVersionsRequest = false // the mock does not answer it
	broker := sarama.NewBroker(mock.Addr())
	if err := broker.Open(conf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })

	minISR, _, tiered, invalid, err := describeMinISR(broker, conf.Version, []string{"delayed", "before44", "local", "broken"})
	if err != nil {
		t.Fatal(err)
	}
	if invalid == nil || !strings.Contains(invalid.Error(), `topic broken: remote.copy.lag.ms="soon"`) {
		t.Errorf("invalid = %v, want one naming topic broken and its remote.copy.lag.ms", invalid)
	}
	want := map[string]TieredConfig{
		"delayed":  {Enabled: true, CopyLagMs: 600000, CopyLagBytes: -1, CopyLagKnown: true},
		"before44": {Enabled: true},
		"local":    {CopyLagKnown: true},
		"broken":   {Enabled: true, CopyLagKnown: false},
	}
	for topic, w := range want {
		got := tiered[topic]
		if topic == "broken" {
			got.CopyLagBytes = 0 // the valid half of a broken pair does not matter
		}
		if got != w {
			t.Errorf("%s: tiered config %+v, want %+v", topic, got, w)
		}
	}
	if minISR["broken"] != 2 {
		t.Errorf("a broken copy lag lost the topic's min.insync.replicas: %v", minISR)
	}
}

// A topic whose config does not parse costs only its own values: the
// others' are read, the cache is dated (no full re-read every refresh),
// and the warning is logged once.
func TestTopicConfigsMalformedValue(t *testing.T) {
	m := newMockCluster(t)
	m.serve(map[string]string{"a": "2", "b": "two"})
	var logs strings.Builder
	src, now := testSourceLogging(t, m.broker.Addr(), log.NewLogfmtLogger(&logs))
	var snap *Snapshot
	for range 3 {
		next, err := src.Refresh(context.Background(), snap)
		if err != nil {
			t.Fatal(err)
		}
		snap = next
		*now = now.Add(5 * time.Second)
	}
	if a, b := snap.Topics[0], snap.Topics[1]; a.MinISR != 2 || b.MinISR != 0 {
		t.Errorf("min ISR a=%d b=%d, want 2 and unknown", a.MinISR, b.MinISR)
	}
	// b has no min ISR cached, so each refresh asks for it again; a is
	// not asked again before the interval.
	_, describes := m.requests()
	if len(describes) != 3 || strings.Join(describes[0], ",") != "a,b" || strings.Join(describes[2], ",") != "b" {
		t.Errorf("DescribeConfigs %v, want [a b] then [b] twice", describes)
	}
	if n := strings.Count(logs.String(), "level=warn"); n != 1 || !strings.Contains(logs.String(), `topic b: min.insync.replicas=\"two\"`) {
		t.Errorf("%d warnings, want one naming topic b:\n%s", n, logs.String())
	}
}
