package status

import (
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/status/model"
)

// TestPageRendersGenericParts: a system with no part of its own gets its
// title, stats, notes and tables on the page; parts of one section add up;
// levels reach the class attribute only as the page's own classes.
func TestPageRendersGenericParts(t *testing.T) {
	table := model.Table{Name: "things", Title: "Things, worst first",
		Columns: []model.Column{{Title: "thing"}, {Title: "count", Numeric: true}},
		Rows: []model.Row{
			{Key: "a", Level: "bad", Cells: []string{"a", "12"}},
			{Key: "b", Level: `x" onclick="alert(1)`, Cells: []string{"<b>", "3", "a cell past the columns"}},
		},
		More: 7, MoreText: "and 7 more things", Note: "Counted once a refresh."}
	_, body := render(t, modelPage(nil,
		model.Cluster{System: "replication", Name: "eu-us", Title: "Replication eu-us: eu → us", Head: &model.Head{Up: true, HasData: true},
			Stats:  []model.Stat{{Name: "lag", Label: "lag", Value: "3", Detail: "records", Level: "warn"}},
			Notes:  []model.Note{{Level: "error", Text: "Source eu was not read."}, {Text: "If eu died now, us would lack 3 records."}},
			Tables: []model.Table{table, {Name: "empty", Title: "Nothing here", Columns: []model.Column{{Title: "x"}}, Empty: "None."}}},
		model.Cluster{System: "replication", Name: "eu-us", Stats: []model.Stat{{Name: "extra", Label: "extra", Value: "1", Level: "purple"}}},
	), "/")
	secs := sectionsOf(t, body)
	if len(secs) != 1 {
		t.Fatalf("%d sections, want one: the parts of one name add up", len(secs))
	}
	sec := secs[0].body
	for _, want := range []string{
		`<h2>Replication eu-us: eu → us</h2>`,
		`<div class="stat warn" data-stat="lag">lag<b>3</b>records</div>`,
		`<div class="stat" data-stat="extra">extra<b>1</b></div>`,
		`<p class="error" data-note>Source eu was not read.</p>`,
		`<p data-note>If eu died now, us would lack 3 records.</p>`,
		`<h3>Things, worst first</h3>`,
		`<table class="things">`, `<tr><th>thing</th><th>count</th></tr>`,
		`<tr data-row="a" class="bad"><td>a</td><td class="num">12</td></tr>`,
		`<tr data-row="b"><td>&lt;b&gt;</td><td class="num">3</td><td>a cell past the columns</td></tr>`,
		`<p class="more">and 7 more things</p>`, `<p class="more">Counted once a refresh.</p>`,
		`<h3>Nothing here</h3>`, `<p>None.</p>`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %s:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "onclick") || strings.Contains(sec, "purple") {
		t.Errorf("a level other than the page's classes reached the page:\n%s", sec)
	}
	if strings.Index(sec, "<h3>Things") > strings.Index(sec, "<h3>Latest events</h3>") {
		t.Errorf("the tables come after the events")
	}
}

// TestPageRendersStrips: a table may lead with a strip (segments side by
// side, marks over them, a legend and a caption) and an intro, or be a
// strip alone; its columns may be code, its rows indented under the one
// above, its note carry code spans.
func TestPageRendersStrips(t *testing.T) {
	strip := &model.Strip{Name: "keys", Label: "100 things by owner",
		Segments: []model.Segment{
			{Class: "st-ok", Width: "40.0000", Color: "#317ac4", Title: "things 0-39: a", Attrs: []model.Attr{{Name: "data-owner", Value: "a"}}},
			{Width: "60.0000", Color: "#3b9b4b", Title: "things 40-99: b", Attrs: []model.Attr{{Name: "data-owner", Value: "b"}, {Name: "onclick", Value: "x"}}},
		},
		Marks:   []model.Segment{{Class: "moving", Left: "10.0000", Width: "5.0000", Title: "things 10-14 moving"}},
		Legend:  []model.LegendEntry{{Class: "st-ok", Color: "#317ac4", Text: "0–39 a"}, {Class: "moving", Text: "moving"}},
		Caption: []model.Span{{Text: "Darker holds more ("}, {Text: "<stats>", Code: true}, {Text: ")."}}}
	table := model.Table{Name: "owners", Title: "Owners", Intro: "Who owns what.",
		Columns: []model.Column{{Title: "id", Code: true}, {Title: "count", Numeric: true}},
		Rows: []model.Row{
			{Attrs: []model.Attr{{Name: "data-node", Value: "a"}, {Name: "class", Value: ""}}, Cells: []string{"a1", "40"}},
			{Attrs: []model.Attr{{Name: "data-node", Value: "a2"}}, Indent: true, Cells: []string{"a2", ""}},
		},
		NoteSpans: []model.Span{{Text: "Read by "}, {Text: "INFO", Code: true}, {Text: "."}}}
	_, body := render(t, modelPage(nil, model.Cluster{System: "things", Name: "x", Head: &model.Head{Up: true, HasData: true},
		Tables: []model.Table{{Name: "map", Title: "Thing map", Strip: strip}, table}}), "/")
	sec := sectionsOf(t, body)[0].body
	for _, want := range []string{
		`<h3>Thing map</h3>`,
		`<div class="strip keys" role="img" aria-label="100 things by owner">` +
			`<div class="st-ok" style="width:40.0000%;background-color:#317ac4" title="things 0-39: a" data-owner="a"></div>` +
			`<div style="width:60.0000%;background-color:#3b9b4b" title="things 40-99: b" data-owner="b"></div>` +
			`<div class="moving" style="left:10.0000%;width:5.0000%" title="things 10-14 moving"></div></div>`,
		`<div class="legend"><span><i class="st-ok" style="background-color:#317ac4"></i>0–39 a</span><span><i class="moving"></i>moving</span></div>`,
		`<p class="more">Darker holds more (<code>&lt;stats&gt;</code>).</p>`,
		`<h3>Owners</h3>`, `<p>Who owns what.</p>`,
		`<tr data-node="a" class=""><td><code>a1</code></td><td class="num">40</td></tr>`,
		`<tr data-node="a2"><td>&nbsp;&nbsp;↳ <code>a2</code></td><td class="num"></td></tr>`,
		`<p class="more">Read by <code>INFO</code>.</p>`,
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %s:\n%s", want, sec)
		}
	}
	// A strip alone is no table: no empty table, no "None.".
	if strings.Contains(sec, `<table class="map">`) || strings.Count(sec, "<p></p>") != 0 || strings.Contains(sec, "onclick") {
		t.Errorf("a strip alone rendered as a table, or an attribute not data-* reached the page:\n%s", sec)
	}
}
