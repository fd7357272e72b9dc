package promtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PrometheusOptions configures StartPrometheus.
type PrometheusOptions struct {
	// ScrapeTargets are host:port addresses scraped in one job.
	ScrapeTargets []string
	// JobName is the job of the targets (default "failover_exporter").
	JobName string
	// RulesFile is loaded as a rule file when set.
	RulesFile string
	// AlertmanagerURL (http://host:port) receives the alerts when set.
	AlertmanagerURL string
	// ScrapeConfigs are further scrape_configs entries, as YAML list items
	// indented by two spaces ("  - job_name: ..."), written after the job of
	// ScrapeTargets (left out when there are none).
	ScrapeConfigs string
	// ScrapeInterval and EvalInterval default to 1s.
	ScrapeInterval, EvalInterval time.Duration
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	URL  string
	proc *process
}

// StartPrometheus writes a config into a temporary directory, starts
// Prometheus on a free loopback port with a temporary TSDB, waits until it is
// ready and stops it when the test ends.
func StartPrometheus(t testing.TB, opts PrometheusOptions) *Prometheus {
	t.Helper()
	bin := lookPath(t, prometheusBinary)
	if opts.JobName == "" {
		opts.JobName = "failover_exporter"
	}
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = time.Second
	}
	if opts.EvalInterval <= 0 {
		opts.EvalInterval = time.Second
	}
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n",
		model(opts.ScrapeInterval), model(opts.ScrapeInterval), model(opts.EvalInterval))
	if opts.RulesFile != "" {
		fmt.Fprintf(&cfg, "rule_files:\n  - %s\n", quote(opts.RulesFile))
	}
	if opts.AlertmanagerURL != "" {
		u, err := url.Parse(opts.AlertmanagerURL)
		if err != nil || u.Host == "" {
			t.Fatalf("promtest: bad Alertmanager URL %q", opts.AlertmanagerURL)
		}
		fmt.Fprintf(&cfg, "alerting:\n  alertmanagers:\n    - api_version: v2\n      static_configs:\n        - targets: [%s]\n", quote(u.Host))
	}
	cfg.WriteString("scrape_configs:\n")
	if len(opts.ScrapeTargets) > 0 || opts.ScrapeConfigs == "" {
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs:\n      - targets: [", quote(opts.JobName))
		for i, target := range opts.ScrapeTargets {
			if i > 0 {
				cfg.WriteString(", ")
			}
			cfg.WriteString(quote(target))
		}
		cfg.WriteString("]\n")
	}
	cfg.WriteString(opts.ScrapeConfigs)
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatalf("promtest: write Prometheus config: %v", err)
	}

	addr := freeAddr(t)
	proc := startProcess(t, "prometheus", bin,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	p := &Prometheus{URL: "http://" + addr, proc: proc}
	took := proc.waitReady(t, p.URL+"/-/ready", 60*time.Second)
	t.Logf("promtest: prometheus ready at %s in %s (scrape %s, eval %s, config %s)",
		p.URL, took.Round(time.Millisecond), opts.ScrapeInterval, opts.EvalInterval, configPath)
	return p
}

// model renders a duration the way Prometheus config files accept it.
func model(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// Sample is one point of a series.
type Sample struct {
	T time.Time
	V float64
}

// Series is a result series: its labels and its samples (one for an instant
// query).
type Series struct {
	Labels  map[string]string
	Samples []Sample
}

// Last is the value of the series' latest sample.
func (s Series) Last() float64 { return s.Samples[len(s.Samples)-1].V }

// String prints the labels as {a="b",...}.
func (s Series) String() string { return FormatLabels(s.Labels) }

// FormatLabels prints labels sorted, as {a="b",...}.
func FormatLabels(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, labels[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Query runs an instant query at the current time and fails the test on an
// API error.
func (p *Prometheus) Query(t testing.TB, expr string) []Series {
	t.Helper()
	res, err := p.TryQuery(expr, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TryQuery runs an instant query at time at (now if zero).
func (p *Prometheus) TryQuery(expr string, at time.Time) ([]Series, error) {
	params := url.Values{"query": {expr}}
	if !at.IsZero() {
		params.Set("time", formatTime(at))
	}
	return p.query("/api/v1/query", params)
}

// QueryRange runs a range query and fails the test on an API error.
func (p *Prometheus) QueryRange(t testing.TB, expr string, start, end time.Time, step time.Duration) []Series {
	t.Helper()
	res, err := p.TryQueryRange(expr, start, end, step)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TryQueryRange runs a range query.
func (p *Prometheus) TryQueryRange(expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	return p.query("/api/v1/query_range", url.Values{
		"query": {expr},
		"start": {formatTime(start)},
		"end":   {formatTime(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	})
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

func (p *Prometheus) get(path string, params url.Values) (json.RawMessage, error) {
	client := http.Client{Timeout: 20 * time.Second}
	u := p.URL + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	resp, err := client.Get(u)
	if err != nil {
		return nil, fmt.Errorf("prometheus GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("prometheus GET %s: read body: %w", path, err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("prometheus GET %s: %s: decode %q: %w", path, resp.Status, body, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("prometheus GET %s %v: %s: %s", path, params, r.ErrorType, r.Error)
	}
	return r.Data, nil
}

func (p *Prometheus) query(path string, params url.Values) ([]Series, error) {
	data, err := p.get(path, params)
	if err != nil {
		return nil, err
	}
	var qd struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &qd); err != nil {
		return nil, fmt.Errorf("decode query data: %w", err)
	}
	switch qd.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(qd.Result, &vec); err != nil {
			return nil, fmt.Errorf("decode vector: %w", err)
		}
		out := make([]Series, 0, len(vec))
		for _, v := range vec {
			s, err := parseSample(v.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, Series{Labels: v.Metric, Samples: []Sample{s}})
		}
		return out, nil
	case "matrix":
		var mat []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		}
		if err := json.Unmarshal(qd.Result, &mat); err != nil {
			return nil, fmt.Errorf("decode matrix: %w", err)
		}
		out := make([]Series, 0, len(mat))
		for _, m := range mat {
			series := Series{Labels: m.Metric}
			for _, v := range m.Values {
				s, err := parseSample(v)
				if err != nil {
					return nil, err
				}
				series.Samples = append(series.Samples, s)
			}
			out = append(out, series)
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(qd.Result, &v); err != nil {
			return nil, fmt.Errorf("decode scalar: %w", err)
		}
		s, err := parseSample(v)
		if err != nil {
			return nil, err
		}
		return []Series{{Labels: map[string]string{}, Samples: []Sample{s}}}, nil
	default:
		return nil, fmt.Errorf("unsupported result type %q", qd.ResultType)
	}
}

func parseSample(v [2]any) (Sample, error) {
	ts, ok := v[0].(float64)
	if !ok {
		return Sample{}, fmt.Errorf("sample time %v is not a number", v[0])
	}
	str, ok := v[1].(string)
	if !ok {
		return Sample{}, fmt.Errorf("sample value %v is not a string", v[1])
	}
	val, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return Sample{}, fmt.Errorf("sample value %q: %w", str, err)
	}
	return Sample{T: time.UnixMilli(int64(ts * 1000)), V: val}, nil
}

// Alert is an alert as Prometheus's /api/v1/alerts reports it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // pending or firing
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

// Alerts returns the pending and firing alerts, failing the test on an API error.
func (p *Prometheus) Alerts(t testing.TB) []Alert {
	t.Helper()
	alerts, err := p.TryAlerts()
	if err != nil {
		t.Fatal(err)
	}
	return alerts
}

// TryAlerts returns the pending and firing alerts.
func (p *Prometheus) TryAlerts() ([]Alert, error) {
	data, err := p.get("/api/v1/alerts", nil)
	if err != nil {
		return nil, err
	}
	var ad struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := json.Unmarshal(data, &ad); err != nil {
		return nil, fmt.Errorf("decode alerts: %w", err)
	}
	return ad.Alerts, nil
}

// forLine matches a rule's for: duration.
var forLine = regexp.MustCompile(`(?m)^([ \t]+for:[ \t]*)\S.*$`)

// RewriteRules copies the rule file at src into a temporary directory with
// every for: duration replaced by forDuration (prometheus/README.md: the
// tests rewrite for:, they do not fork the rules), checks the copy with
// promtool and returns its path.
func RewriteRules(t testing.TB, src string, forDuration time.Duration) string {
	t.Helper()
	promtool := lookPath(t, promtoolBinary)
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("promtest: read rules: %v", err)
	}
	if !forLine.Match(raw) {
		t.Fatalf("promtest: no for: line in %s to rewrite", src)
	}
	rewritten := forLine.ReplaceAll(raw, []byte("${1}"+model(forDuration)))
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, rewritten, 0o644); err != nil {
		t.Fatalf("promtest: write rules: %v", err)
	}
	if out, err := runTool(promtool, "check", "rules", dst); err != nil {
		t.Fatalf("promtest: promtool check rules on the rewritten copy: %v\n%s", err, out)
	}
	return dst
}

// Stop stops Prometheus before the test ends (its connections to the
// targets close with it); the cleanup then has nothing left to do.
func (p *Prometheus) Stop() { p.proc.stop() }
