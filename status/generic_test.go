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
