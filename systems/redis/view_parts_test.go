package redis

import (
	"reflect"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/status/model"
)

// TestViewParts: the cluster's view laid out as the page's generic parts,
// with the attributes and classes the page's readers (e2e, scripts) rely
// on: data-owner and data-state on the slot map, data-node and data-role
// (and class="bad" for a master in trouble) on the masters and replicas.
func TestViewParts(t *testing.T) {
	tables := viewOf(failingOver(), viewT0.Add(41*time.Second)).Tables
	var names []string
	for _, table := range tables {
		names = append(names, table.Name)
	}
	if want := []string{"slot-map", "shards", "foreign"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("parts %q, want %q (no migration in flight, no slot stats)", names, want)
	}
	strip := tables[0].Strip
	if strip == nil || len(strip.Segments) != 2 || len(strip.Legend) != 2 || len(strip.Marks) != 0 || len(tables[0].Columns) != 0 {
		t.Fatalf("slot map %+v, want a strip alone of two runs with their legend", tables[0])
	}
	if want := (model.Segment{Class: "st-fail", Width: "50.0000", Color: colorFail, Title: "slots 0-8191: 127.0.0.1:7000 (fail)",
		Attrs: []model.Attr{{Name: "data-first", Value: "0"}, {Name: "data-last", Value: "8191"}, {Name: "data-owner", Value: "127.0.0.1:7000"}, {Name: "data-state", Value: "fail"}}}); !reflect.DeepEqual(strip.Segments[0], want) {
		t.Errorf("first run %+v, want %+v", strip.Segments[0], want)
	}
	shards := tables[1]
	want := []model.Row{
		{Attrs: []model.Attr{{Name: "data-node", Value: idA}, {Name: "data-role", Value: "master"}, {Name: "class", Value: "bad"}},
			Cells: []string{idA[:8], "127.0.0.1:7000", "master", "fail", "no", "8192", ""}},
		{Attrs: []model.Attr{{Name: "data-node", Value: idD}, {Name: "data-role", Value: "replica"}, {Name: "class", Value: ""}}, Indent: true,
			Cells: []string{idD[:8], "127.0.0.1:7003", "replica", "ok", "yes", "", "lag 12 B link down"}},
		{Attrs: []model.Attr{{Name: "data-node", Value: idB}, {Name: "data-role", Value: "master"}, {Name: "class", Value: ""}},
			Cells: []string{idB[:8], "127.0.0.1:7001", "master", "ok", "yes", "8192", ""}},
	}
	if !reflect.DeepEqual(shards.Rows, want) || !shards.Columns[0].Code || !shards.Columns[5].Numeric {
		t.Errorf("masters and replicas:\n got %+v\nwant %+v", shards.Rows, want)
	}
	if foreign := tables[2]; len(foreign.Rows) != 1 || !reflect.DeepEqual(foreign.Rows[0],
		model.Row{Attrs: []model.Attr{{Name: "class", Value: "warn"}}, Cells: []string{"ffffffff", "127.0.0.1:7009", "not_listed"}}) || foreign.Intro == "" {
		t.Errorf("foreign nodes %+v", foreign)
	}
}
