package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// reloadLab is one real Kafka cluster and one real Redis Cluster, both
// called "lab", each with its write canary, watched by one exporter from a
// config file that the test rewrites and reloads.
type reloadLab struct {
	kafka  *lab.KafkaCluster
	redis  *lab.RedisCluster
	path   string
	e      *exportertest.Exporter
	reload int // reloads done, to change the settings each time
}

// write writes the config with the given refresh interval for both
// clusters (and their canaries).
func (l *reloadLab) write(t *testing.T, refresh time.Duration) {
	t.Helper()
	cfg := fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    refresh_interval: %s
    canary: {enabled: true, interval: %s}
redis:
  - name: lab
    addrs: [%s]
    refresh_interval: %s
    canary: {enabled: true, interval: %s}
`, strings.Join(l.kafka.Bootstrap(), ", "), refresh, refresh, strings.Join(l.redis.Addrs(), ", "), refresh, refresh)
	if err := os.WriteFile(l.path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sighup reloads by SIGHUP and waits until the exporter says it reloaded.
func (l *reloadLab) sighup(t *testing.T) {
	t.Helper()
	before, _ := l.e.Scrape(t).Value("failover_exporter_config_last_reload_success_timestamp_seconds", nil)
	// The timestamp has a resolution of a second or better; make sure it moves.
	time.Sleep(10 * time.Millisecond)
	if err := l.e.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitMetrics(t, l.e, 60*time.Second, "the reload done", func(m exportertest.Metrics) (bool, string) {
		ts, _ := m.Value("failover_exporter_config_last_reload_success_timestamp_seconds", nil)
		ok, _ := m.Value("failover_exporter_config_last_reload_successful", nil)
		return ts > before && ok == 1, fmt.Sprintf("reload timestamp %v (before %v), successful %v", ts, before, ok)
	})
	l.reload++
}

// changeAndReload rewrites the config with another refresh interval, so
// that every cluster and canary restarts, and reloads.
func (l *reloadLab) changeAndReload(t *testing.T) {
	t.Helper()
	l.write(t, time.Second+time.Duration(l.reload%2)*100*time.Millisecond)
	l.sighup(t)
}

func startReloadLab(t *testing.T) *reloadLab {
	t.Helper()
	l := &reloadLab{
		kafka: lab.SharedKafka(t, lab.KafkaOptions{Nodes: 3}),
		redis: lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1}),
		path:  filepath.Join(t.TempDir(), "config.yml"),
	}
	l.write(t, time.Second)
	l.e = exportertest.Start(t, "--config.file="+l.path)
	l.e.WaitReady(t, 60*time.Second)
	waitMetrics(t, l.e, 90*time.Second, "both clusters and both canaries up", func(m exportertest.Metrics) (bool, string) {
		k, _ := m.Value("kafka_up", nil)
		r, _ := m.Value("redis_cluster_up", nil)
		kc, _ := m.Value("kafka_canary_up", nil)
		rc, _ := m.Value("redis_canary_up", nil)
		return k == 1 && r == 1 && kc == 1 && rc == 1, fmt.Sprintf("kafka_up %v redis_cluster_up %v kafka_canary_up %v redis_canary_up %v", k, r, kc, rc)
	})
	return l
}

// openFDs counts the exporter's open file descriptors.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestReloads runs the reload checks of issue 18 on one pair of real labs:
//   - 100 reloads by SIGHUP (50 unchanged, 50 changing every cluster)
//     leave the goroutines and open files where they were;
//   - with a Kafka broker and a Redis node SIGSTOPped, 10 reloads never
//     make /-/ready, /metrics or / wait on them;
//   - a reload in the middle of an outage keeps it: a broker killed just
//     before a reload still gets its broker_down event and an episode of
//     known start, and a reload a minute later keeps the open episode's
//     age and the transition counters.
func TestReloads(t *testing.T) {
	l := startReloadLab(t)

	t.Run("100 reloads leak nothing", func(t *testing.T) {
		// Settle: the canaries have created their topic and keys.
		time.Sleep(5 * time.Second)
		m := l.e.Scrape(t)
		goroutines := value(t, m, "go_goroutines", nil)
		fds := openFDs(t, l.e.PID())
		start := time.Now()
		for i := range 100 {
			if i%2 == 0 {
				l.sighup(t) // unchanged
			} else {
				l.changeAndReload(t)
			}
		}
		took := time.Since(start)
		// Let the last watchers' first refreshes and canary rounds finish.
		time.Sleep(5 * time.Second)
		m = l.e.Scrape(t)
		after := value(t, m, "go_goroutines", nil)
		fdsAfter := openFDs(t, l.e.PID())
		t.Logf("FIGURE 100 reloads (50 changing every cluster) in %s: goroutines %v -> %v, open files %d -> %d", took.Round(time.Second), goroutines, after, fds, fdsAfter)
		// A small constant: connections made and closed in flight, idle
		// HTTP connections of the scrapes.
		if after > goroutines+15 {
			t.Errorf("goroutines grew from %v to %v over 100 reloads", goroutines, after)
		}
		if fdsAfter > fds+10 {
			t.Errorf("open files grew from %d to %d over 100 reloads", fds, fdsAfter)
		}
	})

	t.Run("reload never blocks readers", func(t *testing.T) {
		brokerPID := l.kafka.PID(2)
		nodePID := l.redis.PID(t, l.redis.Ports()[1])
		for _, pid := range []int{brokerPID, nodePID} {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				_ = syscall.Kill(brokerPID, syscall.SIGCONT)
				_ = syscall.Kill(nodePID, syscall.SIGCONT)
			}
		}
		t.Cleanup(resume)
		time.Sleep(3 * time.Second) // refreshes now wait on the stopped ones

		var mu sync.Mutex
		slowest := map[string]time.Duration{}
		failures := map[string]int{}
		probes := 0
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, path := range []string{"/-/ready", "/metrics", "/"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Timeout: 10 * time.Second}
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					start := time.Now()
					resp, err := client.Get(l.e.URL + path)
					took := time.Since(start)
					code := 0
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						code = resp.StatusCode
					}
					mu.Lock()
					probes++
					slowest[path] = max(slowest[path], took)
					if code != http.StatusOK {
						failures[path]++
					}
					mu.Unlock()
				}
			}()
		}
		reloadsStart := time.Now()
		for range 10 {
			l.changeAndReload(t)
		}
		reloadsTook := time.Since(reloadsStart)
		close(stop)
		wg.Wait()
		resume()
		t.Logf("FIGURE 10 reloads with a Kafka broker and a Redis node SIGSTOPped took %s; %d probes every 50 ms; slowest /-/ready %s, /metrics %s, / %s",
			reloadsTook.Round(time.Millisecond), probes, slowest["/-/ready"].Round(time.Millisecond), slowest["/metrics"].Round(time.Millisecond), slowest["/"].Round(time.Millisecond))
		for path, n := range failures {
			if n > 0 {
				t.Errorf("%s failed %d times during the reloads", path, n)
			}
		}
		// The requirement is 100 ms; on a shared CI machine the test only
		// catches a reader that waits on a cluster (seconds), ten times over.
		for path, d := range slowest {
			if d > time.Second {
				t.Errorf("%s took %s during a reload", path, d)
			}
		}
	})

	t.Run("a reload keeps the outage", func(t *testing.T) {
		// An RF 1 topic on broker 3: offline while it is dead.
		admin, err := sarama.NewClusterAdmin(l.kafka.Bootstrap(), lab.ClientConfig())
		if err != nil {
			t.Fatal(err)
		}
		err = admin.CreateTopic("solo", &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: map[int32][]int32{0: {3}}}, false)
		admin.Close()
		if err != nil {
			t.Fatal(err)
		}
		solo := map[string]string{"topic": "solo"}
		waitMetrics(t, l.e, 60*time.Second, "solo led by broker 3", func(m exportertest.Metrics) (bool, string) {
			v, _ := m.Value("kafka_partition_leader", partitionLabels("solo", 0))
			return v == 3, m.Describe("kafka_partition_leader", solo)
		})
		// The transition counters, per topic and per broker as the default
		// lean mode serves them (no per-partition counter): the sum of
		// every topic's leader changes and every broker's lost leaderships.
		leaderChanges := func(m exportertest.Metrics) float64 {
			total := 0.0
			for _, name := range []string{"kafka_topic_leader_changes_total", "kafka_broker_leaderships_lost_total"} {
				for _, s := range m.Series(name, nil) {
					total += s.Value
				}
			}
			return total
		}

		// Kill broker 3 and reload at once, before the metadata says it
		// is gone (3 s session timeout in the lab).
		killBrokers(t, l.kafka, 3)
		l.changeAndReload(t)
		m, _ := waitMetrics(t, l.e, 60*time.Second, "solo offline", func(m exportertest.Metrics) (bool, string) {
			_, ok := m.Value("kafka_partition_offline_open_episode_seconds", solo)
			return ok, m.Describe("kafka_partition_leader", solo)
		})
		evs := fetchEvents(t, l.e, "?system=kafka&cluster=lab")
		down := eventIndex(evs, "broker_down", "", 3)
		if down < 0 {
			t.Errorf("no broker_down event for broker 3, killed just before a reload:\n%s", describeEvents(evs))
		}

		// Let the outage age a minute, then reload again.
		time.Sleep(time.Minute)
		m = l.e.Scrape(t)
		ageBefore := value(t, m, "kafka_partition_offline_open_episode_seconds", solo)
		changesBefore := leaderChanges(m)
		// solo went from broker 3 to no leader, once, counted across the
		// first reload: by its topic and as a leadership broker 3 lost.
		if v := value(t, m, "kafka_topic_leader_changes_total", solo); v != 1 {
			t.Errorf("kafka_topic_leader_changes_total{solo} = %v after broker 3 died, want 1", v)
		}
		soloLost := value(t, m, "kafka_broker_leaderships_lost_total", map[string]string{"broker": "3"})
		if soloLost < 1 {
			t.Errorf("kafka_broker_leaderships_lost_total{broker=3} = %v after broker 3 died leading solo, want at least 1", soloLost)
		}
		l.changeAndReload(t)
		m, _ = waitMetrics(t, l.e, 30*time.Second, "a refresh after the reload", func(m exportertest.Metrics) (bool, string) {
			age, ok := m.Value("kafka_partition_offline_open_episode_seconds", solo)
			return ok && age > ageBefore, fmt.Sprintf("open episode %.1fs (before the reload %.1fs)", age, ageBefore)
		})
		if after := leaderChanges(m); after < changesBefore {
			t.Errorf("leader changes counted %v after the reload, %v before: the counters restarted", after, changesBefore)
		}
		// solo stayed leaderless: nothing more to count, nothing lost.
		if v := value(t, m, "kafka_topic_leader_changes_total", solo); v != 1 {
			t.Errorf("kafka_topic_leader_changes_total{solo} = %v after the reload, want still 1", v)
		}
		if v := value(t, m, "kafka_broker_leaderships_lost_total", map[string]string{"broker": "3"}); v < soloLost {
			t.Errorf("kafka_broker_leaderships_lost_total{broker=3} = %v after the reload, %v before: the counter restarted", v, soloLost)
		}
		// Offline, so detailed in lean: the partition's offline series is served.
		if v := value(t, m, "kafka_partition_offline", partitionLabels("solo", 0)); v != 1 {
			t.Errorf("kafka_partition_offline{solo/0} = %v, want 1", v)
		}
		t.Logf("FIGURE offline episode %.1fs old before the reload, %.1fs after", ageBefore, value(t, m, "kafka_partition_offline_open_episode_seconds", solo))

		// The broker returns: the episode, begun before two reloads, is
		// observed, and dated from the kill.
		l.kafka.Restart(t, 3)
		m, _ = waitMetrics(t, l.e, 90*time.Second, "solo back", func(m exportertest.Metrics) (bool, string) {
			n, _, _ := histogramOf(m, "kafka_partition_offline_episode_seconds", "solo")
			return n >= 1, m.Describe("kafka_partition_offline_episode_seconds_count", nil)
		})
		if _, sum, _ := histogramOf(m, "kafka_partition_offline_episode_seconds", "solo"); sum < 60 {
			t.Errorf("the offline episode across two reloads lasted %.1fs, want more than the minute the test waited", sum)
		}
	})
}
