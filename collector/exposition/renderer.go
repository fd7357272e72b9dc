package exposition

import "sync"

// Renderer keeps the latest rendering of each source (a cluster) for a
// list of sets, usually a collector's health and series sets. Renderings
// are made when a source publishes new state, on its refresh goroutine; a
// scrape takes the latest one and never waits for one in progress.
type Renderer struct {
	sets []*Set

	// renderMu serialises renderings, so that a rendering of newer state is
	// never replaced by one of older state that finished later.
	renderMu sync.Mutex

	mu     sync.Mutex
	latest map[string]*rendering
}

// rendering is one source's sets, rendered for one state (key).
type rendering struct {
	key  any
	sets []*Rendered
}

// NewRenderer returns a renderer for the sets, served in this order.
func NewRenderer(sets ...*Set) *Renderer {
	return &Renderer{sets: sets, latest: map[string]*rendering{}}
}

// EmitFunc emits a source's series: those of the renderer's i-th set to
// sinks[i].
type EmitFunc func(sinks ...Sink)

// Render renders source unless its latest rendering is for the same key.
// current is called under the rendering lock and returns the source's
// current state as a comparable key (the published state, say) and how to
// emit it.
func (r *Renderer) Render(source string, current func() (key any, emit EmitFunc)) {
	r.renderMu.Lock()
	defer r.renderMu.Unlock()
	key, emit := current()
	r.mu.Lock()
	prev := r.latest[source]
	r.mu.Unlock()
	if prev != nil && prev.key == key {
		return
	}
	next := &rendering{key: key, sets: make([]*Rendered, len(r.sets))}
	sinks := make([]Sink, len(r.sets))
	for i, set := range r.sets {
		var sized *Rendered
		if prev != nil {
			sized = prev.sets[i]
		}
		next.sets[i] = set.Render(sized, func(s Sink) {
			for j := range sinks {
				sinks[j] = Discard
			}
			sinks[i] = s
			emit(sinks...)
		})
	}
	r.mu.Lock()
	r.latest[source] = next
	r.mu.Unlock()
}

// Has reports whether source has a rendering.
func (r *Renderer) Has(source string) bool { return r.Latest(source) != nil }

// Latest returns source's latest rendering, one per set, or nil.
func (r *Renderer) Latest(source string) []*Rendered {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.latest[source]; l != nil {
		return l.sets
	}
	return nil
}

// Remove forgets source's rendering.
func (r *Renderer) Remove(source string) {
	r.mu.Lock()
	delete(r.latest, source)
	r.mu.Unlock()
}

// AppendText adds the latest renderings of the sources to st, family by
// family in set order, sources in the given order within each family.
// Sources without a rendering are left out.
func (r *Renderer) AppendText(st *Stream, sources []string) {
	r.mu.Lock()
	latest := make([]*rendering, 0, len(sources))
	for _, s := range sources {
		if l := r.latest[s]; l != nil {
			latest = append(latest, l)
		}
	}
	r.mu.Unlock()
	for i, set := range r.sets {
		renderings := make([]*Rendered, len(latest))
		for j, l := range latest {
			renderings[j] = l.sets[i]
		}
		st.AddSet(set, renderings)
	}
}
