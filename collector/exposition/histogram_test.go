package exposition

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// histogramCollector sends the same histograms through ChanSink that the
// test renders through Render.
type histogramCollector struct {
	set  *Set
	emit func(Sink)
}

func (c histogramCollector) Describe(ch chan<- *prometheus.Desc) { c.set.Describe(ch) }
func (c histogramCollector) Collect(ch chan<- prometheus.Metric) { c.emit(ChanSink(ch)) }

func TestHistogramTextMatchesClientGolang(t *testing.T) {
	set := &Set{}
	labelled := set.Histogram("demo_episode_seconds", "Episode durations.", []float64{0.5, 1, 2.5, 3600}, "demo_cluster", "topic")
	bare := set.Histogram("demo_bare_seconds", "No labels.", []float64{1, 10})
	gauge := set.Gauge("demo_open_seconds", "Open.", "demo_cluster", "topic")
	emit := func(s Sink) {
		// A gauge with the same labels first.
		s.Add(gauge, 12.5, "a", `we"ird`)
		s.AddHistogram(labelled, 7, 1234.25, []uint64{1, 2, 2, 6}, "a", `we"ird`)
		s.AddHistogram(labelled, 0, 0, []uint64{0, 0, 0, 0}, "b", "t")
		s.AddHistogram(bare, 3, 0.75, []uint64{3, 3})
	}
	text, err := PlainText(setWriter{set, []*Rendered{set.Render(nil, emit)}})
	if err != nil {
		t.Fatal(err)
	}
	got := bytes.NewBuffer(text)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(histogramCollector{set, emit})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]byte{}
	for _, mf := range families {
		var b bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
		byName[mf.GetName()] = b.Bytes()
	}
	var want bytes.Buffer
	// The text path keeps the set's order; the registry sorts by name.
	for _, name := range set.Names() {
		want.Write(byName[name])
	}
	if got.String() != want.String() {
		t.Errorf("page text:\n%s\nclient_golang text:\n%s", got.String(), want.String())
	}
	if !bytes.Contains(got.Bytes(), []byte(`demo_episode_seconds_bucket{demo_cluster="a",topic="we\"ird",le="+Inf"} 7`)) {
		t.Errorf("missing +Inf bucket in:\n%s", got.String())
	}
}

func TestHistogramTypeAndSeriesNames(t *testing.T) {
	set := &Set{}
	set.Histogram("x_seconds", "h.", []float64{1})
	set.Counter("y_total", "c.")
	if got := set.Types(); got["x_seconds"] != "histogram" || got["y_total"] != "counter" {
		t.Errorf("types %v", got)
	}
	want := []string{"x_seconds_bucket", "x_seconds_sum", "x_seconds_count", "y_total"}
	if got := set.SeriesNames(); len(got) != len(want) || got[0] != want[0] || got[3] != want[3] {
		t.Errorf("series names %v, want %v", got, want)
	}
}
