package exposition

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector/watch"
)

// EmitStateFunc emits one cluster's published state: its health series
// into health and, when the state may be served as current, the rest into
// sink.
type EmitStateFunc[S any] func(health, sink Sink, cluster string, state *watch.State[S])

// Collector serves the latest published state of every watched cluster of
// one system (told apart by its snapshot type S), from the system's metric
// tables. It never talks to a cluster: each refresh renders its cluster's
// text on the watcher's goroutine, and a scrape copies the latest
// rendering. Every system's collector is one of these.
type Collector[S any] struct {
	sets []*Set
	emit EmitStateFunc[S]

	mu       sync.RWMutex
	clusters map[string]servedCluster[S]

	renderer *Renderer
}

// servedCluster is a watcher and how its state is emitted.
type servedCluster[S any] struct {
	watcher *watch.Watcher[S]
	emit    EmitStateFunc[S]
}

// NewCollector returns a collector with no clusters that serves the
// families of sets, in that order (the health set first), through emit.
func NewCollector[S any](emit EmitStateFunc[S], sets ...*Set) *Collector[S] {
	return &Collector[S]{
		sets:     sets,
		emit:     emit,
		clusters: map[string]servedCluster[S]{},
		renderer: NewRenderer(sets...),
	}
}

// Set adds or replaces the watcher of the cluster called name. Call it
// before the watcher runs.
func (c *Collector[S]) Set(name string, w *watch.Watcher[S]) { c.SetEmit(name, w, c.emit) }

// SetEmit is Set with a cluster's own way of emitting its state (a
// setting of that cluster's, such as whether it has partition series).
func (c *Collector[S]) SetEmit(name string, w *watch.Watcher[S], emit EmitStateFunc[S]) {
	served := servedCluster[S]{watcher: w, emit: emit}
	c.mu.Lock()
	c.clusters[name] = served
	c.mu.Unlock()
	// A rendering of the watcher this one replaces is not served for it.
	c.renderer.Remove(name)
	w.OnPublish(func() { c.render(name, served) })
}

// Remove stops serving the cluster called name.
func (c *Collector[S]) Remove(name string) {
	c.mu.Lock()
	delete(c.clusters, name)
	c.mu.Unlock()
	c.renderer.Remove(name)
}

// Describe implements prometheus.Collector.
func (c *Collector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, set := range c.sets {
		set.Describe(ch)
	}
}

// sorted returns the clusters in name order.
func (c *Collector[S]) sorted() ([]string, []servedCluster[S]) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := slices.Sorted(maps.Keys(c.clusters))
	clusters := make([]servedCluster[S], len(names))
	for i, name := range names {
		clusters[i] = c.clusters[name]
	}
	return names, clusters
}

// States returns every cluster's latest published state, in name order,
// for the status page. It never waits on a cluster.
func (c *Collector[S]) States() []watch.Named[S] {
	names, clusters := c.sorted()
	out := make([]watch.Named[S], len(names))
	for i, name := range names {
		out[i] = watch.Named[S]{Name: name, State: clusters[i].watcher.Current()}
	}
	return out
}

// Collect implements prometheus.Collector.
func (c *Collector[S]) Collect(ch chan<- prometheus.Metric) {
	names, clusters := c.sorted()
	for i, name := range names {
		sink := ChanSink(ch)
		clusters[i].emit(sink, sink, name, clusters[i].watcher.Current())
	}
}

// AppendText adds every cluster's series to a response. Each cluster is
// rendered once per refresh, on its watcher's goroutine; a scrape takes the
// latest rendering and never waits for one in progress.
func (c *Collector[S]) AppendText(st *Stream) {
	names, clusters := c.sorted()
	c.appendRenderings(st, names, clusters)
}

// AppendClustersText adds the series of the clusters keep accepts, as
// AppendText adds every cluster's (for /metrics without the clusters
// /probe discovered).
func (c *Collector[S]) AppendClustersText(st *Stream, keep func(name string) bool) {
	names, clusters := c.sorted()
	kept, keptClusters := names[:0], clusters[:0]
	for i, name := range names {
		if keep(name) {
			kept, keptClusters = append(kept, name), append(keptClusters, clusters[i])
		}
	}
	c.appendRenderings(st, kept, keptClusters)
}

// AppendClusterText adds the series of the cluster called name to a
// response, as AppendText adds every cluster's, and reports whether the
// collector serves that cluster (for /probe, one cluster a target).
func (c *Collector[S]) AppendClusterText(st *Stream, name string) bool {
	c.mu.RLock()
	served, ok := c.clusters[name]
	c.mu.RUnlock()
	if ok {
		c.appendRenderings(st, []string{name}, []servedCluster[S]{served})
	}
	return ok
}

// appendRenderings adds the latest renderings of the clusters to st,
// rendering those that have none yet.
func (c *Collector[S]) appendRenderings(st *Stream, names []string, clusters []servedCluster[S]) {
	for i, name := range names {
		// Only a cluster set but not refreshed yet has no rendering.
		if !c.renderer.Has(name) {
			c.render(name, clusters[i])
		}
	}
	c.renderer.AppendText(st, names)
}

func (c *Collector[S]) render(name string, served servedCluster[S]) {
	c.renderer.Render(name, func() (any, EmitFunc) {
		state := served.watcher.Current()
		return state, func(sinks ...Sink) { served.emit(sinks[0], sinks[1], name, state) }
	})
}
