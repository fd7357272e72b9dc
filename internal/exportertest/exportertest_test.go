package exportertest

import "testing"

func TestHistogramSeriesAreNamedAsInAQuery(t *testing.T) {
	m, err := Parse([]byte(`# HELP x_seconds Durations.
# TYPE x_seconds histogram
x_seconds_bucket{topic="a",le="1"} 1
x_seconds_bucket{topic="a",le="10"} 3
x_seconds_bucket{topic="a",le="+Inf"} 4
x_seconds_sum{topic="a"} 40.5
x_seconds_count{topic="a"} 4
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"x_seconds_count", map[string]string{"topic": "a"}, 4},
		{"x_seconds_sum", nil, 40.5},
		{"x_seconds_bucket", map[string]string{"le": "10"}, 3},
		{"x_seconds_bucket", map[string]string{"le": "+Inf"}, 4},
	} {
		if got, ok := m.Value(c.name, c.match); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.match, got, ok, c.want)
		}
	}
	if n := len(m.Series("x_seconds_bucket", nil)); n != 3 {
		t.Errorf("%d bucket series, want 3", n)
	}
	if _, ok := m.Value("x_seconds_count", map[string]string{"topic": "b"}); ok {
		t.Error("found a series for another topic")
	}
}
