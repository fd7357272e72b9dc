package e2e

import (
	"fmt"
	"html"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaUncleanEstimate is issue 47's last scenario on a real 5-node
// KRaft cluster (five voters, so that the quorum survives two dead nodes):
// two topics of one partition on brokers 1, 2 and 3, RF 3, min ISR 1, one
// of them the write canary's. Follower 3 is SIGSTOPped until both ISRs
// shrink to {1, 2}; the test writes its records (and the canary its own);
// leader 1 and follower 2 are killed by PID; 3 is resumed. The exporter
// must say, before anyone elects, what an unclean election of broker 3
// would lose: for the test's topic exactly the records written while 3 was
// out (as kafka-get-offsets.sh counted them), served, on the status page
// and in safe-to-stop's answer. Then the election runs
// (ElectLeaders, UNCLEAN): kafka-get-offsets.sh's end offset drops by the
// estimate, and the canary's read-back counts at least its topic's
// estimate lost, and at most the records it had acknowledged after the
// exporter's last read of the high watermark more.
func TestKafkaUncleanEstimate(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 5})
	const topic, canaryTopic = "unclean-estimate", "unclean-estimate-canary"
	const frozen = int32(3)
	minISR1 := map[string]string{"min.insync.replicas": "1"}
	createTopicOn(t, c, topic, []int32{1, 2, frozen}, minISR1)
	createTopicOn(t, c, canaryTopic, []int32{1, 2, frozen}, minISR1)
	const canaryInterval = 200 * time.Millisecond
	e := startLabExporter(t, c, 500*time.Millisecond, fmt.Sprintf(
		"canary: {enabled: true, interval: %s, topic: %s, create_topic: false, replication_factor: 3, min_insync_replicas: 1, lease: false}", canaryInterval, canaryTopic))
	isr := func(n float64) func(m exportertest.Metrics) (bool, string) {
		return func(m exportertest.Metrics) (bool, string) {
			for _, tp := range []string{topic, canaryTopic} {
				if v, _ := m.Value("kafka_partition_in_sync_replicas", partitionLabels(tp, 0)); v != n {
					return false, m.Describe("kafka_partition_in_sync_replicas", nil)
				}
			}
			acked := sumSeries(m, "kafka_canary_produce_acknowledged_total", nil)
			return acked >= 5, fmt.Sprintf("%v canary records acknowledged", acked)
		}
	}
	produceBytes(t, c.Bootstrap(), topic, 20*100_000)
	waitMetrics(t, e, 60*time.Second, "both partitions in sync, the canary writing", isr(3))
	// Every record so far was acknowledged by the three (acks=all, ISR 3).
	before := c.Offsets(t, topic, -1)[0]

	resume := faultHang(t, "kafka", c.PID(frozen))
	t.Cleanup(resume)
	waitMetrics(t, e, 90*time.Second, "both ISRs shrunk to {1, 2}", isr(2))
	produceBytes(t, c.Bootstrap(), topic, 60*100_000)
	written := c.Offsets(t, topic, -1)[0] - before
	// A few catch-up reads, so that the last one saw the end of the writes.
	time.Sleep(3 * time.Second)
	killedAt := time.Now()
	c.Kill(t, 1)
	c.Kill(t, 2)
	resume()
	resumedAt := time.Now()

	behind := func(m exportertest.Metrics, tp string) (float64, bool) {
		return m.Value("kafka_partition_unclean_candidate_records_behind", map[string]string{"topic": tp, "partition": "0", "broker": fmt.Sprint(frozen)})
	}
	m, took := waitMetrics(t, e, 90*time.Second, "the estimate for broker 3 on both partitions", func(m exportertest.Metrics) (bool, string) {
		_, ok1 := behind(m, topic)
		_, ok2 := behind(m, canaryTopic)
		return ok1 && ok2, m.Describe("kafka_partition_unclean_candidate_records_behind", nil) + m.Describe("kafka_partition_leader", partitionLabels(topic, 0))
	})
	estimate, _ := behind(m, topic)
	canaryEstimate, _ := behind(m, canaryTopic)
	t.Logf("FIGURE kafka unclean estimate: served %s after broker 3 was resumed: %v records for %s (%d written while it was out, by kafka-get-offsets.sh), %v for the canary's topic",
		took.Round(10*time.Millisecond), estimate, topic, written, canaryEstimate)
	if estimate != float64(written) {
		t.Errorf("estimate for %s: %v records, want the %d written while broker 3 was out", topic, estimate, written)
	}
	hw, _ := m.Value("kafka_partition_last_high_watermark", partitionLabels(topic, 0))
	if hw != float64(before+written) {
		t.Errorf("last high watermark of %s: %v, want %d (kafka-get-offsets.sh before the kill)", topic, hw, before+written)
	}
	hwReadAt, _ := m.Value("kafka_partition_last_high_watermark_timestamp_seconds", partitionLabels(canaryTopic, 0))
	if readAt := time.UnixMilli(int64(hwReadAt * 1000)); readAt.After(killedAt) || killedAt.Sub(readAt) > 10*time.Second {
		t.Errorf("the canary topic's high watermark was read at %s, the kill was at %s", readAt.Format(time.StampMilli), killedAt.Format(time.StampMilli))
	}
	checkUncleanAnswers(t, e, topic, int64(written))

	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	electAt := time.Now()
	if _, err := admin.ElectLeaders(sarama.UncleanElection, map[string][]int32{topic: {0}, canaryTopic: {0}}); err != nil {
		t.Fatalf("unclean election: %v", err)
	}
	waitMetrics(t, e, 60*time.Second, "broker 3 leads both partitions", func(m exportertest.Metrics) (bool, string) {
		for _, tp := range []string{topic, canaryTopic} {
			if v, _ := m.Value("kafka_partition_leader", partitionLabels(tp, 0)); v != float64(frozen) {
				return false, m.Describe("kafka_partition_leader", nil)
			}
		}
		return true, ""
	})
	lost := before + written - c.Offsets(t, topic, -1)[0]
	if float64(lost) != estimate {
		t.Errorf("the unclean election lost %d records of %s (kafka-get-offsets.sh before and after), the estimate said %v", lost, topic, estimate)
	}
	// The canary's read-back counts a record lost once another record
	// holds its offset (a shorter log is a lagging high watermark until
	// then): the canary's own writes fill the lost offsets one a round;
	// the test's fill them at once.
	produceSmall(t, c.Bootstrap(), canaryTopic, int(canaryEstimate)+50)
	m, _ = waitMetrics(t, e, 60*time.Second, "the canary's read-back counting its loss", func(m exportertest.Metrics) (bool, string) {
		n := sumSeries(m, "kafka_canary_acknowledged_lost_total", nil)
		return n >= canaryEstimate && n > 0, m.Describe("kafka_canary_acknowledged_lost_total", nil)
	})
	canaryLost := sumSeries(m, "kafka_canary_acknowledged_lost_total", nil)
	// The canary's records acknowledged after the last read of the high
	// watermark are lost too, and not in the estimate: at most one a round.
	after := math.Ceil(killedAt.Sub(time.UnixMilli(int64(hwReadAt*1000))).Seconds()/canaryInterval.Seconds()) + 1
	t.Logf("FIGURE kafka unclean election: %d records of %s lost (estimate %v); the canary counted %v lost (estimate %v, read %.1fs before the kill); elected %s after the request, %s after broker 3 was resumed",
		lost, topic, estimate, canaryLost, canaryEstimate, killedAt.Sub(time.UnixMilli(int64(hwReadAt*1000))).Seconds(), time.Since(electAt).Round(10*time.Millisecond), electAt.Sub(resumedAt).Round(10*time.Millisecond))
	if canaryLost < canaryEstimate || canaryLost > canaryEstimate+after {
		t.Errorf("the canary counted %v records lost; the estimate was %v, and at most %v were acknowledged after its read", canaryLost, canaryEstimate, after)
	}
}

// checkUncleanAnswers checks that the status page and safe-to-stop's
// answer say what electing broker 3 would lose of topic.
func checkUncleanAnswers(t *testing.T, e *exportertest.Exporter, topic string, want int64) {
	t.Helper()
	text := fmt.Sprintf("%s/0 has no clean leader: electing broker 3 would lose at least %d records", topic, want)
	if page := html.UnescapeString(statusPage(t, e)); !strings.Contains(page, text) {
		t.Errorf("the status page does not say %q", text)
	}
	_, out := stopCommand(t, e, 30*time.Second, "--broker", "3")
	if !strings.Contains(out, "note: "+text) {
		t.Errorf("safe-to-stop --broker 3 does not note %q:\n%s", text, out)
	}
	t.Logf("safe-to-stop --broker 3: %s", out)
}

// sumSeries adds the values of every series of name whose labels include
// match.
func sumSeries(m exportertest.Metrics, name string, match map[string]string) float64 {
	var n float64
	for _, s := range m.Series(name, match) {
		n += s.Value
	}
	return n
}

// produceSmall writes n small records to partition 0 of topic (acks=all).
func produceSmall(t *testing.T, bootstrap []string, topic string, n int) {
	t.Helper()
	producer, err := sarama.NewSyncProducer(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer producer.Close()
	batch := make([]*sarama.ProducerMessage, n)
	for i := range batch {
		batch[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("test %d", i))}
	}
	if err := producer.SendMessages(batch); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}
