package status

import (
	"encoding/json"
	"html"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/status/model"
	"github.com/failover-exporter/failover_exporter/systems/redis"
)

// modelPage renders the given parts as they are, with no system's builder.
func modelPage(log *events.Log, parts ...model.Cluster) *Page {
	return &Page{Title: "Failover Exporter", Version: "test",
		Sources: Sources{Clusters: func(time.Time) []model.Cluster { return parts }, Events: log},
		now:     func() time.Time { return t0.Add(41 * time.Second) }}
}

var sectionStart = regexp.MustCompile(`<section class="cluster" id="[^"]*" data-system="([^"]*)" data-cluster="([^"]*)">`)

// section is one cluster's section of a rendered page.
type section struct{ system, name, body string }

func sectionsOf(t *testing.T, body string) []section {
	t.Helper()
	var out []section
	locs := sectionStart.FindAllStringSubmatchIndex(body, -1)
	for i, loc := range locs {
		end := len(body)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out = append(out, section{system: html.UnescapeString(body[loc[2]:loc[3]]), name: html.UnescapeString(body[loc[4]:loc[5]]), body: body[loc[0]:end]})
	}
	return out
}

var eventsHref = regexp.MustCompile(`<a href="([^"]*)">`)

// TestPageSameNameInTwoSystems: names are unique only within a system, so a
// Kafka and a Redis cluster of the same name get a section each, each with
// only its own system's events; and whatever a name holds (&, #, /,
// spaces, non-ASCII, something that reads like another parameter), the
// section's events link, followed through the events handler, answers
// exactly that cluster's events.
func TestPageSameNameInTwoSystems(t *testing.T) {
	names := []string{"prod", "prod&system=redis", "a&b", "#top", "eu/west 1", "zürich ✓", "100% ok+1", "a=b;c?d"}
	elog := events.NewLog(100, log.NewNopLogger())
	var parts []model.Cluster
	known := map[string][]string{}
	for _, system := range []string{"kafka", "redis"} {
		for i, name := range names {
			part := model.Cluster{System: system, Name: name, Head: &model.Head{Up: true}}
			if system == "kafka" {
				part.Title = "Kafka cluster " + name
			} else {
				part.Title = "Redis Cluster " + name
			}
			parts = append(parts, part)
			known[system] = append(known[system], name)
			var l events.List
			// Each cluster's events name it, so that a stray one shows.
			l.Add(t0.Add(time.Duration(i)*time.Second), redis.EventNodeFail, events.Subject{Address: system + "|" + name}, "", "")
			elog.Record(system, name, l.All())
		}
	}
	_, body := render(t, modelPage(elog, parts...), "/")
	secs := sectionsOf(t, body)
	if len(secs) != 2*len(names) {
		t.Fatalf("%d sections, want %d: one per system and name", len(secs), 2*len(names))
	}
	handler := elog.Handler(func() map[string][]string { return known })
	for i, sec := range secs {
		system, name := parts[i].System, parts[i].Name
		if sec.system != system || sec.name != name {
			t.Errorf("section %d is %s %q, want %s %q", i, sec.system, sec.name, system, name)
			continue
		}
		subject := "<td>" + system + "|" + name + "</td>"
		if n := strings.Count(sec.body, `<tr data-kind="node_fail">`); n != 1 || !strings.Contains(html.UnescapeString(sec.body), subject) {
			t.Errorf("%s %q: %d events on its section, want only its own (%s):\n%s", system, name, n, subject, sec.body)
		}
		m := eventsHref.FindStringSubmatch(sec.body)
		if m == nil {
			t.Errorf("%s %q: no events link:\n%s", system, name, sec.body)
			continue
		}
		// As a browser follows it from the page on /.
		link, err := url.Parse(html.UnescapeString(m[1]))
		if err != nil {
			t.Errorf("%s %q: link %q: %v", system, name, m[1], err)
			continue
		}
		target := (&url.URL{Scheme: "http", Host: "exporter", Path: "/"}).ResolveReference(link)
		if target.Path != "/api/v1/events" || target.Fragment != "" {
			t.Errorf("%s %q: link %q leads to %s (fragment %q)", system, name, m[1], target.Path, target.Fragment)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest("GET", target.String(), nil))
		var resp events.Response
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || rec.Code != 200 {
			t.Errorf("%s %q: %s answered %d %s", system, name, target, rec.Code, rec.Body)
			continue
		}
		if len(resp.Events) != 1 || resp.Events[0].System != system || resp.Events[0].Cluster != name {
			t.Errorf("%s %q: %s answered %+v, want exactly that cluster's one event", system, name, target, resp.Events)
		}
	}
}

// TestPageMergesParts: a canary's part joins its cluster's section; the
// same name in another system stays apart.
func TestPageMergesParts(t *testing.T) {
	_, body := render(t, modelPage(nil,
		model.Cluster{System: "kafka", Name: "prod", Head: &model.Head{Up: true, HasData: true}, Title: "Kafka cluster prod",
			Stats: []model.Stat{{Name: "brokers", Label: "brokers live", Value: "3 / 3", Level: "good"}}},
		model.Cluster{System: "redis", Name: "prod", Head: &model.Head{Up: true, HasData: true}, Title: "Redis Cluster prod",
			Stats: []model.Stat{{Name: "state", Label: "cluster_state", Value: "ok", Level: "good"}}},
		model.Cluster{System: "kafka", Name: "prod", Stats: []model.Stat{{Name: "canary-topic", Label: "canary topic", Value: "ok", Detail: "RF 3 / 3 · min ISR 2 / 2", Level: "good"}}},
	), "/")
	secs := sectionsOf(t, body)
	if len(secs) != 2 {
		t.Fatalf("%d sections, want kafka prod and redis prod", len(secs))
	}
	if !strings.Contains(secs[0].body, `<h2>Kafka cluster prod</h2>`) || !strings.Contains(secs[0].body, `data-stat="brokers"`) || !strings.Contains(secs[0].body, `data-stat="canary-topic">canary topic<b>ok</b>`) {
		t.Errorf("the canary did not join the Kafka cluster's section:\n%s", secs[0].body)
	}
	if !strings.Contains(secs[1].body, `<h2>Redis Cluster prod</h2>`) || strings.Contains(secs[1].body, "canary-topic") || strings.Contains(secs[1].body, `data-stat="brokers"`) {
		t.Errorf("the Redis section has Kafka's parts:\n%s", secs[1].body)
	}
}

// TestPageShowsANewSystem: a system the template has no part for shows
// with its head and its events, with no template work.
func TestPageShowsANewSystem(t *testing.T) {
	elog := events.NewLog(10, log.NewNopLogger())
	var l events.List
	l.Add(t0, events.Kind("lag_high"), events.Subject{Topic: "orders"}, "1s", "90s")
	elog.Record("replication", "eu-us", l.All())
	_, body := render(t, modelPage(elog, model.Cluster{System: "replication", Name: "eu-us",
		Head: &model.Head{Up: false, HasData: true, LastError: "dial tcp: refused", LastOK: "40s ago", Refreshes: 9, Failures: 2}}), "/")
	secs := sectionsOf(t, body)
	if len(secs) != 1 || secs[0].system != "replication" || secs[0].name != "eu-us" {
		t.Fatalf("sections %+v", secs)
	}
	for _, want := range []string{
		`<h2>replication cluster eu-us</h2>`,
		`data-stat="up">refresh<b>down</b>last ok 40s ago</div>`,
		`Last refresh failed: dial tcp: refused`,
		`<tr data-kind="lag_high">`, `<td>1s → 90s</td>`,
		`href="api/v1/events?cluster=eu-us&amp;system=replication"`,
	} {
		if !strings.Contains(secs[0].body, want) {
			t.Errorf("section lacks %s:\n%s", want, secs[0].body)
		}
	}
	if _, body := render(t, modelPage(nil), "/"); !strings.Contains(body, "No clusters are configured.") {
		t.Errorf("an empty page does not say there is nothing to show")
	}
}

// TestPageTakesOnlyColours: a strip's colours reach the style attribute
// only as #rrggbb, on its segments and its legend alike, and its classes
// reach the class attribute only as plain names.
func TestPageTakesOnlyColours(t *testing.T) {
	evil := "red;background-image:url(//evil)"
	strip := &model.Strip{Name: `keys" onclick="evil`, Label: "16384 hash slots by owner",
		Segments: []model.Segment{
			{Class: "st-ok", Width: "1", Color: "#317ac4", Title: "slots 0-99: a (ok)", Attrs: []model.Attr{{Name: "data-first", Value: "0"}, {Name: "data-last", Value: "99"}, {Name: "data-owner", Value: "a"}, {Name: "data-state", Value: "ok"}}},
			{Class: `st-ok" onclick="evil`, Width: "99", Color: evil, Title: "slots 100-16383: b (ok)", Attrs: []model.Attr{{Name: "data-first", Value: "100"}, {Name: "data-last", Value: "16383"}, {Name: "data-owner", Value: "b"}, {Name: "data-state", Value: "ok"}}},
		},
		Legend: []model.LegendEntry{{Class: "st-ok", Color: "#317ac4", Text: "0–99 a (ok)"}, {Class: "st-ok", Color: evil, Text: "100–16383 b (ok)"}}}
	_, body := render(t, modelPage(nil, model.Cluster{System: "redis", Name: "cache", Head: &model.Head{Up: true, HasData: true}, Title: "Redis Cluster cache",
		Tables: []model.Table{{Name: "slot-map", Title: "Slot map", Strip: strip}}}), "/")
	if !strings.Contains(body, "background-color:#317ac4") || !strings.Contains(body, "background-color:"+string(fallbackColor)) || strings.Contains(body, "evil") {
		t.Errorf("slot colours not checked:\n%s", body)
	}
	for _, want := range []string{
		`<div class="strip" role="img" aria-label="16384 hash slots by owner">`,
		`<div class="st-ok" style="width:1%;background-color:#317ac4" title="slots 0-99: a (ok)" data-first="0" data-last="99" data-owner="a" data-state="ok"></div>`,
		`<div style="width:99%;background-color:#999999" title="slots 100-16383: b (ok)" data-first="100" data-last="16383" data-owner="b" data-state="ok"></div>`,
		`<span><i class="st-ok" style="background-color:#999999"></i>100–16383 b (ok)</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s:\n%s", want, body)
		}
	}
}
