package collector

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
)

// Targets found by service discovery: /probe?system=S&module=M&target=ADDR
// asks for a cluster the config does not list, with the settings of one of
// its modules (config/modules.go). The first probe of a target starts its
// watchers; a target nobody probes for the idle timeout is stopped and its
// memory freed; a reload carries every target on with its module's new
// settings, or stops it when its module is gone.

// What ProbeModule refuses, besides ErrUnknownTarget.
var (
	// ErrBadTarget is a target that is not a list of host:port addresses,
	// or a system that has no modules.
	ErrBadTarget = errors.New("bad target")
	// ErrUnknownModule is a module the config does not have.
	ErrUnknownModule = errors.New("unknown module")
	// ErrTargetInUse is a target already probed with another module, or
	// named like a cluster of the config.
	ErrTargetInUse = errors.New("target in use")
	// ErrTooManyTargets is a new target past DiscoveryOptions.MaxTargets.
	ErrTooManyTargets = errors.New("too many discovered targets")
	// ErrTargetNotAllowed is a target with an address its module's
	// allowed_targets does not list: refused before anything is built.
	ErrTargetNotAllowed = config.ErrTargetNotAllowed
)

// DiscoveryOptions bound the discovered targets.
type DiscoveryOptions struct {
	// MaxTargets is how many discovered targets may run at once: a probe
	// of one more is refused until one is stopped. 0 refuses them all.
	MaxTargets int
	// IdleTimeout stops a target no probe asked for within it.
	IdleTimeout time.Duration
	// Metrics count them; nil counts nothing.
	Metrics *DiscoveryMetrics
}

// DiscoveryMetrics are the exporter's series about its discovered targets.
type DiscoveryMetrics struct {
	Targets *prometheus.GaugeVec   // by system
	Started *prometheus.CounterVec // by system
	Stopped *prometheus.CounterVec // by system and reason: idle, reload, config
	Refused *prometheus.CounterVec // by reason
}

// NewDiscoveryMetrics builds them, unregistered, with a zero series for
// each system of the registry that has modules and each reason, so that
// rate() and alerts see them from the start.
func NewDiscoveryMetrics() *DiscoveryMetrics {
	d := newDiscoveryMetrics()
	for _, r := range refusalReasons {
		d.Refused.WithLabelValues(r)
	}
	for _, s := range Systems {
		if s.Part() != "" || !s.Discovers() {
			continue
		}
		d.Targets.WithLabelValues(s.EventSystem())
		d.Started.WithLabelValues(s.EventSystem())
		for _, r := range stopReasons {
			d.Stopped.WithLabelValues(s.EventSystem(), r)
		}
	}
	return d
}

// The reasons of the refused and stopped counters.
var (
	refusalReasons = []string{"limit", "bad_target", "unknown_module", "in_use", "not_allowed"}
	stopReasons    = []string{"idle", "reload", "config"}
)

func newDiscoveryMetrics() *DiscoveryMetrics {
	return &DiscoveryMetrics{
		Targets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: ExporterName + "_probe_discovered_targets",
			Help: "Clusters watched because /probe asked for them with module= (targets found by service discovery), by system.",
		}, []string{"system"}),
		Started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ExporterName + "_probe_discovered_targets_started_total",
			Help: "Discovered targets started by a first probe, by system.",
		}, []string{"system"}),
		Stopped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ExporterName + "_probe_discovered_targets_stopped_total",
			Help: "Discovered targets stopped, by system and reason: idle (no probe within --probe.idle-timeout), reload (its module is gone), config (the config now lists a cluster of its name).",
		}, []string{"system", "reason"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ExporterName + "_probe_refused_total",
			Help: "Probes of a discovered target refused, by reason: limit (--probe.max-targets reached, answered 429), bad_target, unknown_module, in_use (answered 400), not_allowed (an address outside the module's allowed_targets, answered 403).",
		}, []string{"reason"}),
	}
}

// Collectors lists them for registration.
func (d *DiscoveryMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{d.Targets, d.Started, d.Stopped, d.Refused}
}

// discovery is the manager's discovered targets.
type discovery struct {
	opts DiscoveryOptions
	// mu makes one first probe, reload or reap at a time. A probe of a
	// running target never takes it.
	mu sync.Mutex
	// cfg is the config last applied: its modules are what targets start
	// with. Set with mu held; read without it by a probe that must find
	// its module's system.
	cfg atomic.Pointer[config.Config]
	// targets by event system and name; guarded by the manager's mu, so
	// that a probe of a running target finds it without waiting.
	targets    map[string]*target
	reaperStop chan struct{}
	reaperDone chan struct{}
}

// target is one discovered cluster: the units of its event system's
// systems that its module asks for (the cluster's own, its canary's).
type target struct {
	eventSystem, module, name string
	addrs                     []string
	// units are the keys of its running watchers; guarded by
	// discovery.mu.
	units []string
	// lastProbe is when a probe last asked for it, in Unix nanoseconds.
	lastProbe atomic.Int64
}

func (t *target) touch(now time.Time) { t.lastProbe.Store(now.UnixNano()) }

// idleFor is how long no probe asked for t, at now.
func (t *target) idleFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, t.lastProbe.Load()))
}

func (t *target) key() string { return t.eventSystem + "/" + t.name }

// ConfigureDiscovery sets the bounds of discovered targets and starts the
// goroutine that stops idle ones; Stop stops it. Call it once, before the
// first probe.
func (m *Manager) ConfigureDiscovery(opts DiscoveryOptions) {
	m.discovery.opts = opts
	if opts.MaxTargets <= 0 || opts.IdleTimeout <= 0 {
		return
	}
	m.discovery.reaperStop, m.discovery.reaperDone = make(chan struct{}), make(chan struct{})
	// A target is stopped between one and 1.25 idle timeouts after its
	// last probe.
	every := min(max(opts.IdleTimeout/4, 100*time.Millisecond), 30*time.Second)
	go func() {
		defer close(m.discovery.reaperDone)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-m.discovery.reaperStop:
				return
			case now := <-ticker.C:
				m.reapIdle(now)
			}
		}
	}()
}

func (m *Manager) stopReaper() {
	if m.discovery.reaperStop != nil {
		close(m.discovery.reaperStop)
		<-m.discovery.reaperDone
		m.discovery.reaperStop = nil
	}
}

// ProbeModule returns the writers of a discovered target's series: the
// cluster at addr (one host:port or several, comma separated) watched
// with the settings of module, a module of eventSystem's systems. The
// first probe of a target starts its watchers and waits for their first
// refresh at most wait; later probes never wait. The cluster's name, its
// kafka_cluster or redis_cluster label, is the target.
func (m *Manager) ProbeModule(eventSystem, module, addr string, wait time.Duration) ([]exposition.TextWriter, error) {
	t, running, err := m.findTarget(eventSystem, module, addr)
	if err == nil && !running {
		var units []string
		if t, units, err = m.startTarget(t); err == nil {
			m.waitReady(units, wait)
		}
	}
	if err != nil {
		m.refused(err)
		return nil, err
	}
	t.touch(time.Now())
	return m.Probe(t.eventSystem, t.name)
}

// findTarget checks a probe's parameters and returns its target: the
// running one (running true), or a new one, not started, of the event
// system that has the module when the probe names none.
func (m *Manager) findTarget(eventSystem, module, addr string) (t *target, running bool, err error) {
	withModules := m.eventSystems(system.System.Discovers)
	if eventSystem == "" {
		having := m.systemsWithModule(module)
		switch len(having) {
		case 0:
			return nil, false, fmt.Errorf("%w: the config has no module called %q (in %s)", ErrUnknownModule, module, strings.Join(modulesKeys(withModules), " or "))
		case 1:
			eventSystem = having[0]
		default:
			return nil, false, fmt.Errorf("%w: %s have a module called %q; say which with system=%s", ErrBadTarget, strings.Join(having, " and "), module, strings.Join(having, " or system="))
		}
	}
	switch {
	case !slices.Contains(withModules, eventSystem):
		return nil, false, fmt.Errorf("%w: system %q has no modules (systems with modules: %s)", ErrBadTarget, eventSystem, strings.Join(withModules, ", "))
	case m.discovery.opts.MaxTargets <= 0:
		return nil, false, fmt.Errorf("%w: discovered targets are off (--probe.max-targets=0)", ErrBadTarget)
	}
	addrs, err := config.ParseTarget(addr)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrBadTarget, err)
	}
	t = &target{eventSystem: eventSystem, module: module, name: strings.Join(addrs, ","), addrs: addrs}
	m.mu.Lock()
	have := m.discovery.targets[t.key()]
	m.mu.Unlock()
	switch {
	case have == nil:
		return t, false, nil
	case have.module != module:
		return nil, false, errProbedWith(have)
	}
	return have, true, nil
}

// errProbedWith refuses a second module for the target t.
func errProbedWith(t *target) error {
	return fmt.Errorf("%w: %s target %q is probed with module %q already; one target, one module", ErrTargetInUse, t.eventSystem, t.name, t.module)
}

// systemsWithModule are the event systems whose config has a module
// called module. It reads no lock and no file: it runs on every probe
// that names no system.
func (m *Manager) systemsWithModule(module string) []string {
	cfg := m.discovery.cfg.Load()
	if cfg == nil {
		return nil
	}
	return m.eventSystems(func(s system.System) bool { return s.Part() == "" && s.HasModule(cfg, module) })
}

// modulesKeys are the config file's keys of the systems' modules.
func modulesKeys(systems []string) []string {
	keys := make([]string, len(systems))
	for i, s := range systems {
		keys[i] = s + "_modules"
	}
	return keys
}

// startTarget starts the watchers of t, a target no probe asked for
// before, unless another probe just started it, and returns the running
// target with the keys of the watchers it started.
func (m *Manager) startTarget(t *target) (*target, []string, error) {
	t.touch(time.Now())
	d := &m.discovery
	d.mu.Lock()
	defer d.mu.Unlock()
	m.mu.Lock()
	running, n := d.targets[t.key()], len(d.targets)
	var configured bool
	for _, s := range m.systems {
		if r, ok := m.running[s.Name()+"/"+t.name]; ok && s.EventSystem() == t.eventSystem && r.target == nil {
			configured = true
		}
	}
	m.mu.Unlock()
	switch {
	case running != nil && running.module == t.module:
		return running, nil, nil
	case running != nil:
		return nil, nil, errProbedWith(running)
	case configured:
		return nil, nil, fmt.Errorf("%w: the config has a %s cluster called %q; probe it without module=", ErrTargetInUse, t.eventSystem, t.name)
	case n >= d.opts.MaxTargets:
		return nil, nil, fmt.Errorf("%w: %d discovered targets run, the most --probe.max-targets allows; %s target %q is refused until one is stopped (--probe.idle-timeout %s after its last probe)",
			ErrTooManyTargets, n, t.eventSystem, t.name, d.opts.IdleTimeout)
	case d.cfg.Load() == nil:
		return nil, nil, fmt.Errorf("%w: no config applied yet", ErrUnknownModule)
	}
	// A new target has no watchers to drop.
	found, _, err := m.syncTarget(d.cfg.Load(), t)
	if err != nil {
		return nil, nil, err
	}
	if !found {
		return nil, nil, fmt.Errorf("%w: the config has no %s module called %q (its %s_modules list)", ErrUnknownModule, t.eventSystem, t.module, t.eventSystem)
	}
	m.mu.Lock()
	d.targets[t.key()] = t
	m.mu.Unlock()
	if mt := d.opts.Metrics; mt != nil {
		mt.Started.WithLabelValues(t.eventSystem).Inc()
		mt.Targets.WithLabelValues(t.eventSystem).Inc()
	}
	return t, slices.Clone(t.units), nil
}

// syncTarget makes t's running watchers match cfg's module: it starts the
// units the module asks for that do not run, restarts from their last
// state those whose settings changed (waiting for the old ones, whose last
// state the new ones resume from), and takes the rest out of service,
// returning them for the caller to stop once it has let go of the
// discovery lock. found is false when cfg has no such module for t's
// systems; then nothing runs. Called with discovery.mu held.
func (m *Manager) syncTarget(cfg *config.Config, t *target) (found bool, stop []*running, err error) {
	var want []system.Unit
	for _, s := range m.systems {
		if s.EventSystem() != t.eventSystem {
			continue
		}
		u, ok, err := m.serving[s.Name()].Discover(cfg, t.module, t.name, t.addrs)
		if err != nil {
			return false, nil, err
		}
		if ok {
			want = append(want, u)
		}
	}
	// Build first: a unit that cannot be built changes nothing.
	built := map[string]system.Watcher{}
	for _, u := range want {
		if r, ok := m.current(u.Key()); ok && r.unit.Fingerprint == u.Fingerprint {
			continue
		}
		w, err := u.Build()
		if err != nil {
			for _, w := range built {
				w.Close()
			}
			return false, nil, err
		}
		built[u.Key()] = w
	}
	// As Apply does: a unit the module no longer asks for stops being
	// served at once; a rebuilt one is served until its successor takes
	// over from its last state.
	var keep []string
	var replaced, dropped []*running
	m.mu.Lock()
	for _, key := range t.units {
		r, ok := m.running[key]
		switch _, rebuilt := built[key]; {
		case !ok || r.target != t:
		case rebuilt:
			replaced = append(replaced, r)
		case !slices.ContainsFunc(want, func(u system.Unit) bool { return u.Key() == key }):
			dropped = append(dropped, r)
			delete(m.running, key)
		}
	}
	m.mu.Unlock()
	for _, r := range dropped {
		r.watcher.Remove()
	}
	m.stopAll(replaced)
	previous := map[string]system.Watcher{}
	for _, r := range replaced {
		previous[r.unit.Key()] = r.watcher
	}
	for _, u := range want {
		keep = append(keep, u.Key())
		w, ok := built[u.Key()]
		if !ok {
			continue
		}
		if old, ok := previous[u.Key()]; ok {
			w.Resume(old)
		}
		m.start(u, w, t)
	}
	t.units = keep
	return len(want) > 0, dropped, nil
}

// reconcileDiscovered carries the discovered targets over to cfg, the
// config Apply just applied: each goes on with its module's new settings;
// a target whose module is gone is stopped, as is one the config now lists
// a cluster of (Apply stopped its watchers already).
func (m *Manager) reconcileDiscovered(cfg *config.Config) {
	d := &m.discovery
	var stop []*running
	// As reapIdle does: what stops is waited for outside the lock.
	defer func() { m.stopAll(stop) }()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cfg.Store(cfg)
	m.mu.Lock()
	targets := make([]*target, 0, len(d.targets))
	for _, t := range d.targets {
		targets = append(targets, t)
	}
	m.mu.Unlock()
	for _, t := range targets {
		reason := "reload"
		found, dropped, err := false, []*running(nil), error(nil)
		if m.targetTakenOver(t) {
			reason = "config"
		} else if found, dropped, err = m.syncTarget(cfg, t); err != nil {
			level.Warn(m.logger).Log("msg", "discovered target cannot carry on with its module's new settings; stopping it", "system", t.eventSystem, "target", t.name, "module", t.module, "err", err)
		}
		stop = append(stop, dropped...)
		if !found {
			stop = append(stop, m.takeTarget(t, reason)...)
		}
	}
}

// targetTakenOver reports whether a watcher of t was stopped for a cluster
// of the config of its name.
func (m *Manager) targetTakenOver(t *target) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, key := range t.units {
		if r, ok := m.running[key]; !ok || r.target != t {
			return true
		}
	}
	return false
}

// takeTarget forgets t and takes its watchers out of service, returning
// them for the caller to stop (stopAll waits up to their refresh timeout,
// which a hung cluster's takes). Called with discovery.mu held.
func (m *Manager) takeTarget(t *target, reason string) []*running {
	var stop []*running
	m.mu.Lock()
	delete(m.discovery.targets, t.key())
	for _, key := range t.units {
		if r, ok := m.running[key]; ok && r.target == t {
			stop = append(stop, r)
			delete(m.running, key)
		}
	}
	m.mu.Unlock()
	for _, r := range stop {
		r.watcher.Remove()
	}
	level.Info(m.logger).Log("msg", "stopping the watch of a discovered target", "system", t.eventSystem, "target", t.name, "module", t.module, "reason", reason)
	if mt := m.discovery.opts.Metrics; mt != nil {
		mt.Stopped.WithLabelValues(t.eventSystem, reason).Inc()
		mt.Targets.WithLabelValues(t.eventSystem).Dec()
	}
	return stop
}

// reapIdle stops the targets no probe asked for within the idle timeout.
// It waits for their watchers outside the discovery lock, so that a hung
// cluster's stop never holds up the first probe of another target.
func (m *Manager) reapIdle(now time.Time) {
	d := &m.discovery
	d.mu.Lock()
	m.mu.Lock()
	var idle []*target
	for _, t := range d.targets {
		if t.idleFor(now) > d.opts.IdleTimeout {
			idle = append(idle, t)
		}
	}
	m.mu.Unlock()
	var stop []*running
	for _, t := range idle {
		stop = append(stop, m.takeTarget(t, "idle")...)
	}
	d.mu.Unlock()
	m.stopAll(stop)
}

// waitReady waits at most wait for every watcher of keys to have a state.
func (m *Manager) waitReady(keys []string, wait time.Duration) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for _, key := range keys {
		r, ok := m.current(key)
		if !ok {
			continue
		}
		select {
		case <-r.watcher.Ready():
		case <-timer.C:
			return
		}
	}
}

// refused counts a refused probe by its reason.
func (m *Manager) refused(err error) {
	mt := m.discovery.opts.Metrics
	if mt == nil {
		return
	}
	reason := "bad_target"
	switch {
	case errors.Is(err, ErrTooManyTargets):
		reason = "limit"
	case errors.Is(err, ErrUnknownModule):
		reason = "unknown_module"
	case errors.Is(err, ErrTargetInUse):
		reason = "in_use"
	case errors.Is(err, ErrTargetNotAllowed):
		reason = "not_allowed"
	}
	mt.Refused.WithLabelValues(reason).Inc()
}
