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
// small machine. The text is rendered once per refresh, compressed as it is
// rendered, and each scrape copies the compressed bytes (gzip clients) or
// decompresses them (plain clients). Both paths are driven by the same
// emitting code, and a test checks that they produce the same series.
package exposition

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/klauspost/compress/flate"
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
	// header is the HELP and TYPE lines, compressed.
	header fragment
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
		header:    compressFragment(fmt.Appendf(nil, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)),
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

// Names lists the family names of every set, sorted: what a collector
// built from these sets can emit.
func Names(sets ...*Set) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s.Names()...)
	}
	slices.Sort(out)
	return out
}

// SeriesNames lists the series names of every set, sorted: Names with each
// histogram replaced by its _bucket, _sum and _count series.
func SeriesNames(sets ...*Set) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s.SeriesNames()...)
	}
	slices.Sort(out)
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

// Discard is a Sink that keeps nothing.
var Discard Sink = discard{}

type discard struct{}

func (discard) Add(*Desc, float64, ...string) {}

func (discard) AddHistogram(*Desc, uint64, float64, []uint64, ...string) {}

// Rendered holds one source's series of one set (usually one cluster's),
// rendered once and compressed family by family. It is immutable.
//
// The plain text is never held whole: at 100,000 Kafka partitions it is
// over 100 MB, about 25 times its compressed size. Plain-text scrapes
// decompress it on the fly, so both encodings come from one rendering.
type Rendered struct {
	set      *Set
	families []fragment
	// compressed is the total compressed size, to size the next rendering.
	compressed int
}

// lineBufferSize is how much plain text a rendering holds before handing
// it to the compressor.
const lineBufferSize = 32 << 10

// Render calls emit once per family of the set, keeping only that family's
// series each time, and compresses each family's lines into a fragment.
// Calling emit once per family lets families stream out one after the other
// in exposition order while emit walks its source in whatever order suits
// it (partition by partition, say). prev, if not nil, is the previous
// rendering of the same source, used to size the buffer.
func (s *Set) Render(prev *Rendered, emit func(Sink)) *Rendered {
	var out bytes.Buffer
	if prev != nil {
		out.Grow(prev.compressed + prev.compressed/8)
	}
	zw := flateWriters.Get().(*flate.Writer)
	defer func() {
		zw.Reset(nil)
		flateWriters.Put(zw)
	}()
	sink := &familySink{zw: zw, line: make([]byte, 0, lineBufferSize)}
	type span struct {
		start, end int
		crc        uint32
		size       int64
	}
	spans := make([]span, len(s.descs))
	for i, d := range s.descs {
		sink.want = d
		sink.crc, sink.size = 0, 0
		start := out.Len()
		zw.Reset(&out)
		emit(sink)
		if sink.size == 0 && len(sink.line) == 0 {
			continue
		}
		sink.flushLines()
		_ = zw.Flush() // a bytes.Buffer does not fail
		spans[i] = span{start: start, end: out.Len(), crc: sink.crc, size: sink.size}
	}
	r := &Rendered{set: s, families: make([]fragment, len(s.descs)), compressed: out.Len()}
	data := out.Bytes()
	for i, sp := range spans {
		if sp.size > 0 {
			r.families[i] = newFragment(data[sp.start:sp.end:sp.end], sp.crc, sp.size)
		}
	}
	return r
}

// Wants reports whether sink keeps series of any of the families: false
// only while Render runs a pass for another family. Emitters may use it to
// skip work whose series would be dropped; they need not.
func Wants(sink Sink, families ...*Desc) bool {
	f, ok := sink.(*familySink)
	if !ok {
		return true
	}
	for _, d := range families {
		if d == f.want {
			return true
		}
	}
	return false
}

// familySink formats the series of one family and compresses them.
type familySink struct {
	want *Desc
	zw   *flate.Writer
	line []byte
	crc  uint32
	size int64
}

// Add implements Sink.
func (f *familySink) Add(d *Desc, value float64, labelValues ...string) {
	if d != f.want {
		return
	}
	checkLabels(d, labelValues)
	b := append(f.line, d.Name...)
	if len(labelValues) > 0 {
		b = appendLabels(append(b, '{'), d, labelValues)
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, value)
	f.line = append(b, '\n')
	f.maybeFlush()
}

// AddHistogram implements Sink: the _bucket lines, then _sum and _count,
// in the order client_golang writes them (le last).
func (f *familySink) AddHistogram(d *Desc, count uint64, sum float64, cumulative []uint64, labelValues ...string) {
	if d != f.want {
		return
	}
	checkBuckets(d, cumulative)
	checkLabels(d, labelValues)
	b := f.line
	bucket := func(le float64, inf bool, n uint64) {
		b = append(b, d.Name...)
		b = append(b, "_bucket{"...)
		if len(labelValues) > 0 {
			b = append(appendLabels(b, d, labelValues), ',')
		}
		b = append(b, `le="`...)
		if inf {
			b = append(b, "+Inf"...)
		} else {
			b = appendFloat(b, le)
		}
		b = append(b, `"} `...)
		b = strconv.AppendUint(b, n, 10)
		b = append(b, '\n')
	}
	for i, bound := range d.Buckets {
		bucket(bound, false, cumulative[i])
	}
	bucket(0, true, count)
	for _, part := range []struct {
		suffix string
		value  float64
	}{{"_sum", sum}, {"_count", float64(count)}} {
		b = append(b, d.Name...)
		b = append(b, part.suffix...)
		if len(labelValues) > 0 {
			b = appendLabels(append(b, '{'), d, labelValues)
			b = append(b, '}')
		}
		b = append(b, ' ')
		b = appendFloat(b, part.value)
		b = append(b, '\n')
	}
	f.line = b
	f.maybeFlush()
}

func checkLabels(d *Desc, labelValues []string) {
	if len(labelValues) != len(d.Labels) {
		// The same mistake panics in MustNewConstMetric; both paths agree.
		panic(fmt.Sprintf("%s: %d label values for %d labels", d.Name, len(labelValues), len(d.Labels)))
	}
}

// appendLabels appends name="value" pairs in label name order, as
// client_golang sorts them, without braces.
func appendLabels(b []byte, d *Desc, values []string) []byte {
	for n, i := range d.order {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, d.Labels[i]...)
		b = append(b, '=', '"')
		b = appendEscapedLabelValue(b, values[i])
		b = append(b, '"')
	}
	return b
}

func (f *familySink) maybeFlush() {
	if len(f.line) >= lineBufferSize {
		f.flushLines()
	}
}

func (f *familySink) flushLines() {
	if len(f.line) == 0 {
		return
	}
	f.crc = crc32.Update(f.crc, crc32.IEEETable, f.line)
	f.size += int64(len(f.line))
	_, _ = f.zw.Write(f.line) // writes to a bytes.Buffer
	f.line = f.line[:0]
}
func sortedOrder(labels []string) []int {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return labels[order[a]] < labels[order[b]] })
	return order
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
	if !needsEscape(v) {
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

// needsEscape is strings.ContainsAny(v, "\\\"\n") without its setup cost,
// which shows at a million label values per rendering.
func needsEscape(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\\' || c == '"' || c == '\n' {
			return true
		}
	}
	return false
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
