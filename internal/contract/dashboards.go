// Package contract checks that the Grafana dashboards and Prometheus alert
// rules shipped with failover_exporter only use metrics the exporter exposes,
// parse, and follow the conventions of the project (see contract_test.go).
//
// The exported helpers let other tests, such as the live end-to-end test,
// evaluate every panel's queries against a real Prometheus.
package contract

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// DataSourceRef is how a panel, target, annotation or variable names its data source.
type DataSourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// GridPos is a panel's position on the dashboard grid (24 columns wide).
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Target is one query of a panel.
type Target struct {
	RefID        string         `json:"refId"`
	Expr         string         `json:"expr"`
	LegendFormat string         `json:"legendFormat"`
	Instant      bool           `json:"instant"`
	Range        bool           `json:"range"`
	Format       string         `json:"format"`
	Hide         bool           `json:"hide"`
	Datasource   *DataSourceRef `json:"datasource"`
}

// Transformation is a Grafana data transformation of a panel.
type Transformation struct {
	ID      string          `json:"id"`
	Options json.RawMessage `json:"options"`
}

// FieldConfig holds the panel's default field settings we check.
type FieldConfig struct {
	Defaults struct {
		Unit string `json:"unit"`
	} `json:"defaults"`
}

// Panel is a dashboard panel; rows carry their collapsed children in Panels.
type Panel struct {
	ID              int              `json:"id"`
	Type            string           `json:"type"`
	Title           string           `json:"title"`
	Description     string           `json:"description"`
	Datasource      *DataSourceRef   `json:"datasource"`
	GridPos         *GridPos         `json:"gridPos"`
	Targets         []Target         `json:"targets"`
	Transformations []Transformation `json:"transformations"`
	FieldConfig     FieldConfig      `json:"fieldConfig"`
	Collapsed       bool             `json:"collapsed"`
	Panels          []Panel          `json:"panels"`
}

// Variable is a templating variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *DataSourceRef  `json:"datasource"`
}

// QueryString returns the variable's query whether Grafana stored it as a
// string (the classic form) or as an object with a "query" field.
func (v Variable) QueryString() string {
	var s string
	if err := json.Unmarshal(v.Query, &s); err == nil {
		return s
	}
	var obj struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(v.Query, &obj); err == nil {
		return obj.Query
	}
	return ""
}

// Annotation is a dashboard annotation query.
type Annotation struct {
	Name       string          `json:"name"`
	Enable     bool            `json:"enable"`
	Expr       string          `json:"expr"`
	Datasource *DataSourceRef  `json:"datasource"`
	BuiltIn    int             `json:"builtIn"`
	Filter     json.RawMessage `json:"filter"`
}

// Link is a dashboard link shown at the top of the dashboard.
type Link struct {
	Title string   `json:"title"`
	Type  string   `json:"type"`
	URL   string   `json:"url"`
	Tags  []string `json:"tags"`
}

// Dashboard is the subset of Grafana's dashboard JSON model that the checks use.
type Dashboard struct {
	UID           string   `json:"uid"`
	Title         string   `json:"title"`
	Tags          []string `json:"tags"`
	SchemaVersion int      `json:"schemaVersion"`
	Refresh       string   `json:"refresh"`
	Time          struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"time"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []Annotation `json:"list"`
	} `json:"annotations"`
	Links  []Link  `json:"links"`
	Panels []Panel `json:"panels"`
}

// AllPanels returns every panel, rows included, with the children of rows
// flattened after their row.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(panels []Panel) {
		for _, p := range panels {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// LoadDashboard reads and decodes a dashboard JSON file.
func LoadDashboard(path string) (*Dashboard, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read dashboard: %w", err)
	}
	var d Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("decode dashboard %s: %w", path, err)
	}
	return &d, nil
}

// Query is one PromQL expression of a panel, before variable substitution.
type Query struct {
	RefID   string
	Expr    string
	Instant bool
	Format  string
}

// PanelQuery is a panel and the queries it runs.
type PanelQuery struct {
	PanelID int
	Title   string
	Type    string
	Queries []Query
}

// LoadDashboardQueries returns every panel that runs queries (rows excluded,
// panels inside collapsed rows included), with its visible queries. Feed each
// Expr through SubstituteVariables before sending it to Prometheus.
func LoadDashboardQueries(path string) ([]PanelQuery, error) {
	d, err := LoadDashboard(path)
	if err != nil {
		return nil, err
	}
	var out []PanelQuery
	for _, p := range d.AllPanels() {
		if p.Type == "row" || len(p.Targets) == 0 {
			continue
		}
		pq := PanelQuery{PanelID: p.ID, Title: p.Title, Type: p.Type}
		for _, t := range p.Targets {
			if t.Hide || strings.TrimSpace(t.Expr) == "" {
				continue
			}
			pq.Queries = append(pq.Queries, Query{RefID: t.RefID, Expr: t.Expr, Instant: t.Instant, Format: t.Format})
		}
		out = append(out, pq)
	}
	return out, nil
}

// grafanaVariable matches the three syntaxes Grafana interpolates:
// $name, ${name} / ${name:format} and the deprecated [[name]] / [[name:format]].
var grafanaVariable = regexp.MustCompile(`\$(\w+)|\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]`)

// SubstituteVariables replaces Grafana variable references in expr with the
// values in vars (keys without the leading $, e.g. "kafka_cluster",
// "__rate_interval"). References to unknown variables, and regex back
// references such as "$1" in label_replace, are left as they are.
func SubstituteVariables(expr string, vars map[string]string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(ref string) string {
		m := grafanaVariable.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		if v, ok := vars[name]; ok {
			return v
		}
		return ref
	})
}

// BuiltinVariables returns sample values for Grafana's built-in interval and
// range variables, as Grafana would set them for a 30 minute dashboard with a
// 15s scrape interval. Merge the dashboard's own variables into the result.
func BuiltinVariables() map[string]string {
	return map[string]string{
		"__rate_interval": "1m",
		"__interval":      "15s",
		"__interval_ms":   "15000",
		"__range":         "30m",
		"__range_s":       "1800",
		"__range_ms":      "1800000",
	}
}

// labelValuesQuery matches a Grafana Prometheus variable query
// label_values(selector, label); the one-argument form has no selector.
var labelValuesQuery = regexp.MustCompile(`^\s*label_values\(\s*(.*)\s*,\s*(\w+)\s*\)\s*$`)

// VariableSelector returns the PromQL selector inside a label_values or
// query_result variable query, or "" if the query runs no PromQL.
func VariableSelector(query string) string {
	if m := labelValuesQuery.FindStringSubmatch(query); m != nil {
		return strings.TrimSpace(m[1])
	}
	q := strings.TrimSpace(query)
	if strings.HasPrefix(q, "query_result(") && strings.HasSuffix(q, ")") {
		return strings.TrimSuffix(strings.TrimPrefix(q, "query_result("), ")")
	}
	return ""
}
