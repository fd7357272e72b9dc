package e2e

// What Prometheus pays for each partition_metrics mode (issue 19): series
// per mode, series created under churn, a million partitions in the sparse
// mode, and a real Prometheus scraping the exporter (and kafka_exporter)
// for a fixed number of scrapes. The figures are in BENCHMARKS.md, "What
// Prometheus pays (issue 19)"; the long runs need FAILOVER_EXPORTER_SCALE_FIGURES=1
// (TestPrometheusCost its own variable, set by scripts/bench-prometheus-cost.sh).

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/promtest"
)

// loadAverage is /proc/loadavg's three load averages, for the figure lines.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// scrapeSeries returns the series of one gzip scrape of /metrics, each as
// its name and labels (the line without its value).
func scrapeSeries(t *testing.T, url string) map[string]struct{} {
	t.Helper()
	ids := map[string]struct{}{}
	scanMetrics(t, url, true, func(line string) {
		if line == "" || line[0] == '#' {
			return
		}
		ids[line[:strings.LastIndexByte(line, ' ')]] = struct{}{}
	})
	return ids
}

// perPartition reports whether a series (name and labels) is one of a
// partition's.
func perPartition(id string) bool { return strings.Contains(id, `,partition="`) }

// TestLargeCluster1MSparse records the figure for a million
// partitions in the unhealthy (sparse) mode: peak RSS at most 600 MB
// (checked), refresh at most 2 s and a gzip scrape at most 20 ms (recorded:
// times are not asserted on the shared machine). The cluster is healthy but
// for one partition in 10,000, so that 100 partitions are served in detail.
func TestLargeCluster1MSparse(t *testing.T) {
	requireScaleFigures(t)
	const partitions, every = 1_000_000, 10_000
	start := time.Now()
	addr := fakeKafka{partitions: partitions, unhealthyEvery: every}.start(t)
	t.Logf("fake cluster of %d partitions built in %s", partitions, time.Since(start).Round(time.Millisecond))
	f := measureCluster(t, largeClusterRun{
		addr: addr, partitions: partitions, leaderSeries: partitions / every,
		// The refresh timeout is 80% of the interval; a refresh of this size
		// takes seconds on a busy machine.
		interval:     10 * time.Second,
		maxPeakRSSMB: 600,
		flags:        []string{"--kafka.partition-metrics=unhealthy"},
		label:        " (unhealthy mode, 100 unhealthy)",
	})
	for _, target := range []struct {
		what      string
		got, want float64
	}{
		{"median refresh, s", medianOf(f.refreshes), 2},
		{"largest refresh, s", slices.Max(f.refreshes), 2},
		{"mean gzip scrape, ms", float64(f.gzip.total/time.Duration(f.gzip.n)) / 1e6, 20},
		{"slowest gzip scrape, ms", float64(f.gzip.worst) / 1e6, 20},
	} {
		verdict := "met"
		if target.got > target.want {
			verdict = "MISSED"
		}
		t.Logf("FIGURE 1M sparse target %s: %.3f against at most %.0f: %s", target.what, target.got, target.want, verdict)
	}
}

// seriesModes are the partition_metrics modes, default first.
var seriesModes = []string{"lean", "unhealthy", "full", "none"}

// TestSparse100kUnder20kSeries checks the bound: a healthy cluster
// of 100,000 partitions (1,000 topics) costs at most 20,000 series in the
// unhealthy mode, the exporter's own series included.
func TestSparse100kUnder20kSeries(t *testing.T) {
	addr := fakeKafka{partitions: 100_000}.start(t)
	e := exportertest.Start(t, "--kafka.server="+addr, "--kafka.cluster-name=big", "--kafka.partition-metrics=unhealthy")
	e.WaitReady(t, 2*time.Minute)
	series := scrapeSeries(t, e.URL)
	partition := 0
	for id := range series {
		if perPartition(id) {
			partition++
		}
	}
	t.Logf("100,000 healthy partitions, unhealthy mode: %d series, %d of them per partition", len(series), partition)
	if len(series) >= 20_000 || partition > 0 {
		t.Errorf("%d series (%d per partition), want under 20,000 and none per partition", len(series), partition)
	}
}

// TestSeriesPerMode records the series each mode serves for a healthy
// cluster of 10,000 and 100,000 partitions, with 100 partitions per topic
// (fakeLargeCluster's shape) and with 10 (the 10,000-partition
// cluster had 1,000 topics), and for the same clusters with one partition in
// a hundred under-replicated.
func TestSeriesPerMode(t *testing.T) {
	requireScaleFigures(t)
	for _, c := range []fakeKafka{
		{partitions: 10_000, perTopic: 100}, {partitions: 10_000, perTopic: 10},
		{partitions: 100_000, perTopic: 100}, {partitions: 100_000, perTopic: 10},
		{partitions: 10_000, perTopic: 100, unhealthyEvery: 100}, {partitions: 100_000, perTopic: 100, unhealthyEvery: 100},
	} {
		for _, mode := range seriesModes {
			addr := c.start(t)
			e := exportertest.Start(t, "--kafka.server="+addr, "--kafka.cluster-name=big", "--kafka.partition-metrics="+mode)
			e.WaitReady(t, 2*time.Minute)
			series := scrapeSeries(t, e.URL)
			partition, topic := 0, 0
			for id := range series {
				switch {
				case perPartition(id):
					partition++
				case strings.Contains(id, `topic="`):
					topic++
				}
			}
			unhealthy := 0
			if c.unhealthyEvery > 0 {
				unhealthy = c.partitions / c.unhealthyEvery
			}
			t.Logf("FIGURE series: %d partitions, %d topics, %d unhealthy, mode %s: %d series in total, %d per partition (%.2f a partition), %d per topic (%.1f a topic), %d other",
				c.partitions, c.partitions/c.perTopic, unhealthy, mode, len(series), partition, float64(partition)/float64(c.partitions),
				topic, float64(topic)/float64(c.partitions/c.perTopic), len(series)-partition-topic)
			e.Stop()
		}
	}
}

// writeKafkaConfig writes a config file for one cluster named big with the
// given mode and hold, and returns its path.
func writeKafkaConfig(t *testing.T, addr string, refresh time.Duration, mode string, hold time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yml")
	cfg := fmt.Sprintf("kafka:\n  - name: big\n    bootstrap_servers: [%s]\n    refresh_interval: %s\n    partition_metrics: %s\n    partition_metrics_hold: %s\n",
		addr, refresh, mode, hold)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFlappingPartitionSeriesAppearOnce runs the exporter against a topic
// of 100 partitions, one of which is under-replicated on every other
// refresh: in the lean and unhealthy modes its detailed series appear once,
// at its first refresh under-replicated, and stay (for the hold, 10 minutes
// by default) instead of coming and going refresh by refresh. With a hold
// shorter than a refresh they do come and go, which shows the test sees
// the flapping. A few seconds.
func TestFlappingPartitionSeriesAppearOnce(t *testing.T) {
	for _, run := range []struct {
		mode string
		hold time.Duration
	}{{"lean", 10 * time.Minute}, {"unhealthy", 10 * time.Minute}, {"unhealthy", time.Millisecond}} {
		t.Run(fmt.Sprintf("%s hold %s", run.mode, run.hold), func(t *testing.T) {
			const refresh = 200 * time.Millisecond
			// One episode, on partition 0, as long as the run.
			addr := fakeKafka{partitions: 100, flap: &flapSchedule{refreshes: 1000, episode: 1000, every: 1000, stride: 1}}.start(t)
			e := exportertest.Start(t, "--config.file="+writeKafkaConfig(t, addr, refresh, run.mode, run.hold))
			e.WaitReady(t, time.Minute)
			detail := `kafka_partition_offline{kafka_cluster="big",partition="0",topic="topic-00000"}`
			var seen []bool
			for start := time.Now(); time.Since(start) < 16*refresh; time.Sleep(refresh / 2) {
				series := scrapeSeries(t, e.URL)
				_, ok := series[detail]
				seen = append(seen, ok)
				leaders := 0
				for id := range series {
					if strings.HasPrefix(id, "kafka_partition_leader{") {
						leaders++
					}
				}
				if want := map[string]int{"lean": 100, "unhealthy": 1}[run.mode]; leaders != want && (ok || run.mode == "lean") {
					t.Fatalf("%d kafka_partition_leader series, want %d", leaders, want)
				}
			}
			shrinks := scrapeValue(t, e.URL, `kafka_topic_isr_shrinks_total{kafka_cluster="big",topic="topic-00000"}`)
			t.Logf("%s present in %d scrapes: %v; ISR shrinks %.0f", detail, len(seen), seen, shrinks)
			if shrinks < 4 {
				t.Fatalf("ISR shrinks %.0f: the partition did not flap", shrinks)
			}
			first := slices.Index(seen, true)
			cameAndWent := first < 0 || slices.Contains(seen[first:], false)
			if cameAndWent != (run.hold < refresh) {
				t.Errorf("%s came and went: %v, want %v with a hold of %s at a %s refresh: %v", detail, cameAndWent, run.hold < refresh, run.hold, refresh, seen)
			}
		})
	}
}

// TestChurnSeriesCreated records what a flapping cluster costs in new
// series: 10,000 partitions (100 topics), a refresh every second, a new
// episode every refresh, each on another partition, lasting 10 refreshes in
// which the partition is under-replicated on every other one. Every refresh
// the test scrapes /metrics and counts series never seen before (a new
// series for Prometheus) and series that come back after a scrape without
// them (on and off), per partition and per topic, for each mode, with a
// 30 s hold and with a hold shorter than a refresh.
func TestChurnSeriesCreated(t *testing.T) {
	requireScaleFigures(t)
	duration := 3 * time.Minute
	if v := os.Getenv("FAILOVER_EXPORTER_CHURN_DURATION"); v != "" {
		var err error
		if duration, err = time.ParseDuration(v); err != nil {
			t.Fatalf("FAILOVER_EXPORTER_CHURN_DURATION: %v", err)
		}
	}
	const refresh = time.Second
	for _, run := range []struct {
		mode string
		hold time.Duration
	}{
		{"unhealthy", 30 * time.Second}, {"lean", 30 * time.Second}, {"full", 30 * time.Second},
		{"unhealthy", time.Millisecond}, {"lean", time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%s hold %s", run.mode, run.hold), func(t *testing.T) {
			const partitions = 10_000
			schedule := &flapSchedule{refreshes: int(2*duration/refresh) + 100, episode: 10, every: 1, stride: 7919}
			addr := fakeKafka{partitions: partitions, flap: schedule}.start(t)
			e := exportertest.Start(t, "--config.file="+writeKafkaConfig(t, addr, refresh, run.mode, run.hold))
			e.WaitReady(t, time.Minute)
			// The first scrape is the baseline; a warm-up of a hold plus an
			// episode lets the detailed set reach its steady size first.
			warmup := run.hold + 12*refresh
			time.Sleep(warmup)
			seen := scrapeSeries(t, e.URL)
			prev := seen
			var created, back [2]int // [per partition, other]
			// By family (the name before the labels), for the figure.
			createdBy, backBy := map[string]int{}, map[string]int{}
			scrapes := 0
			start := time.Now()
			for next := start.Add(refresh); time.Since(start) < duration; next = next.Add(refresh) {
				time.Sleep(time.Until(next))
				now := scrapeSeries(t, e.URL)
				scrapes++
				for id := range now {
					kind := 1
					if perPartition(id) {
						kind = 0
					}
					family, _, _ := strings.Cut(id, "{")
					if _, ok := seen[id]; !ok {
						created[kind]++
						createdBy[family]++
						seen[id] = struct{}{}
					} else if _, ok := prev[id]; !ok {
						back[kind]++
						backBy[family]++
					}
				}
				prev = now
			}
			elapsed := time.Since(start)
			refreshes := scrapeValue(t, e.URL, `kafka_exporter_refreshes_total{kafka_cluster="big"}`)
			shrinks := 0.0
			scanMetrics(t, e.URL, true, func(line string) {
				if strings.HasPrefix(line, "kafka_broker_isr_shrinks_total{") {
					v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
					shrinks += v
				}
			})
			perHour := func(n int) float64 { return float64(n) * float64(time.Hour) / float64(elapsed) }
			episodes := elapsed.Seconds() / refresh.Seconds()
			t.Logf("FIGURE churn %s, hold %s, %d partitions, an episode a refresh of %s, flapping: over %s (%d scrapes, %.0f refreshes, %.0f ISR shrinks in all): "+
				"new series per partition %d (%.0f/h, %.1f per episode), per topic and other %d (%.0f/h); "+
				"series back after a scrape without them: per partition %d (%.0f/h), other %d (%.0f/h); %d series now; load average %s",
				run.mode, run.hold, partitions, 10*refresh, elapsed.Round(time.Second), scrapes, refreshes, shrinks,
				created[0], perHour(created[0]), float64(created[0])/episodes, created[1], perHour(created[1]),
				back[0], perHour(back[0]), back[1], perHour(back[1]), len(prev), loadAverage())
			t.Logf("FIGURE churn %s, hold %s: new series by family %v; back by family %v", run.mode, run.hold, createdBy, backBy)
			if shrinks < episodes {
				t.Errorf("%.0f ISR shrinks over %.0f episodes: the cluster did not flap", shrinks, episodes)
			}
			if run.hold > 12*refresh && back[0] > 0 {
				t.Errorf("with a hold of %s, %d partition series came back after a scrape without them", run.hold, back[0])
			}
		})
	}
}

// prometheusCostEnv enables TestPrometheusCost; scripts/bench-prometheus-cost.sh sets it.
const prometheusCostEnv = "FAILOVER_EXPORTER_PROMETHEUS_COST"

// TestPrometheusCost starts a real Prometheus scraping one target every
// 5 s until it has scraped it 16 times (the 80 s), then records
// what Prometheus holds: prometheus_tsdb_head_series, its RSS and peak RSS
// (/proc: VmRSS, VmHWM), its Go heap in use and the samples per scrape.
// One Prometheus at a time, each with a fresh TSDB: a baseline scraping a
// closed port, then this exporter in each mode against fake clusters of
// 10,000 partitions in 1,000 topics (the cluster) and 100,000 in
// 1,000 topics, and kafka_exporter against the 10,000-partition one when
// KAFKA_EXPORTER_BINARY names its binary. See scripts/bench-prometheus-cost.sh.
//
// Variables: FAILOVER_EXPORTER_PROMETHEUS_COST_CLUSTERS (default
// "10000/10,100000/100": partitions/per topic), ..._MODES (default all
// four), ..._SCRAPES (16), ..._INTERVAL (5s), ..._KAFKA_EXPORTER_MAX (the
// largest cluster kafka_exporter is run against, default 10000).
func TestPrometheusCost(t *testing.T) {
	if os.Getenv(prometheusCostEnv) == "" {
		t.Skipf("a benchmark of about 15 minutes; run scripts/bench-prometheus-cost.sh (or set %s=1)", prometheusCostEnv)
	}
	env := func(name, def string) string {
		if v := os.Getenv(prometheusCostEnv + "_" + name); v != "" {
			return v
		}
		return def
	}
	scrapes, err := strconv.Atoi(env("SCRAPES", "16"))
	if err != nil {
		t.Fatal(err)
	}
	interval, err := time.ParseDuration(env("INTERVAL", "5s"))
	if err != nil {
		t.Fatal(err)
	}
	kafkaExporterMax, err := strconv.Atoi(env("KAFKA_EXPORTER_MAX", "10000"))
	if err != nil {
		t.Fatal(err)
	}
	kafkaExporter := os.Getenv("KAFKA_EXPORTER_BINARY")
	if kafkaExporter == "" {
		t.Logf("KAFKA_EXPORTER_BINARY not set: kafka_exporter is not measured (see scripts/bench-prometheus-cost.sh)")
	}
	measure := func(t *testing.T, what, target string) {
		p := promtest.StartPrometheus(t, promtest.PrometheusOptions{ScrapeTargets: []string{target}, ScrapeInterval: interval, JobName: "target"})
		took := waitForScrapes(t, p, scrapes, interval)
		m := prometheusSelf(t, p.URL)
		pid := pidByArg(t, "--web.listen-address="+strings.TrimPrefix(p.URL, "http://"))
		samples := queryLast(t, p, `scrape_samples_scraped{job="target"}`)
		scrapeSeconds := queryLast(t, p, `max_over_time(scrape_duration_seconds{job="target"}[1h])`)
		up := queryLast(t, p, `min_over_time(up{job="target"}[1h])`)
		rss, peak := procStatusKB(t, pid, "VmRSS")/1024, procStatusKB(t, pid, "VmHWM")/1024
		// What Prometheus holds, without the garbage collector's headroom:
		// its heap profile endpoint with gc=1 runs a collection first.
		resp, err := http.Get(p.URL + "/debug/pprof/heap?gc=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		live := prometheusSelf(t, p.URL)["go_memstats_heap_inuse_bytes"]
		t.Logf("FIGURE prometheus %s: %d scrapes every %s in %s (up min %.0f), %.0f samples a scrape, slowest scrape %.2f s: head series %.0f (created %.0f), RSS %d MB, peak RSS (VmHWM) %d MB, process_resident_memory_bytes %.0f MB, Go heap in use %.0f MB, after a GC %.0f MB; load average %s",
			what, scrapes, interval, took.Round(time.Second), up, samples, scrapeSeconds, m["prometheus_tsdb_head_series"], m["prometheus_tsdb_head_series_created_total"],
			rss, peak, m["process_resident_memory_bytes"]/(1<<20), m["go_memstats_heap_inuse_bytes"]/(1<<20), live/(1<<20), loadAverage())
	}
	t.Run("baseline", func(t *testing.T) {
		measure(t, "baseline (a target that refuses connections)", fmt.Sprintf("127.0.0.1:%d", exportertest.FreePort(t)))
	})
	for _, spec := range strings.Split(env("CLUSTERS", "10000/10,100000/100"), ",") {
		var c fakeKafka
		if _, err := fmt.Sscanf(spec, "%d/%d", &c.partitions, &c.perTopic); err != nil {
			t.Fatalf("cluster %q: want partitions/per-topic: %v", spec, err)
		}
		shape := fmt.Sprintf("%d partitions in %d topics", c.partitions, c.partitions/c.perTopic)
		for _, mode := range strings.Split(env("MODES", strings.Join(seriesModes, ",")), ",") {
			t.Run(fmt.Sprintf("%d-%d-%s", c.partitions, c.perTopic, mode), func(t *testing.T) {
				e := exportertest.Start(t, "--kafka.server="+c.start(t), "--kafka.cluster-name=big", "--kafka.partition-metrics="+mode)
				e.WaitReady(t, 2*time.Minute)
				measure(t, fmt.Sprintf("failover_exporter %s, %s", mode, shape), e.Addr)
			})
		}
		if kafkaExporter != "" && c.partitions <= kafkaExporterMax {
			t.Run(fmt.Sprintf("%d-%d-kafka_exporter", c.partitions, c.perTopic), func(t *testing.T) {
				// kafka_exporter's sarama asks for Metadata v6 (Kafka 2.0.0, its default).
				k := c
				k.version, k.kafkaExporter = 6, true
				addr := startKafkaExporter(t, kafkaExporter, k.start(t), interval)
				measure(t, "kafka_exporter, "+shape, addr)
			})
		}
	}
}

// waitForScrapes waits until Prometheus has scraped its target n times and
// returns how long that took.
func waitForScrapes(t *testing.T, p *promtest.Prometheus, n int, interval time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	// A scrape that creates a million series takes longer than the
	// interval to append, and the scrapes it overlaps are skipped.
	deadline := start.Add(time.Duration(n+6)*interval + 5*time.Minute)
	for {
		res, err := p.TryQuery(`count_over_time(up{job="target"}[1h])`, time.Time{})
		if err == nil && len(res) == 1 && res[0].Last() >= float64(n) {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not scrape its target %d times in %s: %v %v", n, time.Since(start), res, err)
		}
		time.Sleep(interval / 10)
	}
}

// queryLast runs an instant query that returns one series and returns its value.
func queryLast(t *testing.T, p *promtest.Prometheus, expr string) float64 {
	t.Helper()
	res := p.Query(t, expr)
	if len(res) != 1 {
		t.Fatalf("%s: %d series, want 1: %v", expr, len(res), res)
	}
	return res[0].Last()
}

// prometheusSelf reads Prometheus's own /metrics: the value of every
// series without labels.
func prometheusSelf(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.ContainsAny(name, "{#") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			m[name] = v
		}
	}
	return m
}

// pidByArg finds the process whose command line has arg.
func pidByArg(t *testing.T, arg string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue
		}
		if slices.ContainsFunc(bytes.Split(cmdline, []byte{0}), func(a []byte) bool { return string(a) == arg }) {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			return pid
		}
	}
	t.Fatalf("no process with %s on its command line", arg)
	return 0
}

// startKafkaExporter runs danielqsj/kafka_exporter against the cluster at
// addr and waits until it serves its first scrape. Its metadata refresh
// follows the scrape interval, as this exporter's refresh does.
func startKafkaExporter(t *testing.T, bin, addr string, interval time.Duration) string {
	t.Helper()
	listen := fmt.Sprintf("127.0.0.1:%d", exportertest.FreePort(t))
	cmd := exec.Command(bin, "--kafka.server="+addr, "--web.listen-address="+listen, "--refresh.metadata="+interval.String())
	logs := &lab.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kafka_exporter: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("kafka_exporter log (tail):\n%s", tailLines(logs.String(), 40))
		}
	})
	client := http.Client{Timeout: time.Minute}
	start := time.Now()
	for {
		resp, err := client.Get("http://" + listen + "/metrics")
		if err == nil {
			n := 0
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "kafka_topic_partition_current_offset{") {
					n++
				}
			}
			resp.Body.Close()
			if n > 0 {
				t.Logf("kafka_exporter serves %d partitions' offsets, first scrape after %s", n, time.Since(start).Round(time.Millisecond))
				return listen
			}
		}
		select {
		case <-done:
			t.Fatalf("kafka_exporter exited: %s", tailLines(logs.String(), 40))
		default:
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("kafka_exporter serves no partition after %s: %v\n%s", time.Since(start), err, tailLines(logs.String(), 40))
		}
		time.Sleep(time.Second)
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
