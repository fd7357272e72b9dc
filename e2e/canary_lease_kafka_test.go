package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// kafkaLeaseCanaryInterval is the canary interval of the Kafka lease test:
// the default refresh interval. The lease is the group session, the
// broker's least by default (6 s), and must move within two intervals.
const kafkaLeaseCanaryInterval = 5 * time.Second

// canaryTopicEnds are the log end offsets of the topic's partitions, read
// by a client of the test's own.
func canaryTopicEnds(t *testing.T, c *lab.KafkaCluster, topic string) map[int32]int64 {
	t.Helper()
	ends := map[int32]int64{}
	for key, end := range logEndOffsets(t, c, topic) {
		var p int32
		if _, err := fmt.Sscanf(strings.TrimPrefix(key, topic+"/"), "%d", &p); err != nil {
			t.Fatalf("partition of %s: %v", key, err)
		}
		ends[p] = end
	}
	return ends
}

// canaryWriters reads the canary topic's records from the offsets from
// (the start where absent) to its end, and counts them by the exporter
// run that wrote them (a canary record's value is RUN:PARTITION:SEQ).
func canaryWriters(t *testing.T, c *lab.KafkaCluster, topic string, from map[int32]int64) map[string]int {
	t.Helper()
	consumer, err := sarama.NewConsumer(c.InternalBootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	runs := map[string]int{}
	for p, end := range canaryTopicEnds(t, c, topic) {
		start := from[p]
		if start >= end {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, start)
		if err != nil {
			t.Fatalf("consume %s/%d from %d: %v", topic, p, start, err)
		}
		for done := false; !done; {
			select {
			case msg := <-pc.Messages():
				run, _, _ := strings.Cut(string(msg.Value), ":")
				runs[run]++
				done = msg.Offset+1 >= end
			case <-time.After(10 * time.Second):
				t.Fatalf("reading %s/%d: nothing for 10 s before offset %d", topic, p, end)
			}
		}
		pc.Close()
	}
	return runs
}

// TestKafkaCanaryLeaseTwoExporters runs two exporters with the canary on
// against one real Kafka cluster: one writes (the records in the topic are
// one run's), the other serves kafka_canary_leader 0 and no write
// counters. kill -9 of the writer: the other takes over within two canary
// intervals, counting no acknowledged record lost. SIGSTOP of the writer
// for longer than its session: the standby takes over, and the woken one
// lands no record (the topic shows none of its run after it woke) and
// serves leader 0.
func TestKafkaCanaryLeaseTwoExporters(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	const topic = "canary-lease"
	cfg := faultConfig(t, fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    canary: {enabled: true, interval: %s, topic: %s}
`, strings.Join(c.Bootstrap(), ", "), kafkaLeaseCanaryInterval, topic))
	series := kafkaCanarySeries
	a := exportertest.Start(t, "--config.file="+cfg)
	b := exportertest.Start(t, "--config.file="+cfg)

	// Two rounds over every partition.
	holder := series.waitOneLeader(t, 120*time.Second, float64(2*c.Nodes()), a, b)
	other := a
	if holder == a {
		other = b
	}
	if m := other.Scrape(t); series.leaderValue(m) != 0 {
		t.Errorf("the other exporter serves kafka_canary_leader %v, want 0", series.leaderValue(m))
	} else if _, served := series.acknowledged(m); served {
		t.Errorf("the exporter without the lease serves write counters")
	}
	if runs := canaryWriters(t, c, topic, nil); len(runs) != 1 {
		t.Errorf("records of %d exporter runs in the canary topic with one leader, want 1: %v", len(runs), runs)
	}

	// kill -9 of the writer.
	killedAt := time.Now()
	if err := holder.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	tookOver := series.waitTakeover(t, other, killedAt, 10*2*kafkaLeaseCanaryInterval)
	t.Logf("FIGURE kafka canary lease: kill -9 of the writer -> the other's first acknowledged record after %s (canary interval %s, session timeout 6 s, requirement two intervals)",
		tookOver.Round(10*time.Millisecond), kafkaLeaseCanaryInterval)
	waitMetrics(t, other, 60*time.Second, "records on every partition after the takeover", func(m exportertest.Metrics) (bool, string) {
		var short []string
		for p := range c.Nodes() {
			if v, _ := m.Value(series.acked, map[string]string{"partition": fmt.Sprint(p)}); v < 2 {
				short = append(short, fmt.Sprintf("partition %d: %v", p, v))
			}
		}
		return len(short) == 0, strings.Join(short, ", ")
	})
	if lost := series.lostSeries(other.Scrape(t)); len(lost) > 0 {
		t.Errorf("the takeover counted acknowledged records lost: %v", lost)
	}

	// A standby again, which must not take the lease from a live writer.
	standby := exportertest.Start(t, "--config.file="+cfg)
	time.Sleep(2 * kafkaLeaseCanaryInterval) // its join, and the rebalance it starts
	if series.waitOneLeader(t, 60*time.Second, 1, other, standby) != other {
		t.Fatal("the standby took the lease from a live writer")
	}
	// The writer's run: the only one in what was written since the standby
	// started.
	mark := canaryTopicEnds(t, c, topic)
	time.Sleep(kafkaLeaseCanaryInterval + time.Second)
	writers := canaryWriters(t, c, topic, mark)
	if len(writers) != 1 {
		t.Fatalf("records of %d runs while one exporter leads, want 1: %v", len(writers), writers)
	}
	otherRun := slices.Collect(maps.Keys(writers))[0]

	// SIGSTOP of the writer for longer than its session (6 s).
	if err := other.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	t.Logf("FIGURE kafka canary lease: SIGSTOP of the writer -> the standby's first acknowledged record after %s",
		series.waitTakeover(t, standby, stoppedAt, 10*2*kafkaLeaseCanaryInterval).Round(10*time.Millisecond))
	time.Sleep(time.Until(stoppedAt.Add(10 * time.Second)))
	woke := canaryTopicEnds(t, c, topic)
	if err := other.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * kafkaLeaseCanaryInterval)
	after := canaryWriters(t, c, topic, woke)
	if after[otherRun] != 0 {
		t.Errorf("the woken writer (run %s) landed %d records after it woke: %v", otherRun, after[otherRun], after)
	}
	if len(after) != 1 {
		t.Errorf("records of %d runs after the writer woke, want the standby's only: %v", len(after), after)
	}
	series.checkAfterWake(t, "kafka_canary", other, standby)
}

// TestKafkaCanaryLeaseHolderCutOff cuts the canary's writer off the
// cluster by the network alone, the cluster and the other exporter
// unharmed: the writer reaches the brokers through the lab's PROXIED
// listener (KafkaOptions.Proxied) and a TCP proxy per broker, the other exporter directly, and
// the proxies hold the writer's connections (timeouts, no reset). The
// lease moves to the other within two canary intervals, and the cut-off
// writer lands no record: what it sent while cut never reaches a broker,
// and once its hold ran out it sends nothing.
func TestKafkaCanaryLeaseHolderCutOff(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{Proxied: true})
	const topic = "canary-lease-cut"
	var proxies []*lab.Proxy
	var proxied []string
	for id := int32(1); id <= int32(c.Nodes()); id++ {
		listen, advertised := c.ProxiedListener(t, id)
		proxies = append(proxies, lab.StartProxy(t, advertised, listen))
		proxied = append(proxied, advertised)
	}
	config := func(bootstrap []string) string {
		return faultConfig(t, fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    canary: {enabled: true, interval: %s, topic: %s}
`, strings.Join(bootstrap, ", "), kafkaLeaseCanaryInterval, topic))
	}
	series := kafkaCanarySeries
	writer := exportertest.Start(t, "--config.file="+config(proxied))
	series.waitOneLeader(t, 120*time.Second, float64(2*c.Nodes()), writer)
	direct := exportertest.Start(t, "--config.file="+config(c.Bootstrap()))
	time.Sleep(2 * kafkaLeaseCanaryInterval) // its join, and the rebalance it starts
	if series.waitOneLeader(t, 60*time.Second, 1, writer, direct) != writer {
		t.Fatal("the second exporter took the lease from a live writer")
	}
	runs := canaryWriters(t, c, topic, nil)
	if len(runs) != 1 {
		t.Fatalf("records of %d runs with one writer, want 1: %v", len(runs), runs)
	}
	writerRun := slices.Collect(maps.Keys(runs))[0]

	cutAt := time.Now()
	for _, p := range proxies {
		p.Cut(writer.PID())
	}
	mark := canaryTopicEnds(t, c, topic)
	t.Logf("FIGURE kafka canary lease: writer cut off the cluster (proxies hold its connections) -> the other's first acknowledged record after %s (canary interval %s, requirement two intervals)",
		series.waitTakeover(t, direct, cutAt, 10*2*kafkaLeaseCanaryInterval).Round(10*time.Millisecond), kafkaLeaseCanaryInterval)
	lab.WaitFor(t, 30*time.Second, 200*time.Millisecond, func() (bool, string) {
		return logLineWith(writer.Logs(), "collector=kafka_canary", `msg="canary lease lost: this exporter stops writing the canary"`), "the cut-off writer has not logged that it lost the lease"
	})
	for _, p := range proxies {
		p.Restore()
	}
	time.Sleep(3 * kafkaLeaseCanaryInterval) // the writer back, as a standby
	if after := canaryWriters(t, c, topic, mark); after[writerRun] != 0 || len(after) != 1 {
		t.Errorf("records since the cut, by run: %v; want only the other exporter's (the cut-off writer is %s)", after, writerRun)
	}
	series.checkAfterWake(t, "kafka_canary", writer, direct)
	if v := value(t, writer.Scrape(t), "kafka_up", nil); v != 1 {
		t.Errorf("kafka_up of the reconnected writer = %v, want 1", v)
	}
}
