// Package watch refreshes a snapshot of a cluster on an interval and
// publishes it atomically, so that a scrape reads the latest state without
// ever waiting on the cluster.
package watch

import (
	"context"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// RefreshFunc reads the cluster once. prev is the last snapshot that was
// read successfully (nil before the first success); implementations use it
// to carry transition counters forward. The context carries the refresh
// deadline.
type RefreshFunc[S any] func(ctx context.Context, prev *S) (*S, error)

// State is what a scrape sees: the outcome of the last refresh and the last
// snapshot that was read successfully. It is immutable once published.
type State[S any] struct {
	// Snapshot is the last successfully read snapshot, nil if none yet.
	// It is stale when Up is false; collectors must not serve it as current.
	Snapshot *S
	// Up is true when the most recent refresh succeeded.
	Up bool
	// LastError is the error of the most recent refresh, nil when Up.
	LastError error
	// LastSuccess is when the most recent successful refresh finished.
	LastSuccess time.Time
	// LastDuration is how long the most recent refresh took.
	LastDuration time.Duration
	// Refreshes and Failures count refresh attempts and failed ones.
	Refreshes uint64
	Failures  uint64
}

// Named is a watched cluster's name and latest published state, as the
// status page reads them.
type Named[S any] struct {
	Name  string
	State *State[S]
}

// Watcher owns one goroutine that refreshes a snapshot on an interval.
type Watcher[S any] struct {
	name     string
	interval time.Duration
	timeout  time.Duration
	refresh  RefreshFunc[S]
	logger   log.Logger

	onStop    []func()
	stopOnce  sync.Once
	onPublish []func()
	state     atomic.Pointer[State[S]]
	ready     chan struct{}
	readyOnce sync.Once
	trigger   chan struct{}
}

// New returns a watcher that calls refresh every interval, each call bounded
// by timeout (the interval when not positive). A timeout longer than the
// interval lets a slow refresh finish; the next starts right after it. It
// does nothing until Run is called. logger should carry the cluster's name
// (ClusterLogger); the watcher's lines do not add it again.
func New[S any](name string, interval, timeout time.Duration, refresh RefreshFunc[S], logger log.Logger) *Watcher[S] {
	if timeout <= 0 {
		timeout = interval
	}
	w := &Watcher[S]{
		name:     name,
		interval: interval,
		timeout:  timeout,
		refresh:  refresh,
		logger:   logger,
		ready:    make(chan struct{}),
		trigger:  make(chan struct{}, 1),
	}
	w.state.Store(&State[S]{})
	return w
}

// ClusterLogger is the logger of one cluster's lines: every line about a
// cluster carries the same two keys, whichever package logs it.
func ClusterLogger(logger log.Logger, system, name string) log.Logger {
	return log.With(logger, "collector", system, "cluster", name)
}

// Name is the cluster name this watcher was created for.
func (w *Watcher[S]) Name() string { return w.name }

// Timeout bounds one refresh, and so how long Run takes to return once its
// context is cancelled (a refresh function that honours its context).
func (w *Watcher[S]) Timeout() time.Duration { return w.timeout }

// Current returns the latest published state. It never blocks.
func (w *Watcher[S]) Current() *State[S] { return w.state.Load() }

// Ready is closed once the first refresh has finished, successfully or not.
func (w *Watcher[S]) Ready() <-chan struct{} { return w.ready }

// Trigger asks for a refresh now instead of at the next tick. It never blocks.
func (w *Watcher[S]) Trigger() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// OnStop registers a function that Run calls when it returns, typically to
// close the connections the refresh function uses. Call it before Run.
func (w *Watcher[S]) OnStop(f func()) { w.onStop = append(w.onStop, f) }

// stop runs the OnStop functions, once, whether Run or Close asks first.
func (w *Watcher[S]) stop() {
	w.stopOnce.Do(func() {
		for _, f := range w.onStop {
			f()
		}
	})
}

// Close releases what building the watcher took (clients, their
// goroutines) when it will never run: a config check, a reload that failed
// after building it. After Run, it is not needed and does nothing.
func (w *Watcher[S]) Close() { w.stop() }

// Resume starts the watcher from another watcher's last state, of the
// same cluster under settings that changed: its first refresh carries the
// counters, open episodes and transitions on from that snapshot, so an
// incident spans a reload unbroken, and until then it serves that state
// and counts as ready. Call it before Run; nil does nothing.
func (w *Watcher[S]) Resume(from *State[S]) {
	if from == nil || from.Refreshes == 0 {
		return
	}
	resumed := *from
	w.state.Store(&resumed)
	w.readyOnce.Do(func() { close(w.ready) })
}

// OnPublish registers a function that is called, on the watcher's
// goroutine, after each refresh publishes its state; collectors use it to
// render their output ahead of the next scrape. Call it before Run.
func (w *Watcher[S]) OnPublish(f func()) { w.onPublish = append(w.onPublish, f) }

// Run refreshes immediately and then on every tick until ctx is cancelled.
func (w *Watcher[S]) Run(ctx context.Context) {
	defer w.stop()
	ticker := time.NewTicker(w.interval)
	defer ticker.Stop()
	for {
		w.RefreshOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-w.trigger:
		}
	}
}

// RefreshOnce performs one refresh and publishes its outcome. Run calls it;
// tests and benchmarks may call it directly.
func (w *Watcher[S]) RefreshOnce(ctx context.Context) {
	prev := w.state.Load()
	start := time.Now()
	refreshCtx, cancel := context.WithTimeout(ctx, w.timeout)
	snapshot, err := w.refresh(refreshCtx, prev.Snapshot)
	cancel()
	if ctx.Err() != nil && err != nil {
		// Shutting down: do not publish a failure caused by our own cancellation.
		return
	}
	next := &State[S]{
		Snapshot:     prev.Snapshot,
		LastSuccess:  prev.LastSuccess,
		LastDuration: time.Since(start),
		Refreshes:    prev.Refreshes + 1,
		Failures:     prev.Failures,
	}
	if err != nil {
		next.Failures++
		next.LastError = err
		// Warned once per outage, and again when the reason changes (a
		// timeout at start, then the broker's refusal): the new reason is
		// what the user must read.
		if prev.Up || prev.Refreshes == 0 || !sameFailure(prev.LastError, err) {
			level.Warn(w.logger).Log("msg", "refresh failed", "err", err)
		} else {
			level.Debug(w.logger).Log("msg", "refresh still failing", "err", err)
		}
	} else {
		if !prev.Up && prev.Refreshes > 0 {
			level.Info(w.logger).Log("msg", "refresh recovered")
		}
		next.Snapshot = snapshot
		next.Up = true
		next.LastSuccess = time.Now()
	}
	w.state.Store(next)
	for _, f := range w.onPublish {
		f()
	}
	w.readyOnce.Do(func() { close(w.ready) })
}

// digitRuns are the parts of an error's text that change between two
// refreshes failing for the same reason (a duration, a port, a count).
var digitRuns = regexp.MustCompile(`[0-9]+`)

// sameFailure reports whether two refresh errors say the same thing, but
// for their numbers.
func sameFailure(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return digitRuns.ReplaceAllString(a.Error(), "#") == digitRuns.ReplaceAllString(b.Error(), "#")
}
