// Package maintenance keeps the announced stops (issue 47): before a
// planned stop of a broker, rack, node or zone, an operator (or `make
// roll`, through `failover_exporter safe-to-stop --announce`) tells the
// exporter, which opens a maintenance window for that member: served as a
// series for alert rules to join on, listed on /api/v1/maintenance and in
// the event log. A window opens only for a stop the failure budget calls safe
// now, one per cluster at a time, and ends when the member is back and
// caught up after having been seen stopped (the recovered question's
// answer), when its TTL runs out, or when it is withdrawn.
package maintenance

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
)

// Window is one announced stop.
type Window struct {
	System  string       `json:"system"`
	Cluster string       `json:"cluster"`
	Scope   budget.Scope `json:"scope"`
	// Member is the member or domain as the failure budget names it (a
	// broker id, a rack, a node id, a zone).
	Member string `json:"member"`
	// Members are the members the window covers, as the system's series
	// label them (the answer's members; the Member alone when it has none):
	// a rack's broker ids, a Redis node's or zone's addresses.
	Members []string `json:"members"`
	// OpenedAt is when it was announced; Until when its TTL runs out.
	OpenedAt time.Time `json:"opened_at"`
	Until    time.Time `json:"until"`
	// SeenStopped is set once the recovered question said no: the stop
	// began, and the window ends at the next yes.
	SeenStopped bool `json:"seen_stopped"`
}

// Event kinds of the windows, in the event log of the window's cluster.
const (
	EventOpened events.Kind = "maintenance_opened"
	EventClosed events.Kind = "maintenance_closed"
)

// Errors of Open, for the handler's status codes.
var (
	// ErrNotSafe: the failure budget does not call the stop safe now (the
	// answer says why).
	ErrNotSafe = errors.New("not safe to stop now: no maintenance window for an unsafe stop")
	// ErrBusy: another window of the cluster is open.
	ErrBusy = errors.New("another maintenance window of the cluster is open")
	// ErrTTL: a TTL out of bounds.
	ErrTTL = errors.New("ttl out of bounds")
)

// MaxTTL bounds a window: a forgotten one must not silence a cluster's
// alerts for long.
const MaxTTL = 4 * time.Hour

// Registry holds the open windows.
type Registry struct {
	asker budget.Asker
	log   *events.Log
	mu    sync.Mutex
	open  []Window
}

// NewRegistry returns an empty registry asking asker, recording events in
// log (nil: none).
func NewRegistry(asker budget.Asker, log *events.Log) *Registry {
	return &Registry{asker: asker, log: log}
}

// Open opens a window for the stop q of system's cluster for ttl, if the
// failure budget calls the stop safe now and no other window of the
// cluster is open; the same member announced again has its TTL renewed.
// It returns the window and the answer the verdict came from.
func (r *Registry) Open(system, cluster string, q budget.Question, ttl time.Duration, now time.Time) (Window, budget.Answer, error) {
	if ttl <= 0 || ttl > MaxTTL {
		return Window{}, budget.Answer{}, fmt.Errorf("%w: %s, want more than 0 and at most %s", ErrTTL, ttl, MaxTTL)
	}
	q.Recovered = false
	a, err := r.asker.Budget(system, cluster, q, now)
	if err != nil {
		return Window{}, a, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := Window{System: system, Cluster: cluster, Scope: a.Scope, Member: a.ID, Members: a.Members, OpenedAt: now, Until: now.Add(ttl)}
	if len(w.Members) == 0 {
		w.Members = []string{a.ID}
	}
	i := slices.IndexFunc(r.open, func(o Window) bool { return o.System == system && o.Cluster == cluster })
	if i >= 0 && (r.open[i].Scope != w.Scope || r.open[i].Member != w.Member) {
		o := r.open[i]
		return Window{}, a, fmt.Errorf("%w: %s %s until %s; withdraw it, or wait until it closes", ErrBusy, o.Scope, o.Member, o.Until.UTC().Format(time.RFC3339))
	}
	if i >= 0 {
		// Renewed: the stop may be under way, which makes the budget
		// say no; what counts is that it was safe when announced.
		r.open[i].Until = w.Until
		return r.open[i], a, nil
	}
	if !a.Safe {
		return Window{}, a, ErrNotSafe
	}
	r.open = append(r.open, w)
	r.record(w, now, EventOpened, "", fmt.Sprintf("announced stop of %s %s, until %s", w.Scope, w.Member, w.Until.UTC().Format(time.RFC3339)))
	return w, a, nil
}

// Close withdraws the window of system's cluster, reporting whether one
// was open.
func (r *Registry) Close(system, cluster string, now time.Time) (Window, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.open, func(o Window) bool { return o.System == system && o.Cluster == cluster })
	if i < 0 {
		return Window{}, false
	}
	w := r.open[i]
	r.open = slices.Delete(r.open, i, i+1)
	r.record(w, now, EventClosed, "open", "withdrawn")
	return w, true
}

// Sweep closes the windows whose TTL ran out and those whose member is
// back and caught up after having been seen stopped, asking the recovered
// question of each; an answer it cannot get (a stale snapshot) changes
// nothing.
func (r *Registry) Sweep(now time.Time) {
	r.mu.Lock()
	open := slices.Clone(r.open)
	r.mu.Unlock()
	for i := range open {
		w := &open[i]
		if !now.Before(w.Until) {
			continue
		}
		a, err := r.asker.Budget(w.System, w.Cluster, budget.Question{Scope: w.Scope, ID: w.Member, Recovered: true}, now)
		if err != nil {
			continue
		}
		if !a.Safe {
			w.SeenStopped = true
		} else if w.SeenStopped {
			w.Until = time.Time{} // recovered: closed below
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var kept []Window
	for _, w := range r.open {
		j := slices.IndexFunc(open, func(o Window) bool {
			return o.System == w.System && o.Cluster == w.Cluster && o.OpenedAt.Equal(w.OpenedAt)
		})
		if j >= 0 {
			w.SeenStopped = w.SeenStopped || open[j].SeenStopped
			if open[j].Until.IsZero() {
				r.record(w, now, EventClosed, "open", fmt.Sprintf("%s %s is back and caught up", w.Scope, w.Member))
				continue
			}
		}
		if !now.Before(w.Until) {
			r.record(w, now, EventClosed, "open", "its TTL ran out before the member was back and caught up")
			continue
		}
		kept = append(kept, w)
	}
	r.open = kept
}

// Start sweeps every interval until the returned stop is called (which
// waits for the sweep in progress).
func (r *Registry) Start(every time.Duration) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				r.Sweep(now)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-finished
	}
}

// Windows are the open windows, in the order they opened.
func (r *Registry) Windows() []Window {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.open)
}

// record adds a window's event to the log of its cluster.
func (r *Registry) record(w Window, at time.Time, kind events.Kind, before, after string) {
	if r.log == nil {
		return
	}
	r.log.Record(w.System, w.Cluster, []events.Event{{Time: at, Kind: kind, Subject: events.Subject{NodeID: w.Member}, Before: before, After: after}})
}
