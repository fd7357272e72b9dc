package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaFencedBrokers kills a broker of a real KRaft cluster (Kafka
// 4.1) and restarts it: the controller fences it after its session
// timeout (3 s in the lab), and the exporter serves kafka_broker_fenced 1
// and a broker_fenced event dated after the kill; once restarted and
// caught up it is unfenced (kafka_broker_fenced 0, broker_unfenced after
// the restart). On Kafka 3.9, which does not list fenced brokers, the
// series is absent, not 0.
func TestKafkaFencedBrokers(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	createTopic(t, c.Bootstrap(), "fenced", nil)
	e := exportertest.Start(t, "--kafka.server="+strings.Join(c.Bootstrap(), ","), "--kafka.cluster-name=lab", "--refresh.interval=1s")
	const victim = 3
	broker := map[string]string{"broker": fmt.Sprint(victim)}
	waitMetrics(t, e, 60*time.Second, "every broker served and unfenced", func(m exportertest.Metrics) (bool, string) {
		for id := 1; id <= c.Nodes(); id++ {
			if v, ok := m.Value("kafka_broker_fenced", map[string]string{"broker": fmt.Sprint(id)}); !ok || v != 0 {
				return false, m.Describe("kafka_broker_fenced", nil)
			}
		}
		return true, ""
	})
	// Nor does Kafka 4.1 say whether a log directory is cordoned
	// (DescribeLogDirs v5 is 4.3+): those series are absent, not 0, once
	// the first reads of the directories ended (they run beside the
	// refreshes, so give them two more).
	time.Sleep(2 * time.Second)
	if s := e.Scrape(t).Series("kafka_broker_log_dirs", nil); len(s) != 0 {
		t.Errorf("Kafka %s does not say whether log directories are cordoned, yet kafka_broker_log_dirs is served: %v", c.Version(), s)
	}

	killedAt := killBrokers(t, c, victim)
	waitMetrics(t, e, 60*time.Second, "the killed broker fenced", func(m exportertest.Metrics) (bool, string) {
		v, _ := m.Value("kafka_broker_fenced", broker)
		return v == 1, m.Describe("kafka_broker_fenced", nil)
	})
	fenced := brokerEvent(t, e, "broker_fenced", victim)
	if fenced.Time.Before(killedAt) || fenced.Time.Sub(killedAt) > 30*time.Second {
		t.Errorf("broker_fenced %s after the kill, want after it and within 30 s", fenced.Time.Sub(killedAt))
	}
	t.Logf("FIGURE kafka fenced: broker %d fenced in the exporter's events %s after its kill -9 (broker session timeout 3 s, refresh 1 s)", victim, fenced.Time.Sub(killedAt).Round(10*time.Millisecond))

	restartedAt := time.Now()
	c.Restart(t, victim)
	waitMetrics(t, e, 90*time.Second, "the restarted broker unfenced", func(m exportertest.Metrics) (bool, string) {
		v, _ := m.Value("kafka_broker_fenced", broker)
		up, _ := m.Value("kafka_broker_up", broker)
		return v == 0 && up == 1, m.Describe("kafka_broker_fenced", nil)
	})
	if unfenced := brokerEvent(t, e, "broker_unfenced", victim); unfenced.Time.Before(restartedAt) {
		t.Errorf("broker_unfenced at %s, before the restart at %s", clock(unfenced.Time), clock(restartedAt))
	}

	old := lab.StartKafka(t, lab.KafkaOptions{Version: "3.9", Nodes: 1})
	e39 := exportertest.Start(t, "--kafka.server="+strings.Join(old.Bootstrap(), ","), "--kafka.cluster-name=old", "--refresh.interval=1s")
	m, _ := waitMetrics(t, e39, 60*time.Second, "Kafka 3.9 read", func(m exportertest.Metrics) (bool, string) {
		v, _ := m.Value("kafka_up", nil)
		return v == 1, m.Describe("kafka_up", nil)
	})
	if s := m.Series("kafka_broker_fenced", nil); len(s) != 0 {
		t.Errorf("Kafka 3.9 lists no fenced brokers, yet kafka_broker_fenced is served: %v", s)
	}
	if s := m.Series("kafka_broker_log_dirs", nil); len(s) != 0 {
		t.Errorf("Kafka 3.9 does not say whether log directories are cordoned, yet kafka_broker_log_dirs is served: %v", s)
	}
}

// brokerEvent is the newest event of kind about broker id.
func brokerEvent(t *testing.T, e *exportertest.Exporter, kind events.Kind, id int) events.Event {
	t.Helper()
	for _, ev := range fetchEvents(t, e, "?system=kafka") {
		if ev.Kind == kind && ev.Subject.NodeID == fmt.Sprint(id) {
			return ev
		}
	}
	t.Fatalf("no %s event for broker %d:\n%s", kind, id, describeEvents(fetchEvents(t, e, "?system=kafka")))
	return events.Event{}
}
