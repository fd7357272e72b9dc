// Package exposition lets a collector describe its series once and emit
// them either as prometheus.Metric values (for the registry and for tests)
// or straight into Prometheus text exposition format.
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

func (s *Set) add(name, help string, vt prometheus.ValueType, labels []string) *Desc {
	typ := "gauge"
	if vt == prometheus.CounterValue {
		typ = "counter"
	}
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

// Describe sends every descriptor.
func (s *Set) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.descs {
		ch <- d.Prom
	}
}

// Sink receives series.
type Sink interface {
	Add(d *Desc, value float64, labelValues ...string)
}

// ChanSink turns series into const metrics on a Collect channel.
type ChanSink chan<- prometheus.Metric

// Add implements Sink.
func (c ChanSink) Add(d *Desc, value float64, labelValues ...string) {
	c <- prometheus.MustNewConstMetric(d.Prom, d.ValueType, value, labelValues...)
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
