package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// catchUpSample is one scrape of the frozen broker's catch-up series.
type catchUpSample struct {
	at       time.Time
	records  float64
	eta      float64
	etaKnown bool
	leading  float64
}

// TestKafkaCatchUp SIGSTOPs a follower of a real 3-node KRaft cluster
// while 50 MB (500 records) are written to its partition, then resumes it
// with replication throttled to 2.5 MB/s, so that catching up takes about
// twenty seconds: the exporter's records behind (the sum over the broker's
// out-of-sync replicas) start at what kafka-get-offsets.sh says was written
// meanwhile and fall to nothing as
// kafka-topics.sh puts the broker back in the ISR (the independent clock of
// the catch-up's end); its ETA, taken once the gap has shrunk by a quarter,
// is compared with the time kafka-topics.sh then took. The broker, made
// leader of a second partition (a preferred-leader election once it is in
// that partition's ISR) while the first still lags, is flagged as leading
// while behind, and safe-to-stop --after-restart says "recovering" with
// the figures.
func TestKafkaCatchUp(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	const topic, lead = "catchup", "catchup-lead"
	const frozen = int32(3)
	createTopicOn(t, c, topic, []int32{1, 2, frozen}, nil)
	createTopicOn(t, c, lead, []int32{frozen, 1, 2}, nil)
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	e := startLabExporter(t, c, 500*time.Millisecond)
	broker := map[string]string{"broker": fmt.Sprint(frozen)}
	waitMetrics(t, e, 60*time.Second, "both topics in sync", func(m exportertest.Metrics) (bool, string) {
		for _, tp := range []string{topic, lead} {
			if isr, _ := m.Value("kafka_partition_in_sync_replicas", partitionLabels(tp, 0)); isr != 3 {
				return false, m.Describe("kafka_partition_in_sync_replicas", nil)
			}
		}
		return true, ""
	})
	// Throttled replication applies to replicas out of the ISR only.
	throttle(t, admin, "2500000", map[string][]int32{topic: nil})
	t.Cleanup(func() { throttle(t, admin, "", map[string][]int32{topic: nil}) })

	before := c.Offsets(t, topic, -1)[0] + c.Offsets(t, lead, -1)[0]
	resume := faultHang(t, "kafka", c.PID(frozen))
	waitMetrics(t, e, 60*time.Second, "the frozen broker out of both ISRs", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("kafka_broker_out_of_sync_replicas", broker)
		return n >= 2, m.Describe("kafka_broker_out_of_sync_replicas", broker)
	})
	produceBytes(t, c.Bootstrap(), topic, 50<<20)
	if err := produceAll(c.Bootstrap(), lead, 3); err != nil {
		t.Fatal(err)
	}
	resume()
	resumedAt := time.Now()

	// kafka-topics.sh's ISR, polled beside the scrapes: the catch-up's end.
	inISR := watchISR(t, c, topic, frozen)
	var samples []catchUpSample
	elected, stopOut := false, ""
	lab.WaitFor(t, 120*time.Second, 250*time.Millisecond, func() (bool, string) {
		m, err := e.TryScrape()
		if err != nil {
			return false, err.Error()
		}
		s := catchUpSample{at: time.Now()}
		records, ok := m.Value("kafka_broker_catchup_records_behind", broker)
		s.records = records
		s.eta, s.etaKnown = m.Value("kafka_broker_catchup_eta_seconds", broker)
		s.leading, _ = m.Value("kafka_broker_leading_while_behind", broker)
		if ok {
			samples = append(samples, s)
		}
		if isr, _ := m.Value("kafka_partition_in_sync_replicas", partitionLabels(lead, 0)); !elected && ok && records > 0 && isr == 3 {
			// Back in the small partition's ISR, far behind in the big one:
			// give it its leadership back, too early.
			if _, err := admin.ElectLeaders(sarama.PreferredElection, map[string][]int32{lead: {0}}); err != nil {
				t.Errorf("preferred election of %s: %v", lead, err)
			}
			elected = true
		}
		if stopOut == "" && ok && s.leading > 0 && s.etaKnown {
			_, stopOut = stopCommand(t, e, 30*time.Second, "--broker", fmt.Sprint(frozen), "--after-restart")
		}
		end := inISR()
		return !end.IsZero() && !ok, fmt.Sprintf("in the ISR at %v, records behind %v (served %v)", end, records, ok)
	})
	caughtUp := inISR()
	// Nothing was written since: what kafka-get-offsets.sh says now was
	// written while the broker was frozen (asked after, as the tool's admin
	// client times out on a bootstrap list with a frozen broker).
	after := c.Offsets(t, topic, -1)[0] + c.Offsets(t, lead, -1)[0]
	written := after - before
	var trace []string
	for _, s := range samples {
		trace = append(trace, fmt.Sprintf("%.1fs:%.0f/eta %.1f", s.at.Sub(resumedAt).Seconds(), s.records, s.eta))
	}
	t.Logf("kafka-get-offsets.sh: %d records in both topics before the freeze, %d after; the exporter's records behind since SIGCONT: %s", before, after, strings.Join(trace, " "))
	t.Logf("FIGURE kafka catch-up: %d records (50 MB, and one to %s) written while broker %d was frozen; back in the ISR (kafka-topics.sh) %s after SIGCONT",
		written, lead, frozen, caughtUp.Sub(resumedAt).Round(10*time.Millisecond))
	checkCatchUp(t, samples, written, caughtUp)
	if !slices.ContainsFunc(samples, func(s catchUpSample) bool { return s.leading > 0 }) {
		t.Errorf("kafka_broker_leading_while_behind never counted broker %d's leadership of %s while it was behind in %s (elected: %v)", frozen, lead, topic, elected)
	}
	for _, want := range []string{"recovering: ", " records behind on ", "ETA", "leadership came back before it caught up"} {
		if !strings.Contains(stopOut, want) {
			t.Errorf("safe-to-stop --after-restart during the catch-up does not say %q:\n%s", want, stopOut)
		}
	}
}

// checkCatchUp holds the samples to what Kafka's own tools said: the first
// at most what was written while the broker was frozen (and most of it),
// the first ETA served once the gap shrank by a quarter against the time
// kafka-topics.sh then took (recorded; bounded in CI with a 10x margin, as
// every timing).
func checkCatchUp(t *testing.T, samples []catchUpSample, written int64, caughtUp time.Time) {
	t.Helper()
	if len(samples) == 0 {
		t.Fatal("kafka_broker_catchup_records_behind was never served during the catch-up")
	}
	first := samples[0]
	if first.records > float64(written) || first.records < float64(written)/2 {
		t.Errorf("first records behind %v; kafka-get-offsets.sh says %d were written while the broker was frozen", first.records, written)
	}
	peak := slices.MaxFunc(samples, func(a, b catchUpSample) int { return int(a.records - b.records) }).records
	i := slices.IndexFunc(samples, func(s catchUpSample) bool { return s.etaKnown && s.records <= 0.75*peak })
	if i < 0 {
		t.Fatalf("no ETA once the gap shrank by a quarter (peak %v): %+v", peak, samples)
	}
	s := samples[i]
	real := caughtUp.Sub(s.at).Seconds()
	ratio := s.eta / real
	t.Logf("FIGURE kafka catch-up ETA: %.0f of %.0f records left, ETA %.1fs; kafka-topics.sh put the broker back in the ISR %.1fs later (ETA/real %.2f)",
		s.records, peak, s.eta, real, ratio)
	if ratio < 0.1 || ratio > 10 {
		t.Errorf("ETA %.1fs against a real %.1fs: off by more than 10x", s.eta, real)
	}
}

// watchISR polls kafka-topics.sh for topic/0's ISR until it holds id, and
// returns a function that says when it first did (the middle of that run
// of the tool, about a second long; zero until then).
func watchISR(t *testing.T, c *lab.KafkaCluster, topic string, id int32) func() time.Time {
	isr := regexp.MustCompile(`Partition: 0\s.*Isr: ([0-9,]+)`)
	var mu sync.Mutex
	var at time.Time
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			started := time.Now()
			r := c.TryTopics("--describe", "--topic", topic)
			if m := isr.FindStringSubmatch(r.Stdout); r.Err == nil && m != nil && slices.Contains(strings.Split(m[1], ","), fmt.Sprint(id)) {
				// The tool read the ISR somewhere within its run.
				mu.Lock()
				at = started.Add(time.Since(started) / 2)
				mu.Unlock()
				return
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}
