package exposition

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/watch"
)

type countSnapshot struct{ n int }

// The one collector every system uses: each refresh renders its cluster
// once, a scrape without a new refresh renders nothing, and a cluster's
// own emit (SetEmit) is the one used for it.
func TestCollectorRendersOncePerRefresh(t *testing.T) {
	health, series := &Set{}, &Set{}
	up := health.Gauge("demo_up", "Up.", "demo_cluster")
	count := series.Gauge("demo_count", "Count.", "demo_cluster")
	emits := 0
	emit := func(scale float64) EmitStateFunc[countSnapshot] {
		return func(h, s Sink, cluster string, state *watch.State[countSnapshot]) {
			emits++
			h.Add(up, 1, cluster)
			if state.Snapshot != nil {
				s.Add(count, scale*float64(state.Snapshot.n), cluster)
			}
		}
	}
	n := 0
	newWatcher := func(name string) *watch.Watcher[countSnapshot] {
		return watch.New(name, time.Minute, time.Second, func(context.Context, *countSnapshot) (*countSnapshot, error) {
			n++
			return &countSnapshot{n: n}, nil
		}, log.NewNopLogger())
	}
	c := NewCollector(emit(1), health, series)
	a, b := newWatcher("a"), newWatcher("b")
	c.Set("a", a)
	c.SetEmit("b", b, emit(100))
	a.RefreshOnce(context.Background())
	b.RefreshOnce(context.Background())
	// A render may emit more than once (the renderer's passes); count
	// in units of one cluster's render.
	perRender := emits / 2
	if perRender == 0 || emits%2 != 0 {
		t.Fatalf("%d emits after one refresh of each of two clusters", emits)
	}
	text, err := PlainText(c)
	if err != nil {
		t.Fatal(err)
	}
	if emits != 2*perRender {
		t.Errorf("a scrape re-rendered: %d emits, want %d", emits, 2*perRender)
	}
	for _, want := range []string{`demo_count{demo_cluster="a"} 1`, `demo_count{demo_cluster="b"} 200`} {
		if !strings.Contains(string(text), want) {
			t.Errorf("served text lacks %s:\n%s", want, text)
		}
	}
	a.RefreshOnce(context.Background())
	if emits != 3*perRender {
		t.Errorf("%d emits after a second refresh of a, want %d", emits, 3*perRender)
	}
	c.Remove("b")
	if states := c.States(); len(states) != 1 || states[0].Name != "a" || states[0].State.Snapshot.n != 3 {
		t.Errorf("states after removing b: %+v", states)
	}
}
