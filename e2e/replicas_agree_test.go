package e2e

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// agreeRefresh is the refresh interval of the replicas-agree tests: two
// replicas' views of one incident may differ by one refresh, and the
// probes' spacing on top.
const agreeRefresh = time.Second

// eventKey is what tells two replicas' records of one transition apart
// from another transition: its kind, subject and the state reached. Not
// the state left: a replica may miss a state that lasted less than a
// refresh (a Redis node's pfail on its way to fail) that the other saw.
func eventKey(e events.Event) string {
	p := ""
	if e.Subject.Partition != nil {
		p = fmt.Sprint(*e.Subject.Partition)
	}
	return fmt.Sprintf("%s %s/%s node=%s -> %s", e.Kind, e.Subject.Topic, p, e.Subject.NodeID, e.After)
}

// checkEventsAgree checks that two replicas recorded the same transitions
// of the given kinds, each within bound of the other's, and dated the
// failures the same way (first_failure both set or both not, within
// bound), and returns the widest gap between two replicas' times.
func checkEventsAgree(t *testing.T, a, b []events.Event, bound time.Duration, kinds ...events.Kind) (widest time.Duration) {
	t.Helper()
	byKey := func(evs []events.Event) map[string][]events.Event {
		out := map[string][]events.Event{}
		for _, e := range evs {
			if slices.Contains(kinds, e.Kind) {
				out[eventKey(e)] = append(out[eventKey(e)], e)
			}
		}
		return out
	}
	ka, kb := byKey(a), byKey(b)
	for key, ea := range ka {
		eb := kb[key]
		if len(ea) != len(eb) {
			t.Errorf("%s: %d events in one replica, %d in the other\nA:\n%s\nB:\n%s", key, len(ea), len(eb), describeEvents(a), describeEvents(b))
			continue
		}
		for i := range ea {
			d := ea[i].Time.Sub(eb[i].Time).Abs()
			if d > bound {
				t.Errorf("%s: the replicas saw it %s apart, more than %s", key, d, bound)
			}
			fa, fb := ea[i].FirstFailure, eb[i].FirstFailure
			if fa.IsZero() != fb.IsZero() || fa.Sub(fb).Abs() > bound {
				t.Errorf("%s: first failure %s in one replica, %s in the other", key, clock(fa), clock(fb))
			}
			widest = max(widest, d, fa.Sub(fb).Abs())
		}
	}
	for key := range kb {
		if _, ok := ka[key]; !ok {
			t.Errorf("%s: in one replica only\nA:\n%s\nB:\n%s", key, describeEvents(a), describeEvents(b))
		}
	}
	if len(ka) == 0 {
		t.Errorf("no event of %v in either replica", kinds)
	}
	return widest
}

// TestKafkaReplicasAgree runs two exporters of one Kafka cluster through a
// broker's kill -9 and restart: their events of the incident are the same
// transitions, each within one refresh of the other's, their outage clocks
// date the failures alike, and their under-replicated episodes agree. A
// third exporter started mid-incident says its history begins at its
// start, reports no transition before it, and no episode older than it.
func TestKafkaReplicasAgree(t *testing.T) {
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	const topic = "agree"
	createTopic(t, c.Bootstrap(), topic, nil)
	args := []string{"--kafka.server=" + strings.Join(c.Bootstrap(), ","), "--kafka.cluster-name=lab", "--refresh.interval=" + agreeRefresh.String()}
	a := exportertest.Start(t, args...)
	time.Sleep(agreeRefresh / 2) // refreshing out of step, as replicas do
	b := exportertest.Start(t, args...)
	var leader int32
	for _, e := range []*exportertest.Exporter{a, b} {
		m, _ := waitMetrics(t, e, 60*time.Second, "the topic in sync, every broker probed", func(m exportertest.Metrics) (bool, string) {
			for id := 1; id <= c.Nodes(); id++ {
				if up, _ := m.Value("kafka_broker_reachable", map[string]string{"broker": fmt.Sprint(id)}); up != 1 {
					return false, m.Describe("kafka_broker_reachable", nil)
				}
			}
			isr, _ := m.Value("kafka_partition_in_sync_replicas", partitionLabels(topic, 0))
			return isr == 3, m.Describe("kafka_partition_in_sync_replicas", map[string]string{"topic": topic})
		})
		leader = int32(value(t, m, "kafka_partition_leader", partitionLabels(topic, 0)))
	}

	killedAt := killBrokers(t, c, leader)
	for _, e := range []*exportertest.Exporter{a, b} {
		waitMetrics(t, e, 60*time.Second, "a new leader and the ISR shrunk", func(m exportertest.Metrics) (bool, string) {
			l, _ := m.Value("kafka_partition_leader", partitionLabels(topic, 0))
			isr, _ := m.Value("kafka_partition_in_sync_replicas", partitionLabels(topic, 0))
			return l >= 0 && int32(l) != leader && isr == 2, m.Describe("kafka_partition_in_sync_replicas", map[string]string{"topic": topic})
		})
	}
	// A replica that starts now, mid-incident.
	lateStart := time.Now()
	late := exportertest.Start(t, args...)
	late.WaitReady(t, 30*time.Second)
	lateFirst := late.Scrape(t)

	c.Restart(t, leader)
	for _, e := range []*exportertest.Exporter{a, b} {
		waitMetrics(t, e, 120*time.Second, "every partition of the topic back in sync, its episodes ended", func(m exportertest.Metrics) (bool, string) {
			count, _, _ := histogramOf(m, "kafka_partition_under_replicated_episode_seconds", topic)
			return count == 3, m.Describe("kafka_partition_under_replicated_episode_seconds_count", map[string]string{"topic": topic})
		})
	}
	// The requirement is one refresh, and the figure says how close they
	// came; the bound leaves a loaded machine's late refreshes room.
	tolerate := 3 * agreeRefresh
	ra, rb := eventsResponse(t, a, "?system=kafka&cluster=lab"), eventsResponse(t, b, "?system=kafka&cluster=lab")
	widest := checkEventsAgree(t, ra.Events, rb.Events, tolerate, "broker_down", "broker_up", "isr_shrink", "isr_expand")
	// The leader moved once per partition it led; where to is the
	// controller's choice, the same for both.
	widest = max(widest, checkEventsAgree(t, onTopic(ra.Events, topic), onTopic(rb.Events, topic), tolerate, "leader_change"))
	ma, mb := a.Scrape(t), b.Scrape(t)
	ca, sa, _ := histogramOf(ma, "kafka_partition_under_replicated_episode_seconds", topic)
	cb, sb, _ := histogramOf(mb, "kafka_partition_under_replicated_episode_seconds", topic)
	// Three partitions, each of whose episodes may differ by a refresh.
	if ca != cb || math.Abs(sa-sb) > 3*tolerate.Seconds() { // three episodes
		t.Errorf("under-replicated episodes of %s: %v lasting %.2fs in one replica, %v lasting %.2fs in the other", topic, ca, sa, cb, sb)
	}
	t.Logf("FIGURE replicas agree (kafka): %d events of the broker's kill and restart in each, at most %s apart (refresh %s, the replicas half a refresh out of step); under-replicated episodes of %s: %.2fs and %.2fs over 3 partitions",
		len(ra.Events), widest.Round(time.Millisecond), agreeRefresh, topic, sa, sb)
	checkFirstFailure(t, killedAt, tolerate, "broker_down", ra.Events, rb.Events)
	for _, r := range []events.Response{ra, rb} {
		if !r.HistoryBegins.Before(killedAt) {
			t.Errorf("a replica that ran through the incident says its history begins at %s, after the kill at %s", clock(r.HistoryBegins), clock(killedAt))
		}
	}

	// The late replica: its history begins at its start; it saw no
	// transition before it (the kill) and times no episode from before it.
	rl := eventsResponse(t, late, "?system=kafka&cluster=lab")
	if rl.HistoryBegins.Before(lateStart.Add(-time.Second)) || rl.HistoryBegins.After(lateStart.Add(10*time.Second)) {
		t.Errorf("the replica started at %s says its history begins at %s", clock(lateStart), clock(rl.HistoryBegins))
	}
	for _, e := range rl.Events {
		if e.Time.Before(rl.HistoryBegins) || e.Kind == "broker_down" || !e.FirstFailure.IsZero() && e.FirstFailure.Before(rl.HistoryBegins) {
			t.Errorf("the late replica reports a transition from before its start: %s", describeEvents([]events.Event{e}))
		}
	}
	if age, ok := lateFirst.Value("kafka_partition_under_replicated_open_episode_seconds", partitionLabels(topic, 0)); ok && age > time.Since(lateStart).Seconds() {
		t.Errorf("the late replica reports an episode %.1fs old, older than itself", age)
	}
}

// checkFirstFailure checks each replica's events of kind against the kill's
// own clock: the first failed probe comes after the kill, within tolerate.
func checkFirstFailure(t *testing.T, killedAt time.Time, tolerate time.Duration, kind events.Kind, replicas ...[]events.Event) {
	t.Helper()
	for i, evs := range replicas {
		found := false
		for _, e := range evs {
			if e.Kind != kind {
				continue
			}
			found = true
			if f := e.FirstFailure; f.Before(killedAt) || f.Sub(killedAt) > tolerate {
				t.Errorf("replica %d: %s's first failure %s after the kill, want within %s", i, kind, f.Sub(killedAt), tolerate)
			}
		}
		if !found {
			t.Errorf("replica %d: no %s event:\n%s", i, kind, describeEvents(evs))
		}
	}
}

// onTopic are the events about partitions of topic.
func onTopic(evs []events.Event, topic string) []events.Event {
	var out []events.Event
	for _, e := range evs {
		if e.Subject.Topic == topic {
			out = append(out, e)
		}
	}
	return out
}

// TestRedisReplicasAgree runs two exporters of one Redis Cluster through
// the kill -9 of a master with a replica: the same transitions (the
// master flagged, its replica promoted), each within one refresh of the
// other's, the failover dated from a first failure after the kill, and the
// failover episodes of the same length within a refresh.
func TestRedisReplicasAgree(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	args := []string{"--redis.addr=" + strings.Join(c.Addrs(), ","), "--redis.cluster-name=lab", "--refresh.interval=" + agreeRefresh.String()}
	a := exportertest.Start(t, args...)
	time.Sleep(agreeRefresh / 2) // refreshing out of step, as replicas do
	b := exportertest.Start(t, args...)
	for _, e := range []*exportertest.Exporter{a, b} {
		waitMetrics(t, e, 30*time.Second, "all slots ok", func(m exportertest.Metrics) (bool, string) {
			ok, _ := m.Value("redis_cluster_slots", map[string]string{"state": "ok"})
			return ok == 16384, m.Describe("redis_cluster_slots", nil)
		})
	}
	time.Sleep(2 * agreeRefresh) // every node probed good before the kill
	victim := c.Masters(t)[0]
	killedAt := time.Now()
	c.Kill(t, victim.Port)
	for _, e := range []*exportertest.Exporter{a, b} {
		waitMetrics(t, e, 60*time.Second, "the failover over", func(m exportertest.Metrics) (bool, string) {
			n, _ := m.Value("redis_cluster_failover_seconds_count", nil)
			return n >= 1, m.Describe("redis_cluster_failover_seconds_count", nil)
		})
	}
	tolerate := 3 * agreeRefresh // as in the Kafka test
	ra, rb := eventsResponse(t, a, "?system=redis&cluster=lab"), eventsResponse(t, b, "?system=redis&cluster=lab")
	widest := checkEventsAgree(t, ra.Events, rb.Events, tolerate, "node_fail", "promotion")
	checkFirstFailure(t, killedAt, tolerate, "node_fail", ra.Events, rb.Events)
	ma, mb := a.Scrape(t), b.Scrape(t)
	ca, sa := value(t, ma, "redis_cluster_failover_seconds_count", nil), value(t, ma, "redis_cluster_failover_seconds_sum", nil)
	cb, sb := value(t, mb, "redis_cluster_failover_seconds_count", nil), value(t, mb, "redis_cluster_failover_seconds_sum", nil)
	if ca != cb || math.Abs(sa-sb) > tolerate.Seconds() {
		t.Errorf("failovers: %v lasting %.2fs in one replica, %v lasting %.2fs in the other", ca, sa, cb, sb)
	}
	t.Logf("FIGURE replicas agree (redis): the master's fail and its replica's promotion at most %s apart in the two exporters; the failover lasted %.2fs in one, %.2fs in the other (refresh %s, the replicas half a refresh out of step)",
		widest.Round(time.Millisecond), sa, sb, agreeRefresh)
}
