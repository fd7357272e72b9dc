package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaQuorumLossIsVisible kills two of the three combined
// broker/controller nodes. The KRaft quorum is lost, nobody fences the dead
// brokers, and the survivor keeps serving frozen metadata that lists them
// as live. kafka_broker_up cannot show this; kafka_broker_reachable does.
func TestKafkaQuorumLossIsVisible(t *testing.T) {
	cluster := lab.StartKafka(t, lab.KafkaOptions{})
	bootstrap := cluster.Bootstrap()
	createTopic(t, bootstrap, "frozen", nil)
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")
	waitMetrics(t, exporter, 60*time.Second, "every broker up and reachable", func(m exportertest.Metrics) (bool, string) {
		reachable := m.Series("kafka_broker_reachable", nil)
		if len(reachable) != 3 {
			return false, m.Describe("kafka_broker_reachable", nil)
		}
		for _, s := range reachable {
			if s.Value != 1 {
				return false, m.Describe("kafka_broker_reachable", nil)
			}
		}
		return true, ""
	})

	cluster.Kill(t, 1)
	cluster.Kill(t, 2)
	m, took := waitMetrics(t, exporter, 30*time.Second, "brokers 1 and 2 unreachable", func(m exportertest.Metrics) (bool, string) {
		r1, _ := m.Value("kafka_broker_reachable", map[string]string{"broker": "1"})
		r2, _ := m.Value("kafka_broker_reachable", map[string]string{"broker": "2"})
		up, _ := m.Value("kafka_up", nil)
		return up == 1 && r1 == 0 && r2 == 0, m.Describe("kafka_broker_reachable", nil) + "\n" + m.Describe("kafka_broker_up", nil)
	})
	t.Logf("FIGURE kafka quorum loss: kill -9 of 2 of 3 nodes to kafka_broker_reachable 0 for both: %s", took.Round(10*time.Millisecond))
	if v := value(t, m, "kafka_broker_reachable", map[string]string{"broker": "3"}); v != 1 {
		t.Errorf("surviving broker 3 reachable = %v, want 1", v)
	}
	// The frozen metadata: at least one dead broker is still listed as live
	// a while after the kill, which is why reachability is needed at all.
	time.Sleep(6 * time.Second)
	m = exporter.Scrape(t)
	frozen := 0
	for _, id := range []string{"1", "2"} {
		if up, _ := m.Value("kafka_broker_up", map[string]string{"broker": id}); up == 1 {
			frozen++
		}
	}
	t.Logf("after the quorum loss, %d of the 2 dead brokers are still listed live by the survivor:\n%s", frozen, m.Describe("kafka_broker_up", nil))
	if frozen == 0 {
		t.Errorf("expected frozen metadata listing a dead broker as live; got:\n%s", m.Describe("kafka_broker_up", nil))
	}
	for _, id := range []int32{1, 2} {
		if v := value(t, m, "kafka_broker_reachable", map[string]string{"broker": fmt.Sprint(id)}); v != 0 {
			t.Errorf("dead broker %d reachable = %v, want 0", id, v)
		}
	}
}
