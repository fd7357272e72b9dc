package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// holdProxy forwards TCP to a target until it is hung: from then on it
// accepts connections and reads what they send but forwards nothing either
// way, as a broker whose process is stopped or a network that drops
// packets does.
type holdProxy struct {
	ln     net.Listener
	target string
	hung   atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func startHoldProxy(t *testing.T) *holdProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdProxy{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	return p
}

func (p *holdProxy) addr() string { return p.ln.Addr().String() }

func (p *holdProxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	forward := func(dst, src net.Conn) {
		defer dst.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				return
			}
			for p.hung.Load() {
				time.Sleep(50 * time.Millisecond)
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
	go forward(up, c)
	go forward(c, up)
}

func envInt(t *testing.T, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive whole number", name, v)
		}
		return n
	}
	return def
}

// p99 is the 99th percentile of xs (nearest rank).
func p99(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)]
}

// fleetConfig is a config file of the clusters: Kafka ones by their
// bootstrap address, Redis ones by a seed.
func fleetConfig(t *testing.T, kafka, redis []string, refresh time.Duration) string {
	var b strings.Builder
	if len(kafka) > 0 {
		b.WriteString("kafka:\n")
	}
	for i, addr := range kafka {
		fmt.Fprintf(&b, "  - {name: k%03d, bootstrap_servers: [%s], refresh_interval: %s}\n", i, addr, refresh)
	}
	if len(redis) > 0 {
		b.WriteString("redis:\n")
	}
	for i, addr := range redis {
		fmt.Fprintf(&b, "  - {name: r%03d, addrs: [%s], refresh_interval: %s}\n", i, addr, refresh)
	}
	return secWriteFile(t, filepath.Join(t.TempDir(), "fleet.yaml"), b.String())
}

// fleetFootprint runs an exporter over the clusters until it has refreshed
// a few times and returns its RSS in kB and its goroutines.
func fleetFootprint(t *testing.T, kafka, redis []string) (rssKB int, goroutines float64) {
	e := exportertest.Start(t, "--config.file="+fleetConfig(t, kafka, redis, 2*time.Second))
	e.WaitReady(t, 2*time.Minute)
	time.Sleep(8 * time.Second) // four refreshes
	rssKB = procStatusKB(t, e.PID(), "VmRSS")
	goroutines = value(t, e.Scrape(t), "go_goroutines", nil)
	e.Stop()
	return rssKB, goroutines
}

// TestFleetIsolation (a figure run: FAILOVER_EXPORTER_SCALE_FIGURES=1; issue 30 item
// 4): one exporter watching a fleet, each cluster its own /probe target.
// FLEET_KAFKA fake Kafka clusters of 1,000 partitions each (sarama
// MockBrokers behind proxies that can hang; a fleet of real ones does not
// fit on the machine) and FLEET_REDIS real 3-master Redis Clusters (default
// 100 each). It records RSS and goroutines per cluster, each cluster's
// refresh p99 and the /probe p99 over the fleet; then FLEET_HUNG of each
// kind hang (the Kafka proxies black-hole, the Redis nodes are SIGSTOPped)
// and it records how soon each hung one reads up 0 and the others' p99s
// again.
func TestFleetIsolation(t *testing.T) {
	requireScaleFigures(t)
	nKafka, nRedis, nHung := envInt(t, "FLEET_KAFKA", 100), envInt(t, "FLEET_REDIS", 100), envInt(t, "FLEET_HUNG", 10)
	const refresh = 2 * time.Second
	proxies := make([]*holdProxy, nKafka)
	kafka := make([]string, nKafka)
	for i := range proxies {
		proxies[i] = startHoldProxy(t)
		proxies[i].target = fakeClusterAdvertising(t, 1000, false, proxies[i].addr())
		kafka[i] = proxies[i].addr()
	}
	started := time.Now()
	clusters := make([]*lab.RedisCluster, nRedis)
	redis := make([]string, nRedis)
	for i := range clusters {
		clusters[i] = lab.StartRedisCluster(t, lab.RedisOptions{})
		redis[i] = clusters[i].Addrs()[0]
	}
	t.Logf("fleet: %d fake Kafka clusters, %d real Redis Clusters (%d redis-server processes, started in %s)",
		nKafka, nRedis, 3*nRedis, time.Since(started).Round(time.Second))

	// What a cluster costs: the difference between one and the fleet.
	k1, kg1 := fleetFootprint(t, kafka[:1], nil)
	kN, kgN := fleetFootprint(t, kafka, nil)
	r1, rg1 := fleetFootprint(t, nil, redis[:1])
	rN, rgN := fleetFootprint(t, nil, redis)
	per := func(one, all int, n int) float64 { return float64(all-one) / float64(n-1) / 1024 }
	t.Logf("FIGURE fleet: per idle Kafka cluster (1,000 partitions) %.2f MB RSS, %.1f goroutines (1: %d MB, %d: %d MB)",
		per(k1, kN, nKafka), (kgN-kg1)/float64(nKafka-1), k1/1024, nKafka, kN/1024)
	t.Logf("FIGURE fleet: per Redis Cluster (3 masters) %.2f MB RSS, %.1f goroutines (1: %d MB, %d: %d MB)",
		per(r1, rN, nRedis), (rgN-rg1)/float64(nRedis-1), r1/1024, nRedis, rN/1024)

	// The whole fleet in one exporter, each cluster probed in turn.
	e := exportertest.Start(t, "--config.file="+fleetConfig(t, kafka, redis, refresh))
	e.WaitReady(t, 3*time.Minute)
	names := make([]string, 0, nKafka+nRedis)
	for i := range nKafka {
		names = append(names, fmt.Sprintf("k%03d", i))
	}
	for i := range nRedis {
		names = append(names, fmt.Sprintf("r%03d", i))
	}
	var hungAt time.Time // when the hung ones hung
	hung := map[string]bool{}
	for i := range nHung {
		hung[fmt.Sprintf("k%03d", i)], hung[fmt.Sprintf("r%03d", i)] = true, true
	}
	// sample probes every cluster but the hung ones once per pass for d,
	// and returns the /probe latencies and each cluster's refresh
	// durations (its *_refresh_duration_seconds as each probe read it).
	sample := func(d time.Duration) (probe []float64, refreshes map[string][]float64) {
		refreshes = map[string][]float64{}
		for end := time.Now().Add(d); time.Now().Before(end); {
			for _, name := range names {
				if hung[name] && !hungAt.IsZero() {
					continue
				}
				asked := time.Now()
				resp, err := e.Get("/probe?target=" + name)
				if err != nil {
					t.Fatalf("/probe?target=%s: %v", name, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				probe = append(probe, time.Since(asked).Seconds()*1000)
				m, err := exportertest.Parse(body)
				if err != nil {
					t.Fatalf("/probe?target=%s: %v", name, err)
				}
				if v, ok := m.Value(seriesOf(name, "exporter_refresh_duration_seconds"), nil); ok {
					refreshes[name] = append(refreshes[name], v*1000)
				}
				if up, _ := m.Value(seriesOf(name, "up"), nil); up != 1 && !hung[name] {
					t.Errorf("%s is not up while it is not hung:\n%s", name, m.Describe(seriesOf(name, "up"), nil))
				}
			}
		}
		return probe, refreshes
	}
	worst := func(refreshes map[string][]float64) (float64, string) {
		var w float64
		var at string
		for name, xs := range refreshes {
			if v := p99(xs); v > w {
				w, at = v, name
			}
		}
		return w, at
	}
	probeBefore, refreshBefore := sample(30 * time.Second)
	wb, wbAt := worst(refreshBefore)

	// Hang some of each kind; each reads up 0 within a refresh timeout.
	for i := range nHung {
		proxies[i].hung.Store(true)
		for _, port := range clusters[i].Ports() {
			clusters[i].Pause(t, port)
		}
	}
	hungAt = time.Now()
	var detect []float64
	for name := range hung {
		for {
			if up, ok := scrapeProbe(t, e, name).Value(seriesOf(name, "up"), nil); ok && up == 0 {
				detect = append(detect, time.Since(hungAt).Seconds())
				break
			}
			if time.Since(hungAt) > 10*refresh {
				t.Fatalf("%s still up %s after it hung (refresh %s)", name, time.Since(hungAt), refresh)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	probeAfter, refreshAfter := sample(30 * time.Second)
	wa, waAt := worst(refreshAfter)
	t.Logf("FIGURE fleet: %d clusters in one exporter; /probe p99 %.1f ms before, %.1f ms with %d of each kind hung (%d and %d probes)",
		len(names), p99(probeBefore), p99(probeAfter), nHung, len(probeBefore), len(probeAfter))
	t.Logf("FIGURE fleet: worst per-cluster refresh p99 %.0f ms (%s) before, %.0f ms (%s) with the hung ones, not counting them", wb, wbAt, wa, waAt)
	t.Logf("FIGURE fleet: hung clusters read up 0 after %.1f s at most (median %.1f s; refresh %s, refresh timeout %s)",
		slices.Max(detect), medianOf(detect), refresh, refresh*8/10)
	for i := range nHung {
		for _, port := range clusters[i].Ports() {
			clusters[i].Resume(t, port)
		}
	}
}

// seriesOf is the name of a fleet cluster's series called suffix:
// kafka_up for k000, redis_cluster_up for r000.
func seriesOf(cluster, suffix string) string {
	if strings.HasPrefix(cluster, "k") {
		return "kafka_" + suffix
	}
	return "redis_cluster_" + suffix
}

// scrapeProbe reads the fleet cluster's /probe.
func scrapeProbe(t *testing.T, e *exportertest.Exporter, name string) exportertest.Metrics {
	t.Helper()
	resp, err := e.Get("/probe?target=" + name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := exportertest.Parse([]byte(readAll(t, resp)))
	if err != nil {
		t.Fatalf("/probe?target=%s: %v", name, err)
	}
	return m
}
