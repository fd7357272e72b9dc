package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// measureRedisCluster starts a real Redis Cluster of masters × (1+replicas)
// redis-server processes, runs the exporter against it, scrapes it ten times
// across several refreshes and records refresh time, scrape times and the
// exporter's peak RSS (VmHWM).
func measureRedisCluster(t *testing.T, masters, replicas int, maxPeakRSSMB int) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: masters, Replicas: replicas})
	nodes := masters * (1 + replicas)
	e := exportertest.Start(t, "--redis.addr="+c.Addrs()[0], "--redis.cluster-name=big", "--refresh.interval=1s")
	e.WaitReady(t, time.Minute)
	// Every node is read: each has its info series, in both encodings.
	deadline := time.Now().Add(time.Minute)
	for {
		gz, plain := countSeries(t, e.URL, true, "redis_cluster_node_info"), countSeries(t, e.URL, false, "redis_cluster_node_info")
		if gz == nodes && plain == nodes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis_cluster_node_info series: %d (gzip), %d (plain), want %d", gz, plain, nodes)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var gzip, plain timings
	var refreshes []float64
	for i := 0; i < 10; i++ {
		compressed := i%2 == 0
		d := scrapeTimed(t, e.URL, compressed)
		if compressed {
			gzip.add(d)
		} else {
			plain.add(d)
		}
		refreshes = append(refreshes, scrapeValue(t, e.URL, `redis_cluster_exporter_refresh_duration_seconds{redis_cluster="big"}`))
		time.Sleep(300 * time.Millisecond)
	}
	// One connection per node, whatever rueidis would open for an
	// application (it multiplexes two per node on two cores by default).
	for _, port := range c.Ports() {
		clients := c.CLI(t, port, "CLIENT", "LIST")
		if n := strings.Count(clients, "name=failover_exporter "); n != 1 {
			t.Errorf("node %d has %d connections from the exporter, want 1:\n%s", port, n, clients)
		}
	}
	if up := scrapeValue(t, e.URL, `redis_cluster_up{redis_cluster="big"}`); up != 1 {
		t.Errorf("redis_cluster_up = %v, want 1", up)
	}
	rss := procStatusKB(t, e.PID(), "VmRSS") / 1024
	peak := procStatusKB(t, e.PID(), "VmHWM") / 1024
	t.Logf("FIGURE redis %d nodes (%d masters, %d replicas each): refresh (redis_cluster_exporter_refresh_duration_seconds) median %.0f ms, up to %.0f ms; gzip /metrics %s; plain /metrics %s; RSS %d MB, peak RSS %d MB",
		nodes, masters, replicas, medianOf(refreshes)*1000, slices.Max(refreshes)*1000, gzip, plain, rss, peak)
	if maxPeakRSSMB > 0 && peak > maxPeakRSSMB {
		t.Errorf("peak RSS %d MB with %d Redis nodes, requirement is at most %d MB", peak, nodes, maxPeakRSSMB)
	}
}

// TestRedisCluster6Nodes records the figures of the smallest cluster with
// replicas.
func TestRedisCluster6Nodes(t *testing.T) {
	measureRedisCluster(t, 3, 1, 40)
}

// TestRedisCluster100Nodes checks the requirement for a 100-node cluster (50
// masters, 50 replicas): peak RSS at most 40 MB. The refresh time is
// recorded (requirement: at most 100 ms), not asserted.
func TestRedisCluster100Nodes(t *testing.T) {
	requireScaleFigures(t)
	measureRedisCluster(t, 50, 1, 40)
}
