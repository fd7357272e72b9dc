// Package metricsdoc renders the list of every metric the exporter serves,
// from the collectors' own descriptors, as the Markdown of METRICS.md.
package metricsdoc

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/system"
)

// Metric is one family as documented.
type Metric struct {
	Name, Type, Help string
	Labels           []string
}

// FromSets lists the families of the collectors' metric tables, sorted by
// name, with the type and labels the tables declare.
func FromSets(sets ...*exposition.Set) []Metric {
	var out []Metric
	for _, s := range sets {
		for _, d := range s.Descs() {
			out = append(out, Metric{Name: d.Name, Type: d.Type(), Help: d.Help, Labels: append([]string(nil), d.Labels...)})
		}
	}
	sortByName(out)
	return out
}

// FromCollectors lists the families that client_golang collectors (the
// exporter's own series) serve, as a registry gathers them: the type is
// the family's, the labels those of its first series.
func FromCollectors(cs ...prometheus.Collector) ([]Metric, error) {
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register: %w", err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather: %w", err)
	}
	var out []Metric
	for _, f := range families {
		m := Metric{Name: f.GetName(), Help: f.GetHelp()}
		switch f.GetType() {
		case dto.MetricType_GAUGE:
			m.Type = "gauge"
		case dto.MetricType_COUNTER:
			m.Type = "counter"
		default:
			m.Type = strings.ToLower(f.GetType().String())
		}
		if len(f.GetMetric()) > 0 {
			for _, l := range f.GetMetric()[0].GetLabel() {
				m.Labels = append(m.Labels, l.GetName())
			}
		}
		out = append(out, m)
	}
	sortByName(out)
	return out, nil
}

func sortByName(ms []Metric) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
}

// Section is a titled group of metrics.
type Section struct {
	Title   string
	Intro   string
	Metrics []Metric
	// Notes is Markdown shown after the table.
	Notes string
}

// Markdown renders the document.
func Markdown(sections []Section) string {
	var b strings.Builder
	b.WriteString("# Metrics\n\n")
	b.WriteString("Generated from the collectors' metric tables by `go test ./internal/metricsdoc -update`; a test fails when\n")
	b.WriteString("this file and the code disagree. Values come from the last successful refresh of each cluster.\n")
	for _, s := range sections {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n| metric | type | labels | meaning |\n|---|---|---|---|\n", s.Title, s.Intro)
		for _, m := range s.Metrics {
			labels := make([]string, len(m.Labels))
			for i, l := range m.Labels {
				labels[i] = "`" + l + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Name, m.Type, strings.Join(labels, ", "),
				strings.ReplaceAll(m.Help, "|", `\|`))
		}
		if s.Notes != "" {
			b.WriteString("\n" + s.Notes)
		}
	}
	return b.String()
}

// Sections are METRICS.md's sections for a registry: one per system, in
// its order, then the exporter's own metrics, self (the collectors of
// collector.NewSelfMetrics(systems)).
func Sections(systems []system.System, self ...prometheus.Collector) ([]Section, error) {
	own, err := FromCollectors(self...)
	if err != nil {
		return nil, err
	}
	var out []Section
	for _, s := range systems {
		out = append(out, Section{Title: s.Doc().Title, Intro: s.Doc().Intro, Metrics: FromSets(s.Sets()...), Notes: s.Doc().Notes})
	}
	return append(out, Section{Title: "The exporter itself", Intro: "Besides Go runtime (`go_*`), process (`process_*`) and `/metrics` handler (`promhttp_metric_handler_*`) series.", Metrics: own}), nil
}
