package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/failover-exporter/failover_exporter/collector"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/status"
)

// TestProbesAnswerOnlyGetAndHead: /-/healthy and /-/ready answer GET and
// HEAD, and 405 with Allow to anything else, as Prometheus's own do; a
// load balancer's PUT or DELETE is not a probe.
func TestProbesAnswerOnlyGetAndHead(t *testing.T) {
	mux, err := newMux(flags{telemetryPath: "/metrics"}, prometheus.NewRegistry(), endpoints{
		metrics: http.NotFoundHandler(),
		ready:   func() bool { return true },
		events:  http.NotFoundHandler(),
		status:  status.Sources{},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/-/healthy", "/-/ready"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			if rec.Code != http.StatusOK {
				t.Errorf("%s %s: %d, want 200", method, path, rec.Code)
			}
		}
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodTrace, http.MethodOptions} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" || !strings.Contains(rec.Body.String(), "probe with GET or HEAD") {
				t.Errorf("%s %s: %d, Allow %q, %q; want 405, Allow: GET, HEAD", method, path, rec.Code, rec.Header().Get("Allow"), rec.Body.String())
			}
		}
	}
}

// stubProber answers Probe with one rendered series for the target "lab"
// and the manager's error for anything else.
type stubProber struct {
	rendered *exposition.Rendered
	waited   *[]time.Duration
}

func (p stubProber) Probe(system, target string) ([]exposition.TextWriter, error) {
	if target != "lab" {
		return nil, fmt.Errorf("%w: no cluster called %q is configured", collector.ErrUnknownTarget, target)
	}
	return []exposition.TextWriter{p}, nil
}

// ProbeModule refuses module "full" as the manager does past
// --probe.max-targets, module "fenced" as it does a target outside the
// module's allowed_targets, and otherwise serves the series, recording how long
// it was told it may wait.
func (p stubProber) ProbeModule(system, module, addr string, wait time.Duration) ([]exposition.TextWriter, error) {
	*p.waited = append(*p.waited, wait)
	switch module {
	case "full":
		return nil, fmt.Errorf("%w: 100 discovered targets run", collector.ErrTooManyTargets)
	case "fenced":
		return nil, fmt.Errorf("kafka module %q: %w: address %q is not in the module's allowed_targets", module, collector.ErrTargetNotAllowed, addr)
	}
	return []exposition.TextWriter{p}, nil
}

func (p stubProber) AppendText(st *exposition.Stream) {
	st.AddSet(probeSet, []*exposition.Rendered{p.rendered})
}

var probeSet = func() *exposition.Set {
	s := &exposition.Set{}
	s.Gauge("lab_up", "Whether the lab answered.", "cluster")
	return s
}()

// TestProbeEndpoint: /probe serves the target's series and nothing else
// (no Go or process series: those stay on /metrics), gzip-compressed when
// asked; a request it cannot answer is a 400 that says why, module= is
// refused by name, and anything but GET or HEAD is a 405.
func TestProbeEndpoint(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	p := stubProber{rendered: probeSet.Render(nil, func(s exposition.Sink) { s.Add(probeSet.Descs()[0], 1, "lab") }), waited: new([]time.Duration)}
	mux, err := newMux(flags{telemetryPath: "/metrics"}, reg, endpoints{
		metrics: http.NotFoundHandler(),
		probe:   exposition.ProbeHandler(probeTarget(p), func(msg string, err error) { t.Errorf("%s: %v", msg, err) }),
		ready:   func() bool { return true },
		events:  http.NotFoundHandler(),
		status:  status.Sources{},
	})
	if err != nil {
		t.Fatal(err)
	}
	var scrapeTimeout string
	get := func(method, url string, gzipped bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, url, nil)
		if gzipped {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		if scrapeTimeout != "" {
			req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", scrapeTimeout)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec
	}

	rec := get(http.MethodGet, "/probe?target=lab", false)
	want := "# HELP lab_up Whether the lab answered.\n# TYPE lab_up gauge\nlab_up{cluster=\"lab\"} 1\n"
	if rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Errorf("GET /probe?target=lab: %d\n%s\nwant 200\n%s", rec.Code, rec.Body.String(), want)
	}
	rec = get(http.MethodGet, "/probe?target=lab", true)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip GET /probe: %d, Content-Encoding %q", rec.Code, rec.Header().Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if body, err := io.ReadAll(zr); err != nil || string(body) != want {
		t.Errorf("gzip GET /probe decompresses to %q (%v), want %q", body, err, want)
	}

	for _, c := range []struct{ url, says string }{
		{"/probe?target=orders", `no cluster called "orders"`},
	} {
		if rec := get(http.MethodGet, c.url, false); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), c.says) {
			t.Errorf("GET %s: %d %q, want 400 saying %q", c.url, rec.Code, rec.Body.String(), c.says)
		}
	}
	if rec := get(http.MethodPost, "/probe?target=lab", false); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /probe: %d, want 405", rec.Code)
	}

	// A discovered target: past the limit a 429; a first probe may wait
	// the scrape's timeout less half a second, 9.5 s without the header.
	if rec := get(http.MethodGet, "/probe?system=kafka&module=full&target=127.0.0.1:9092", false); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "100 discovered targets run") {
		t.Errorf("GET /probe past the limit: %d %q, want 429 saying why", rec.Code, rec.Body.String())
	}
	// A target its module does not allow: 403 naming both.
	if rec := get(http.MethodGet, "/probe?system=kafka&module=fenced&target=127.0.0.1:9092", false); rec.Code != http.StatusForbidden ||
		!strings.Contains(rec.Body.String(), `kafka module "fenced"`) || !strings.Contains(rec.Body.String(), `address "127.0.0.1:9092" is not in`) {
		t.Errorf("GET /probe of a target not allowed: %d %q, want 403 naming the module and the address", rec.Code, rec.Body.String())
	}
	scrapeTimeout = "3"
	if rec := get(http.MethodGet, "/probe?system=kafka&module=sasl&target=127.0.0.1:9092", false); rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Errorf("GET /probe with module: %d %q", rec.Code, rec.Body.String())
	}
	scrapeTimeout = "0.2"
	get(http.MethodGet, "/probe?system=kafka&module=sasl&target=127.0.0.1:9092", false)
	if got, want := *p.waited, []time.Duration{9500 * time.Millisecond, 9500 * time.Millisecond, 2500 * time.Millisecond, 0}; !slices.Equal(got, want) {
		t.Errorf("first-probe waits %v, want %v (no header twice, 3 s, 0.2 s)", got, want)
	}
}
