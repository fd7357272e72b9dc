package e2e

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// metadataProbe reads one partition's leader and ISR from a broker that the
// test never kills, every probeInterval, independently of the exporter: it
// is the stopwatch the exporter's episode durations are checked against.
type metadataProbe struct {
	mu      sync.Mutex
	samples []probeSample
	stop    chan struct{}
	done    chan struct{}
}

type probeSample struct {
	at      time.Time
	leaders map[string]int32 // by topic, partition 0
	isr     map[string]int
}

const probeInterval = 100 * time.Millisecond

func startMetadataProbe(t *testing.T, addr string, topics ...string) *metadataProbe {
	t.Helper()
	conf := lab.ClientConfig()
	broker := sarama.NewBroker(addr)
	if err := broker.Open(conf); err != nil {
		t.Fatalf("probe: open %s: %v", addr, err)
	}
	p := &metadataProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer broker.Close()
		ticker := time.NewTicker(probeInterval)
		defer ticker.Stop()
		for {
			md, err := broker.GetMetadata(sarama.NewMetadataRequest(conf.Version, topics))
			at := time.Now()
			if err == nil {
				s := probeSample{at: at, leaders: map[string]int32{}, isr: map[string]int{}}
				for _, tm := range md.Topics {
					for _, pm := range tm.Partitions {
						if pm.ID == 0 {
							s.leaders[tm.Name] = pm.Leader
							s.isr[tm.Name] = len(pm.Isr)
						}
					}
				}
				p.mu.Lock()
				p.samples = append(p.samples, s)
				p.mu.Unlock()
			}
			select {
			case <-p.stop:
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *metadataProbe) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// outage returns the first span after since during which cond held, as the
// probe saw it, and whether it has ended.
func (p *metadataProbe) outage(since time.Time, cond func(probeSample) bool) (start, end time.Time, ended bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.samples {
		if s.at.Before(since) {
			continue
		}
		switch {
		case start.IsZero() && cond(s):
			start = s.at
		case !start.IsZero() && !cond(s):
			return start, s.at, true
		}
	}
	return start, time.Time{}, false
}

// histogramOf reads the count and sum of a topic's episode histogram; ok is
// false while the topic has none (no episode of that kind began while the
// exporter watched).
func histogramOf(m exportertest.Metrics, name, topic string) (count, sum float64, ok bool) {
	labels := map[string]string{"topic": topic}
	count, ok = m.Value(name+"_count", labels)
	if !ok {
		return 0, 0, false
	}
	sum, _ = m.Value(name+"_sum", labels)
	return count, sum, true
}

// TestKafkaEpisodeDurations kills real brokers by PID and checks the
// episode histograms against the kill's own clock, ended by an
// independent metadata probe:
//   - an RF 1 partition whose only broker is killed and restarted after a
//     measured delay: one offline episode, from the kill to the leader
//     back as the probe saw it, within one refresh interval (the metadata
//     confirms the outage only once the broker's session expired, 3 s in
//     the lab: the exporter dates it from its first failed probe);
//   - an RF 3 / min.insync.replicas 2 partition losing two of its brokers:
//     one under-min-ISR episode, likewise;
//   - an exporter restarted in the middle of that outage reports the open
//     episode from its first refresh and observes no episode when it ends,
//     since it never saw it begin.
//
// Five nodes, so that two dead brokers leave a controller quorum. ELR is
// off: with it, Kafka 4.1 keeps an RF 1 partition whose broker was killed
// -9 offline after the broker returns (scripts/kafka/cluster.sh, ELR note),
// and this test times outages that end.
func TestKafkaEpisodeDurations(t *testing.T) {
	const (
		solo     = "solo"  // RF 1 on broker 4
		strict   = "acked" // RF 3 on brokers 1, 2, 3; min.insync.replicas 2 (cluster default)
		refresh  = time.Second
		tolerate = refresh + 2*probeInterval
	)
	cluster := lab.StartKafka(t, lab.KafkaOptions{Nodes: 5, Env: []string{"KAFKA_LAB_ELR=0"}})
	bootstrap := cluster.Bootstrap()
	admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	for topic, replicas := range map[string][]int32{solo: {4}, strict: {1, 2, 3}} {
		err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: map[int32][]int32{0: replicas}}, false)
		if err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	admin.Close()

	args := []string{"--kafka.server=" + strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", fmt.Sprintf("--refresh.interval=%s", refresh)}
	exporter := exportertest.Start(t, args...)
	restarted := exportertest.Start(t, args...)
	probe := startMetadataProbe(t, cluster.BrokerAddr(5), solo, strict)
	for _, e := range []*exportertest.Exporter{exporter, restarted} {
		waitMetrics(t, e, 60*time.Second, "both topics led and acked in sync", func(m exportertest.Metrics) (bool, string) {
			soloLeader, _ := m.Value("kafka_partition_leader", partitionLabels(solo, 0))
			isr, _ := m.Value("kafka_partition_in_sync_replicas", partitionLabels(strict, 0))
			// The outage clock dates an episode from the first failed probe
			// after a good one: every broker must have been probed good
			// before the kills (a slow first refresh on a loaded machine
			// once left broker 4 unprobed when it was killed).
			for id := 1; id <= 5; id++ {
				if up, _ := m.Value("kafka_broker_reachable", map[string]string{"broker": strconv.Itoa(id)}); up != 1 {
					return false, m.Describe("kafka_broker_reachable", nil)
				}
			}
			return soloLeader == 4 && isr == 3, m.Describe("kafka_partition_leader", nil)
		})
	}

	// 1. RF 1: kill broker 4, restart it a measured while after the
	// exporter shows the partition offline.
	killedAt := killBrokers(t, cluster, 4)
	firstKill := killedAt
	waitMetrics(t, exporter, 60*time.Second, "solo offline", func(m exportertest.Metrics) (bool, string) {
		age, ok := m.Value("kafka_partition_offline_open_episode_seconds", map[string]string{"topic": solo})
		return ok && age >= 2, m.Describe("kafka_partition_offline_open_episode_seconds", nil)
	})
	cluster.Restart(t, 4)
	m, _ := waitMetrics(t, exporter, 90*time.Second, "one offline episode of solo", func(m exportertest.Metrics) (bool, string) {
		count, _, _ := histogramOf(m, "kafka_partition_offline_episode_seconds", solo)
		return count >= 1, m.Describe("kafka_partition_offline_episode_seconds_count", nil)
	})
	offlineStart, offlineEnd, ended := probe.outage(killedAt, func(s probeSample) bool { return s.leaders[solo] == -1 })
	if !ended {
		t.Fatalf("the probe saw no complete offline span of solo/0 (started %v)", offlineStart)
	}
	// Clients lost solo/0 at the kill; the metadata says so only once the
	// broker's session expired. The exporter dates the episode from its
	// first failed probe of the broker.
	measured := offlineEnd.Sub(killedAt)
	count, sum, _ := histogramOf(m, "kafka_partition_offline_episode_seconds", solo)
	t.Logf("FIGURE kafka RF1 offline episode: %s from the kill to the leader back (metadata said offline after %s), exporter observed %.2fs (refresh %s)",
		measured.Round(10*time.Millisecond), offlineStart.Sub(killedAt).Round(10*time.Millisecond), sum, refresh)
	if count != 1 {
		t.Errorf("offline episodes of solo = %v, want 1", count)
	}
	if diff := math.Abs(sum - measured.Seconds()); diff > tolerate.Seconds() {
		t.Errorf("offline episode of solo lasted %.2fs, probe measured %s: off by %.2fs, more than %s", sum, measured, diff, tolerate)
	}
	if _, ok := m.Value("kafka_partition_offline_open_episode_seconds", map[string]string{"topic": solo}); ok {
		t.Errorf("solo still has an open offline episode after its leader came back")
	}
	if n, _, _ := histogramOf(m, "kafka_partition_offline_episode_seconds", strict); n != 0 {
		t.Errorf("acked was never offline but %v offline episodes were observed", n)
	}
	// solo (RF 1, min ISR 2) has been under min ISR since before the
	// exporter started: that episode is open, never observed.
	if n, _, _ := histogramOf(m, "kafka_partition_under_min_isr_episode_seconds", solo); n != 0 {
		t.Errorf("solo's under-min-ISR episode began before the exporter but was observed:\n%s", m.Describe("kafka_partition_under_min_isr_episode_seconds_count", nil))
	}

	// 2. RF 3 / min ISR 2: kill brokers 2 and 3 (1 leads and stays).
	killedAt = killBrokers(t, cluster, 2, 3)
	waitMetrics(t, exporter, 60*time.Second, "acked under min ISR", func(m exportertest.Metrics) (bool, string) {
		_, ok := m.Value("kafka_partition_under_min_isr_open_episode_seconds", map[string]string{"topic": strict})
		return ok, m.Describe("kafka_partition_in_sync_replicas", map[string]string{"topic": strict})
	})

	// 3. Restart the second exporter mid-outage.
	restarted.Stop()
	restartedAt := time.Now()
	restarted = exportertest.Start(t, args...)
	restarted.WaitReady(t, 30*time.Second)
	// Its first refresh that can judge min ISR (it reads topic configs,
	// which may fail once while brokers are dead) reports the episode,
	// counted from that refresh.
	first, _ := waitMetrics(t, restarted, 30*time.Second, "the restarted exporter reports the open under-min-ISR episode", func(m exportertest.Metrics) (bool, string) {
		_, ok := m.Value("kafka_partition_under_min_isr_open_episode_seconds", map[string]string{"topic": strict})
		return ok, m.Describe("kafka_topic_min_insync_replicas", nil) + "\n" + m.Describe("kafka_partition_in_sync_replicas", nil)
	})
	if age := value(t, first, "kafka_partition_under_min_isr_open_episode_seconds", map[string]string{"topic": strict}); age > time.Since(restartedAt).Seconds() {
		t.Errorf("the restarted exporter reports an episode %.1fs old, older than itself (%s): it invented a start", age, time.Since(restartedAt))
	}
	time.Sleep(2 * time.Second)
	cluster.Restart(t, 2)
	cluster.Restart(t, 3)
	m, _ = waitMetrics(t, exporter, 120*time.Second, "one under-min-ISR episode of acked", func(m exportertest.Metrics) (bool, string) {
		count, _, _ := histogramOf(m, "kafka_partition_under_min_isr_episode_seconds", strict)
		return count >= 1, m.Describe("kafka_partition_in_sync_replicas", map[string]string{"topic": strict})
	})
	underStart, underEnd, ended := probe.outage(killedAt, func(s probeSample) bool { return s.isr[strict] < 2 })
	if !ended {
		t.Fatalf("the probe saw no complete under-min-ISR span of acked/0 (started %v)", underStart)
	}
	// acks=all writes failed from the second kill, a moment after the first.
	measured = underEnd.Sub(killedAt)
	count, sum, _ = histogramOf(m, "kafka_partition_under_min_isr_episode_seconds", strict)
	t.Logf("FIGURE kafka RF3/min2 under-min-ISR episode: %s from the kills to the ISR back (metadata said under min ISR after %s), exporter observed %.2fs (refresh %s)",
		measured.Round(10*time.Millisecond), underStart.Sub(killedAt).Round(10*time.Millisecond), sum, refresh)
	if count != 1 {
		t.Errorf("under-min-ISR episodes of acked = %v, want 1", count)
	}
	if diff := math.Abs(sum - measured.Seconds()); diff > tolerate.Seconds() {
		t.Errorf("under-min-ISR episode of acked lasted %.2fs, probe measured %s: off by %.2fs, more than %s", sum, measured, diff, tolerate)
	}
	if n, _, _ := histogramOf(m, "kafka_partition_offline_episode_seconds", strict); n != 0 {
		t.Errorf("acked kept its leader but %v offline episodes were observed", n)
	}

	// The event log tells the same story, newest first.
	evs := fetchEvents(t, exporter, "?cluster=lab")
	offline := eventIndex(evs, "partition_offline", solo, 0)
	online := eventIndex(evs, "partition_online", solo, 0)
	if offline < 0 || online < 0 || online > offline {
		t.Errorf("events: want partition_offline then partition_online for solo/0 (newest first: online at a lower index); got offline at %d, online at %d:\n%s", offline, online, describeEvents(evs))
	}
	begin := eventIndex(evs, "under_min_isr_begin", strict, 0)
	end := eventIndex(evs, "under_min_isr_end", strict, 0)
	if begin < 0 || end < 0 || end > begin {
		t.Errorf("events: want under_min_isr_begin then under_min_isr_end for acked/0; got begin at %d, end at %d:\n%s", begin, end, describeEvents(evs))
	}
	if down := eventIndex(evs, "broker_down", "", 4); down < offline {
		t.Errorf("events: broker 4 down (at %d) should come no later than solo/0 offline (at %d):\n%s", down, offline, describeEvents(evs))
	}
	// The confirmation's events say when the exporter first failed to
	// reach the broker: after the kill, within a refresh.
	for _, i := range []int{offline, eventIndex(evs, "broker_down", "", 4)} {
		if i < 0 {
			continue
		}
		ev := evs[i]
		if first := ev.FirstFailure; first.IsZero() || first.Before(firstKill) || first.Sub(firstKill) > tolerate {
			t.Errorf("event %s: first_failure %v after the kill of broker 4 (event %v after), want within %s of it", ev.Kind, first.Sub(firstKill), ev.Time.Sub(firstKill), tolerate)
		}
	}
	// A cluster the exporter does not watch is named as unknown, not
	// answered with an empty list that would read as "all quiet".
	resp, err := http.Get(exporter.URL + "/api/v1/events?cluster=elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"elsewhere"`) {
		t.Errorf("?cluster=elsewhere: %d %q, want 400 naming the unknown cluster", resp.StatusCode, body)
	}

	after, _ := waitMetrics(t, restarted, 30*time.Second, "the restarted exporter sees acked recovered", func(m exportertest.Metrics) (bool, string) {
		_, open := m.Value("kafka_partition_under_min_isr_open_episode_seconds", map[string]string{"topic": strict})
		return !open, m.Describe("kafka_partition_under_min_isr_open_episode_seconds", nil)
	})
	// Its histogram is served from its first refresh, at zero, and stays so.
	if count, _, ok := histogramOf(after, "kafka_partition_under_min_isr_episode_seconds", strict); !ok || count != 0 {
		t.Errorf("the restarted exporter: under-min-ISR episodes of acked = %v (served %v), want 0 served: it never saw the start", count, ok)
	}
	if i := eventIndex(fetchEvents(t, restarted, ""), "under_min_isr_begin", strict, 0); i >= 0 {
		t.Errorf("the restarted exporter reports an under_min_isr_begin it never saw")
	}
}

// killBrokers kills nodes of the lab by PID with SIGKILL, one right after
// the other, and returns when it sent the last signal: the independent
// clock of the outage (acks=all writes fail from the last death). It
// waits until the processes are gone, as the lab's own Kill does.
func killBrokers(t *testing.T, c *lab.KafkaCluster, ids ...int32) time.Time {
	t.Helper()
	pids := make([]int, len(ids))
	for i, id := range ids {
		if pids[i] = c.PID(id); pids[i] == 0 {
			t.Fatalf("kafka node %d is not running", id)
		}
	}
	var at time.Time
	for i, pid := range pids {
		at = time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 of kafka node %d (pid %d): %v", ids[i], pid, err)
		}
	}
	for i, pid := range pids {
		lab.WaitFor(t, 30*time.Second, 20*time.Millisecond, func() (bool, string) {
			return syscall.Kill(pid, 0) == syscall.ESRCH, fmt.Sprintf("pid %d of node %d still exists", pid, ids[i])
		})
	}
	return at
}
