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
	// ErrAlias is a target that is a cluster the exporter watches already
	// under another name: an address it is known by, or its cluster id or
	// a member's id.
	ErrAlias = errors.New("target is a known cluster")
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
	// OnMetrics serves the discovered targets on /metrics and the status
	// page too; without it only /probe serves them, so that no probe
	// changes what /metrics carries.
	OnMetrics bool
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
func NewDiscoveryMetrics(systems []system.System) *DiscoveryMetrics {
	d := newDiscoveryMetrics()
	for _, r := range refusalReasons {
		d.Refused.WithLabelValues(r)
	}
	for _, s := range systems {
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
	refusalReasons = []string{"limit", "bad_target", "unknown_module", "in_use", "alias", "not_allowed"}
	stopReasons    = []string{"idle", "reload", "config", "alias", "evicted"}
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
			Help: "Discovered targets stopped, by system and reason: idle (no probe within --probe.idle-timeout), reload (its module is gone), config (the config now lists a cluster of its name), alias (its first read showed a cluster watched already), evicted (it never answered, and a new target needed its place).",
		}, []string{"system", "reason"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ExporterName + "_probe_refused_total",
			Help: "Probes of a discovered target refused, by reason: limit (--probe.max-targets reached, answered 429), bad_target, unknown_module, in_use (answered 400), alias (a cluster watched already under another name, answered 409), not_allowed (an address outside the module's allowed_targets, answered 403).",
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
	targets map[string]*target
	// claimed are the names of the clusters of the config being applied or
	// applied last, by event system: set by Apply before it decides what
	// runs, so that a first probe that comes between its decision and its
	// start is refused instead of starting a watcher nobody stops. Guarded
	// by mu.
	claimed    map[string]bool
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
	// firstUnits are the keys of the watchers it started with, set before
	// it is published: what each of its probes waits for, so that two
	// first probes at once (an HA pair of Prometheus servers) both answer
	// from its first refresh.
	firstUnits []string
	// confirmed is set once a refresh read the cluster and showed it is no
	// cluster watched already (confirmTarget); its parts (a canary) start
	// only then.
	confirmed atomic.Bool
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
	deadline := time.Now().Add(wait)
	t, running, err := m.findTarget(eventSystem, module, addr)
	if err == nil && !running {
		t, err = m.startTarget(t)
	}
	if err == nil {
		// Every probe waits for the first refresh, not only the one that
		// started the target, which returns at once once there was one.
		m.waitReady(t.firstUnits, time.Until(deadline))
		err = m.confirmTarget(t, deadline)
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
// target. A target that never answered makes way for it when the table is
// full; one that names an address of a cluster watched already is
// refused before anything connects.
func (m *Manager) startTarget(t *target) (*target, error) {
	t.touch(time.Now())
	d := &m.discovery
	var stop []*running
	// As reapIdle does: what stops is waited for outside the lock.
	defer func() { m.stopAll(stop) }()
	d.mu.Lock()
	defer d.mu.Unlock()
	m.mu.Lock()
	running := d.targets[t.key()]
	m.mu.Unlock()
	switch {
	case running != nil && running.module == t.module:
		return running, nil
	case running != nil:
		return nil, errProbedWith(running)
	case d.claimed[t.eventSystem+"/"+t.name]:
		return nil, fmt.Errorf("%w: the config has a %s cluster called %q; probe it without module=", ErrTargetInUse, t.eventSystem, t.name)
	case d.cfg.Load() == nil:
		return nil, fmt.Errorf("%w: no config applied yet", ErrUnknownModule)
	}
	if other := m.aliasOf(t, nil, t.addrs); other != "" {
		return nil, fmt.Errorf("%w: %s target %q names an address of %s; probe that cluster instead", ErrAlias, t.eventSystem, t.name, other)
	}
	var victim *target
	if len(d.targets) >= d.opts.MaxTargets {
		if victim = m.unanswered(); victim == nil {
			free := m.nextFree(time.Now())
			return nil, tooManyTargets{fmt.Errorf("%w: %d discovered targets run, the most --probe.max-targets allows, and each has answered; %s target %q is refused until one is stopped, at the latest in %s (--probe.idle-timeout %s after a target's last probe)",
				ErrTooManyTargets, len(d.targets), t.eventSystem, t.name, free.Round(time.Second), d.opts.IdleTimeout), free}
		}
	}
	// A new target has no watchers to drop.
	found, _, err := m.syncTarget(d.cfg.Load(), t)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: the config has no %s module called %q (its %s_modules list)", ErrUnknownModule, t.eventSystem, t.module, t.eventSystem)
	}
	// Only a target that starts takes a place: one refused (not allowed,
	// no such module) evicts nobody.
	if victim != nil {
		stop = m.takeTarget(victim, "evicted")
	}
	t.firstUnits = slices.Clone(t.units)
	m.mu.Lock()
	d.targets[t.key()] = t
	m.mu.Unlock()
	if mt := d.opts.Metrics; mt != nil {
		mt.Started.WithLabelValues(t.eventSystem).Inc()
		mt.Targets.WithLabelValues(t.eventSystem).Inc()
	}
	return t, nil
}

// tooManyTargets is ErrTooManyTargets with when a place frees at the
// latest, for the 429's Retry-After.
type tooManyTargets struct {
	error
	retryAfter time.Duration
}

func (e tooManyTargets) Unwrap() error             { return e.error }
func (e tooManyTargets) RetryAfter() time.Duration { return e.retryAfter }

// unanswered is the target to evict for a new one: of those no refresh
// ever read (a closed port, a host that does not answer, junk), the one
// probed least recently; nil when every target answered. Called with
// discovery.mu held.
func (m *Manager) unanswered() *target {
	var victim *target
	for _, t := range m.discovery.targets {
		if !t.confirmed.Load() && (victim == nil || t.lastProbe.Load() < victim.lastProbe.Load()) {
			victim = t
		}
	}
	return victim
}

// nextFree is how long until the first running target idles out, at now.
// Called with discovery.mu held.
func (m *Manager) nextFree(now time.Time) time.Duration {
	next := m.discovery.opts.IdleTimeout
	for _, t := range m.discovery.targets {
		next = min(next, max(m.discovery.opts.IdleTimeout-t.idleFor(now), 0))
	}
	return next
}

// confirmTarget checks t, once a refresh read its cluster, against the
// clusters the exporter watches: a target that reports an id or an address
// of another (a replica's address, a host name of a configured seed) is
// that cluster under a second name, and is stopped and refused; otherwise
// the parts its module asks for (a canary, which must never write to a
// cluster under two names) start, and are waited for until deadline. A
// target not read yet is served as it is (up 0), its parts held.
func (m *Manager) confirmTarget(t *target, deadline time.Time) error {
	if t.confirmed.Load() {
		return nil
	}
	ids, addrs, read := m.targetMembers(t)
	if !read {
		return nil
	}
	d := &m.discovery
	var stop []*running
	defer func() { m.stopAll(stop) }()
	d.mu.Lock()
	if t.confirmed.Load() || d.targets[t.key()] != t {
		d.mu.Unlock()
		return nil
	}
	if other := m.aliasOf(t, ids, addrs); other != "" {
		stop = m.takeTarget(t, "alias")
		d.mu.Unlock()
		return fmt.Errorf("%w: %s target %q is %s under another name (they share a member); probe that cluster instead", ErrAlias, t.eventSystem, t.name, other)
	}
	t.confirmed.Store(true)
	_, dropped, err := m.syncTarget(d.cfg.Load(), t)
	stop = dropped
	parts := slices.Clone(t.units)
	d.mu.Unlock()
	if err != nil {
		level.Warn(m.logger).Log("msg", "discovered target's parts (its canary) cannot start", "system", t.eventSystem, "target", t.name, "module", t.module, "err", err)
	}
	m.waitReady(parts, time.Until(deadline))
	return nil
}

// targetMembers are the ids and addresses t's cluster reports, and whether
// a refresh read it.
func (m *Manager) targetMembers(t *target) (ids, addrs []string, read bool) {
	for _, key := range t.firstUnits {
		if r, ok := m.current(key); ok && r.target == t {
			if i, a, ok := r.watcher.Members(); ok {
				ids, addrs, read = append(ids, i...), append(addrs, a...), true
			}
		}
	}
	return ids, addrs, read
}

// aliasOf names the cluster of t's event system, other than t, that has
// one of ids or addrs: `kafka cluster "orders" of the config` or `the
// discovered kafka target "HOST:PORT"`; empty when none has.
func (m *Manager) aliasOf(t *target, ids, addrs []string) string {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for _, a := range addrs {
		want[canonicalAddr(a)] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var found []string
	for _, r := range m.running {
		s := m.systemOf(r.unit.System)
		if s == nil || s.EventSystem() != t.eventSystem || s.Part() != "" || r.target == t {
			continue
		}
		otherIDs, otherAddrs, _ := r.watcher.Members()
		shared := slices.ContainsFunc(otherIDs, func(id string) bool { return want[id] }) ||
			slices.ContainsFunc(otherAddrs, func(a string) bool { return want[canonicalAddr(a)] })
		switch {
		case !shared:
		case r.target == nil:
			found = append(found, fmt.Sprintf("%s cluster %q of the config", t.eventSystem, r.unit.Cluster))
		default:
			found = append(found, fmt.Sprintf("the discovered %s target %q", t.eventSystem, r.unit.Cluster))
		}
	}
	slices.Sort(found)
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

// systemOf is the manager's system called name, nil if none.
func (m *Manager) systemOf(name string) system.System {
	for _, s := range m.systems {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// canonicalAddr is an address as a target names it (config.CanonicalAddr),
// so that one member is one address however a cluster or a caller spells
// it; an address that is no target's (a member reported oddly) is only
// trimmed and lowercased.
func canonicalAddr(addr string) string {
	if canonical, err := config.CanonicalAddr(strings.TrimSpace(addr)); err == nil {
		return canonical
	}
	return strings.ToLower(strings.TrimSpace(addr))
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
		// A part (a canary) waits until the target is known to be no
		// cluster watched already under another name (confirmTarget).
		if s.EventSystem() != t.eventSystem || (s.Part() != "" && !t.confirmed.Load()) {
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
	case errors.Is(err, ErrAlias):
		reason = "alias"
	case errors.Is(err, ErrTargetNotAllowed):
		reason = "not_allowed"
	}
	mt.Refused.WithLabelValues(reason).Inc()
}
