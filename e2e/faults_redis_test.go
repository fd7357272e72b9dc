package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

const (
	faultRedisInterval = 500 * time.Millisecond
	faultRedisTimeout  = 400 * time.Millisecond
)

// TestFaultRedis runs the Redis Cluster fault guarantees against one real
// 6-node cluster (3 masters, 1 replica each) and one exporter process whose
// first seed is a dead port. The subtests run in order and each leaves the
// cluster healthy for the next.
func TestFaultRedis(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	dead := deadAddr(t)
	cfg := faultConfig(t, fmt.Sprintf(`redis:
  - name: faults
    addrs: [%s, %s]
    refresh_interval: %s
    refresh_timeout: %s
    dial_timeout: 300ms
    command_timeout: 300ms
`, dead, c.Addrs()[0], faultRedisInterval, faultRedisTimeout))
	e := exportertest.Start(t, "--config.file="+cfg)
	e.WaitReady(t, 10*time.Second)

	t.Run("dead first seed", func(t *testing.T) {
		m, took := faultWaitRedisHealthy(t, e, c, 10*time.Second)
		t.Logf("FIGURE redis with dead first seed %s: complete after %s", dead, took.Round(10*time.Millisecond))
		if n := len(m.Series("redis_cluster_node_up", nil)); n != 6 {
			t.Errorf("%d node_up series, want 6:\n%s", n, m.Describe("redis_cluster_node_up", nil))
		}
		if v := faultGauge(m, "redis_cluster_masters", nil); v != 3 {
			t.Errorf("redis_cluster_masters = %v, want 3", v)
		}
	})

	t.Run("50 concurrent scrapes do not reach the cluster", func(t *testing.T) {
		faultRedisScrapeBurst(t, e, c)
	})

	t.Run("hung master", func(t *testing.T) {
		faultRedisHungMaster(t, e, c)
	})

	t.Run("every node dead, then back", func(t *testing.T) {
		faultRedisAllDead(t, e, c)
	})
}

// faultWaitRedisHealthy waits until the exporter shows the whole lab
// cluster healthy: up, 6 nodes all read, every slot served by a healthy
// master, views consistent.
func faultWaitRedisHealthy(t *testing.T, e *exportertest.Exporter, c *lab.RedisCluster, timeout time.Duration) (exportertest.Metrics, time.Duration) {
	t.Helper()
	return waitMetrics(t, e, timeout, "redis cluster healthy in the exporter", func(m exportertest.Metrics) (bool, string) {
		var bad []string
		check := func(name string, labels map[string]string, want float64) {
			if v, ok := m.Value(name, labels); !ok || v != want {
				bad = append(bad, fmt.Sprintf("%s%v=%v (present %v) want %v", name, labels, v, ok, want))
			}
		}
		check("redis_cluster_up", nil, 1)
		check("redis_cluster_state_ok", nil, 1)
		check("redis_cluster_known_nodes", nil, float64(len(c.Addrs())))
		check("redis_cluster_slots", map[string]string{"state": "ok"}, 16384)
		check("redis_cluster_views_consistent", nil, 1)
		check("redis_cluster_slots_without_replica", nil, 0)
		for _, addr := range c.Addrs() {
			check("redis_cluster_node_up", map[string]string{"address": addr}, 1)
		}
		return len(bad) == 0, strings.Join(bad, "; ")
	})
}

var faultClusterNodesCalls = regexp.MustCompile(`(?m)^cmdstat_cluster\|nodes:calls=(\d+),`)

// faultRedisClusterNodesCalls sums, over every node, how many CLUSTER NODES
// commands the server has executed (INFO commandstats). Only the exporter
// sends CLUSTER NODES while this runs; the lab helpers are not used.
func faultRedisClusterNodesCalls(t *testing.T, c *lab.RedisCluster) int {
	t.Helper()
	total := 0
	for _, port := range c.Ports() {
		out := c.CLI(t, port, "INFO", "commandstats")
		if m := faultClusterNodesCalls.FindStringSubmatch(out); m != nil {
			n, _ := strconv.Atoi(m[1])
			total += n
		}
	}
	return total
}

// faultRedisScrapeBurst compares what the cluster sees during an idle
// period and during an equally long period of bursts of 50 concurrent
// scrapes: the CLUSTER NODES calls must follow the refreshes (one per node
// per refresh), not the scrapes.
func faultRedisScrapeBurst(t *testing.T, e *exportertest.Exporter, c *lab.RedisCluster) {
	const (
		period     = 5 * time.Second
		concurrent = 50
	)
	nodes := len(c.Ports())
	var healthy time.Duration
	measure := func(burst bool) (calls, refreshes, scrapes int, slowest time.Duration) {
		m0, _ := faultScrape(t, e)
		calls0 := faultRedisClusterNodesCalls(t, c)
		start := time.Now()
		for time.Since(start) < period {
			if burst {
				slowest = max(slowest, faultConcurrentScrapes(t, e.URL, concurrent))
				healthy = max(healthy, faultConcurrentGets(t, e.URL, "/-/healthy", concurrent))
				scrapes += concurrent
				time.Sleep(100 * time.Millisecond)
			} else {
				time.Sleep(100 * time.Millisecond)
			}
		}
		calls = faultRedisClusterNodesCalls(t, c) - calls0
		m1, _ := faultScrape(t, e)
		refreshes = int(faultGauge(m1, "redis_cluster_exporter_refreshes_total", nil) - faultGauge(m0, "redis_cluster_exporter_refreshes_total", nil))
		return calls, refreshes, scrapes, slowest
	}
	idleCalls, idleRefreshes, _, _ := measure(false)
	burstCalls, burstRefreshes, scrapes, slowest := measure(true)
	t.Logf("FIGURE redis CLUSTER NODES calls over %s on %d nodes: idle %d (%d refreshes); with %d scrapes in bursts of %d: %d (%d refreshes); slowest scrape in a burst %s",
		period, nodes, idleCalls, idleRefreshes, scrapes, concurrent, burstCalls, burstRefreshes, slowest.Round(time.Millisecond))
	if limit := faultBurstLimit(healthy); slowest >= limit {
		t.Errorf("slowest of %d concurrent scrapes took %s, want under %s (the slowest of as many health checks: %s)", concurrent, slowest, limit, healthy)
	}
	// One CLUSTER NODES per node per refresh; a refresh may straddle the
	// edges of the window, hence the slack of one refresh at each end.
	for _, p := range []struct {
		what             string
		calls, refreshes int
	}{{"idle", idleCalls, idleRefreshes}, {"burst", burstCalls, burstRefreshes}} {
		if lo, hi := (p.refreshes-2)*nodes, (p.refreshes+2)*nodes; p.calls < lo || p.calls > hi {
			t.Errorf("%s: %d CLUSTER NODES calls for %d refreshes of %d nodes, want %d..%d", p.what, p.calls, p.refreshes, nodes, lo, hi)
		}
	}
	if burstCalls > idleCalls+2*nodes {
		t.Errorf("%d scrapes raised CLUSTER NODES calls from %d (idle) to %d: scrapes reach the cluster", scrapes, idleCalls, burstCalls)
	}
}

// faultRedisHungMaster SIGSTOPs a master, so that its sockets accept but
// nothing answers, and checks at the process level that scrapes stay fast,
// refreshes stay within refresh_timeout, the cluster stays up and the
// exporter's goroutines stay bounded over 24 refreshes.
func faultRedisHungMaster(t *testing.T, e *exportertest.Exporter, c *lab.RedisCluster) {
	master := c.Masters(t)[0]
	pid := c.PID(t, master.Port)
	m, _ := faultScrape(t, e)
	g := faultGoroutines{baseline: faultGauge(m, "go_goroutines", nil)}

	resume := faultHang(t, "redis", pid)

	hung := map[string]string{"address": master.Addr}
	waitMetrics(t, e, 10*time.Second, "hung master read as down", func(m exportertest.Metrics) (bool, string) {
		return faultGauge(m, "redis_cluster_node_up", hung) == 0, m.Describe("redis_cluster_node_up", hung)
	})
	var slowestScrape time.Duration
	var longestRefresh float64
	for range 24 {
		m = faultNextRefresh(t, e, "redis_cluster_exporter_refreshes_total", m, 1, 5*time.Second)
		m, took := faultScrape(t, e)
		slowestScrape = max(slowestScrape, took)
		d := faultGauge(m, "redis_cluster_exporter_refresh_duration_seconds", nil)
		longestRefresh = max(longestRefresh, d)
		if limit := (faultRedisTimeout + 100*time.Millisecond).Seconds(); d > limit {
			t.Errorf("refresh took %.3fs while a master hangs, want at most refresh_timeout + 100ms = %.3fs", d, limit)
		}
		if v := faultGauge(m, "redis_cluster_up", nil); v != 1 {
			t.Errorf("redis_cluster_up = %v while one master hangs and the others answer", v)
		}
		if v := faultGauge(m, "redis_cluster_node_up", hung); v != 0 {
			t.Errorf("node_up of the hung master = %v, want 0", v)
		}
		g.counts = append(g.counts, faultGauge(m, "go_goroutines", nil))
	}
	t.Logf("FIGURE redis hung master: slowest scrape %s, longest refresh %.3fs (refresh_timeout %s)",
		slowestScrape.Round(time.Millisecond), longestRefresh, faultRedisTimeout)
	g.check(t, 3, 20)

	resume()
	// Paused longer than cluster-node-timeout, the master was failed over;
	// it comes back as a replica of its former replica.
	faultWaitRedisHealthy(t, e, c, 30*time.Second)
}

// faultRedisEpoch is the highest cluster_current_epoch of the lab's nodes.
// Every failover election raises it, so an unchanged epoch proves that no
// failover happened in between.
func faultRedisEpoch(t *testing.T, c *lab.RedisCluster) int {
	t.Helper()
	epoch := -1
	for _, port := range c.Ports() {
		out := c.CLI(t, port, "CLUSTER", "INFO")
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_current_epoch:"); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("cluster_current_epoch %q", v)
				}
				epoch = max(epoch, n)
			}
		}
	}
	if epoch < 0 {
		t.Fatal("no node reported cluster_current_epoch")
	}
	return epoch
}

// faultRedisCounters reads the transition counters: failovers_total and
// role_changes_total by node ID.
func faultRedisCounters(t *testing.T, m exportertest.Metrics) (float64, map[string]float64) {
	t.Helper()
	failovers := value(t, m, "redis_cluster_failovers_total", nil)
	roles := map[string]float64{}
	for _, s := range m.Series("redis_cluster_node_role_changes_total", nil) {
		roles[s.Labels["node_id"]] = s.Value
	}
	return failovers, roles
}

// faultRedisAllDead kills every node at once, checks the exporter answers
// at once with redis_cluster_up 0, restarts every node (they rejoin from
// nodes.conf) and checks that the exporter recovers without a restart and
// that the outage did not corrupt the transition counters.
func faultRedisAllDead(t *testing.T, e *exportertest.Exporter, c *lab.RedisCluster) {
	before, _ := faultWaitRedisHealthy(t, e, c, 30*time.Second)
	epochBefore := faultRedisEpoch(t, c)
	failoversBefore, rolesBefore := faultRedisCounters(t, before)
	refreshesBefore := value(t, before, "redis_cluster_exporter_refreshes_total", nil)
	failuresBefore := value(t, before, "redis_cluster_exporter_refresh_failures_total", nil)

	var pids []int
	for _, port := range c.Ports() {
		pids = append(pids, c.PID(t, port))
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 %d: %v", pid, err)
		}
	}
	killedAt := time.Now()
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitMetrics(t, e, 10*time.Second, "redis_cluster_up 0 with every node dead", func(m exportertest.Metrics) (bool, string) {
		return faultGauge(m, "redis_cluster_up", nil) == 0, m.Describe("redis_cluster_up", nil)
	})
	t.Logf("FIGURE redis every node killed: redis_cluster_up 0 after %s", time.Since(killedAt).Round(10*time.Millisecond))
	for range 5 {
		m, _ := faultScrape(t, e)
		if v := faultGauge(m, "redis_cluster_up", nil); v != 0 {
			t.Errorf("redis_cluster_up = %v with every node dead", v)
		}
		for _, name := range []string{"redis_cluster_node_up", "redis_cluster_slots", "redis_cluster_failovers_total"} {
			if n := len(m.Series(name, nil)); n != 0 {
				t.Errorf("%d stale %s series served while the cluster is down", n, name)
			}
		}
		time.Sleep(faultRedisInterval)
	}
	if !strings.Contains(e.Logs(), "no node answered") {
		t.Errorf("log does not say why the refresh failed")
	}

	restartAt := time.Now()
	for _, port := range c.Ports() {
		c.Restart(t, port)
	}
	after, recovery := faultWaitRedisHealthy(t, e, c, 60*time.Second)
	t.Logf("FIGURE redis all %d nodes restarted in %s; exporter healthy %s after the restarts finished, without a restart of its own",
		len(pids), recovery.Round(10*time.Millisecond), time.Since(restartAt).Round(10*time.Millisecond))

	epochAfter := faultRedisEpoch(t, c)
	failoversAfter, rolesAfter := faultRedisCounters(t, after)
	t.Logf("FIGURE redis outage: failovers_total %v -> %v, cluster epoch %d -> %d, role changes %v -> %v",
		failoversBefore, failoversAfter, epochBefore, epochAfter, rolesBefore, rolesAfter)
	if failoversAfter < failoversBefore {
		t.Errorf("failovers_total went back from %v to %v across the outage", failoversBefore, failoversAfter)
	}
	// Every failover election raises the cluster epoch by at least one.
	if elections := float64(epochAfter - epochBefore); failoversAfter-failoversBefore > elections {
		t.Errorf("failovers_total rose by %v across the outage, but the cluster epoch rose by %v: the outage was counted as failovers",
			failoversAfter-failoversBefore, elections)
	}
	for id, b := range rolesBefore {
		a, ok := rolesAfter[id]
		if !ok {
			t.Errorf("node %s lost its role_changes_total series", id)
			continue
		}
		if a < b {
			t.Errorf("node %s role_changes_total went back from %v to %v", id, b, a)
		}
		if epochAfter == epochBefore && a != b {
			t.Errorf("node %s role_changes_total %v -> %v with no election in the cluster", id, b, a)
		}
	}
	if v := value(t, after, "redis_cluster_exporter_refreshes_total", nil); v <= refreshesBefore {
		t.Errorf("refreshes_total %v -> %v", refreshesBefore, v)
	}
	if v := value(t, after, "redis_cluster_exporter_refresh_failures_total", nil); v <= failuresBefore {
		t.Errorf("refresh_failures_total %v -> %v: the outage was not counted", failuresBefore, v)
	}
}
