package status

import (
	"fmt"
	"html"
	"html/template"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// maxEvents bounds each cluster's table of events; the link gives the rest.
const maxEvents = 25

type pageView struct {
	Title       string
	Version     string
	Now         time.Time
	RefreshSecs int
	Links       []Link
	Clusters    []clusterView
}

// clusterView is one cluster's section: its parts merged, and its events.
type clusterView struct {
	System, Name string
	// HasHead is false when only a part such as a canary's was given.
	HasHead bool
	model.Head
	// Title and the generic parts, those of every part added up.
	Title  string
	Stats  []model.Stat
	Notes  []model.Note
	Tables []model.Table
	Events []eventRow
	// EventsLink is this cluster's events as JSON, relative to the page.
	EventsLink string
	// HistoryBegins is when this exporter's kept history begins, as
	// text: a replica started mid-incident says it saw only its end.
	HistoryBegins string
}

type eventRow struct {
	Time    string
	Kind    string
	Subject string
	Change  string
}

// sections merges the parts with the same system and name into one
// section each, in the order each cluster first appears.
func sections(parts []model.Cluster, log *events.Log, now time.Time) []clusterView {
	type key struct{ system, name string }
	index := map[key]int{}
	var out []clusterView
	for _, p := range parts {
		k := key{p.System, p.Name}
		i, seen := index[k]
		if !seen {
			i = len(out)
			index[k] = i
			out = append(out, clusterView{System: p.System, Name: p.Name})
		}
		v := &out[i]
		if p.Head != nil {
			v.HasHead, v.Head = true, *p.Head
		}
		if p.Title != "" {
			v.Title = p.Title
		}
		v.Stats = append(v.Stats, p.Stats...)
		v.Notes = append(v.Notes, p.Notes...)
		v.Tables = append(v.Tables, p.Tables...)
	}
	for i := range out {
		v := &out[i]
		v.Events = eventRows(log, v.System, v.Name, now)
		v.EventsLink = eventsLink(v.System, v.Name)
		if log != nil {
			begins := log.Begins()
			v.HistoryBegins = begins.UTC().Format("2006-01-02 15:04:05 UTC") + " (" + model.Ago(now.Sub(begins)) + ")"
		}
	}
	return out
}

// eventsLink is the event log of one cluster, relative to the page on /.
// The name is escaped: it may hold &, #, / or anything else.
func eventsLink(system, name string) string {
	return "api/v1/events?" + url.Values{"system": {system}, "cluster": {name}}.Encode()
}

func eventRows(log *events.Log, system, cluster string, now time.Time) []eventRow {
	if log == nil {
		return nil
	}
	var rows []eventRow
	for _, e := range log.Query(system, cluster, time.Time{}, maxEvents) {
		change := e.After
		if e.Before != "" || e.After != "" {
			change = e.Before + " → " + e.After
		}
		if !e.FirstFailure.IsZero() {
			// The outage began before the cluster confirmed it.
			first := fmt.Sprintf("first failed probe %s (%.1fs before)", e.FirstFailure.UTC().Format("15:04:05"), e.Time.Sub(e.FirstFailure).Seconds())
			if change != "" {
				first = change + " · " + first
			}
			change = first
		}
		rows = append(rows, eventRow{Time: e.Time.UTC().Format("15:04:05") + " (" + model.Ago(now.Sub(e.Time)) + ")", Kind: string(e.Kind), Subject: e.Subject.Text(), Change: change})
	}
	return rows
}

// hexColor is a #rrggbb colour, the only CSS a view model may put on the
// page.
var hexColor = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// fallbackColor stands in for a colour that is not #rrggbb.
const fallbackColor template.CSS = "#999999"

// cssColor lets a view model's colour into a style attribute once it is
// known to be a plain #rrggbb colour.
func cssColor(c string) template.CSS {
	if !hexColor.MatchString(c) {
		return fallbackColor
	}
	return template.CSS(c)
}

// dataAttr is the name of an attribute a view model may give a row.
var dataAttr = regexp.MustCompile(`^data-[a-z][a-z0-9-]*$`)

// rowAttrs writes a row's attributes: data-* ones as they are (escaped),
// class only as one of the page's level classes; any other is dropped.
func rowAttrs(attrs []model.Attr) template.HTMLAttr {
	var b strings.Builder
	for _, a := range attrs {
		value := a.Value
		switch {
		case a.Name == "class":
			value = levelClass(value)
		case !dataAttr.MatchString(a.Name):
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a.Name + `="` + html.EscapeString(value) + `"`)
	}
	return template.HTMLAttr(b.String())
}

// className is a plain class name: what a strip or its segment may
// name of the page's classes.
var className = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// stripClass lets a strip's or a segment's class onto the page only as a
// plain name; anything else is dropped.
func stripClass(class string) string {
	if !className.MatchString(class) {
		return ""
	}
	return class
}

// column is a generic table's column i, the zero column past the last.
func column(columns []model.Column, i int) model.Column {
	if i < len(columns) {
		return columns[i]
	}
	return model.Column{}
}

// levelClass lets a generic part's level into a class attribute only as
// one of the page's level classes.
func levelClass(level string) string {
	switch level {
	case "good", "warn", "bad", "error":
		return level
	}
	return ""
}
