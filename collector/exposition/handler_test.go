package exposition

import (
	"compress/gzip"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

type setWriter struct {
	set   *Set
	pages []*Rendered
}

func (s setWriter) AppendText(st *Stream) { st.AddSet(s.set, s.pages) }

// renderSeries renders the series given as (desc, value, labels) calls.
func renderSeries(set *Set, add func(Sink)) *Rendered { return set.Render(nil, add) }

func TestHandlerMergesRegistryAndPages(t *testing.T) {
	set := &Set{}
	up := set.Gauge("demo_up", "1 if up.", "demo_cluster")
	changes := set.Counter("demo_changes_total", "Changes\nseen.", "node", "demo_cluster")
	a := renderSeries(set, func(s Sink) {
		s.Add(up, 1, "a")
		s.Add(changes, 3, `we"ird\node`, "a")
	})
	b := renderSeries(set, func(s Sink) { s.Add(up, 0, "b") })

	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "demo_build_info", Help: "Build."})
	g.Set(1)
	reg.MustRegister(g)

	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	Handler(reg, []TextWriter{setWriter{set, []*Rendered{a, b}}}, func(string, error) {}).ServeHTTP(rec, req)
	want := `# HELP demo_build_info Build.
# TYPE demo_build_info gauge
demo_build_info 1
# HELP demo_up 1 if up.
# TYPE demo_up gauge
demo_up{demo_cluster="a"} 1
demo_up{demo_cluster="b"} 0
# HELP demo_changes_total Changes\nseen.
# TYPE demo_changes_total counter
demo_changes_total{demo_cluster="a",node="we\"ird\\node"} 3
`
	if got := rec.Body.String(); got != want {
		t.Errorf("body:\n%s\nwant:\n%s", got, want)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}

	rec = httptest.NewRecorder()
	req.Header.Set("Accept-Encoding", "deflate, gzip;q=0.5")
	Handler(reg, []TextWriter{setWriter{set, []*Rendered{a, b}}}, func(string, error) {}).ServeHTTP(rec, req)
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatal("gzip accepted but not used")
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(zr)
	if string(body) != want {
		t.Errorf("gzip body differs:\n%s", body)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"": false, "gzip": true, "deflate, gzip": true, "gzip;q=0": false, "gzip;q=0.5": true, "identity": false,
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Accept-Encoding", header)
		if got := acceptsGzip(req); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	for v, want := range map[float64]string{0: "0", -1: "-1", 16384: "16384", 0.25: "0.25", 1.7e9 + 0.5: "1.7000000005e+09"} {
		if got := string(appendFloat(nil, v)); got != want {
			t.Errorf("appendFloat(%v) = %s, want %s", v, got, want)
		}
	}
}

func TestRenderGroupsFamiliesInSetOrder(t *testing.T) {
	set := &Set{}
	a := set.Gauge("a", "A.", "x", "y")
	b := set.Gauge("b", "B.", "x", "y")
	c := set.Gauge("c", "C.", "x", "z")
	set.Gauge("unused", "Never emitted.")
	p := renderSeries(set, func(s Sink) {
		s.Add(c, 3, "1", "2")
		s.Add(a, 1, "1", "2")
		s.Add(b, 2, "1", "2")
		s.Add(a, 4, "1", "3")
	})
	out, err := PlainText(setWriter{set, []*Rendered{p}})
	if err != nil {
		t.Fatal(err)
	}
	want := "# HELP a A.\n# TYPE a gauge\na{x=\"1\",y=\"2\"} 1\na{x=\"1\",y=\"3\"} 4\n" +
		"# HELP b B.\n# TYPE b gauge\nb{x=\"1\",y=\"2\"} 2\n" +
		"# HELP c C.\n# TYPE c gauge\nc{x=\"1\",z=\"2\"} 3\n"
	if string(out) != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}
