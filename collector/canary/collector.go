package canary

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// EmitFunc emits one canary's round health into health and its counters
// into sink, for the cluster called cluster.
type EmitFunc[S any] func(health, sink exposition.Sink, cluster string, state *watch.State[S])

// Collector serves the latest counters of every canary of one kind (Kafka
// or Redis, told apart by the snapshot type S). It never talks to a cluster.
type Collector[S any] struct {
	sets []*exposition.Set
	emit EmitFunc[S]

	mu       sync.RWMutex
	canaries map[string]*watch.Watcher[S]

	renderer *exposition.Renderer
}

// NewCollector returns a collector with no canaries that serves the
// families of sets, in that order, through emit.
func NewCollector[S any](emit EmitFunc[S], sets ...*exposition.Set) *Collector[S] {
	return &Collector[S]{
		sets:     sets,
		emit:     emit,
		canaries: map[string]*watch.Watcher[S]{},
		renderer: exposition.NewRenderer(sets...),
	}
}

// Set adds or replaces the canary of the cluster called name. Call it
// before the watcher runs: each round then renders the canary's text
// right away, as the cluster collectors do, so that no scrape pays for it.
func (c *Collector[S]) Set(name string, w *watch.Watcher[S]) {
	c.mu.Lock()
	c.canaries[name] = w
	c.mu.Unlock()
	// A rendering of the watcher this one replaces is not served for it.
	c.renderer.Remove(name)
	w.OnPublish(func() { c.render(name, w) })
}

// Remove stops serving the canary of the cluster called name.
func (c *Collector[S]) Remove(name string) {
	c.mu.Lock()
	delete(c.canaries, name)
	c.mu.Unlock()
	c.renderer.Remove(name)
}

// Describe implements prometheus.Collector.
func (c *Collector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, set := range c.sets {
		set.Describe(ch)
	}
}

func (c *Collector[S]) sorted() ([]string, []*watch.State[S]) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := make([]string, 0, len(c.canaries))
	for name := range c.canaries {
		names = append(names, name)
	}
	sort.Strings(names)
	states := make([]*watch.State[S], len(names))
	for i, name := range names {
		states[i] = c.canaries[name].Current()
	}
	return names, states
}

// States returns every canary's latest published state, in name order,
// for the status page. It never waits on a cluster.
func (c *Collector[S]) States() []watch.Named[S] {
	names, states := c.sorted()
	out := make([]watch.Named[S], len(names))
	for i, name := range names {
		out[i] = watch.Named[S]{Name: name, State: states[i]}
	}
	return out
}

// Collect implements prometheus.Collector.
func (c *Collector[S]) Collect(ch chan<- prometheus.Metric) {
	names, states := c.sorted()
	for i, name := range names {
		sink := exposition.ChanSink(ch)
		c.emit(sink, sink, name, states[i])
	}
}

// AppendText adds every canary's series to a response. Each canary is
// rendered once per round, on its watcher's goroutine; a scrape takes the
// latest rendering and never waits for one in progress.
func (c *Collector[S]) AppendText(st *exposition.Stream) {
	c.mu.RLock()
	names := make([]string, 0, len(c.canaries))
	unrendered := map[string]*watch.Watcher[S]{}
	for name, w := range c.canaries {
		names = append(names, name)
		// Only a canary set but not run yet has no rendering.
		if !c.renderer.Has(name) {
			unrendered[name] = w
		}
	}
	c.mu.RUnlock()
	sort.Strings(names)
	for name, w := range unrendered {
		c.render(name, w)
	}
	c.renderer.AppendText(st, names)
}

func (c *Collector[S]) render(name string, w *watch.Watcher[S]) {
	c.renderer.Render(name, func() (any, exposition.EmitFunc) {
		state := w.Current()
		return state, func(sinks ...exposition.Sink) { c.emit(sinks[0], sinks[1], name, state) }
	})
}
