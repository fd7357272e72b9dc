package exposition

import (
	"reflect"
	"testing"
)

func TestTable(t *testing.T) {
	table := Table{Labels: []string{"cluster_x"}, Buckets: []float64{1, 2}}
	up := table.Health.Gauge("x_up", "Up.", "cluster_x")
	g := table.Gauge("x_g", "G.")
	c := table.Counter("x_c_total", "C.", "a", "b")
	h := table.Histogram("x_h_seconds", "H.", "a")
	sets := table.Sets()
	if len(sets) != 2 || !reflect.DeepEqual(sets[0].Descs(), []*Desc{up}) || !reflect.DeepEqual(sets[1].Descs(), []*Desc{g, c, h}) {
		t.Fatalf("sets %v: want the health set, then the series in the order added", sets)
	}
	for _, tc := range []struct {
		d      *Desc
		labels []string
	}{{g, []string{"cluster_x"}}, {c, []string{"cluster_x", "a", "b"}}, {h, []string{"cluster_x", "a"}}} {
		if !reflect.DeepEqual(tc.d.Labels, tc.labels) {
			t.Errorf("%s labels %v, want %v", tc.d.Name, tc.d.Labels, tc.labels)
		}
	}
	if !h.IsHistogram() || !reflect.DeepEqual(h.Buckets, []float64{1, 2}) {
		t.Errorf("histogram buckets %v, want the table's", h.Buckets)
	}
}
