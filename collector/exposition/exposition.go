// Package exposition lets a collector describe its series once and emit
// them either as prometheus.Metric values (for the registry and for tests)
// or straight into Prometheus text exposition format.
//
// Histograms are classic histograms (cumulative _bucket series with an le
// label, _sum and _count). Native histograms do not fit this path: text
// format 0.0.4 has no encoding for them, only the protobuf format does, and
// the text path is what keeps large clusters cheap to scrape.
//
// The text path exists for size: a cluster with 10,000 partitions has over
// 100,000 series, and building a prometheus.Metric, a protobuf message and
// a sorted metric family for each on every scrape costs about a second on a
// small machine. Rendering the text once per refresh and copying it on each
// scrape costs milliseconds. Both paths are driven by the same emitting
// code, and a test checks that they produce the same series.
package exposition

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Desc describes one metric family.
type Desc struct {
	Name      string
	Help      string
	ValueType prometheus.ValueType
	Labels    []string
	// Buckets are the upper bounds of a histogram family, without +Inf;
	// nil for gauges and counters.
	Buckets []float64
	// Prom is the equivalent client_golang descriptor.
	Prom  *prometheus.Desc
	index int
	// order lists label indexes sorted by label name: client_golang sorts
	// labels, and the text path matches it byte for byte.
	order []int
	// header is the rendered HELP and TYPE lines.
	header []byte
}

// Set is an ordered collection of descriptors, usually one collector's.
type Set struct {
	descs []*Desc
}

// Gauge adds a gauge family to the set.
func (s *Set) Gauge(name, help string, labels ...string) *Desc {
	return s.add(name, help, prometheus.GaugeValue, labels)
}

// Counter adds a counter family to the set.
func (s *Set) Counter(name, help string, labels ...string) *Desc {
	return s.add(name, help, prometheus.CounterValue, labels)
}

// Histogram adds a classic histogram family with the given bucket upper
// bounds (ascending, without +Inf).
func (s *Set) Histogram(name, help string, buckets []float64, labels ...string) *Desc {
	d := s.add(name, help, prometheus.UntypedValue, labels)
	d.Buckets = buckets
	return d
}

// IsHistogram reports whether the family is a histogram.
func (d *Desc) IsHistogram() bool { return d.Buckets != nil }

// Type is the family's type as the TYPE line spells it.
func (d *Desc) Type() string { return typeName(d.ValueType) }

func typeName(vt prometheus.ValueType) string {
	switch vt {
	case prometheus.CounterValue:
		return "counter"
	case prometheus.UntypedValue:
		// Only histograms are added untyped.
		return "histogram"
	}
	return "gauge"
}

func (s *Set) add(name, help string, vt prometheus.ValueType, labels []string) *Desc {
	typ := typeName(vt)
	d := &Desc{
		Name:      name,
		Help:      help,
		ValueType: vt,
		Labels:    labels,
		Prom:      prometheus.NewDesc(name, help, labels, nil),
		index:     len(s.descs),
		order:     sortedOrder(labels),
		header:    fmt.Appendf(nil, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ),
	}
	s.descs = append(s.descs, d)
	return d
}

// Names lists the family names in the set.
func (s *Set) Names() []string {
	out := make([]string, len(s.descs))
	for i, d := range s.descs {
		out[i] = d.Name
	}
	return out
}

// Descs lists the descriptors in the set, in order.
func (s *Set) Descs() []*Desc { return append([]*Desc(nil), s.descs...) }

// SeriesNames lists the names a query can select: the family names, and
// for histograms their _bucket, _sum and _count series instead.
func (s *Set) SeriesNames() []string {
	var out []string
	for _, d := range s.descs {
		if d.IsHistogram() {
			out = append(out, d.Name+"_bucket", d.Name+"_sum", d.Name+"_count")
			continue
		}
		out = append(out, d.Name)
	}
	return out
}

// Types maps each family name to its type ("gauge", "counter", "histogram").
func (s *Set) Types() map[string]string {
	out := make(map[string]string, len(s.descs))
	for _, d := range s.descs {
		out[d.Name] = d.Type()
	}
	return out
}

// Describe sends every descriptor.
func (s *Set) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.descs {
		ch <- d.Prom
	}
}

// Sink receives series.
type Sink interface {
	Add(d *Desc, value float64, labelValues ...string)
	// AddHistogram adds one histogram: cumulative[i] observations were at
	// most d.Buckets[i]; count includes those above the last bound.
	AddHistogram(d *Desc, count uint64, sum float64, cumulative []uint64, labelValues ...string)
}

// ChanSink turns series into const metrics on a Collect channel.
type ChanSink chan<- prometheus.Metric

// Add implements Sink.
func (c ChanSink) Add(d *Desc, value float64, labelValues ...string) {
	c <- prometheus.MustNewConstMetric(d.Prom, d.ValueType, value, labelValues...)
}

// AddHistogram implements Sink.
func (c ChanSink) AddHistogram(d *Desc, count uint64, sum float64, cumulative []uint64, labelValues ...string) {
	checkBuckets(d, cumulative)
	buckets := make(map[float64]uint64, len(d.Buckets))
	for i, le := range d.Buckets {
		buckets[le] = cumulative[i]
	}
	c <- prometheus.MustNewConstHistogram(d.Prom, count, sum, buckets, labelValues...)
}

func checkBuckets(d *Desc, cumulative []uint64) {
	if !d.IsHistogram() || len(cumulative) != len(d.Buckets) {
		panic(fmt.Sprintf("%s: %d bucket counts for %d buckets", d.Name, len(cumulative), len(d.Buckets)))
	}
}

// Page holds the rendered sample lines of one set for one source (one
// cluster), family by family. It is immutable once rendered.
type Page struct {
	set   *Set
	lines [][]byte

	// The label part of the last line, reused while consecutive lines carry
	// the same label names and values: a partition's dozen series share one
	// label set, and formatting it once per partition halves rendering time.
	lastLabelNames  []string
	lastLabelValues []string
	lastLabels      []byte
}

// NewPage returns an empty page for the set.
func (s *Set) NewPage() *Page {
	return &Page{set: s, lines: make([][]byte, len(s.descs))}
}

// Add implements Sink by appending one sample line.
func (p *Page) Add(d *Desc, value float64, labelValues ...string) {
	if len(labelValues) != len(d.Labels) {
		// The same mistake panics in MustNewConstMetric; both paths agree.
		panic(fmt.Sprintf("%s: %d label values for %d labels", d.Name, len(labelValues), len(d.Labels)))
	}
	b := p.lines[d.index]
	b = append(b, d.Name...)
	if len(labelValues) > 0 {
		if !p.sameLabels(d.Labels, labelValues) {
			p.formatLabels(d, labelValues)
		}
		b = append(b, p.lastLabels...)
	}
	b = append(b, ' ')
	b = appendFloat(b, value)
	b = append(b, '\n')
	p.lines[d.index] = b
}

// AddHistogram implements Sink by appending the _bucket lines, then _sum
// and _count, in the order client_golang writes them (le last).
func (p *Page) AddHistogram(d *Desc, count uint64, sum float64, cumulative []uint64, labelValues ...string) {
	checkBuckets(d, cumulative)
	if len(labelValues) != len(d.Labels) {
		panic(fmt.Sprintf("%s: %d label values for %d labels", d.Name, len(labelValues), len(d.Labels)))
	}
	if !p.sameLabels(d.Labels, labelValues) {
		p.formatLabels(d, labelValues)
	}
	// The label part without its closing brace, so that le can follow.
	open := p.lastLabels[:len(p.lastLabels)-1]
	b := p.lines[d.index]
	bucket := func(le []byte, n uint64) {
		b = append(b, d.Name...)
		b = append(b, "_bucket"...)
		if len(open) > 1 {
			b = append(b, open...)
			b = append(b, ',')
		} else {
			b = append(b, '{')
		}
		b = append(b, `le="`...)
		b = append(b, le...)
		b = append(b, `"} `...)
		b = strconv.AppendUint(b, n, 10)
		b = append(b, '\n')
	}
	var le []byte
	for i, bound := range d.Buckets {
		le = appendFloat(le[:0], bound)
		bucket(le, cumulative[i])
	}
	bucket([]byte("+Inf"), count)
	for _, part := range []struct {
		suffix string
		value  float64
	}{{"_sum", sum}, {"_count", float64(count)}} {
		b = append(b, d.Name...)
		b = append(b, part.suffix...)
		if len(open) > 1 {
			b = append(b, p.lastLabels...)
		}
		b = append(b, ' ')
		b = appendFloat(b, part.value)
		b = append(b, '\n')
	}
	p.lines[d.index] = b
}

func (p *Page) sameLabels(names, values []string) bool {
	if len(names) != len(p.lastLabelNames) || len(names) == 0 {
		return false
	}
	for i, v := range values {
		if v != p.lastLabelValues[i] || names[i] != p.lastLabelNames[i] {
			return false
		}
	}
	return true
}

func (p *Page) formatLabels(d *Desc, values []string) {
	l := p.lastLabels[:0]
	l = append(l, '{')
	for n, i := range d.order {
		if n > 0 {
			l = append(l, ',')
		}
		l = append(l, d.Labels[i]...)
		l = append(l, '=', '"')
		l = appendEscapedLabelValue(l, values[i])
		l = append(l, '"')
	}
	l = append(l, '}')
	p.lastLabels = l
	p.lastLabelNames = d.Labels
	p.lastLabelValues = append(p.lastLabelValues[:0], values...)
}

// WriteText writes the families of the set in order, each with its HELP and
// TYPE once, followed by the lines of every page. Families without lines
// are left out.
func (s *Set) WriteText(w io.Writer, pages []*Page) error {
	for i, d := range s.descs {
		empty := true
		for _, p := range pages {
			if len(p.lines[i]) > 0 {
				empty = false
				break
			}
		}
		if empty {
			continue
		}
		if _, err := w.Write(d.header); err != nil {
			return err
		}
		for _, p := range pages {
			if len(p.lines[i]) == 0 {
				continue
			}
			if _, err := w.Write(p.lines[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Size is the number of bytes the page's lines take, headers excluded.
func (p *Page) Size() int {
	n := 0
	for _, l := range p.lines {
		n += len(l)
	}
	return n
}

func sortedOrder(labels []string) []int {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return labels[order[a]] < labels[order[b]] })
	return order
}

// NewPageSized returns an empty page whose buffers are sized like prev's,
// so that re-rendering a cluster of similar size does not regrow them.
func (s *Set) NewPageSized(prev *Page) *Page {
	p := s.NewPage()
	if prev == nil || prev.set != s {
		return p
	}
	for i, l := range prev.lines {
		if n := len(l); n > 0 {
			p.lines[i] = make([]byte, 0, n+n/8)
		}
	}
	return p
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func appendEscapedLabelValue(b []byte, v string) []byte {
	if !strings.ContainsAny(v, "\\\"\n") {
		return append(b, v...)
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return b
}

func escapeHelp(h string) string {
	var buf bytes.Buffer
	for i := 0; i < len(h); i++ {
		switch c := h[i]; c {
		case '\\':
			buf.WriteString(`\\`)
		case '\n':
			buf.WriteString(`\n`)
		default:
			buf.WriteByte(c)
		}
	}
	return buf.String()
}
