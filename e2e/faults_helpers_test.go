package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// Helpers shared by the fault-injection tests (faults_*_test.go). Names
// start with fault so that they do not collide with the other e2e files.

// faultScrapeLimit is the guarantee under every fault: /metrics answers in
// under a second, because a scrape never waits on a cluster.
const faultScrapeLimit = time.Second

// faultConfig writes a config file into a temporary directory.
func faultConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// faultScrape scrapes once and fails the test if the scrape errors or takes
// faultScrapeLimit or longer.
func faultScrape(t *testing.T, e *exportertest.Exporter) (exportertest.Metrics, time.Duration) {
	t.Helper()
	start := time.Now()
	m, err := e.TryScrape()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	if took >= faultScrapeLimit {
		t.Errorf("scrape took %s, want under %s", took.Round(time.Millisecond), faultScrapeLimit)
	}
	return m, took
}

// faultGauge returns the single series of name with the labels, or -1 when
// there is none, for figures and loose checks.
func faultGauge(m exportertest.Metrics, name string, labels map[string]string) float64 {
	v, ok := m.Value(name, labels)
	if !ok {
		return -1
	}
	return v
}

// faultNextRefresh waits until refreshesName has grown by n over its value
// in m and returns that scrape; every scrape on the way must be fast.
func faultNextRefresh(t *testing.T, e *exportertest.Exporter, refreshesName string, m exportertest.Metrics, n int, timeout time.Duration) exportertest.Metrics {
	t.Helper()
	from := faultGauge(m, refreshesName, nil)
	deadline := time.Now().Add(timeout)
	for {
		next, _ := faultScrape(t, e)
		if faultGauge(next, refreshesName, nil) >= from+float64(n) {
			return next
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not grow by %d within %s (from %v)", refreshesName, n, timeout, from)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// faultConcurrentScrapes fires n scrapes at once and returns the slowest.
func faultConcurrentScrapes(t *testing.T, url string, n int) time.Duration {
	t.Helper()
	return faultConcurrentGets(t, url, "/metrics", n)
}

// faultBurstLimit is what the slowest of a burst of concurrent scrapes
// must stay under: faultScrapeLimit, or on a machine so loaded that a
// burst of as many health checks (/-/healthy, which reads nothing) took
// a tenth of that or more, ten times that burst's slowest: the machine's
// slowness is not a scrape waiting on a cluster, which waits a request
// timeout. healthy is the slowest health check of the same bursts.
func faultBurstLimit(healthy time.Duration) time.Duration {
	return max(faultScrapeLimit, 10*healthy)
}

// faultConcurrentGets fires n GETs of path at once and returns the
// slowest.
func faultConcurrentGets(t *testing.T, url, path string, n int) time.Duration {
	t.Helper()
	var wg sync.WaitGroup
	durations := make([]time.Duration, n)
	errs := make([]error, n)
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := client.Get(url + path)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %s", resp.Status)
				}
			}
			durations[i], errs[i] = time.Since(start), err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent scrape: %v", err)
		}
	}
	return slices.Max(durations)
}

// faultBlackHole listens on 127.0.0.1 and accepts connections but never
// reads or answers: a broker whose process is wedged above the kernel, or a
// firewall that swallows traffic after the handshake. It returns the
// address; connections and the listener are closed at cleanup.
func faultBlackHole(t *testing.T) (addr string, accepted func() int) {
	t.Helper()
	hole := startLoopbackServer(t, func(*loopbackServer, net.Conn) {})
	return hole.Addr, hole.Accepted
}

// faultGoroutines tracks go_goroutines over many refreshes and reports
// whether they stay bounded.
type faultGoroutines struct {
	baseline float64
	counts   []float64
}

// check fails the test if the goroutines grew across the run: the last
// quarter's peak must be within slack of the first quarter's, and nothing
// may exceed the baseline (before the fault) by more than peakSlack.
func (g *faultGoroutines) check(t *testing.T, slack, peakSlack float64) {
	t.Helper()
	n := len(g.counts)
	if n < 8 {
		t.Fatalf("only %d goroutine samples", n)
	}
	first, last := slices.Max(g.counts[:n/4]), slices.Max(g.counts[n-n/4:])
	t.Logf("FIGURE go_goroutines: %v before the fault; over %d refreshes %v (first-quarter peak %v, last-quarter peak %v)",
		g.baseline, n, g.counts, first, last)
	if last > first+slack {
		t.Errorf("go_goroutines grew from %v to %v over %d refreshes (allowed +%v): %v", first, last, n, slack, g.counts)
	}
	if peak := slices.Max(g.counts); peak > g.baseline+peakSlack {
		t.Errorf("go_goroutines peaked at %v, %v before the fault (allowed +%v)", peak, g.baseline, peakSlack)
	}
}

// faultHang SIGSTOPs pid and returns a function that SIGCONTs it once; the
// same function runs at cleanup, so no process is left stopped when the
// test fails half-way.
func faultHang(t *testing.T, what string, pid int) (resume func()) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT %s %d: %v", what, pid, err)
			}
		}
	}
	t.Cleanup(resume)
	return resume
}
