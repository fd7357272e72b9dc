package contract

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// When every cluster is its own target (/probe, the chart's probes.targets),
// a cluster's series come from a target whose instance is the cluster's
// name and whose job is the probe job, while the exporter's own series stay
// on its /metrics target. The alerts, dashboards and mixin promise to work
// unchanged there; the promtool unit tests are run again with their input
// series moved to that layout.

// OwnSeries is what the chart's ServiceMonitor keeps of /metrics once the
// clusters are probed (charts/failover-exporter/templates/monitor.yaml):
// the exporter's own series, which /probe never serves.
const OwnSeries = `(go|process|promhttp|failover_exporter)_.*`

// ProbeJob is the job of the probed targets, as in docs/probe.md's example.
const ProbeJob = "failover-clusters"

// clusterLabels name the target of a series: the label /probe?target=
// selects by, per system (a Kafka or Redis cluster, a Sentinel set, a
// MirrorMaker 2 flow).
var clusterLabels = []string{"kafka_cluster", "redis_cluster", "sentinel_cluster", "mirror"}

// ProbedUnitTests writes, into dir, the promtool unit tests at testGlob
// with their input series moved to probed targets, and the rules as
// ../alerts.yml of them, as the tests name them. It returns the tests'
// paths relative to dir and how many series it moved.
func ProbedUnitTests(dir, testGlob string, rules []byte) ([]string, int, error) {
	tests, err := filepath.Glob(testGlob)
	if err != nil || len(tests) == 0 {
		return nil, 0, fmt.Errorf("no promtool unit tests match %s (err %v)", testGlob, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), rules, 0o644); err != nil {
		return nil, 0, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		return nil, 0, err
	}
	var names []string
	moved := 0
	for _, path := range tests {
		body, n, err := MoveToProbedTargets(path)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		moved += n
		name := filepath.Join("tests", filepath.Base(path))
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return nil, 0, err
		}
		names = append(names, name)
	}
	return names, moved, nil
}

// MoveToProbedTargets rewrites one promtool unit test file: each input
// series of a cluster gets the probed target's instance (the cluster's name)
// and job; the exporter's own series keep theirs. It returns the file and
// how many series it moved.
func MoveToProbedTargets(path string) ([]byte, int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, 0, err
	}
	own := regexp.MustCompile("^" + OwnSeries + "$")
	moved := 0
	for _, test := range mappingValue(mappingValue(&doc, "tests"), "").Content {
		name := mappingValue(test, "name").Value
		seen := map[string]bool{}
		for _, input := range mappingValue(test, "input_series").Content {
			node := mappingValue(input, "series")
			metric, labels, err := parseSeries(node.Value)
			if err != nil {
				return nil, 0, fmt.Errorf("test %q: %w", name, err)
			}
			if !own.MatchString(metric) {
				target := ""
				for _, l := range clusterLabels {
					if target = labels[l]; target != "" {
						break
					}
				}
				if target == "" {
					return nil, 0, fmt.Errorf("test %q: %s has none of %v: which target would serve it?", name, node.Value, clusterLabels)
				}
				labels["instance"], labels["job"] = target, ProbeJob
				moved++
			}
			node.Value = formatSeries(metric, labels)
			// Two exporters' copies differ by pod as well as instance: if
			// moving them made two series one, the test would not say what
			// it said before.
			if seen[node.Value] {
				return nil, 0, fmt.Errorf("test %q: two input series become %s on probed targets", name, node.Value)
			}
			seen[node.Value] = true
		}
	}
	out, err := yaml.Marshal(&doc)
	return out, moved, err
}

// mappingValue is the value of key in a YAML mapping (or, with key "", the
// node itself past the document), or an empty node.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if key == "" {
		return n
	}
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return &yaml.Node{}
}

var (
	seriesName = regexp.MustCompile(`^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*`)
	labelName  = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*`)
)

// parseSeries reads promtool's series notation, name{label="value",...}.
func parseSeries(s string) (string, map[string]string, error) {
	m := seriesName.FindStringSubmatch(s)
	if m == nil {
		return "", nil, fmt.Errorf("series %q: no metric name", s)
	}
	name, rest := m[1], s[len(m[0]):]
	labels := map[string]string{}
	if rest == "" {
		return name, labels, nil
	}
	if rest[0] != '{' {
		return "", nil, fmt.Errorf("series %q: want { after the name", s)
	}
	rest = strings.TrimLeft(rest[1:], " ")
	for !strings.HasPrefix(rest, "}") {
		l := labelName.FindStringSubmatch(rest)
		if l == nil {
			return "", nil, fmt.Errorf("series %q: want a label at %q", s, rest)
		}
		rest = rest[len(l[0]):]
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return "", nil, fmt.Errorf("series %q: label %s: %v", s, l[1], err)
		}
		if labels[l[1]], err = strconv.Unquote(quoted); err != nil {
			return "", nil, fmt.Errorf("series %q: label %s: %v", s, l[1], err)
		}
		rest = strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(rest[len(quoted):], " "), ","), " ")
	}
	if strings.TrimSpace(rest[1:]) != "" {
		return "", nil, fmt.Errorf("series %q: text after }", s)
	}
	return name, labels, nil
}

func formatSeries(name string, labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(labels[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}
