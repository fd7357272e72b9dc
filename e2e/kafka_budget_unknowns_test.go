package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaBudgetCutPathIsNotSafe: broker 3 is dead and only the
// exporter's path to broker 2 is cut (a proxy holds its connections; the
// cluster and every other client are unharmed). Broker 2 is in every ISR.
// The exporter must not call its stop safe: it cannot know what broker 2
// holds (issue 42, 2), and its reads through broker 2 (topic configs, the
// quorum) may fail too (issue 42, 3). The prediction is then checked by
// doing the stop: with 2 and 3 gone, kafka-topics.sh lists every partition
// of the topic under min ISR, so a "yes" would have been wrong.
func TestKafkaBudgetCutPathIsNotSafe(t *testing.T) {
	const topic = "budget-cut"
	c := lab.SharedKafka(t, lab.KafkaOptions{Proxied: true})
	var proxies []*lab.Proxy
	var proxied []string
	for id := int32(1); id <= int32(c.Nodes()); id++ {
		listen, advertised := c.ProxiedListener(t, id)
		proxies = append(proxies, lab.StartProxy(t, advertised, listen))
		proxied = append(proxied, advertised)
	}
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	minISR := "2"
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}},
		ConfigEntries:     map[string]*string{"min.insync.replicas": &minISR}}, false)
	admin.Close()
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	exporter := exportertest.Start(t, "--config.file="+faultConfig(t, fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    refresh_interval: 1s
`, strings.Join(proxied, ", "))))
	exporter.WaitReady(t, 60*time.Second)

	c.Kill(t, 3)
	// Until Kafka fences broker 3 and shrinks the ISRs, and after.
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		status, a := askBudget(t, exporter, budget.SafeToStopPath, "broker", "2")
		return status == 409 && hasReason(a, "partitions_under_min_isr"), fmt.Sprintf("%d %+v", status, a.Findings)
	})

	proxies[1].Cut(exporter.PID())
	cutAt := time.Now()
	// A few refreshes through the cut, each bounded by its timeout.
	deadline := cutAt.Add(30 * time.Second)
	var unreachableAfter time.Duration
	for time.Now().Before(deadline) {
		status, a := askBudget(t, exporter, budget.SafeToStopPath, "broker", "2")
		if status == 200 || a.Safe {
			t.Fatalf("with its path to broker 2 cut, the exporter called broker 2's stop safe %s after the cut: %+v", time.Since(cutAt).Round(time.Millisecond), a)
		}
		m := exporter.Scrape(t)
		if v, ok := m.Value("kafka_broker_reachable", map[string]string{"kafka_cluster": "lab", "broker": "2"}); ok && v == 0 && unreachableAfter == 0 {
			unreachableAfter = time.Since(cutAt)
			t.Logf("broker 2 read unreachable %s after the cut: answer %d %v", unreachableAfter.Round(time.Millisecond), status, reasonsOf(a))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if unreachableAfter == 0 {
		t.Errorf("kafka_broker_reachable{broker=2} never read 0 through a proxy that holds the exporter's connections")
	}
	status, a := askBudget(t, exporter, budget.SafeToStopPath, "broker", "2")
	t.Logf("FIGURE budget: broker 2 cut off the exporter, broker 3 dead: %d %v", status, reasonsOf(a))
	if status == 409 && !hasReason(a, "not_judged") && !hasReason(a, "partitions_under_min_isr") {
		t.Errorf("answer for broker 2 through the cut: %d %+v, want not_judged or under min ISR", status, a.Findings)
	}

	// The outcome: stop broker 2, and an acks=all write to any partition
	// of the topic is refused (under min ISR, or no leader, or no quorum
	// to shrink the ISR: whichever, the stop was not safe).
	proxies[1].Restore()
	c.Kill(t, 2)
	conf := lab.ClientConfig()
	conf.Producer.RequiredAcks = sarama.WaitForAll
	conf.Producer.Return.Successes = true
	conf.Producer.Retry.Max = 2
	conf.Producer.Timeout = 5 * time.Second
	conf.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{c.BrokerAddr(1)}, conf)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer producer.Close()
	for p := int32(0); p < 3; p++ {
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder("after the stop")}); err == nil {
			t.Errorf("an acks=all write to %s/%d succeeded with brokers 2 and 3 gone: the stop would have been safe after all", topic, p)
		} else {
			t.Logf("acks=all write to %s/%d with brokers 2 and 3 gone: %v", topic, p, err)
		}
	}
}

// hasReason reports whether the answer has a finding of the reason.
func hasReason(a budget.Answer, reason string) bool {
	for _, f := range a.Findings {
		if string(f.Reason) == reason {
			return true
		}
	}
	return false
}

// reasonsOf lists the answer's reasons.
func reasonsOf(a budget.Answer) []string {
	var reasons []string
	for _, f := range a.Findings {
		reasons = append(reasons, string(f.Reason))
	}
	return reasons
}
