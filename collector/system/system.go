// Package system describes one kind of thing the exporter watches (Kafka
// clusters, Redis Clusters, their write canaries) to the code that wires
// them: the manager, the config check, the status page and the contract
// tests. Each system package exports one System built with Define; the
// registry (systems.All) lists them, and nothing else names them.
//
// A system is typed by its snapshot S and its cluster settings C; Define
// turns that into the untyped System the registry holds, so the manager
// never switches on a system's type.
package system

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// Spec is what a system package tells the registry about itself.
type Spec[S, C any] struct {
	// Name is the system's name: its clusters' key in the manager and the
	// collector= key of their log lines ("kafka", "kafka_canary").
	Name string
	// EventSystem is the system its events are recorded under, in the
	// event log's system field; Name when empty. A canary's events are its
	// cluster's, next to the transitions they explain.
	EventSystem string
	// Part names what the system watches of a cluster of EventSystem when
	// that is not the cluster itself ("canary"), for messages.
	Part string
	// Section is the key of the config file's section whose entries are
	// the system's clusters. With it, Clusters may be left nil (the
	// section's entries), and with Modules, Discover (config.ModuleAt of
	// the section's KEY_modules).
	Section string
	// Modules says that the section has modules, whose targets /probe
	// discovers.
	Modules bool
	// Clusters lists the clusters of cfg the system watches.
	Clusters func(cfg *config.Config) []C
	// ClusterName is a cluster's configured name, unique within the system.
	ClusterName func(C) string
	// Fingerprint identifies a cluster's settings, and the current contents
	// of the files they name: a reload restarts a cluster whose fingerprint
	// changed.
	Fingerprint func(C) (string, error)
	// Timing is a cluster's refresh interval and the bound on one refresh.
	Timing func(C) (interval, timeout time.Duration)
	// Source builds what reads one cluster. It must connect to nothing and
	// start no goroutine: a config check builds every source and closes it.
	Source func(C, log.Logger) (Source[S], error)
	// Events are the transitions a snapshot saw, for the event log.
	Events func(*S) []events.Event
	// EventKinds are every kind Events can return.
	EventKinds []events.Kind
	// NewCollector returns the collector that serves the system's clusters;
	// each manager has its own.
	NewCollector func() Collector[S, C]
	// Discover is the cluster a /probe request asks for: cfg's module
	// called module, at addrs, called name (config.ModuleAt).
	// False when cfg has no such module, or the module does not ask for
	// what this system watches (a canary it leaves off). Nil for a system
	// without modules. C must be a config.TargetChecker: Serving.Discover
	// refuses a target its CheckTarget refuses, and every target of a C
	// that is none.
	Discover func(cfg *config.Config, module, name string, addrs []string) (C, bool)
	// Members tell one cluster from another, for a system with modules: the
	// identities a cluster reports of itself or its members (a Kafka cluster
	// id, Redis node ids) in snap, and every address it is known by (the
	// settings' seeds, the members' addresses in snap). snap is nil before
	// the first successful refresh. A /probe target that shares an identity
	// or an address with another cluster is that cluster under a second
	// name, and is refused (collector/discovery.go).
	Members func(settings C, snap *S) (ids, addrs []string)
	// Sets are the collector's metric tables: every family it can serve,
	// for METRICS.md and the contract test.
	Sets func() []*exposition.Set
	// Doc titles and introduces the system's section of METRICS.md.
	Doc Doc
	// Views are the status page's view models of the clusters' latest
	// states; nil for a system the page shows nothing of.
	Views func(states []watch.Named[S], now time.Time) []model.Cluster
	// Budget answers what stopping one member or failure domain of a
	// cluster would do now, from its latest snapshot (the failure budget,
	// computed once per refresh). Nil for a system that answers nothing;
	// an error wrapping budget.ErrUnknown or budget.ErrUnsupported is the
	// caller's mistake.
	Budget func(snap *S, q budget.Question) (budget.Answer, error)
	// BudgetScopes are the kinds of member and domain Budget answers of
	// (broker and rack for Kafka), as data: a question finds its system by
	// them, and the endpoint's parameters and messages and the command's
	// flags are built from them.
	BudgetScopes []budget.ScopeSpec
	// Flags declares the system's convenience flags on the server's
	// command (FlagCluster); nil for a system configured by the file only.
	Flags func(cmd *kingpin.CmdClause) FlagCluster
	// Dashboards are the Grafana dashboards the system ships, for the
	// contract tests; none for a part shown on its cluster's dashboard.
	Dashboards []Dashboard
	// Maintenance serves the open maintenance windows of the system's
	// clusters with their series (maintenance.NewFamilies), for alert
	// rules that leave out what an announced stop explains; nil for a
	// system without a failure budget. Sets should list its Set.
	Maintenance *maintenance.Families
}

// Dashboard is a Grafana dashboard a system ships, and what the contract
// tests hold it to.
type Dashboard struct {
	// File is its path from the repository's root.
	File string
	// UID is its Grafana uid; ClusterVar its variable that picks one
	// cluster (the system's cluster label); LinksTo the uid of the
	// dashboard it links to.
	UID, ClusterVar, LinksTo string
	// FailoverCounters are the counters its failover annotations may come
	// from (one is enough).
	FailoverCounters []string
}

// Doc is a system's section of METRICS.md.
type Doc struct {
	Title, Intro string
	// Notes is Markdown shown after the system's metric table.
	Notes string
}

// Source reads one cluster: Refresh once per interval, on the watcher's
// goroutine; Close when the watcher stops, or instead of ever running.
type Source[S any] struct {
	Refresh watch.RefreshFunc[S]
	Close   func()
	// Wake, when set, is handed the watcher's Trigger once, before it runs:
	// for a source that learns between refreshes that one is due now (a
	// canary that just took its lease writes at once, not an interval on).
	Wake func(trigger func())
}

// Opened is a Spec.Source that opens what reads a cluster (open) and
// hands the watcher its refresh and close (source).
func Opened[S, C, R any](open func(C, log.Logger) (R, error), source func(R) Source[S]) func(C, log.Logger) (Source[S], error) {
	return func(c C, logger log.Logger) (Source[S], error) {
		r, err := open(c, logger)
		if err != nil {
			return Source[S]{}, err
		}
		return source(r), nil
	}
}

// Command is a command of the binary that a system adds beside the
// server's and safe-to-stop (Redis's slot), listed by the registry.
type Command struct {
	// Name is the command's name on the command line.
	Name string
	// Define declares the command, its flags and arguments on app, and
	// returns what runs it once they are parsed.
	Define func(app *kingpin.Application) Runner
}

// Runner runs a command with the values its flags were given.
type Runner interface {
	Run(ctx context.Context, stdout io.Writer) error
}

// Reader reads one cluster: what a Spec.Source built by Reads opens.
type Reader[S any] interface {
	Refresh(ctx context.Context, prev *S) (*S, error)
	Close()
}

// Reads is a Spec.Source that opens a Reader of the cluster (open) and
// hands the watcher its Refresh and Close.
func Reads[S, C any, R Reader[S]](open func(C, log.Logger) (R, error)) func(C, log.Logger) (Source[S], error) {
	return Opened(open, func(r R) Source[S] { return Source[S]{Refresh: r.Refresh, Close: r.Close} })
}

// Collector serves the latest state of every watched cluster of one
// system as metrics, and never talks to a cluster.
type Collector[S, C any] interface {
	exposition.TextWriter
	prometheus.Collector
	// Serve adds or replaces the cluster's watcher. It is called before the
	// watcher runs.
	Serve(name string, w *watch.Watcher[S], settings C)
	// Remove stops serving the cluster.
	Remove(name string)
	// States are the clusters' latest states, in name order.
	States() []watch.Named[S]
	// AppendClusterText adds one cluster's series, reporting whether the
	// collector serves it (exposition.Collector.AppendClusterText).
	AppendClusterText(st *exposition.Stream, name string) bool
	// AppendClustersText adds the series of the clusters keep accepts
	// (exposition.Collector.AppendClustersText).
	AppendClustersText(st *exposition.Stream, keep func(name string) bool)
}

// Unconfigured is the Spec.NewCollector of a system whose clusters have
// no settings of their own to serve by: each manager's collector is
// newCollector's, and serves each cluster as it is.
func Unconfigured[S, C any](newCollector func() *exposition.Collector[S]) func() Collector[S, C] {
	return func() Collector[S, C] { return unconfigured[S, C]{newCollector()} }
}

type unconfigured[S, C any] struct{ *exposition.Collector[S] }

func (c unconfigured[S, C]) Serve(name string, w *watch.Watcher[S], _ C) { c.Set(name, w) }

// System is a system as the registry holds it.
type System interface {
	// Name is the system's name (Spec.Name).
	Name() string
	// DeclareFlags declares the system's flags on the server's command
	// (Spec.Flags); nil for a system without.
	DeclareFlags(cmd *kingpin.CmdClause) FlagCluster
	// EventSystem is the system its events are recorded under.
	EventSystem() string
	// Part is what the system watches of an EventSystem cluster, empty
	// when it watches the cluster itself (Spec.Part).
	Part() string
	// Clusters names the clusters of cfg the system watches.
	Clusters(cfg *config.Config) []string
	EventKinds() []events.Kind
	// Sets are the metric tables; the names they serve are read from
	// them (exposition.Names, exposition.SeriesNames).
	Sets() []*exposition.Set
	Doc() Doc
	// Collector returns a new, empty collector of the system, for tests
	// that compare what it describes with its tables.
	Collector() prometheus.Collector
	// BudgetScopes are the scopes the system's failure budget answers; none
	// for a system without one.
	BudgetScopes() []budget.ScopeSpec
	// Dashboards are the Grafana dashboards the system ships.
	Dashboards() []Dashboard
	// Discovers reports whether the system watches clusters of modules,
	// found by service discovery (Spec.Discover).
	Discovers() bool
	// HasModule reports whether cfg has a module called module that the
	// system watches a cluster of, reading no file (no fingerprint).
	HasModule(cfg *config.Config, module string) bool
	// Serving returns what serves the system's clusters for one manager,
	// recording their events in log.
	Serving(log *events.Log, logger log.Logger) Serving
}

// Serving is one manager's view of a system: its collector, and the
// watchers a config asks for.
type Serving interface {
	// Plan lists the clusters cfg asks the system to watch, each with its
	// fingerprint read now, so that a rotated secret counts as a change.
	Plan(cfg *config.Config) ([]Unit, error)
	// Discover is the unit of a cluster found by service discovery: cfg's
	// module called module at addrs, called name. False when the system
	// has no such module or does not watch what it asks (Spec.Discover).
	// An error wrapping config.ErrTargetNotAllowed when the module does not
	// allow addrs (config.TargetChecker), checked before anything is built.
	Discover(cfg *config.Config, module, name string, addrs []string) (Unit, bool, error)
	// Writer serves the clusters' metrics: those of the config, and those
	// found by service discovery too when withDiscovered says so (read at
	// every scrape).
	Writer(withDiscovered func() bool) exposition.TextWriter
	// ClusterWriter serves one cluster's metrics, for /probe; false when
	// the system does not serve a cluster of that name.
	ClusterWriter(cluster string) (exposition.TextWriter, bool)
	// States returns the latest states of the served clusters, typed
	// []watch.Named[S].
	States() any
	// Views are the status page's view models of those states: of the
	// config's clusters, and of the discovered ones when withDiscovered.
	Views(now time.Time, withDiscovered bool) []model.Cluster
	// Budget answers q of the served cluster from its latest state, if
	// that state is fresh (budget.Fresh); Served names the clusters served.
	Budget(cluster string, q budget.Question, now time.Time) (budget.Answer, error)
	Served() []string
	// ServeWindows has the writers serve the open maintenance windows
	// windows returns (read at every scrape) with the clusters' series,
	// for a system with Spec.Maintenance.
	ServeWindows(windows func() []maintenance.Window)
}

// Unit is one watcher a config asks for.
type Unit struct {
	System, Cluster, Fingerprint string
	// Build builds the watcher, connecting to nothing and starting nothing.
	Build func() (Watcher, error)
}

// Key identifies a unit across configs: names are unique within a system.
func (u Unit) Key() string { return u.System + "/" + u.Cluster }

// Watcher is one unit's watcher, built and not yet running.
type Watcher interface {
	// Resume carries on from the last state of the watcher this one
	// replaces (another of the same system and cluster), before Run.
	Resume(from Watcher)
	// Serve hands the watcher to its collector and the event log, before
	// Run; Remove takes it out again.
	Serve()
	Remove()
	Run(ctx context.Context)
	// Ready is closed once it has a state to serve.
	Ready() <-chan struct{}
	// Close releases what building it took, for a watcher that never runs.
	Close()
	// Timeout bounds one refresh, and so how long Run takes to return once
	// its context is cancelled.
	Timeout() time.Duration
	// Members are the identities and addresses the cluster is known by
	// (Spec.Members); read reports whether a refresh has read the cluster,
	// so that the identities are its own and not only its settings'.
	Members() (ids, addrs []string, read bool)
}

// Define turns a system package's Spec into the System the registry holds.
func Define[S, C any](spec Spec[S, C]) System {
	spec = spec.Filled()
	if spec.EventSystem == "" {
		spec.EventSystem = spec.Name
	}
	return defined[S, C]{spec}
}

// Settings is what a cluster's settings type may tell the engine of
// itself, for a Spec that leaves ClusterName, Fingerprint or Timing nil.
type Settings interface {
	// ClusterName is the cluster's configured name (Spec.ClusterName).
	ClusterName() string
	// Fingerprint identifies the settings and the files they name
	// (Spec.Fingerprint).
	Fingerprint() (string, error)
	// Timing is the refresh interval and the bound on one refresh
	// (Spec.Timing).
	Timing() (interval, timeout time.Duration)
}

// Filled is the spec with what it leaves nil derived from its Section and
// from C's methods (Settings), when C has them. Define calls it; a wrapper
// that needs the fields before Define (a canary's) calls it first.
func (s Spec[S, C]) Filled() Spec[S, C] {
	if key := s.Section; key != "" {
		if s.Clusters == nil {
			s.Clusters = func(cfg *config.Config) []C { return config.Entries[C](cfg, key) }
		}
		if s.Modules && s.Discover == nil {
			s.Discover = func(cfg *config.Config, module, name string, addrs []string) (C, bool) {
				return config.ModuleAt[C](cfg, key, module, name, addrs)
			}
		}
	}
	var zero C
	if _, ok := any(zero).(Settings); !ok {
		return s
	}
	if s.ClusterName == nil {
		s.ClusterName = func(c C) string { return any(c).(Settings).ClusterName() }
	}
	if s.Fingerprint == nil {
		s.Fingerprint = func(c C) (string, error) { return any(c).(Settings).Fingerprint() }
	}
	if s.Timing == nil {
		s.Timing = func(c C) (time.Duration, time.Duration) { return any(c).(Settings).Timing() }
	}
	return s
}

type defined[S, C any] struct{ spec Spec[S, C] }

func (d defined[S, C]) Name() string        { return d.spec.Name }
func (d defined[S, C]) EventSystem() string { return d.spec.EventSystem }
func (d defined[S, C]) Part() string        { return d.spec.Part }

func (d defined[S, C]) Clusters(cfg *config.Config) []string {
	var names []string
	for _, c := range d.spec.Clusters(cfg) {
		names = append(names, d.spec.ClusterName(c))
	}
	return names
}

func (d defined[S, C]) EventKinds() []events.Kind        { return d.spec.EventKinds }
func (d defined[S, C]) Sets() []*exposition.Set          { return d.spec.Sets() }
func (d defined[S, C]) Doc() Doc                         { return d.spec.Doc }
func (d defined[S, C]) BudgetScopes() []budget.ScopeSpec { return d.spec.BudgetScopes }
func (d defined[S, C]) Dashboards() []Dashboard          { return d.spec.Dashboards }
func (d defined[S, C]) Collector() prometheus.Collector {
	if d.spec.Maintenance == nil {
		return d.spec.NewCollector()
	}
	return withWindows{d.spec.NewCollector(), d.spec.Maintenance.Set}
}
func (d defined[S, C]) Discovers() bool { return d.spec.Discover != nil }

func (d defined[S, C]) HasModule(cfg *config.Config, module string) bool {
	if d.spec.Discover == nil {
		return false
	}
	_, ok := d.spec.Discover(cfg, module, "", nil)
	return ok
}

func (d defined[S, C]) Serving(log *events.Log, logger log.Logger) Serving {
	return &serving[S, C]{spec: d.spec, collector: d.spec.NewCollector(), events: log, logger: logger,
		served: map[string]*unitWatcher[S, C]{}}
}

// withWindows is a system's collector that also describes its
// maintenance families, which the serving's writers add at each scrape.
type withWindows struct {
	prometheus.Collector
	windows *exposition.Set
}

func (c withWindows) Describe(ch chan<- *prometheus.Desc) {
	c.Collector.Describe(ch)
	c.windows.Describe(ch)
}

type serving[S, C any] struct {
	spec      Spec[S, C]
	collector Collector[S, C]
	events    *events.Log
	logger    log.Logger

	// served are the watchers being served, by cluster name, for the
	// failure budget's questions (their settings give the interval a
	// snapshot's age is judged by).
	servedMu sync.Mutex
	served   map[string]*unitWatcher[S, C]

	windows atomic.Pointer[func() []maintenance.Window]
}

func (s *serving[S, C]) ServeWindows(windows func() []maintenance.Window) { s.windows.Store(&windows) }

// appendWindows adds the system's open maintenance windows of the clusters
// keep accepts to st.
func (s *serving[S, C]) appendWindows(st *exposition.Stream, keep func(cluster string) bool) {
	f := s.windows.Load()
	if f == nil || s.spec.Maintenance == nil {
		return
	}
	windows := slices.DeleteFunc((*f)(), func(w maintenance.Window) bool { return w.System != s.spec.Name })
	s.spec.Maintenance.Append(st, windows, keep)
}

func (s *serving[S, C]) Served() []string {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	names := make([]string, 0, len(s.served))
	for name := range s.served {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (s *serving[S, C]) Budget(cluster string, q budget.Question, now time.Time) (budget.Answer, error) {
	if s.spec.Budget == nil || !slices.ContainsFunc(s.spec.BudgetScopes, func(spec budget.ScopeSpec) bool { return spec.Scope == q.Scope }) {
		return budget.Answer{}, fmt.Errorf("%s has no %s: %w", s.spec.Name, q.Scope, budget.ErrWrongScope)
	}
	s.servedMu.Lock()
	u := s.served[cluster]
	s.servedMu.Unlock()
	if u == nil {
		return budget.Answer{}, fmt.Errorf("%s cluster %q: %w cluster", s.spec.Name, cluster, budget.ErrUnknown)
	}
	st := u.Current()
	interval, _ := s.spec.Timing(u.settings)
	if err := budget.Fresh(st.Snapshot != nil, st.Up, st.LastError, st.LastSuccess, interval, now); err != nil {
		return budget.Answer{}, fmt.Errorf("%s cluster %q: %w", s.spec.Name, cluster, err)
	}
	a, err := s.spec.Budget(st.Snapshot, q)
	if err != nil {
		return budget.Answer{}, fmt.Errorf("%s cluster %q: %w", s.spec.Name, cluster, err)
	}
	a.System, a.Cluster, a.Scope, a.Recovered = s.spec.Name, cluster, q.Scope, q.Recovered
	if a.ID == "" {
		a.ID = q.ID
	}
	if a.Findings == nil {
		a.Findings = []budget.Finding{}
	}
	if a.AtRisk == nil {
		a.AtRisk = []string{}
	}
	return a, nil
}

func (s *serving[S, C]) States() any { return s.collector.States() }

func (s *serving[S, C]) Writer(withDiscovered func() bool) exposition.TextWriter {
	return servedWriter[S, C]{s, withDiscovered}
}

// servedWriter serves the clusters of the config, and the discovered ones
// when withDiscovered says so.
type servedWriter[S, C any] struct {
	s              *serving[S, C]
	withDiscovered func() bool
}

func (w servedWriter[S, C]) AppendText(st *exposition.Stream) {
	if w.withDiscovered() {
		w.s.collector.AppendText(st)
		w.s.appendWindows(st, w.s.isServed)
		return
	}
	w.s.collector.AppendClustersText(st, w.s.configured)
	w.s.appendWindows(st, w.s.configured)
}

// isServed reports whether the cluster called name is served.
func (s *serving[S, C]) isServed(name string) bool {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	return s.served[name] != nil
}

// configured reports whether the cluster called name is served and is one
// of the config's, not one a /probe discovered.
func (s *serving[S, C]) configured(name string) bool {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	u := s.served[name]
	return u != nil && !u.discovered
}

func (s *serving[S, C]) ClusterWriter(cluster string) (exposition.TextWriter, bool) {
	s.servedMu.Lock()
	_, ok := s.served[cluster]
	s.servedMu.Unlock()
	if !ok {
		return nil, false
	}
	return clusterWriter[S, C]{s, cluster}, true
}

// clusterWriter serves one cluster's series and its open maintenance
// window, for /probe.
type clusterWriter[S, C any] struct {
	s       *serving[S, C]
	cluster string
}

func (w clusterWriter[S, C]) AppendText(st *exposition.Stream) {
	if w.s.collector.AppendClusterText(st, w.cluster) {
		w.s.appendWindows(st, func(name string) bool { return name == w.cluster })
	}
}

func (s *serving[S, C]) Views(now time.Time, withDiscovered bool) []model.Cluster {
	if s.spec.Views == nil {
		return nil
	}
	states := s.collector.States()
	if !withDiscovered {
		states = slices.DeleteFunc(states, func(n watch.Named[S]) bool { return !s.configured(n.Name) })
	}
	return s.spec.Views(states, now)
}

func (s *serving[S, C]) Plan(cfg *config.Config) ([]Unit, error) {
	var units []Unit
	for _, c := range s.spec.Clusters(cfg) {
		u, err := s.unit(c, false)
		if err != nil {
			return nil, err
		}
		units = append(units, u)
	}
	return units, nil
}

func (s *serving[S, C]) Discover(cfg *config.Config, module, name string, addrs []string) (Unit, bool, error) {
	if s.spec.Discover == nil {
		return Unit{}, false, nil
	}
	c, ok := s.spec.Discover(cfg, module, name, addrs)
	if !ok {
		return Unit{}, false, nil
	}
	// Here, and not in each system's Discover, so that no system can
	// forget it: settings that cannot say where they may go go nowhere.
	checker, ok := any(c).(config.TargetChecker)
	if !ok {
		return Unit{}, true, fmt.Errorf("%w: %s module %q: the system's settings do not say where they may go", config.ErrTargetNotAllowed, s.spec.EventSystem, module)
	}
	if err := checker.CheckTarget(); err != nil {
		return Unit{}, true, fmt.Errorf("%s module %q: %w", s.spec.EventSystem, module, err)
	}
	u, err := s.unit(c, true)
	return u, true, err
}

// unit is the unit of one cluster's settings, its fingerprint read now;
// discovered for a cluster a /probe asked for.
func (s *serving[S, C]) unit(c C, discovered bool) (Unit, error) {
	name := s.spec.ClusterName(c)
	fp, err := s.spec.Fingerprint(c)
	if err != nil {
		return Unit{}, s.errorf(name, err)
	}
	return Unit{System: s.spec.Name, Cluster: name, Fingerprint: fp,
		Build: func() (Watcher, error) {
			w, err := s.build(name, c)
			if err != nil {
				return nil, s.errorf(name, err)
			}
			w.discovered = discovered
			return w, nil
		}}, nil
}

// errorf names the cluster an error is about as the config does:
// `kafka cluster "orders": canary: ...`.
func (s *serving[S, C]) errorf(name string, err error) error {
	if s.spec.Part != "" {
		return fmt.Errorf("%s cluster %q: %s: %w", s.spec.EventSystem, name, s.spec.Part, err)
	}
	return fmt.Errorf("%s cluster %q: %w", s.spec.EventSystem, name, err)
}

func (s *serving[S, C]) build(name string, c C) (*unitWatcher[S, C], error) {
	logger := watch.ClusterLogger(s.logger, s.spec.Name, name)
	src, err := s.spec.Source(c, logger)
	if err != nil {
		return nil, err
	}
	interval, timeout := s.spec.Timing(c)
	w := watch.New(name, interval, timeout, src.Refresh, logger)
	w.OnStop(src.Close)
	if src.Wake != nil {
		src.Wake(w.Trigger)
	}
	return &unitWatcher[S, C]{Watcher: w, serving: s, name: name, settings: c}, nil
}

// NewWatcher builds one cluster's watcher as the manager does, for tests
// and tools that run a watcher of their own.
func NewWatcher[S, C any](spec Spec[S, C], settings C, logger log.Logger) (*watch.Watcher[S], error) {
	spec = spec.Filled()
	s := &serving[S, C]{spec: spec, logger: logger}
	w, err := s.build(spec.ClusterName(settings), settings)
	if err != nil {
		return nil, err
	}
	return w.Watcher, nil
}

// unitWatcher is a watch.Watcher with what serving it needs.
type unitWatcher[S, C any] struct {
	*watch.Watcher[S]
	serving  *serving[S, C]
	name     string
	settings C
	// discovered is a watcher of a cluster a /probe asked for, served on
	// /probe and, unless asked to, nowhere else.
	discovered bool
}

func (u *unitWatcher[S, C]) Resume(from Watcher) {
	if old, ok := from.(*unitWatcher[S, C]); ok {
		u.Watcher.Resume(old.Current())
	}
}

func (u *unitWatcher[S, C]) Members() (ids, addrs []string, read bool) {
	if u.serving.spec.Members == nil {
		return nil, nil, false
	}
	snap := u.Current().Snapshot
	ids, addrs = u.serving.spec.Members(u.settings, snap)
	return ids, addrs, snap != nil
}

func (u *unitWatcher[S, C]) Serve() {
	u.serving.collector.Serve(u.name, u.Watcher, u.settings)
	u.serving.servedMu.Lock()
	u.serving.served[u.name] = u
	u.serving.servedMu.Unlock()
	events.Follow(u.serving.events, u.serving.spec.EventSystem, u.name, u.Watcher, u.serving.spec.Events)
}

func (u *unitWatcher[S, C]) Remove() {
	u.serving.collector.Remove(u.name)
	u.serving.servedMu.Lock()
	if u.serving.served[u.name] == u {
		delete(u.serving.served, u.name)
	}
	u.serving.servedMu.Unlock()
}
