package exposition

import (
	"testing"
)

func TestRendererRendersOncePerKeyAndMergesSources(t *testing.T) {
	health, series := &Set{}, &Set{}
	up := health.Gauge("demo_up", "Up.", "demo_cluster")
	nodes := series.Gauge("demo_nodes", "Nodes.", "demo_cluster")
	r := NewRenderer(health, series)
	emits := 0
	render := func(source string, key int) {
		r.Render(source, func() (any, EmitFunc) {
			return key, func(sinks ...Sink) {
				emits++
				sinks[0].Add(up, 1, source)
				sinks[1].Add(nodes, float64(key), source)
			}
		})
	}
	render("b", 1)
	first := r.Latest("b")
	render("b", 1)
	if again := r.Latest("b"); again[1] != first[1] || again[0] != first[0] {
		t.Error("re-rendered for the same key")
	}
	render("b", 2)
	if next := r.Latest("b"); next[1] == first[1] {
		t.Error("not re-rendered for a new key")
	}
	render("a", 3)
	// One emit per family: two sets of one family each, three renderings.
	if emits != 6 {
		t.Errorf("emit called %d times, want 6", emits)
	}

	out, err := PlainText(writerFunc(func(st *Stream) { r.AppendText(st, []string{"a", "b", "unknown"}) }))
	if err != nil {
		t.Fatal(err)
	}
	want := "# HELP demo_up Up.\n# TYPE demo_up gauge\ndemo_up{demo_cluster=\"a\"} 1\ndemo_up{demo_cluster=\"b\"} 1\n" +
		"# HELP demo_nodes Nodes.\n# TYPE demo_nodes gauge\ndemo_nodes{demo_cluster=\"a\"} 3\ndemo_nodes{demo_cluster=\"b\"} 2\n"
	if string(out) != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}

	r.Remove("b")
	if r.Has("b") || !r.Has("a") {
		t.Error("Remove removed the wrong source")
	}
}

type writerFunc func(*Stream)

func (f writerFunc) AppendText(st *Stream) { f(st) }
