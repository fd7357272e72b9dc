package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// committedReader reads a partition from its start as a read_committed
// consumer does, and keeps the offsets it got and when.
type committedReader struct {
	mu      sync.Mutex
	offsets []int64
	at      []time.Time
	cancel  context.CancelFunc
	done    chan struct{}
}

func startCommittedReader(t *testing.T, c *lab.KafkaCluster, topic string) *committedReader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DialTimeout(time.Second),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &committedReader{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer cl.Close()
		for ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			now := time.Now()
			fetches.EachRecord(func(rec *kgo.Record) {
				r.mu.Lock()
				r.offsets = append(r.offsets, rec.Offset)
				r.at = append(r.at, now)
				r.mu.Unlock()
			})
		}
	}()
	t.Cleanup(r.close)
	return r
}

func (r *committedReader) close() { r.cancel(); <-r.done }

// got returns the offsets read so far, and when the last was.
func (r *committedReader) got() ([]int64, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	if len(r.at) > 0 {
		last = r.at[len(r.at)-1]
	}
	return append([]int64(nil), r.offsets...), last
}

// TestKafkaReadCommittedStall leaves a transaction open on a real
// 5-broker cluster: a transactional producer (franz-go, transaction
// timeout 30 s: the tools below start JVMs, seconds each on a busy
// machine) begins, writes three records and stops without
// committing, between five plain records before and four after. Kafka's
// own tools are the oracle: the gap the exporter serves is the high
// watermark kafka-get-offsets.sh gives minus the open transaction's
// start offset kafka-transactions.sh describe-producers gives, the open
// transaction's idle time dates the producer's last write as the tool
// does, and a read_committed consumer stops exactly at that offset. When
// the coordinator aborts the transaction at its timeout, the consumer
// reads on (the plain records after it, not the aborted three) and the
// exporter's gap series go away within a refresh or two of it.
func TestKafkaReadCommittedStall(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 5, InternalTopics: true})
	const topic = "read-committed-stall"
	c.CreateTopic(t, topic, 1)
	const refresh = time.Second
	e := startLabExporter(t, c, refresh)

	c.Produce(t, topic, 0, records(5)...)
	tx, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DialTimeout(time.Second),
		kgo.TransactionalID("read-committed-stall-tx"), kgo.TransactionTimeout(30*time.Second),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	// Closed at the end only: the transaction stays open until its
	// coordinator aborts it.
	t.Cleanup(tx.Close)
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if err := tx.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "open-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	openedAt := time.Now()
	c.Produce(t, topic, 0, records(4)...)
	reader := startCommittedReader(t, c, topic)

	producers := c.DescribeProducers(t, topic, 0)
	var open *lab.ProducerState
	for i := range producers {
		if producers[i].CurrentTransactionStartOffset >= 0 {
			open = &producers[i]
		}
	}
	if open == nil {
		t.Fatalf("kafka-transactions.sh describe-producers lists no open transaction: %+v", producers)
	}
	hwm := c.Offsets(t, topic, -1)[0]
	wantGap := hwm - open.CurrentTransactionStartOffset
	t.Logf("kafka-get-offsets.sh: high watermark %d; describe-producers: producer %d, transaction open since offset %d, last write %s",
		hwm, open.ProducerID, open.CurrentTransactionStartOffset, open.LastTimestamp.Format("15:04:05.000"))
	// Three in the transaction and four after, or more when the lab's
	// plain producer (not idempotent) wrote one twice on a retry.
	if wantGap < 7 {
		t.Fatalf("the tools give a gap of %d records, want at least 7 (three in the transaction, four after)", wantGap)
	}
	// What read_committed consumers get once the transaction is aborted:
	// every offset below the high watermark but the transaction's three.
	var wantRead []int64
	for o := int64(0); o < hwm; o++ {
		if o < open.CurrentTransactionStartOffset || o >= open.CurrentTransactionStartOffset+3 {
			wantRead = append(wantRead, o)
		}
	}

	series := map[string]string{"topic": topic, "partition": "0"}
	// The one transaction in flight, at the broker Kafka's FindCoordinator
	// names (the cluster is lent to one test at a time).
	ongoing := map[string]string{"broker": fmt.Sprint(transactionCoordinator(t, c, "read-committed-stall-tx")), "state": "ongoing"}
	m, _ := waitMetrics(t, e, 60*time.Second, "the partition stalled, its transaction described", func(m exportertest.Metrics) (bool, string) {
		gap, ok := m.Value("kafka_partition_read_committed_gap_records", series)
		_, idle := m.Value("kafka_partition_open_transaction_idle_seconds", series)
		_, hanging := m.Value("kafka_hanging_transactions", nil)
		inFlight, _ := m.Value("kafka_broker_coordinated_transactional_ids", ongoing)
		return ok && gap == float64(wantGap) && idle && hanging && inFlight == 1, m.Describe("kafka_partition_read_committed_gap_records", nil) +
			m.Describe("kafka_partition_open_transaction_idle_seconds", nil) + m.Describe("kafka_hanging_transactions", nil) +
			m.Describe("kafka_broker_coordinated_transactional_ids", map[string]string{"state": "ongoing"})
	})
	total := 0.0
	for _, x := range m.Series("kafka_broker_coordinated_transactional_ids", map[string]string{"state": "ongoing"}) {
		total += x.Value
	}
	if total != 1 {
		t.Errorf("%v transactions ongoing by the exporter, want the test's one:\n%s", total, m.Describe("kafka_broker_coordinated_transactional_ids", nil))
	}
	readAt, _ := m.Value("kafka_transactions_last_read_timestamp_seconds", nil)
	idle, _ := m.Value("kafka_partition_open_transaction_idle_seconds", series)
	stalled, _ := m.Value("kafka_partition_read_committed_stalled_seconds", series)
	lastWrite := time.UnixMilli(int64(readAt*1000 - idle*1000 + 0.5))
	if d := lastWrite.Sub(open.LastTimestamp).Abs(); d > 10*time.Millisecond {
		t.Errorf("the exporter's idle time %.3fs at its read %s dates the last write %s; describe-producers says %s (%s apart)",
			idle, time.UnixMilli(int64(readAt*1000)).Format("15:04:05.000"), lastWrite.Format("15:04:05.000"), open.LastTimestamp.Format("15:04:05.000"), d)
	}
	if max := time.Since(openedAt).Seconds(); stalled <= 0 || stalled > max {
		t.Errorf("kafka_partition_read_committed_stalled_seconds = %v, want above 0 and at most the %.1f s since the transaction's writes", stalled, max)
	}
	if v, _ := m.Value("kafka_hanging_transactions", nil); v != 0 {
		t.Errorf("kafka_hanging_transactions = %v with one transaction open %s, within its timeout", v, time.Since(openedAt).Round(time.Second))
	}
	if v, ok := m.Value("kafka_transaction_max_timeout_seconds", nil); !ok || v != 900 {
		t.Errorf("kafka_transaction_max_timeout_seconds = %v (served %v), want Kafka's default 900", v, ok)
	}
	if offsets, _ := reader.got(); len(offsets) != int(open.CurrentTransactionStartOffset) {
		t.Errorf("the read_committed consumer read offsets %v; want it stopped at the transaction's start, offset %d", offsets, open.CurrentTransactionStartOffset)
	}

	// The coordinator aborts the transaction at its timeout (30 s, checked
	// every second in the lab, cluster.sh): the consumer reads on, and the
	// gap goes.
	lab.WaitFor(t, 90*time.Second, 50*time.Millisecond, func() (bool, string) {
		offsets, _ := reader.got()
		return len(offsets) >= len(wantRead), fmt.Sprintf("the read_committed consumer read offsets %v", offsets)
	})
	offsets, resumedAt := reader.got()
	if fmt.Sprint(offsets) != fmt.Sprint(wantRead) {
		t.Errorf("the read_committed consumer read offsets %v, want %v (the aborted three left out)", offsets, wantRead)
	}
	m, _ = waitMetrics(t, e, 30*time.Second, "the gap gone", func(m exportertest.Metrics) (bool, string) {
		at, _ := m.Value("kafka_transactions_last_read_timestamp_seconds", nil)
		_, gap := m.Value("kafka_partition_read_committed_gap_records", series)
		n, ok := m.Value("kafka_read_committed_stalled_partitions", nil)
		return at*1000 > float64(resumedAt.UnixMilli()) && !gap && ok && n == 0, m.Describe("kafka_partition_read_committed_gap_records", nil)
	})
	goneAt, _ := m.Value("kafka_transactions_last_read_timestamp_seconds", nil)
	lag := time.UnixMilli(int64(goneAt * 1000)).Sub(resumedAt)
	t.Logf("FIGURE kafka read_committed stall: the consumer read on %s after the transaction's writes (timeout 30 s); the first exporter read without the gap began %s after the consumer read on (refresh %s)",
		resumedAt.Sub(openedAt).Round(10*time.Millisecond), lag.Round(10*time.Millisecond), refresh)
	if lag > 10*(refresh+time.Second) {
		t.Errorf("the exporter saw the gap close %s after the consumer read on, more than 10 times a refresh and a second", lag)
	}
	for _, p := range c.DescribeProducers(t, topic, 0) {
		if p.CurrentTransactionStartOffset >= 0 {
			t.Errorf("describe-producers still lists an open transaction after the abort: %+v", p)
		}
	}
}

// records are n plain records.
func records(n int) []lab.Record {
	out := make([]lab.Record, n)
	for i := range out {
		out[i].Value = fmt.Appendf(nil, "plain-%d", i)
	}
	return out
}

// startLabExporter starts the exporter on c alone, named lab, refreshing
// every refresh.
func startLabExporter(t *testing.T, c *lab.KafkaCluster, refresh time.Duration, settings ...string) *exportertest.Exporter {
	t.Helper()
	var more strings.Builder
	for _, line := range settings {
		more.WriteString("    " + line + "\n")
	}
	cfg := faultConfig(t, fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    refresh_interval: %s
%s`, strings.Join(c.Bootstrap(), ", "), refresh, more.String()))
	return exportertest.Start(t, "--config.file="+cfg)
}
