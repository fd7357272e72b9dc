// Package metricsdoc renders the list of every metric the exporter serves,
// from the collectors' own descriptors, as the Markdown of METRICS.md.
package metricsdoc

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric is one family as documented.
type Metric struct {
	Name, Type, Help string
	Labels           []string
}

var descPattern = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: "((?:[^"\\]|\\.)*)", (?:unit: "[^"]*", )?constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

// Describe lists the families a collector describes, sorted by name. The
// type is inferred from the name: counters, and only counters, end in _total.
func Describe(c prometheus.Collector) ([]Metric, error) {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	var out []Metric
	var errs []string
	for d := range ch {
		m := descPattern.FindStringSubmatch(d.String())
		if m == nil {
			errs = append(errs, d.String())
			continue
		}
		metric := Metric{Name: m[1], Help: strings.ReplaceAll(m[2], `\"`, `"`), Type: "gauge"}
		if strings.HasSuffix(metric.Name, "_total") {
			metric.Type = "counter"
		}
		if m[3] != "" {
			metric.Labels = strings.Split(m[3], ",")
		}
		out = append(out, metric)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("cannot read descriptors: %s", strings.Join(errs, "; "))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Section is a titled group of metrics.
type Section struct {
	Title   string
	Intro   string
	Metrics []Metric
}

// Markdown renders the document.
func Markdown(sections []Section) string {
	var b strings.Builder
	b.WriteString("# Metrics\n\n")
	b.WriteString("Generated from the collectors' descriptors by `go test ./internal/metricsdoc -update`; a test fails when\n")
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
	}
	return b.String()
}
