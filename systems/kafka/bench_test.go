package kafka

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// syntheticMetadata is a 3-broker cluster with partitions spread over
// topics of 100 partitions each, RF 3, one broker's replicas out of sync in
// every tenth partition.
func syntheticMetadata(partitions int) *sarama.MetadataResponse {
	md := &sarama.MetadataResponse{Version: 7}
	for id := int32(1); id <= 3; id++ {
		md.AddBroker(fmt.Sprintf("127.0.0.1:%d", 9091+id), id)
	}
	for i := 0; i < partitions; i++ {
		topic := fmt.Sprintf("topic-%05d", i/100)
		p := int32(i % 100)
		leader := p%3 + 1
		replicas := []int32{leader, leader%3 + 1, (leader+1)%3 + 1}
		isr := replicas
		if i%10 == 0 {
			isr = replicas[:2]
		}
		md.AddTopicPartition(topic, p, leader, replicas, isr, nil, sarama.ErrNoError)
	}
	return md
}

// ownTopics is md with a Topics slice of its own, for building more than
// one snapshot from one response: buildSnapshot consumes md.Topics.
func ownTopics(md *sarama.MetadataResponse) *sarama.MetadataResponse {
	own := *md
	own.Topics = slices.Clone(md.Topics)
	return &own
}

func syntheticSnapshot(partitions int) *Snapshot {
	md := syntheticMetadata(partitions)
	minISR := map[string]int{}
	for _, t := range md.Topics {
		minISR[t.Name] = 2
	}
	return buildSnapshot(md, all, TopicConfigCache{MinISR: minISR, ReadAt: time.Now()}, nil, time.Now())
}

// metricsHandlerFor serves snapshot as /metrics does: the collector is set
// before the refresh, so the refresh renders the text and the scrape copies it.
func metricsHandlerFor(snapshot *Snapshot) http.Handler {
	w := watch.New("bench", time.Minute, time.Minute, func(context.Context, *Snapshot) (*Snapshot, error) {
		return snapshot, nil
	}, log.NewNopLogger())
	c := NewCollector()
	c.Set("bench", w)
	w.RefreshOnce(context.Background())
	return exposition.Handler(prometheus.NewRegistry(), []exposition.TextWriter{c}, func(string, error) {})
}

// registryHandlerFor serves snapshot the conventional way, through the
// registry and promhttp, for comparison with the text path.
func registryHandlerFor(snapshot *Snapshot) http.Handler {
	w := watch.New("bench", time.Minute, time.Minute, func(context.Context, *Snapshot) (*Snapshot, error) {
		return snapshot, nil
	}, log.NewNopLogger())
	w.RefreshOnce(context.Background())
	c := NewCollector()
	c.Set("bench", w)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

func benchmarkMetrics(b *testing.B, partitions int, gzip bool) {
	benchmarkHandler(b, metricsHandlerFor(syntheticSnapshot(partitions)), gzip)
}

// countingWriter is a ResponseWriter that counts the body and drops it, so
// that the figures are the handler's, not a recorder's growing buffer.
type countingWriter struct {
	header http.Header
	status int
	n      int64
}

func (c *countingWriter) Header() http.Header         { return c.header }
func (c *countingWriter) WriteHeader(status int)      { c.status = status }
func (c *countingWriter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

func benchmarkHandler(b *testing.B, handler http.Handler, gzip bool) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := &countingWriter{header: http.Header{}, status: 200}
		req := httptest.NewRequest("GET", "/metrics", nil)
		if gzip {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		handler.ServeHTTP(w, req)
		if w.status != 200 || w.n == 0 {
			b.Fatalf("status %d, %d bytes", w.status, w.n)
		}
		b.SetBytes(w.n)
	}
}

// A scrape of /metrics as served: the first one after a refresh renders
// the cluster's text, later ones copy it.
func BenchmarkMetricsResponse10kPartitions(b *testing.B)      { benchmarkMetrics(b, 10_000, false) }
func BenchmarkMetricsResponse10kPartitionsGzip(b *testing.B)  { benchmarkMetrics(b, 10_000, true) }
func BenchmarkMetricsResponse100kPartitions(b *testing.B)     { benchmarkMetrics(b, 100_000, false) }
func BenchmarkMetricsResponse100kPartitionsGzip(b *testing.B) { benchmarkMetrics(b, 100_000, true) }
func BenchmarkMetricsResponse500kPartitions(b *testing.B)     { benchmarkMetrics(b, 500_000, false) }
func BenchmarkMetricsResponse500kPartitionsGzip(b *testing.B) { benchmarkMetrics(b, 500_000, true) }

// The same through client_golang's registry and promhttp, for the ratio.
func BenchmarkRegistryResponse10kPartitions(b *testing.B) {
	benchmarkHandler(b, registryHandlerFor(syntheticSnapshot(10_000)), false)
}

// Rendering and compressing the text of a fresh snapshot, which each
// refresh pays in the background; the buffer is sized from the previous
// rendering, as in Collector.
func benchmarkRender(b *testing.B, partitions int) {
	snapshot := syntheticSnapshot(partitions)
	emit := func(s exposition.Sink) { emitSnapshot(s, "bench", snapshot, settings.PartitionMetricsFull) }
	prev := table.Series.Render(nil, emit)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		table.Series.Render(prev, emit)
	}
}

func BenchmarkRender10kPartitions(b *testing.B)  { benchmarkRender(b, 10_000) }
func BenchmarkRender100kPartitions(b *testing.B) { benchmarkRender(b, 100_000) }
func BenchmarkRender500kPartitions(b *testing.B) { benchmarkRender(b, 500_000) }

func benchmarkBuild(b *testing.B, partitions int) {
	md := syntheticMetadata(partitions)
	prev := buildSnapshot(ownTopics(md), all, TopicConfigCache{}, nil, time.Now())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := buildSnapshot(ownTopics(md), all, TopicConfigCache{}, nil, time.Now())
		carryTransitions(prev, next)
	}
}

// The refresh side: building and diffing a snapshot from a decoded response.
func BenchmarkRefresh10kPartitions(b *testing.B)  { benchmarkBuild(b, 10_000) }
func BenchmarkRefresh100kPartitions(b *testing.B) { benchmarkBuild(b, 100_000) }
func BenchmarkRefresh500kPartitions(b *testing.B) { benchmarkBuild(b, 500_000) }

// coordinatorReads are a read of 50 group and 50 transaction coordinator
// partitions (Kafka's default counts), every one answering but the first
// of each kind, loading.
func coordinatorReads(at time.Time) [coordinatorKinds]*CoordinatorRead {
	var reads [coordinatorKinds]*CoordinatorRead
	for k := range coordinatorKinds {
		r := &CoordinatorRead{ReadAt: at, Partitions: make([]CoordinatorPartition, 50)}
		for i := range r.Partitions {
			r.Partitions[i] = CoordinatorPartition{State: CoordinatorAnswering, Coordinator: int32(i%3 + 1)}
		}
		r.Partitions[0] = CoordinatorPartition{State: CoordinatorLoading, Coordinator: 1, Reason: "COORDINATOR_LOAD_IN_PROGRESS"}
		reads[k] = r
	}
	return reads
}

// benchmarkBuildCoordinators is benchmarkBuild with a new coordinator read
// in every refresh, as a cluster whose internal topics exist has: the
// cost the coordinators add to a refresh (their read runs beside it).
func benchmarkBuildCoordinators(b *testing.B, partitions int) {
	md := syntheticMetadata(partitions)
	t0 := time.Now()
	prev := buildSnapshot(ownTopics(md), all, TopicConfigCache{}, nil, t0)
	prev.Coordinators.Reads = coordinatorReads(t0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		at := t0.Add(time.Duration(i+1) * time.Second)
		next := buildSnapshot(ownTopics(md), all, TopicConfigCache{}, nil, at)
		next.Coordinators.Reads = coordinatorReads(at)
		carryTransitions(prev, next)
	}
}

func BenchmarkRefresh10kPartitionsCoordinators(b *testing.B) { benchmarkBuildCoordinators(b, 10_000) }
func BenchmarkRefresh100kPartitionsCoordinators(b *testing.B) {
	benchmarkBuildCoordinators(b, 100_000)
}

// benchmarkBuildTransactions is benchmarkBuild with a transaction read
// starting in every refresh (its requests built, per leader) and its
// in-process work on every partition's two offsets (gapsOf, on the
// reader's goroutine beside the refresh), one partition in a hundred with
// a gap that stalls: the CPU the read adds per refresh interval, but the
// requests' encoding and decoding.
func benchmarkBuildTransactions(b *testing.B, partitions int) {
	md := syntheticMetadata(partitions)
	t0 := time.Now()
	prev := buildSnapshot(ownTopics(md), all, TopicConfigCache{}, nil, t0)
	var keys []PartitionKey
	var ends, stables []int64
	for ti := range prev.Topics {
		for _, p := range prev.Topics[ti].Partitions {
			keys = append(keys, PartitionKey{prev.Topics[ti].Name, p.ID})
			ends, stables = append(ends, 1000), append(stables, 1000)
			if len(keys)%100 == 0 {
				stables[len(stables)-1] = 990
			}
		}
	}
	hwm, lso := offsetsAnswer(keys, ends...), offsetsAnswer(keys, stables...)
	var last *TransactionRead
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		at := t0.Add(time.Duration(i+1) * time.Second)
		next := buildSnapshot(ownTopics(md), all, TopicConfigCache{}, nil, at)
		if len(offsetRequestsByLeader(next)) == 0 {
			b.Fatal("no partition has a leader")
		}
		// One call stands for every leader's: gapsOf's cost is per
		// partition.
		read := &TransactionRead{ReadAt: at}
		read.Gaps, read.Answered = gapsOf(hwm, lso, last, at)
		next.Transactions, last = read, read
		carryTransitions(prev, next)
	}
}

func BenchmarkRefresh10kPartitionsTransactions(b *testing.B) { benchmarkBuildTransactions(b, 10_000) }
func BenchmarkRefresh100kPartitionsTransactions(b *testing.B) {
	benchmarkBuildTransactions(b, 100_000)
}

// benchmarkBrokerDeath times the refresh that sees broker 3 of a
// 100,000-partition cluster confirmed dead: it leaves every ISR, two
// thirds of the partitions open under-replicated episodes (and those it
// led, offline ones), and the outage clock dates each from the broker's
// first failed probe, a refresh earlier. backdate false is the same
// refresh with the clock off, for the ratio.
func benchmarkBrokerDeath(b *testing.B, partitions int, backdate bool) {
	alive := syntheticMetadata(partitions)
	dead := &sarama.MetadataResponse{Version: 7}
	for _, br := range alive.Brokers {
		if br.ID() != 3 {
			dead.AddBroker(br.Addr(), br.ID())
		}
	}
	for _, t := range alive.Topics {
		for _, p := range t.Partitions {
			leader := p.Leader
			if leader == 3 {
				leader = -1
			}
			isr := slices.DeleteFunc(slices.Clone(p.Isr), func(id int32) bool { return id == 3 })
			dead.AddTopicPartition(t.Name, p.ID, leader, p.Replicas, isr, nil, sarama.ErrNoError)
		}
	}
	limit := time.Minute
	if !backdate {
		limit = 0
	}
	t0 := time.Now()
	snap := func(md *sarama.MetadataResponse, at time.Time, unreachable bool) *Snapshot {
		s := buildSnapshot(ownTopics(md), all, TopicConfigCache{}, nil, at)
		s.backdateLimit = limit
		for i := range s.Brokers {
			s.Brokers[i].Reachable = !(unreachable && s.Brokers[i].ID == 3)
		}
		return s
	}
	healthy := snap(alive, t0, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		probed := snap(alive, t0.Add(time.Second), true) // broker 3 stops answering
		carryTransitions(healthy, probed)
		next := snap(dead, t0.Add(2*time.Second), true) // the metadata confirms it
		rememberDownBrokers(probed, next)
		b.StartTimer()
		carryTransitions(probed, next)
	}
}

// The refresh that confirms a broker's death, with and without the outage clock.
func BenchmarkRefreshBrokerDeath100kPartitions(b *testing.B) { benchmarkBrokerDeath(b, 100_000, true) }
func BenchmarkRefreshBrokerDeath100kPartitionsNoBackdate(b *testing.B) {
	benchmarkBrokerDeath(b, 100_000, false)
}

// probeHandlerFor serves one cluster among clusters, each the snapshot's
// copy, as /probe?target= does: its writer is that cluster of a collector
// that serves them all. clusters 1 with the /metrics handler is the
// one-cluster exporter it is compared with.
func probeHandlerFor(snapshot *Snapshot, clusters int) http.Handler {
	c := NewCollector()
	for i := range clusters {
		name := fmt.Sprintf("cluster-%03d", i)
		w := watch.New(name, time.Minute, time.Minute, func(context.Context, *Snapshot) (*Snapshot, error) {
			return snapshot, nil
		}, log.NewNopLogger())
		c.Set(name, w)
		w.RefreshOnce(context.Background())
	}
	target := exposition.ClusterWriter(c, fmt.Sprintf("cluster-%03d", clusters/2))
	return exposition.ProbeHandler(func(*http.Request) ([]exposition.TextWriter, error) {
		return []exposition.TextWriter{target}, nil
	}, func(string, error) {})
}

// /probe of one 1,000-partition cluster among 200 against /metrics of an
// exporter that watches that one cluster only (issue 30: the same cost).
func BenchmarkMetricsOneCluster1kPartitionsGzip(b *testing.B) {
	benchmarkHandler(b, metricsHandlerFor(syntheticSnapshot(1_000)), true)
}
func BenchmarkProbeOneOf200Clusters1kPartitionsGzip(b *testing.B) {
	benchmarkHandler(b, probeHandlerFor(syntheticSnapshot(1_000), 200), true)
}
