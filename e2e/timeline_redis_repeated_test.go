package e2e

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// redisKillsEnv sets how many masters TestRedisFailoverDurationRepeated
// kills in a row: 2 by default (CI), 10 or more for the figures in
// BENCHMARKS.md.
const redisKillsEnv = "REDIS_FAILOVER_KILLS"

// TestRedisFailoverDurationRepeated kills a master with kill -9, waits for
// its replica to take over, restarts the killed node (it rejoins as a
// replica) and does it again, with a refresh (1 s) shorter than the
// cluster-node-timeout (2 s) but longer than the time from the cluster's
// first flag to the promotion, so that some failovers are flagged and
// promoted between two refreshes. Every kill's failover and unserved-slot
// episodes must agree with the kill clock (from the signal to every view
// showing the replica serving) within one refresh: an episode the exporter
// saw begin and end between two refreshes still starts at its first failed
// query of the master, not at the refresh before the promotion.
func TestRedisFailoverDurationRepeated(t *testing.T) {
	kills := 2
	if s := os.Getenv(redisKillsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of kills", redisKillsEnv, s)
		}
		kills = n
	}
	const refresh = time.Second
	tolerate := refresh + 2*probeInterval
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1, NodeTimeout: 2 * time.Second})
	e := exportertest.Start(t, "--redis.addr="+strings.Join(c.Addrs(), ","), "--redis.cluster-name=lab",
		"--refresh.interval="+refresh.String(), "--log.level=debug")
	probe := startNodesProbe(t, c.Addrs())
	var worst float64
	for i := range kills {
		waitRedisSettled(t, c, e, i)
		k := killMaster(t, c, e, probe, i)
		t.Logf("FIGURE redis kill %d/%d on %s (node timeout %s, refresh %s): %s from the kill to the replica serving (first flag after %s, exporter's first failed query after %s); flag and promotion in one refresh %v; exporter observed failover %.2fs, unserved %.2fs: off by %+.2fs; state_ok %v then, cluster_state:fail from %v",
			i+1, kills, c.Server(), c.NodeTimeout(), refresh, k.outage.Round(10*time.Millisecond), k.flagAfter.Round(10*time.Millisecond),
			k.firstFailureAfter.Round(10*time.Millisecond), k.sameRefresh, k.failover, k.unserved, k.unserved-k.outage.Seconds(), k.stateOK, k.stateFail)
		for what, got := range map[string]float64{"failover": k.failover, "unserved slots": k.unserved} {
			diff := math.Abs(got - k.outage.Seconds())
			worst = math.Max(worst, diff)
			if diff > tolerate.Seconds() {
				t.Errorf("kill %d: %s %.2fs per the exporter, %s from the kill to the replica serving: off by %.2fs, more than %s; events:\n%s",
					i+1, what, got, k.outage.Round(10*time.Millisecond), diff, tolerate, k.events)
			}
		}
		c.Restart(t, k.victim.Port)
	}
	t.Logf("FIGURE redis %d kills on %s: largest difference from the kill clock %.2fs (tolerance %s)", kills, c.Server(), worst, tolerate)
}

// redisKill is what one kill of TestRedisFailoverDurationRepeated measured.
type redisKill struct {
	victim             lab.RedisNode
	outage             time.Duration // from the kill to every view showing the replica serving
	flagAfter          time.Duration // from the kill to the probe's first PFAIL or FAIL flag
	firstFailureAfter  time.Duration // from the kill to the flag event's first_failure (0: none)
	failover, unserved float64       // what the exporter observed for this kill
	// sameRefresh is true when one refresh saw the master flagged and its
	// replica promoted: the failover began and ended between two refreshes.
	sameRefresh bool
	// stateOK is redis_cluster_state_ok in the scrape that first had the
	// failover observed; stateFail names the nodes that reported
	// cluster_state:fail then, and whether each was the promoted replica.
	stateOK   float64
	stateFail []string
	events    string
}

// killMaster kills the i-th kill's master (the masters in turn) and waits
// for the exporter to observe the failover and the unserved slots.
func killMaster(t *testing.T, c *lab.RedisCluster, e *exportertest.Exporter, probe *nodesProbe, i int) redisKill {
	t.Helper()
	before := e.Scrape(t)
	failoverSum := value(t, before, "redis_cluster_failover_seconds_sum", nil)
	unservedSum := value(t, before, "redis_cluster_slots_unserved_episode_seconds_sum", nil)
	masters := c.Masters(t)
	victim := masters[i%len(masters)]
	var replica lab.RedisNode
	for _, n := range c.Nodes(t) {
		if n.MasterID == victim.ID {
			replica = n
		}
	}
	if replica.ID == "" {
		t.Fatalf("kill %d: master %s has no replica", i+1, victim.Addr)
	}
	pid := c.PID(t, victim.Port)
	killedAt := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 of master %s (pid %d): %v", victim.Addr, pid, err)
	}
	m, _ := waitMetrics(t, e, 60*time.Second, "the failover and the unserved slots observed", func(m exportertest.Metrics) (bool, string) {
		f, _ := m.Value("redis_cluster_failover_seconds_count", nil)
		u, _ := m.Value("redis_cluster_slots_unserved_episode_seconds_count", nil)
		return f >= float64(i+1) && u >= float64(i+1), m.Describe("redis_cluster_node_slots", nil)
	})
	time.Sleep(time.Second) // let the probe see every view agree
	flagAt, _, _ := probe.span(killedAt, func(s nodesSample) bool { return s.flagged(victim.ID) })
	promotedAt, _, _ := probe.span(killedAt, func(s nodesSample) bool { return s.servesSlots(replica.ID) })
	if flagAt.IsZero() || promotedAt.IsZero() {
		t.Fatalf("kill %d: the probe saw no complete failover: flagged at %v, replica serving at %v", i+1, flagAt, promotedAt)
	}
	for _, name := range []string{"redis_cluster_failover_seconds_count", "redis_cluster_slots_unserved_episode_seconds_count"} {
		if n := value(t, m, name, nil); n != float64(i+1) {
			t.Errorf("kill %d: %s = %v, want %d", i+1, name, n, i+1)
		}
	}
	k := redisKill{victim: victim, outage: promotedAt.Sub(killedAt), flagAfter: flagAt.Sub(killedAt),
		failover: value(t, m, "redis_cluster_failover_seconds_sum", nil) - failoverSum,
		unserved: value(t, m, "redis_cluster_slots_unserved_episode_seconds_sum", nil) - unservedSum,
		stateOK:  value(t, m, "redis_cluster_state_ok", nil)}
	evs := fetchEvents(t, e, "?cluster=lab")
	var flaggedAt, promotionAt time.Time
	for _, ev := range evs { // newest first: the last match is the oldest
		switch {
		case ev.Time.Before(killedAt):
		case (ev.Kind == "node_pfail" || ev.Kind == "node_fail") && ev.Subject.NodeID == victim.ID:
			flaggedAt, k.firstFailureAfter = ev.Time, 0
			if !ev.FirstFailure.IsZero() {
				k.firstFailureAfter = ev.FirstFailure.Sub(killedAt)
			}
		case ev.Kind == "promotion" && ev.Subject.NodeID == replica.ID:
			promotionAt = ev.Time
		}
	}
	k.sameRefresh = !flaggedAt.IsZero() && flaggedAt.Equal(promotionAt)
	for _, s := range m.Series("redis_cluster_node_cluster_state_ok", nil) {
		if s.Value == 0 {
			k.stateFail = append(k.stateFail, fmt.Sprintf("%s (promoted %v)", s.Labels["address"], s.Labels["node_id"] == replica.ID))
		}
	}
	k.events = fmt.Sprintf("killed at %s\n%s", killedAt.Format("15:04:05.000"), describeEvents(evs))
	return k
}

// waitRedisSettled waits for the cluster's views and the exporter to agree
// that six nodes serve every slot, none flagged, with no episode open and
// i failovers observed: the state in which the next kill starts.
func waitRedisSettled(t *testing.T, c *lab.RedisCluster, e *exportertest.Exporter, i int) {
	t.Helper()
	lab.RedisWaitFor(t, 60*time.Second, "every view: six nodes, none flagged", func() error {
		for _, addr := range c.Addrs() {
			text, err := clusterNodes(addr)
			if err != nil {
				return err
			}
			if lines := strings.Count(strings.TrimSpace(text), "\n") + 1; lines != 6 || strings.Contains(text, "fail") {
				return fmt.Errorf("%s: %d nodes:\n%s", addr, lines, text)
			}
		}
		return nil
	})
	waitMetrics(t, e, 60*time.Second, "6 nodes, all slots ok, no episode open", func(m exportertest.Metrics) (bool, string) {
		ok, _ := m.Value("redis_cluster_slots", map[string]string{"state": "ok"})
		nodes, _ := m.Value("redis_cluster_known_nodes", nil)
		_, failing := m.Value("redis_cluster_failover_open_episode_seconds", nil)
		_, unserved := m.Value("redis_cluster_slots_unserved_open_episode_seconds", nil)
		n, _ := m.Value("redis_cluster_failover_seconds_count", nil)
		return ok == 16384 && nodes == 6 && !failing && !unserved && n == float64(i), m.Describe("redis_cluster_slots", nil)
	})
}
