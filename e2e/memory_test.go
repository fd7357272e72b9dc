package e2e

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// scrapeTimed fetches /metrics, gzip-compressed as Prometheus asks for it
// or plain as curl does, and returns the time to the last byte. The body is
// discarded as it arrives, so the figure is the exporter's, not the reader's.
func scrapeTimed(t *testing.T, url string, gzip bool) time.Duration {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	// Transport compression off: time the bytes on the wire, not the inflate.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 30 * time.Second}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// scanMetrics fetches /metrics, gzip-compressed or plain, and calls line
// for every line of the decompressed text, without holding the page (at
// 500,000 partitions it is over half a gigabyte).
func scanMetrics(t *testing.T, url string, compressed bool, line func(string)) {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	if compressed {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 2 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if compressed {
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("asked for gzip, got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
		// compress/gzip, as Prometheus reads a scrape; it checks the CRC.
		zr, err := gzip.NewReader(body)
		if err != nil {
			t.Fatal(err)
		}
		body = zr
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read /metrics (gzip %v): %v", compressed, err)
	}
}

// countSeries counts the series lines of one family in a scrape.
func countSeries(t *testing.T, url string, compressed bool, name string) int {
	t.Helper()
	n := 0
	scanMetrics(t, url, compressed, func(line string) {
		if strings.HasPrefix(line, name+"{") {
			n++
		}
	})
	return n
}

// timings summarises scrape durations.
type timings struct {
	n            int
	total, worst time.Duration
}

func (d *timings) add(x time.Duration) { d.n++; d.total += x; d.worst = max(d.worst, x) }

func (d timings) String() string {
	if d.n == 0 {
		return "none"
	}
	return fmt.Sprintf("mean %s, slowest %s", (d.total / time.Duration(d.n)).Round(100*time.Microsecond), d.worst.Round(100*time.Microsecond))
}

// largeClusterFigures are what measureLargeCluster records.
type largeClusterFigures struct {
	gzip, plain   timings
	slowest       time.Duration
	refreshes     []float64 // seconds, the exporter's own figure, one per scrape
	rssMB, peakMB int
	series        int // series lines of one scrape, the exporter's own included
}

// largeClusterRun is one run of measureCluster.
type largeClusterRun struct {
	addr         string // the fake cluster's bootstrap address
	partitions   int
	leaderSeries int // kafka_partition_leader series the mode serves
	interval     time.Duration
	maxPeakRSSMB int           // 0: recorded, not checked
	maxScrape    time.Duration // 0: recorded, not checked
	flags        []string      // more exporter flags, such as --kafka.partition-metrics
	label        string        // names the figure beside the partition count
}

// measureLargeCluster runs the exporter against a cluster of the given
// size, refreshing every interval, scrapes it ten times, spaced by a third
// of the interval, and records the figures.
func measureLargeCluster(t *testing.T, partitions int, interval time.Duration, maxPeakRSSMB int, maxScrape time.Duration) largeClusterFigures {
	return measureCluster(t, largeClusterRun{
		addr: fakeLargeCluster(t, partitions, false), partitions: partitions, leaderSeries: partitions,
		interval: interval, maxPeakRSSMB: maxPeakRSSMB, maxScrape: maxScrape,
	})
}

// measureCluster is measureLargeCluster for any fake cluster and flags.
func measureCluster(t *testing.T, run largeClusterRun) largeClusterFigures {
	e := exportertest.Start(t, append([]string{"--kafka.server=" + run.addr, "--kafka.cluster-name=big", "--refresh.interval=" + run.interval.String()}, run.flags...)...)
	e.WaitReady(t, 5*time.Minute)
	var f largeClusterFigures
	// The series are complete, and both encodings carry all of them.
	for _, compressed := range []bool{true, false} {
		leaders, series := 0, 0
		scanMetrics(t, e.URL, compressed, func(line string) {
			if strings.HasPrefix(line, "kafka_partition_leader{") {
				leaders++
			}
			if line != "" && line[0] != '#' {
				series++
			}
		})
		if leaders != run.leaderSeries {
			t.Fatalf("partition leader series (gzip %v) = %d, want %d", compressed, leaders, run.leaderSeries)
		}
		f.series = series
	}
	// Several refreshes and scrapes, both encodings, so the peak includes
	// steady-state churn.
	const scrapes = 10
	for i := 0; i < scrapes; i++ {
		compressed := i%2 == 0
		d := scrapeTimed(t, e.URL, compressed)
		t.Logf("scrape %d gzip=%v %s", i, compressed, d)
		if compressed {
			f.gzip.add(d)
		} else {
			f.plain.add(d)
		}
		f.slowest = max(f.slowest, d)
		f.refreshes = append(f.refreshes, scrapeValue(t, e.URL, `kafka_exporter_refresh_duration_seconds{kafka_cluster="big"}`))
		time.Sleep(run.interval / 3)
	}
	f.rssMB = procStatusKB(t, e.PID(), "VmRSS") / 1024
	f.peakMB = procStatusKB(t, e.PID(), "VmHWM") / 1024
	t.Logf("FIGURE %d partitions%s: gzip /metrics %s; plain /metrics %s; refresh (kafka_exporter_refresh_duration_seconds) median %.0f ms, up to %.0f ms; RSS %d MB, peak RSS %d MB; %d series; load average %s",
		run.partitions, run.label, f.gzip, f.plain, medianOf(f.refreshes)*1000, slices.Max(f.refreshes)*1000, f.rssMB, f.peakMB, f.series, loadAverage())
	if run.maxPeakRSSMB > 0 && f.peakMB > run.maxPeakRSSMB {
		t.Errorf("peak RSS %d MB at %d partitions, requirement is at most %d MB", f.peakMB, run.partitions, run.maxPeakRSSMB)
	}
	if run.maxScrape > 0 && f.slowest > run.maxScrape {
		t.Errorf("slowest /metrics response %s at %d partitions, requirement is at most %s for every scrape", f.slowest, run.partitions, run.maxScrape)
	}
	return f
}

// TestLargeClusterBudget10k checks the requirements at 10,000 partitions: a
// full /metrics response in at most 100 ms and a peak RSS of at most 60 MB
// on the 2-core machine.
func TestLargeClusterBudget10k(t *testing.T) {
	measureLargeCluster(t, 10_000, time.Second, 60, 100*time.Millisecond)
}

// TestLargeCluster100k records the 100,000-partition figures and checks the
// memory requirement, peak RSS at most 250 MB. Scrape times are recorded,
// not asserted: a timed assertion needs a 10x margin on a shared machine.
func TestLargeCluster100k(t *testing.T) {
	measureLargeCluster(t, 100_000, time.Second, 250, 0)
}

// scaleFiguresEnv enables the long figure runs (500,000 partitions, churn,
// a 100-node Redis Cluster); see BENCHMARKS.md.
const scaleFiguresEnv = "FAILOVER_EXPORTER_SCALE_FIGURES"

// TestLargeCluster500k records the figures at the upper end of real
// clusters. Nothing in the exporter is quadratic in partitions: compare
// with the 100,000-partition figures.
func TestLargeCluster500k(t *testing.T) {
	requireScaleFigures(t)
	// A refresh at this size takes seconds (most of it the mock broker
	// encoding its response in this process), so refresh less often.
	measureLargeCluster(t, 500_000, 6*time.Second, 0, 0)
}

// TestLargeClusterChurn100k refreshes a 100,000-partition cluster whose
// leaders all move on every refresh, once a second, and checks that the
// heap (through the GC goal) and RSS stay flat: the second half of the run may not peak higher than
// the first half by more than a quarter. The default 6 minutes are 360
// refreshes, as many as 30 minutes at the default 5 s refresh interval.
// (The refresh timeout is the interval at most, and a refresh of this
// cluster takes a few hundred milliseconds, so 1 s is as fast as it goes.)
func TestLargeClusterChurn100k(t *testing.T) {
	requireScaleFigures(t)
	duration := 6 * time.Minute
	if v := os.Getenv("FAILOVER_EXPORTER_CHURN_DURATION"); v != "" {
		var err error
		if duration, err = time.ParseDuration(v); err != nil {
			t.Fatalf("FAILOVER_EXPORTER_CHURN_DURATION: %v", err)
		}
	}
	addr := fakeLargeCluster(t, 100_000, true)
	e := exportertest.Start(t, "--kafka.server="+addr, "--kafka.cluster-name=big", "--refresh.interval=1s")
	e.WaitReady(t, 2*time.Minute)
	const samples = 10
	var rss, heap [samples]int
	start := time.Now()
	for i := range samples {
		time.Sleep(time.Until(start.Add(duration * time.Duration(i+1) / samples)))
		scrapeTimed(t, e.URL, true)
		rss[i] = procStatusKB(t, e.PID(), "VmRSS") / 1024
		// The GC goal is (1 + GOGC/100) × the heap that was live after the
		// last collection: unlike the heap in use, it does not depend on
		// where in the GC cycle the sample falls.
		heap[i] = int(scrapeValue(t, e.URL, "go_memstats_next_gc_bytes") / (1 << 20))
		t.Logf("after %s: RSS %d MB, GC goal %d MB", time.Since(start).Round(time.Second), rss[i], heap[i])
	}
	refreshes := scrapeValue(t, e.URL, `kafka_exporter_refreshes_total{kafka_cluster="big"}`)
	failures := scrapeValue(t, e.URL, `kafka_exporter_refresh_failures_total{kafka_cluster="big"}`)
	// The default partition_metrics mode, lean, serves no per-partition
	// counter: the topic's, over its 100 partitions, all moving together.
	changes := scrapeValue(t, e.URL, `kafka_topic_leader_changes_total{kafka_cluster="big",topic="topic-00000"}`) / 100
	peak := procStatusKB(t, e.PID(), "VmHWM") / 1024
	t.Logf("FIGURE churn at 100000 partitions for %s: %.0f refreshes (%.0f failed), %.0f leader changes per partition; RSS MB %v; GC goal ((1 + GOGC/100) × live heap) MB %v; peak RSS %d MB",
		duration, refreshes, failures, changes, rss, heap, peak)
	if changes < (refreshes-failures)/2 {
		t.Errorf("only %.0f leader changes in %.0f successful refreshes: the cluster did not churn", changes, refreshes-failures)
	}
	for name, series := range map[string][samples]int{"RSS": rss, "GC goal": heap} {
		first, second := slices.Max(series[:samples/2]), slices.Max(series[samples/2:])
		if second > first+first/4 {
			t.Errorf("%s grew under churn: peak %d MB in the first half, %d MB in the second", name, first, second)
		}
	}
}
