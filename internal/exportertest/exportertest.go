// Package exportertest builds the failover_exporter binary, runs it as a
// real process on 127.0.0.1 and scrapes it over HTTP, for end-to-end tests.
package exportertest

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds the exporter once per test binary and returns its path, or
// returns $FAILOVER_EXPORTER_BINARY if set.
func Binary(t testing.TB) string {
	t.Helper()
	// A prebuilt binary, to compare builds in one run (see BENCHMARKS.md).
	if bin := os.Getenv("FAILOVER_EXPORTER_BINARY"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		// One fixed path per user instead of a new temp dir per test binary:
		// build beside it and rename, which is atomic, so a test still
		// running the previous binary keeps its copy.
		// The path is also per checkout: two work trees testing at once
		// must never run each other's binary.
		root := lab.RepoRoot(t)
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("failover_exporter-test-%d-%08x", os.Getuid(), crc32.ChecksumIEEE([]byte(root))))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		tmp, err := os.CreateTemp(dir, "build-")
		if err != nil {
			buildErr = err
			return
		}
		tmp.Close()
		cmd := exec.Command("go", "build", "-o", tmp.Name(), ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp.Name())
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binPath = filepath.Join(dir, "failover_exporter")
		if err := os.Rename(tmp.Name(), binPath); err != nil {
			buildErr = err
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Exporter is a running exporter process.
type Exporter struct {
	URL  string
	Addr string
	cmd  *exec.Cmd
	// logs is the file the exporter's stdout and stderr go to. A file,
	// not a pipe: the exporter's write lands in it before write returns,
	// so a test that saw an answer also sees what was logged before it.
	logs string
	done chan struct{}
	// user and password are sent as basic auth when user is set.
	user, password string
}

// Get sends GET path to the exporter (with its basic auth, if any), with
// a 5 s timeout.
func (e *Exporter) Get(path string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, e.URL+path, nil)
	if err != nil {
		return nil, err
	}
	if e.user != "" {
		req.SetBasicAuth(e.user, e.password)
	}
	client := http.Client{Timeout: 5 * time.Second}
	return client.Do(req)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start runs the exporter with args plus a --web.listen-address on a free
// loopback port, waits until /-/healthy answers, and stops it at cleanup.
// Its log is printed when the test fails.
func Start(t testing.TB, args ...string) *Exporter {
	t.Helper()
	return start(t, "", "", args)
}

// StartWithBasicAuth is Start for an exporter whose --web.config.file (in
// args) requires HTTP basic auth: the helpers send user and password.
func StartWithBasicAuth(t testing.TB, user, password string, args ...string) *Exporter {
	t.Helper()
	return start(t, user, password, args)
}

func start(t testing.TB, user, password string, args []string) *Exporter {
	t.Helper()
	bin := Binary(t)
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	cmd := exec.Command(bin, append([]string{"--web.listen-address=" + addr}, args...)...)
	logs, err := os.CreateTemp(t.TempDir(), "exporter-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	err = cmd.Start()
	logs.Close() // the child has its own copy
	if err != nil {
		t.Fatalf("start exporter: %v", err)
	}
	e := &Exporter{URL: "http://" + addr, Addr: addr, cmd: cmd, logs: logs.Name(), done: make(chan struct{}), user: user, password: password}
	go func() { _ = cmd.Wait(); close(e.done) }()
	t.Cleanup(func() {
		e.Stop()
		if t.Failed() {
			t.Logf("exporter log:\n%s", e.Logs())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := e.Get("/-/healthy")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e
			}
		}
		select {
		case <-e.done:
			t.Fatalf("exporter exited at start: %s", e.Logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter did not become healthy: %v\n%s", err, e.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PID is the exporter's process ID.
func (e *Exporter) PID() int { return e.cmd.Process.Pid }

// Logs returns everything the exporter wrote so far.
func (e *Exporter) Logs() string {
	b, err := os.ReadFile(e.logs)
	if err != nil {
		return fmt.Sprintf("(reading the exporter's log: %v)", err)
	}
	return string(b)
}

// Signal sends sig to the exporter.
func (e *Exporter) Signal(sig os.Signal) error { return e.cmd.Process.Signal(sig) }

// Stop terminates the exporter and waits for it.
func (e *Exporter) Stop() {
	select {
	case <-e.done:
		return
	default:
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
	}
}

// WaitReady waits until /-/ready answers 200.
func (e *Exporter) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := e.Get("/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter not ready after %s\n%s", timeout, e.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Scrape fetches and parses /metrics.
func (e *Exporter) Scrape(t testing.TB) Metrics {
	t.Helper()
	m, err := e.TryScrape()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TryScrape fetches and parses /metrics, returning errors to the caller.
func (e *Exporter) TryScrape() (Metrics, error) {
	resp, err := e.Get("/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s: %s", resp.Status, body)
	}
	return Parse(body)
}

// Metrics are parsed metric families by name.
type Metrics map[string]*dto.MetricFamily

// Parse parses text exposition format.
func Parse(body []byte) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return Metrics(families), nil
}

// Sample is one series' labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Series returns every series of the metric whose labels include match.
// A histogram's series are named as in a query: name_bucket (with an le
// label), name_sum and name_count.
func (m Metrics) Series(name string, match map[string]string) []Sample {
	mf, ok := m[name]
	if !ok {
		return m.histogramSeries(name, match)
	}
	var out []Sample
	for _, metric := range mf.GetMetric() {
		labels := map[string]string{}
		for _, lp := range metric.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		if !matches(labels, match) {
			continue
		}
		var v float64
		switch {
		case metric.Gauge != nil:
			v = metric.GetGauge().GetValue()
		case metric.Counter != nil:
			v = metric.GetCounter().GetValue()
		case metric.Untyped != nil:
			v = metric.GetUntyped().GetValue()
		}
		out = append(out, Sample{Labels: labels, Value: v})
	}
	return out
}

// Value returns the value of the single series of name matching the labels,
// and false when there is no such series or more than one.
func (m Metrics) Value(name string, match map[string]string) (float64, bool) {
	s := m.Series(name, match)
	if len(s) != 1 {
		return 0, false
	}
	return s[0].Value, true
}

// Describe prints the series of name matching the labels, for messages.
func (m Metrics) Describe(name string, match map[string]string) string {
	var lines []string
	for _, s := range m.Series(name, match) {
		keys := make([]string, 0, len(s.Labels))
		for k := range s.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%q", k, s.Labels[k]))
		}
		lines = append(lines, fmt.Sprintf("%s{%s} %g", name, strings.Join(parts, ","), s.Value))
	}
	if len(lines) == 0 {
		return name + ": no series"
	}
	return strings.Join(lines, "\n")
}

// histogramSeries returns the _bucket, _sum or _count series of a histogram.
func (m Metrics) histogramSeries(name string, match map[string]string) []Sample {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		mf := m[base]
		if !ok || mf == nil || mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		var out []Sample
		for _, metric := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range metric.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			h := metric.GetHistogram()
			switch suffix {
			case "_sum":
				if matches(labels, match) {
					out = append(out, Sample{Labels: labels, Value: h.GetSampleSum()})
				}
			case "_count":
				if matches(labels, match) {
					out = append(out, Sample{Labels: labels, Value: float64(h.GetSampleCount())})
				}
			case "_bucket":
				buckets := h.GetBucket()
				for i := 0; i <= len(buckets); i++ {
					le, count := "+Inf", h.GetSampleCount()
					if i < len(buckets) {
						le, count = strconv.FormatFloat(buckets[i].GetUpperBound(), 'g', -1, 64), buckets[i].GetCumulativeCount()
						if math.IsInf(buckets[i].GetUpperBound(), +1) {
							continue
						}
					}
					withLE := maps.Clone(labels)
					withLE["le"] = le
					if matches(withLE, match) {
						out = append(out, Sample{Labels: withLE, Value: float64(count)})
					}
				}
			}
		}
		return out
	}
	return nil
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}
