package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka"
)

// commitAttempt is one offset commit of the test's client: when it began
// and ended, and its error.
type commitAttempt struct {
	start, end time.Time
	err        error
}

// committer commits an offset of group every 100 ms through a franz-go
// client, which finds the group's coordinator itself (FindCoordinator,
// then again on NOT_COORDINATOR and the like), as a consumer does; each
// commit is bounded by a second.
type committer struct {
	mu       sync.Mutex
	attempts []commitAttempt
	stop     chan struct{}
	done     chan struct{}
}

func startCommitter(t *testing.T, c *lab.KafkaCluster, group, topic string) *committer {
	t.Helper()
	// OffsetCommit v10 (Kafka 4.4) names topics by ID; the test names them.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	// A short, constant backoff between the client's own retries (its
	// default grows to seconds), so that its first success after the
	// outage is when the coordinator answers, not when a backoff ended.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DialTimeout(time.Second), kgo.MaxVersions(versions),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	offset := int64(-1)
	return startAttempts(t, cl, func(cl *kgo.Client) error {
		offset++
		return commitOnce(cl, group, topic, offset)
	})
}

// startAttempts runs once with cl every 100 ms, recording each attempt,
// until the committer is closed, and then closes cl.
func startAttempts(t *testing.T, cl *kgo.Client, once func(*kgo.Client) error) *committer {
	m := &committer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		defer cl.Close()
		for {
			a := commitAttempt{start: time.Now()}
			a.err = once(cl)
			a.end = time.Now()
			m.mu.Lock()
			m.attempts = append(m.attempts, a)
			m.mu.Unlock()
			select {
			case <-m.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(m.close)
	return m
}

// commitOnce commits offset of topic's partition 0 as a group without
// members does (generation -1), as kafka-consumer-groups.sh
// --reset-offsets does.
func commitOnce(cl *kgo.Client, group, topic string, offset int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *committer) close() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

// outage is the client's own clock: from the start of its first failed
// commit after since to the end of the first commit that succeeded after
// it; ok is false while there is no such pair.
func (m *committer) outage(since time.Time) (failed, recovered time.Time, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.attempts {
		switch {
		case a.end.Before(since):
		case a.err != nil && failed.IsZero():
			failed = a.start
		case a.err == nil && !failed.IsZero():
			return failed, a.end, true
		}
	}
	return failed, time.Time{}, false
}

// succeeded reports whether a commit succeeded, and else the last error.
func (m *committer) succeeded() (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := "no commit yet"
	for _, a := range m.attempts {
		if a.err == nil {
			return true, ""
		}
		last = a.err.Error()
	}
	return false, "no commit succeeded yet: " + last
}

// ensureTransactionTopic makes the cluster create __transaction_state, as
// a transactional producer's coordinator lookup does.
func ensureTransactionTopic(t *testing.T, c *lab.KafkaCluster) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DialTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 1, []string{"failover-exporter-test"}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err.Error()
		}
		for _, c := range resp.Coordinators {
			if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
				return false, err.Error()
			}
		}
		return true, ""
	})
}

// TestKafkaCoordinatorFailover kills, by PID, the broker that coordinates
// a consumer group which commits every 100 ms, on a real 5-broker cluster.
// Kafka's kafka-consumer-groups.sh names the coordinator before and after,
// and the offsets partition the exporter reports on is the one whose
// leader is that coordinator (the group's partition is Kafka's hash). The
// exporter's episode of that partition, from its coordinator_unavailable
// event (backdated to its first failed probe) to its
// coordinator_available event, is the client's own outage (its first
// failed commit to its first successful one after) within one refresh
// and a second; the event names the coordinator the tool names after.
func TestKafkaCoordinatorFailover(t *testing.T) {
	// The 5-broker cluster TestKafkaInternalTopicHealth is lent next: the
	// internal topics this test makes stay for it.
	c := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 5, InternalTopics: true})
	ensureOffsetsTopic(t, c)
	ensureTransactionTopic(t, c)
	const topic, group = "coordinator-failover", "coordinator-failover-group"
	c.CreateTopic(t, topic, 1)
	const refresh = time.Second
	// With the failure budget waiting for coordinators to settle: its
	// answers are checked against the client's outage below.
	e := startLabExporter(t, c, refresh, "failure_budget: {coordinators: settled}")

	offsets := c.DescribeTopics(t, "--topic", "__consumer_offsets")
	n := len(offsets)
	partition := kafka.CoordinatorPartitionOf(group, n)
	answering := func(m exportertest.Metrics, kind string) (float64, string) {
		v, _ := m.Value("kafka_coordinator_partitions", map[string]string{"kind": kind, "state": "answering"})
		return v, m.Describe("kafka_coordinator_partitions", map[string]string{"kind": kind})
	}
	waitMetrics(t, e, 60*time.Second, "every coordinator answering", func(m exportertest.Metrics) (bool, string) {
		g, gs := answering(m, "group")
		tx, ts := answering(m, "transaction")
		return int(g) == n && tx > 0, gs + ts
	})

	m := startCommitter(t, c, group, topic)
	lab.WaitFor(t, 30*time.Second, 100*time.Millisecond, m.succeeded)
	before := c.GroupCoordinator(t, group)
	var leader int32 = -1
	for _, p := range offsets {
		if p.Partition == partition {
			leader = p.Leader
		}
	}
	if leader != before {
		t.Fatalf("kafka-consumer-groups.sh names broker %d the coordinator of %s; __consumer_offsets/%d, the partition Kafka's hash gives it, is led by %d",
			before, group, partition, leader)
	}

	// Who the stop disturbs: the groups the failure budget's answer says a
	// stop of the coordinator moves are those kafka-consumer-groups.sh
	// says it coordinates, and, after the kill, those whose coordinator
	// moved. More groups, a few hashed to each broker.
	for i := range 12 {
		c.CommitOffsets(t, fmt.Sprintf("coordinator-failover-more-%d", i), map[lab.TopicPartition]int64{{Topic: topic, Partition: 0}: 1})
	}
	var onVictim []string
	var predicted float64
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		onVictim = onVictim[:0]
		for group, id := range c.GroupCoordinators(t) {
			if id == before {
				onVictim = append(onVictim, group)
			}
		}
		_, a, _ := queryBudget(t, e, budget.SafeToStopPath, url.Values{"system": {"kafka"}, "cluster": {"lab"}, "broker": {strconv.Itoa(int(before))}})
		var ok bool
		predicted, ok = a.Facts["groups_moved"]
		return ok && int(predicted) == len(onVictim), fmt.Sprintf("the answer's groups_moved %v (served %v), kafka-consumer-groups.sh: %d groups on broker %d %v", predicted, ok, len(onVictim), before, onVictim)
	})
	slices.Sort(onVictim)
	t.Logf("FIGURE kafka coordinator failover: a stop of broker %d moves %v groups, says the failure budget; kafka-consumer-groups.sh names it the coordinator of %d: %v", before, predicted, len(onVictim), onVictim)

	// A survivor's stop, asked all along: the budget says
	// coordinators_unsettled while the coordinator does not answer.
	survivor := before%5 + 1
	unsettled := watchUnsettled(e, survivor)
	killedAt := killBrokers(t, c, before)
	t.Logf("killed broker %d, coordinator of %s (__consumer_offsets/%d), at %s", before, group, partition, killedAt.Format("15:04:05.000"))
	o := waitCoordinatorOutage(t, e, m, "__consumer_offsets", partition, killedAt)
	failed, recovered, exporterOutage, clientOutage, began, up := o.failed, o.recovered, o.exporter, o.client, o.began, o.up
	// One kafka-consumer-groups.sh run (a JVM) for every group after.
	coordinatorsAfter := c.GroupCoordinators(t)
	after, listed := coordinatorsAfter[group]
	if !listed {
		t.Fatalf("kafka-consumer-groups.sh lists no coordinator of %s after the kill: %v", group, coordinatorsAfter)
	}
	t.Logf("FIGURE kafka coordinator failover: the client's commits failed for %s (first failed %s after the kill, first success %s after it); "+
		"the exporter's episode of __consumer_offsets/%d lasted %s (began %s after the kill), refresh %s; coordinator %d before, %d after (kafka-consumer-groups.sh)",
		clientOutage.Round(10*time.Millisecond), failed.Sub(killedAt).Round(10*time.Millisecond), recovered.Sub(killedAt).Round(10*time.Millisecond),
		partition, exporterOutage.Round(10*time.Millisecond), began.Sub(killedAt).Round(10*time.Millisecond), refresh, before, after)
	if after == before {
		t.Errorf("kafka-consumer-groups.sh still names the killed broker %d the coordinator", before)
	}
	for _, group := range onVictim {
		if id, ok := coordinatorsAfter[group]; !ok || id == before {
			t.Errorf("group %s: coordinator %d after the kill (listed %v); the answer counted it as moved off broker %d", group, id, ok, before)
		}
	}
	if want := "answering at broker " + strconv.Itoa(int(after)); !strings.HasPrefix(up.After, want) {
		t.Errorf("coordinator_available says %q, want it to start %q as kafka-consumer-groups.sh names broker %d", up.After, want, after)
	}
	if diff := (exporterOutage - clientOutage).Abs(); diff > refresh+time.Second {
		t.Errorf("the exporter's episode (%s) and the client's outage (%s) differ by %s, more than a refresh and a second", exporterOutage, clientOutage, diff)
	}
	final, _ := waitMetrics(t, e, 60*time.Second, "every coordinator answering again", func(m exportertest.Metrics) (bool, string) {
		g, gs := answering(m, "group")
		return int(g) == n, gs
	})
	checkUnsettled(t, e, survivor, unsettled(), killedAt, failed, recovered)
	if count, _ := final.Value("kafka_coordinator_unavailable_episode_seconds_count", map[string]string{"kind": "group"}); count < 1 {
		t.Errorf("kafka_coordinator_unavailable_episode_seconds_count{kind=group} = %v, want the ended episodes observed", count)
	}
}

// watchUnsettled asks e about the stop of broker every 200 ms until the
// returned function is called, which returns when the answers named
// coordinators_unsettled.
func watchUnsettled(e *exportertest.Exporter, broker int32) func() []time.Time {
	done, ended := make(chan struct{}), make(chan []time.Time)
	query := budget.SafeToStopPath + "?" + url.Values{"system": {"kafka"}, "cluster": {"lab"}, "broker": {strconv.Itoa(int(broker))}}.Encode()
	go func() {
		var at []time.Time
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				ended <- at
				return
			case <-tick.C:
			}
			asked := time.Now()
			if a, ok := getAnswer(e, query); ok && hasReason(a, string(kafka.ReasonCoordinatorsUnsettled)) {
				at = append(at, asked)
			}
		}
	}()
	return func() []time.Time {
		close(done)
		return <-ended
	}
}

// getAnswer is one safe-to-stop answer, for a goroutine (no t).
func getAnswer(e *exportertest.Exporter, query string) (budget.Answer, bool) {
	var a budget.Answer
	resp, err := e.Get(query)
	if err != nil {
		return a, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		return a, false
	}
	return a, json.NewDecoder(resp.Body).Decode(&a) == nil
}

// checkUnsettled checks what failure_budget.coordinators: settled said of
// the survivor's stop against the client's own outage (its first failed
// and first successful commit after the kill): coordinators_unsettled
// while the group's coordinator did not answer, never before the kill,
// and not once every coordinator answers again.
func checkUnsettled(t *testing.T, e *exportertest.Exporter, survivor int32, at []time.Time, killedAt, failed, recovered time.Time) {
	t.Helper()
	if len(at) == 0 {
		t.Errorf("the budget never said coordinators_unsettled of broker %d's stop while the client's commits failed (%s to %s after the kill)",
			survivor, failed.Sub(killedAt).Round(10*time.Millisecond), recovered.Sub(killedAt).Round(10*time.Millisecond))
		return
	}
	t.Logf("FIGURE kafka coordinator failover: with failure_budget.coordinators: settled, broker %d's stop was coordinators_unsettled from %s to %s after the kill (%d answers); the client's commits failed from %s to %s",
		survivor, at[0].Sub(killedAt).Round(10*time.Millisecond), at[len(at)-1].Sub(killedAt).Round(10*time.Millisecond), len(at),
		failed.Sub(killedAt).Round(10*time.Millisecond), recovered.Sub(killedAt).Round(10*time.Millisecond))
	if at[0].Before(killedAt) {
		t.Errorf("coordinators_unsettled at %s, before the kill at %s", at[0].Format("15:04:05.000"), killedAt.Format("15:04:05.000"))
	}
	query := budget.SafeToStopPath + "?" + url.Values{"system": {"kafka"}, "cluster": {"lab"}, "broker": {strconv.Itoa(int(survivor))}}.Encode()
	lab.WaitFor(t, 30*time.Second, 200*time.Millisecond, func() (bool, string) {
		a, ok := getAnswer(e, query)
		return ok && !hasReason(a, string(kafka.ReasonCoordinatorsUnsettled)), fmt.Sprintf("broker %d's stop: %+v", survivor, a.Findings)
	})
}

// coordinatorOutage is one outage of a group's coordinator, as the exporter
// and the test's client saw it.
type coordinatorOutage struct {
	// up is the exporter's coordinator_available event; began is when its
	// episode began (its coordinator_unavailable event, backdated to the
	// first failed probe); exporter is the episode's length.
	up       events.Event
	began    time.Time
	exporter time.Duration
	// failed and recovered are the client's first failed commit after the
	// kill and its first successful one after that; client is between.
	failed, recovered time.Time
	client            time.Duration
}

// waitCoordinatorOutage waits for the coordinator of topic's (an internal
// topic's) partition to answer again after killedAt, in the exporter's event log
// and to the client m, which it then closes; it fails the test unless the
// log has exactly one coordinator_unavailable and one coordinator_available
// event of the partition.
func waitCoordinatorOutage(t *testing.T, e *exportertest.Exporter, m *committer, topic string, partition int32, killedAt time.Time) coordinatorOutage {
	t.Helper()
	ofPartition := func(evs []events.Event, kind events.Kind) []events.Event {
		return slices.DeleteFunc(slices.Clone(evs), func(ev events.Event) bool {
			return ev.Kind != kind || ev.Subject.Topic != topic || ev.Subject.Partition == nil || *ev.Subject.Partition != partition
		})
	}
	evs := waitEvents(t, e, 90*time.Second, "the group's coordinator answering again", func(evs []events.Event) bool {
		return len(ofPartition(evs, kafka.EventCoordinatorAvailable)) > 0
	})
	lab.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		_, _, ok := m.outage(killedAt.Add(-time.Second))
		return ok, "the client has not committed again after a failure"
	})
	m.close()
	var o coordinatorOutage
	o.failed, o.recovered, _ = m.outage(killedAt.Add(-time.Second))
	down, up := ofPartition(evs, kafka.EventCoordinatorUnavailable), ofPartition(evs, kafka.EventCoordinatorAvailable)
	if len(down) != 1 || len(up) != 1 {
		t.Fatalf("want one coordinator_unavailable and one coordinator_available of %s/%d, got:\n%s", topic, partition, describeEvents(append(down, up...)))
	}
	t.Logf("events:\n%s", describeEvents(append(down, up...)))
	o.up, o.began = up[0], down[0].Time
	if !down[0].FirstFailure.IsZero() {
		o.began = down[0].FirstFailure
	}
	o.exporter, o.client = o.up.Time.Sub(o.began), o.recovered.Sub(o.failed)
	return o
}
