package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// redisExporterBinary is Debian's build of oliver006/redis_exporter, which
// `scripts/install-deps.sh redis_exporter` installs for this comparison only.
const redisExporterBinary = "prometheus-redis-exporter"

// memory is what /proc/PID/status says of a process: resident memory split
// into anonymous pages (heap, stacks) and file pages (the binary's own text
// and tables, shared with the page cache), and the peak.
type memory struct{ rss, anon, file, peak int }

func readMemory(t *testing.T, pid int) memory {
	return memory{
		rss:  procStatusKB(t, pid, "VmRSS") / 1024,
		anon: procStatusKB(t, pid, "RssAnon") / 1024,
		file: procStatusKB(t, pid, "RssFile") / 1024,
		peak: procStatusKB(t, pid, "VmHWM") / 1024,
	}
}

func (m memory) String() string {
	return fmt.Sprintf("peak %d MB (RSS %d MB: %d MB anonymous, %d MB file)", m.peak, m.rss, m.anon, m.file)
}

// TestRedisMemoryAgainstRedisExporter records the exporter's memory for one
// 100-node Redis Cluster (50 masters, 50 replicas) against redis_exporter's
// for the same cluster, each read the way it is meant to be: this exporter
// refreshing the whole cluster every 5 s, redis_exporter scraped on /scrape
// for each of the 100 nodes every 5 s (its multi-target mode, one target per
// node, as Prometheus would). Each process's memory before it reads any
// cluster is recorded too, so the cost of the cluster itself is the
// difference.
func TestRedisMemoryAgainstRedisExporter(t *testing.T) {
	requireScaleFigures(t)
	path, err := exec.LookPath(redisExporterBinary)
	if err != nil {
		t.Fatalf("%s is not installed (scripts/install-deps.sh redis_exporter installs Debian's build): %v", redisExporterBinary, err)
	}
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 50, Replicas: 1})

	theirPort := exportertest.FreePort(t)
	theirs := exec.Command(path, fmt.Sprintf("-web.listen-address=127.0.0.1:%d", theirPort), "-redis.addr=")
	if err := theirs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = theirs.Process.Kill(); _ = theirs.Wait() })
	theirURL := fmt.Sprintf("http://127.0.0.1:%d", theirPort)
	waitHTTP(t, theirURL+"/metrics")
	theirIdle := readMemory(t, theirs.Process.Pid)

	// Ours before it reads a cluster: the same binary watching an address
	// where nothing listens, after a few refreshes have failed.
	idle := exportertest.Start(t, fmt.Sprintf("--redis.addr=127.0.0.1:%d", exportertest.FreePort(t)),
		"--redis.cluster-name=none", "--refresh.interval=5s")
	idle.WaitReady(t, time.Minute)
	time.Sleep(12 * time.Second)
	ourIdle := readMemory(t, idle.PID())
	idle.Stop()

	ours := exportertest.Start(t, "--redis.addr="+c.Addrs()[0], "--redis.cluster-name=big", "--refresh.interval=5s")
	ours.WaitReady(t, time.Minute)

	const rounds = 12
	for round := 0; round < rounds; round++ {
		start := time.Now()
		scrapeEveryNode(t, theirURL, c.Ports())
		if _, err := ours.TryScrape(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5*time.Second - time.Since(start))
	}
	if got := countSeries(t, ours.URL, true, "redis_cluster_node_info"); got != 100 {
		t.Fatalf("redis_cluster_node_info series: %d, want 100", got)
	}
	ourMemory, theirMemory := readMemory(t, ours.PID()), readMemory(t, theirs.Process.Pid)
	ourCost, theirCost := ourMemory.peak-ourIdle.peak, theirMemory.peak-theirIdle.peak
	t.Logf("FIGURE redis 100 nodes, %d rounds of 5 s: failover_exporter %s, %s watching nothing; redis_exporter %s, %s before its first scrape",
		rounds, ourMemory, ourIdle, theirMemory, theirIdle)
	t.Logf("FIGURE redis 100 nodes, what the cluster adds to the peak: failover_exporter %d MB, redis_exporter %d MB", ourCost, theirCost)
	// The requirement is on what a cluster costs, which is what a fleet
	// multiplies; the binary's own pages are paid once per process.
	if ourCost > theirCost+2 {
		t.Errorf("the 100-node cluster adds %d MB to this exporter's peak, %d MB to redis_exporter's", ourCost, theirCost)
	}
}

// scrapeEveryNode asks redis_exporter for each node as Prometheus does, ten
// targets at a time, and fails on any answer but 200 with redis_up 1.
func scrapeEveryNode(t *testing.T, url string, ports []int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(ports))
	limit := make(chan struct{}, 10)
	for _, port := range ports {
		wg.Add(1)
		go func(port int) {
			defer wg.Done()
			limit <- struct{}{}
			defer func() { <-limit }()
			resp, err := http.Get(fmt.Sprintf("%s/scrape?target=redis://127.0.0.1:%d", url, port))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			m, err := exportertest.Parse(body)
			if err != nil {
				errs <- fmt.Errorf("node %d: %v", port, err)
				return
			}
			if up, _ := m.Value("redis_up", nil); resp.StatusCode != 200 || up != 1 {
				errs <- fmt.Errorf("node %d: status %d, redis_up %v", port, resp.StatusCode, up)
			}
		}(port)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitHTTP waits up to 30 s for url to answer 200: redis_exporter has no
// readiness endpoint (ours has /-/ready, exportertest.WaitReady).
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within 30 s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
