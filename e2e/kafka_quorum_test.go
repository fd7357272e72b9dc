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
	cluster := lab.SharedKafka(t, lab.KafkaOptions{})
	bootstrap := cluster.Bootstrap()
	createTopic(t, bootstrap, "frozen", nil)
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")
	waitMetrics(t, exporter, 60*time.Second, "every broker up and reachable, a quorum leader", func(m exportertest.Metrics) (bool, string) {
		if leader, ok := m.Value("kafka_quorum_leader", nil); !ok || leader < 1 {
			return false, m.Describe("kafka_quorum_leader", nil)
		}
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
	// Nor can the quorum be described: its series are gone (or say no
	// leader), which is what KafkaQuorumNoLeader alerts on.
	if leader, ok := m.Value("kafka_quorum_leader", nil); ok && leader != -1 {
		t.Errorf("kafka_quorum_leader = %v after the quorum was lost, want absent or -1", leader)
	}
}

// TestKafkaQuorumLeaderAndLag reads the KRaft controller quorum
// (DescribeQuorum, with franz-go) on the 3-node lab: the leader the
// exporter shows is the one kafka-metadata-quorum.sh shows; killing it
// shows a new leader with a higher epoch at the next refreshes; a SIGSTOPped
// voter falls behind (its lag and catch-up age grow) and catches up after
// SIGCONT.
func TestKafkaQuorumLeaderAndLag(t *testing.T) {
	cluster := lab.SharedKafka(t, lab.KafkaOptions{})
	bootstrap := cluster.Bootstrap()
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms", "--log.level=debug")
	quorum := func(m exportertest.Metrics) (leader, epoch float64, ok bool) {
		leader, ok1 := m.Value("kafka_quorum_leader", nil)
		epoch, ok2 := m.Value("kafka_quorum_leader_epoch", nil)
		return leader, epoch, ok1 && ok2
	}
	m, _ := waitMetrics(t, exporter, 60*time.Second, "a quorum leader and 3 voters in step", func(m exportertest.Metrics) (bool, string) {
		leader, _, ok := quorum(m)
		voters, _ := m.Value("kafka_quorum_voters", nil)
		observers, _ := m.Value("kafka_quorum_observers", nil)
		return ok && leader >= 1 && voters == 3 && observers >= 0, m.Describe("kafka_quorum_leader", nil) + "\n" + m.Describe("kafka_quorum_voters", nil)
	})
	leader, epoch, _ := quorum(m)
	// What Kafka's own tool says (it asks the controllers directly).
	status := cluster.QuorumStatus(t)
	if got := status["LeaderId"]; got != fmt.Sprint(leader) {
		t.Errorf("kafka-metadata-quorum.sh says LeaderId %s, the exporter %v", got, leader)
	}
	if got := status["LeaderEpoch"]; got != fmt.Sprint(epoch) {
		t.Logf("kafka-metadata-quorum.sh LeaderEpoch %s, exporter %v (may differ if an election happened in between)", got, epoch)
	}

	cluster.Kill(t, int32(leader))
	m, took := waitMetrics(t, exporter, 60*time.Second, "a new quorum leader with a higher epoch", func(m exportertest.Metrics) (bool, string) {
		l, e, ok := quorum(m)
		return ok && l >= 1 && l != leader && e > epoch, m.Describe("kafka_quorum_leader", nil) + "\n" + m.Describe("kafka_quorum_leader_epoch", nil)
	})
	newLeader, newEpoch, _ := quorum(m)
	t.Logf("FIGURE kafka quorum: kill -9 of quorum leader %v to a new leader (%v, epoch %v -> %v) in the exporter: %s",
		leader, newLeader, epoch, newEpoch, took.Round(10*time.Millisecond))
	cluster.Restart(t, int32(leader))

	// Stop a voter that is not the leader: its copy of the metadata log
	// stops while the leader's grows (KRaft appends a no-op every 500 ms).
	var stopped int32
	for id := int32(1); id <= 3; id++ {
		if float64(id) != newLeader {
			stopped = id
			break
		}
	}
	v := map[string]string{"voter": fmt.Sprint(stopped)}
	waitMetrics(t, exporter, 60*time.Second, fmt.Sprintf("voter %d in step before it is stopped", stopped), func(m exportertest.Metrics) (bool, string) {
		age, ok := m.Value("kafka_quorum_voter_caught_up_age_seconds", v)
		return ok && age < 5, m.Describe("kafka_quorum_voter_caught_up_age_seconds", nil)
	})
	resume := faultHang(t, fmt.Sprintf("kafka node %d", stopped), cluster.PID(stopped))
	m, _ = waitMetrics(t, exporter, 60*time.Second, fmt.Sprintf("stopped voter %d lagging for more than 5 s", stopped), func(m exportertest.Metrics) (bool, string) {
		lag, ok1 := m.Value("kafka_quorum_voter_lag", v)
		age, ok2 := m.Value("kafka_quorum_voter_caught_up_age_seconds", v)
		return ok1 && ok2 && lag > 0 && age > 5, m.Describe("kafka_quorum_voter_lag", nil) + "\n" + m.Describe("kafka_quorum_voter_caught_up_age_seconds", nil)
	})
	lagBefore := value(t, m, "kafka_quorum_voter_lag", v)
	time.Sleep(3 * time.Second)
	m = exporter.Scrape(t)
	if lag := value(t, m, "kafka_quorum_voter_lag", v); lag <= lagBefore {
		t.Errorf("stopped voter %d: lag %v did not grow from %v in 3 s", stopped, lag, lagBefore)
	}
	resume()
	m, took = waitMetrics(t, exporter, 60*time.Second, fmt.Sprintf("voter %d caught up after SIGCONT", stopped), func(m exportertest.Metrics) (bool, string) {
		lag, ok1 := m.Value("kafka_quorum_voter_lag", v)
		age, ok2 := m.Value("kafka_quorum_voter_caught_up_age_seconds", v)
		return ok1 && ok2 && lag < 5 && age < 3, m.Describe("kafka_quorum_voter_lag", nil) + "\n" + m.Describe("kafka_quorum_voter_caught_up_age_seconds", nil)
	})
	t.Logf("FIGURE kafka quorum: SIGCONT of voter %d to caught up in the exporter: %s", stopped, took.Round(10*time.Millisecond))
}
