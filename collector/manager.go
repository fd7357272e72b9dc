// Package collector runs one watcher per configured cluster and keeps the
// set of watchers in line with the configuration across reloads.
package collector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// Watched counts the clusters cfg asks the registry's systems to watch,
// by system (parts of a cluster, such as its canary, not counted).
func Watched(systems []system.System, cfg *config.Config) map[string]int {
	counts := map[string]int{}
	for _, s := range systems {
		if s.Part() == "" {
			counts[s.Name()] += len(s.Clusters(cfg))
		}
	}
	return counts
}

// running is one watcher goroutine.
type running struct {
	unit    system.Unit
	watcher system.Watcher
	cancel  context.CancelFunc
	done    chan struct{}
	// target is the discovered target the watcher serves; nil for a
	// cluster of the config (discovery.go).
	target *target
}

// Manager owns the watchers and the collectors that serve them.
type Manager struct {
	logger  log.Logger
	events  *events.Log
	systems []system.System
	serving map[string]system.Serving // by system name

	// applyMu makes one Apply at a time; mu guards running and is held
	// only to read or swap it, never while waiting on a cluster, so that
	// /-/ready never waits on a reload.
	applyMu sync.Mutex
	mu      sync.Mutex
	running map[string]*running
	// wasReady is set once every watcher of the first config had a state:
	// readiness is about the process, and a reload never takes it back.
	wasReady atomic.Bool
	// applied is set once the first config was applied.
	applied atomic.Bool

	discovery discovery
	// testHookApplyDecided, when set by a test, runs in Apply between its
	// decision of what runs and its start of the new watchers.
	testHookApplyDecided func()
	// atStop run when the manager stops, before its watchers do.
	atStop []func()
}

// AtStop has Stop run f first: for what works beside the manager on its
// answers (the maintenance windows' sweep).
func (m *Manager) AtStop(f func()) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	m.atStop = append(m.atStop, f)
}

// ServeWindows has every system with maintenance series serve the open
// windows that windows returns (maintenance.Registry.Windows, read at
// every scrape) with its clusters' series.
func (m *Manager) ServeWindows(windows func() []maintenance.Window) {
	for _, s := range m.serving {
		s.ServeWindows(windows)
	}
}

// NewManager returns a manager of the given systems (the registry,
// systems.All, or a test's) with no clusters, whose event log keeps the
// last eventCapacity events (events.DefaultCapacity when not positive).
func NewManager(systems []system.System, logger log.Logger, eventCapacity int) *Manager {
	m := &Manager{
		logger:  logger,
		events:  events.NewLog(eventCapacity, logger),
		systems: systems,
		serving: map[string]system.Serving{},
		running: map[string]*running{},
	}
	m.discovery.targets = map[string]*target{}
	for _, s := range systems {
		m.serving[s.Name()] = s.Serving(m.events, logger)
	}
	return m
}

// Events is the log of the transitions every watcher observed and of what
// the write canaries saw.
func (m *Manager) Events() *events.Log { return m.events }

// TextWriters are the systems' collectors, served as pre-rendered text
// after the registry: a large cluster's series are too many for the
// registry path, and every collector renders the same way. They serve the
// clusters of the config; the discovered ones only with
// DiscoveryOptions.OnMetrics, so that no /probe changes what /metrics
// carries.
func (m *Manager) TextWriters() []exposition.TextWriter {
	writers := make([]exposition.TextWriter, len(m.systems))
	for i, s := range m.systems {
		writers[i] = m.serving[s.Name()].Writer(m.discoveredOnMetrics)
	}
	return writers
}

func (m *Manager) discoveredOnMetrics() bool { return m.discovery.opts.OnMetrics }

// states returns the latest states of the clusters of the system called
// name, typed []watch.Named[S] for that system's snapshot S, nil for a
// system the manager does not have.
func (m *Manager) states(name string) any {
	if s, ok := m.serving[name]; ok {
		return s.States()
	}
	return nil
}

// Views are the status page's view models of every system's clusters, in
// the registry's order: those of the config, and the discovered ones with
// DiscoveryOptions.OnMetrics.
func (m *Manager) Views(now time.Time) []model.Cluster {
	var views []model.Cluster
	for _, s := range m.systems {
		views = append(views, m.serving[s.Name()].Views(now, m.discoveredOnMetrics())...)
	}
	return views
}

// Known lists the watched clusters by the system their events are
// recorded under, for the events API to tell an unknown name from a quiet
// one.
func (m *Manager) Known() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	eventSystem := map[string]string{}
	for _, s := range m.systems {
		eventSystem[s.Name()] = s.EventSystem()
	}
	known := map[string][]string{}
	seen := map[string]bool{}
	for _, r := range m.running {
		sys := eventSystem[r.unit.System]
		if key := sys + "/" + r.unit.Cluster; !seen[key] {
			seen[key] = true
			known[sys] = append(known[sys], r.unit.Cluster)
		}
	}
	for _, names := range known {
		sort.Strings(names)
	}
	return known
}

// plan is a config's units, with a watcher built for each one that must
// start: new, or changed since it started.
type plan struct {
	units []system.Unit
	built map[string]system.Watcher // by unit key
}

// close releases every watcher the plan built, for a plan that will not
// be carried out.
func (p *plan) close() {
	for _, w := range p.built {
		w.Close()
	}
}

// plan lists cfg's units across the systems and builds the watchers of
// those that must start: every one for a check (reuse false), and for an
// Apply those not running with the same fingerprint. If anything fails, it
// closes what it built and returns the error: nothing is left behind. It
// connects to nothing and starts nothing.
func (m *Manager) plan(cfg *config.Config, reuse bool) (*plan, error) {
	p := &plan{built: map[string]system.Watcher{}}
	for _, s := range m.systems {
		units, err := m.serving[s.Name()].Plan(cfg)
		if err != nil {
			p.close()
			return nil, err
		}
		for _, u := range units {
			p.units = append(p.units, u)
			if r, ok := m.current(u.Key()); reuse && ok && r.target == nil && r.unit.Fingerprint == u.Fingerprint {
				continue
			}
			w, err := u.Build()
			if err != nil {
				p.close()
				return nil, err
			}
			p.built[u.Key()] = w
		}
	}
	return p, nil
}

// Check runs the plan of cfg dry: every cluster's client settings are
// built as Apply would build them, without connecting, and closed again.
// It refuses what Apply would refuse.
//
// Each watcher is closed before the next is built: holding them all, as a
// plan does, kept every client of a config of thousands of clusters in
// memory at once, and the check of a 1 MiB file took 21 s and 1 GB.
func (m *Manager) Check(cfg *config.Config) error {
	for _, s := range m.systems {
		units, err := m.serving[s.Name()].Plan(cfg)
		if err != nil {
			return err
		}
		for _, u := range units {
			w, err := u.Build()
			if err != nil {
				return err
			}
			w.Close()
		}
	}
	return nil
}

// Apply makes the running watchers match cfg: clusters whose settings did
// not change keep running (and keep their transition counters); changed
// ones are restarted from their last state, so their counters, open
// episodes and events carry on; removed ones are stopped. If any cluster
// cannot be set up, nothing changes, nothing leaks, and the error says
// which.
//
// Readers never wait on it: the lock /-/ready takes is held only for the
// swap, and watchers are stopped outside it, in parallel, each within its
// refresh timeout.
func (m *Manager) Apply(cfg *config.Config) error {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	p, err := m.plan(cfg, true)
	if err != nil {
		return err
	}
	wanted := map[string]bool{}
	claimed := map[string]bool{}
	for _, u := range p.units {
		wanted[u.Key()] = true
		claimed[m.systemOf(u.System).EventSystem()+"/"+u.Cluster] = true
	}
	// From here on a first probe of a name of cfg is refused: one that
	// started before is in running now, and is stopped below.
	m.discovery.mu.Lock()
	m.discovery.claimed = claimed
	m.discovery.mu.Unlock()

	m.mu.Lock()
	var replaced, removed []*running
	for key, r := range m.running {
		if r.target != nil {
			// A discovered target is the config's business only when the
			// config now names a cluster of its name: the config's wins.
			if wanted[key] {
				removed = append(removed, r)
				delete(m.running, key)
			}
			continue
		}
		switch _, rebuilt := p.built[key]; {
		case !wanted[key]:
			removed = append(removed, r)
			delete(m.running, key)
		case rebuilt:
			replaced = append(replaced, r)
		}
	}
	m.mu.Unlock()
	if m.testHookApplyDecided != nil {
		m.testHookApplyDecided()
	}

	// Removed clusters stop being served at once; replaced ones are served
	// until their successor takes over from their last state.
	for _, r := range removed {
		r.watcher.Remove()
	}
	m.stopAll(append(replaced, removed...))
	for _, r := range removed {
		level.Info(m.logger).Log("msg", "stopped watching cluster", "collector", r.unit.System, "cluster", r.unit.Cluster)
	}
	previous := map[string]system.Watcher{}
	for _, r := range replaced {
		previous[r.unit.Key()] = r.watcher
	}

	sort.Slice(p.units, func(i, j int) bool { return p.units[i].Key() < p.units[j].Key() })
	for _, u := range p.units {
		w, ok := p.built[u.Key()]
		if !ok {
			continue
		}
		if old, ok := previous[u.Key()]; ok {
			w.Resume(old)
		}
		m.start(u, w, nil)
	}
	m.applied.Store(true)
	m.reconcileDiscovered(cfg)
	return nil
}

// start serves and runs a built watcher, of target t (nil for one of the
// config).
func (m *Manager) start(u system.Unit, w system.Watcher, t *target) {
	w.Serve()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{unit: u, watcher: w, cancel: cancel, done: make(chan struct{}), target: t}
	go func() { defer close(r.done); w.Run(ctx) }()
	m.mu.Lock()
	m.running[u.Key()] = r
	m.mu.Unlock()
	kv := []any{"msg", "watching cluster", "collector", u.System, "cluster", u.Cluster}
	if t != nil {
		kv = append(kv, "module", t.module)
	}
	level.Info(m.logger).Log(kv...)
}

// stopAll cancels the watchers and waits for them in parallel, each for at
// most its refresh timeout plus a grace: a refresh function that ignored
// its context is left to finish on its own rather than hold up a reload.
func (m *Manager) stopAll(rs []*running) {
	var wg sync.WaitGroup
	for _, r := range rs {
		r.cancel()
		wg.Add(1)
		go func() {
			defer wg.Done()
			timer := time.NewTimer(r.watcher.Timeout() + stopGrace)
			defer timer.Stop()
			select {
			case <-r.done:
			case <-timer.C:
				level.Warn(m.logger).Log("msg", "watcher did not stop within its refresh timeout; leaving it to finish",
					"collector", r.unit.System, "cluster", r.unit.Cluster, "err", errors.New("stop timed out"))
			}
		}()
	}
	wg.Wait()
}

// stopGrace is what a stopping watcher gets beyond its refresh timeout.
const stopGrace = time.Second

func (m *Manager) current(key string) (*running, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.running[key]
	return r, ok
}

// Ready reports whether every watcher of the first config has a state to
// serve (its first refresh finished). Once true it stays true: a reload
// that adds a cluster does not make the process unready.
func (m *Manager) Ready() bool {
	if m.wasReady.Load() {
		return true
	}
	if !m.applied.Load() {
		return false // not started yet
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.running {
		if r.target != nil {
			continue // a probe started it; it is no part of the config
		}
		select {
		case <-r.watcher.Ready():
		default:
			return false
		}
	}
	m.wasReady.Store(true)
	return true
}

// Stop stops every watcher and waits for them.
func (m *Manager) Stop() {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	for _, f := range m.atStop {
		f()
	}
	m.atStop = nil
	m.stopReaper()
	m.discovery.mu.Lock()
	defer m.discovery.mu.Unlock()
	m.mu.Lock()
	clear(m.discovery.targets)
	rs := make([]*running, 0, len(m.running))
	for key, r := range m.running {
		rs = append(rs, r)
		delete(m.running, key)
	}
	m.mu.Unlock()
	m.stopAll(rs)
}

// Budget answers a failure budget question of one served cluster of the
// system called name (budget.Handler's Asker).
func (m *Manager) Budget(name, cluster string, q budget.Question, now time.Time) (budget.Answer, error) {
	s, ok := m.serving[name]
	if !ok {
		return budget.Answer{}, fmt.Errorf("system %q: %w", name, budget.ErrUnknown)
	}
	return s.Budget(cluster, q, now)
}

// BudgetSystems lists, for every system with a failure budget, the scopes
// it answers and the clusters it serves now.
func (m *Manager) BudgetSystems() []budget.System {
	var out []budget.System
	for _, s := range m.systems {
		if len(s.BudgetScopes()) == 0 {
			continue
		}
		out = append(out, budget.System{Name: s.Name(), Scopes: s.BudgetScopes(), Clusters: m.serving[s.Name()].Served()})
	}
	return out
}

// ErrUnknownTarget and ErrAmbiguousTarget are what Probe refuses: a name
// no system serves, and a name several systems serve when the request did
// not say which.
var (
	ErrUnknownTarget   = errors.New("unknown target")
	ErrAmbiguousTarget = errors.New("ambiguous target")
)

// Probe returns the writers of one cluster's series, for /probe: those of
// every system recorded under eventSystem (a Kafka cluster's own and its
// canary's for "kafka") that serves a cluster called target, in the
// registry's order. An empty eventSystem matches any, as long as only one
// has a cluster of that name.
func (m *Manager) Probe(eventSystem, target string) ([]exposition.TextWriter, error) {
	if target == "" {
		return nil, fmt.Errorf("%w: target= is required: the name of a configured cluster", ErrUnknownTarget)
	}
	known := false
	var writers []exposition.TextWriter
	var matched []string
	for _, s := range m.systems {
		if eventSystem != "" && s.EventSystem() != eventSystem {
			continue
		}
		known = true
		w, ok := m.serving[s.Name()].ClusterWriter(target)
		if !ok {
			continue
		}
		writers = append(writers, w)
		if !slices.Contains(matched, s.EventSystem()) {
			matched = append(matched, s.EventSystem())
		}
	}
	switch {
	case !known:
		return nil, fmt.Errorf("%w: no system %q (systems: %s)", ErrUnknownTarget, eventSystem, strings.Join(m.eventSystems(nil), ", "))
	case len(matched) == 0 && eventSystem != "":
		return nil, fmt.Errorf("%w: no %s cluster called %q is configured", ErrUnknownTarget, eventSystem, target)
	case len(matched) == 0:
		return nil, fmt.Errorf("%w: no cluster called %q is configured", ErrUnknownTarget, target)
	case len(matched) > 1:
		return nil, fmt.Errorf("%w: %s clusters are called %q; say which with system=%s",
			ErrAmbiguousTarget, strings.Join(matched, " and "), target, strings.Join(matched, " or system="))
	}
	return writers, nil
}

// eventSystems are the event systems of the systems keep accepts (nil:
// all), in the registry's order, each once: the values system= takes.
func (m *Manager) eventSystems(keep func(system.System) bool) []string {
	var names []string
	for _, s := range m.systems {
		if (keep == nil || keep(s)) && !slices.Contains(names, s.EventSystem()) {
			names = append(names, s.EventSystem())
		}
	}
	return names
}
