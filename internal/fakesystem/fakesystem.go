// Package fakesystem is a system of the tests, as complete as a real one
// and defined entirely here, as a new system's folder would define it: its
// own config section with modules (fake:, fake_modules:), event kind,
// metric tables, convenience flags, failure budget with its own scope,
// status-page view and dashboard entry. The engine's tests (the manager,
// the check, /probe, /api/v1/safe-to-stop), the safe-to-stop command's,
// the chart's schema's and the status page's run it through the same code
// the registry's systems go through, to prove that a Spec and a registry
// line are all a new system needs.
package fakesystem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// Key is the fake system's name and its section's key in the config file.
const Key = "fake"

// Settings is the fake system's entry in the config file.
type Settings struct {
	Name string `yaml:"name"`
	// Addrs are a discovered target's; a fake source reads nothing.
	Addrs           []string      `yaml:"addrs"`
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	RefreshTimeout  time.Duration `yaml:"refresh_timeout"`
	// AllowedTargets and AllowAnyTarget say where a module may go.
	AllowedTargets []string `yaml:"allowed_targets"`
	AllowAnyTarget bool     `yaml:"allow_any_target"`
}

// CheckTarget makes the settings a config.TargetChecker, as the manager
// asks of every system with modules.
func (f Settings) CheckTarget() error {
	return config.CheckAllowedTargets(f.AllowedTargets, f.AllowAnyTarget, f.Addrs)
}

// ClusterName, Fingerprint and Timing make Settings a system.Settings,
// from which the engine takes them.
func (f Settings) ClusterName() string { return f.Name }
func (f Settings) Fingerprint() (string, error) {
	b, err := json.Marshal(f)
	return string(b), err
}
func (f Settings) Timing() (interval, timeout time.Duration) {
	return f.RefreshInterval, f.RefreshTimeout
}

// Section is the fake system's config format: its key, defaults,
// validation and name, and its modules (fake_modules:, entries of the
// same type). A test registers it (config.Register) before its first
// Parse, as a system's settings package does.
var Section = config.NewSection(SectionSpec(Key, "fake cluster"))

// SectionSpec is the fake section's spec under another key and noun (a
// test that needs a second section of the same shape).
func SectionSpec(key, noun string) config.SectionSpec[Settings] {
	return config.SectionSpec[Settings]{
		Key: key, Noun: noun,
		Modules: &config.ModuleSpec[Settings]{
			AddrKey: "addrs",
			Addrs:   func(f *Settings) []string { return f.Addrs },
			At: func(m Settings, name string, addrs []string) Settings {
				m.Name, m.Addrs = name, addrs
				return m
			},
			Check: func(*Settings) error { return nil },
			Targets: func(f *Settings) config.ModuleTargets {
				return config.ModuleTargets{Allowed: f.AllowedTargets, AllowAny: f.AllowAnyTarget}
			},
		},
		Defaults: func(f *Settings) {
			if f.Name == "" {
				f.Name = Key
			}
			if f.RefreshInterval == 0 {
				f.RefreshInterval = config.DefaultRefreshInterval
			}
			if f.RefreshTimeout == 0 {
				f.RefreshTimeout = f.RefreshInterval * 8 / 10
			}
		},
		Name: func(f *Settings) string { return f.Name },
		Validate: func(*config.Config) func(*Settings) error {
			return func(f *Settings) error {
				if err := config.CheckRefreshInterval("refresh_interval", f.RefreshInterval); err != nil {
					return err
				}
				if f.RefreshTimeout <= 0 || f.RefreshTimeout > f.RefreshInterval {
					return fmt.Errorf("refresh_timeout %s must be positive and at most refresh_interval %s", f.RefreshTimeout, f.RefreshInterval)
				}
				return nil
			}
		},
	}
}

// Counted is the fake system's one event kind, declared by it.
const Counted events.Kind = "fake_counted"

// Health and Series are the fake system's metric tables.
var Health, Series = CountingTables(Key)

// CountingTables are a fake system's tables, named from prefix: whether
// its last refresh succeeded (health), and the refreshes its snapshot
// counted.
func CountingTables(prefix string) (health, series *exposition.Set) {
	health, series = &exposition.Set{}, &exposition.Set{}
	health.Gauge(prefix+"_up", "Whether the last refresh of the fake cluster succeeded.", "fake_cluster")
	series.Counter(prefix+"_refreshes_total", "Refreshes the fake source counted.", "fake_cluster")
	return health, series
}

// CountingCollector serves the tables' series of each cluster: its
// health, and its count once it has a snapshot.
func CountingCollector(health, series *exposition.Set) system.Collector[Snapshot, Settings] {
	up, refreshes := health.Descs()[0], series.Descs()[0]
	emit := func(h, sink exposition.Sink, cluster string, st *watch.State[Snapshot]) {
		v := 0.0
		if st.Up {
			v = 1
		}
		h.Add(up, v, cluster)
		if st.Up && st.Snapshot != nil {
			sink.Add(refreshes, float64(st.Snapshot.N), cluster)
		}
	}
	return system.Unconfigured[Snapshot, Settings](func() *exposition.Collector[Snapshot] {
		return exposition.NewCollector(emit, health, series)
	})()
}

// Snapshot is the fake system's snapshot: how many refreshes the chain of
// snapshots has seen, across watchers.
type Snapshot struct {
	N      int
	Events events.List
}

// Sources lets a test steer the fake sources: how long a refresh takes,
// and whether it ignores its context. Set the fields before the sources
// run, or with Set while they do.
type Sources struct {
	mu       sync.Mutex
	Delay    time.Duration
	Stubborn bool // sleeps through a cancelled context
	built    int  // sources built
	closed   int  // sources closed
	// IDs are the ids a cluster reports once read, by name; Down are
	// clusters whose refreshes fail (a closed port), by name.
	IDs  map[string][]string
	Down map[string]bool
}

// Set changes how the sources' refreshes behave from now on.
func (f *Sources) Set(delay time.Duration, stubborn bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Delay, f.Stubborn = delay, stubborn
}

// Counts are the sources built and closed so far.
func (f *Sources) Counts() (built, closed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.built, f.closed
}

func (f *Sources) idsOf(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.IDs[name]
}

func (f *Sources) source(c Settings, _ log.Logger) (system.Source[Snapshot], error) {
	f.mu.Lock()
	f.built++
	f.mu.Unlock()
	refresh := func(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
		f.mu.Lock()
		delay, stubborn, down := f.Delay, f.Stubborn, f.Down[c.Name]
		f.mu.Unlock()
		if down {
			return nil, errors.New("connection refused")
		}
		if stubborn {
			time.Sleep(delay)
		} else {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		next := &Snapshot{}
		if prev != nil {
			next.N = prev.N
		}
		next.N++
		next.Events.Add(time.Now(), Counted, events.Subject{NodeID: c.Name}, "", fmt.Sprint(next.N))
		return next, nil
	}
	closeSource := func() {
		f.mu.Lock()
		f.closed++
		f.mu.Unlock()
	}
	return system.Source[Snapshot]{Refresh: refresh, Close: closeSource}, nil
}

// Maintenance are the fake system's series of its open maintenance
// windows: fake_maintenance_active{fake_cluster, scope, member}.
var Maintenance = maintenance.NewFamilies(Key+"_", Key+"_cluster", "member", "member")

// System is the fake system over f's sources.
func System(f *Sources) system.System { return system.Define(Spec(f)) }

// Spec is everything the fake system is.
func Spec(f *Sources) system.Spec[Snapshot, Settings] {
	return system.Spec[Snapshot, Settings]{
		Name: Key,
		// Its clusters are its section's entries, its /probe targets its
		// modules'; their names, fingerprints and timings Settings' own.
		Section: Key,
		Modules: true,
		// A fake cluster is known by its addresses, and by the ids
		// Sources.IDs gives a name, once read.
		Members: func(c Settings, snap *Snapshot) (ids, addrs []string) {
			if snap != nil {
				ids = f.idsOf(c.Name)
			}
			return ids, append(addrs, c.Addrs...)
		},
		Source:       f.source,
		Events:       func(s *Snapshot) []events.Event { return s.Events.All() },
		EventKinds:   []events.Kind{Counted},
		NewCollector: func() system.Collector[Snapshot, Settings] { return CountingCollector(Health, Series) },
		Sets:         func() []*exposition.Set { return []*exposition.Set{Health, Series, Maintenance.Set} },
		Doc:          system.Doc{Title: "Fake", Intro: "A system of the tests."},
		// Its open maintenance windows, served with its clusters' series.
		Maintenance: Maintenance,
		Views:       Views,
		// Its failure budget: of its members a, b and c, only a may stop.
		BudgetScopes: []budget.ScopeSpec{{Scope: "member", Member: "NAME", Help: "A fake member."}},
		Budget:       Budget,
		Flags:        DeclareFlags,
		// Its dashboard, held to the contract the shipped ones are.
		Dashboards: []system.Dashboard{{File: "internal/fakesystem/dashboard.json", UID: "failover-fake", ClusterVar: "fake_cluster",
			LinksTo: "failover-kafka", FailoverCounters: []string{"fake_refreshes_total"}}},
	}
}

// Views are the status page's sections of the fake clusters: the count
// of refreshes, as a box.
func Views(states []watch.Named[Snapshot], now time.Time) []model.Cluster {
	out := make([]model.Cluster, 0, len(states))
	for _, s := range states {
		c := model.Cluster{System: Key, Name: s.Name, Head: system.Head(s.State, now)}
		if snap := s.State.Snapshot; snap != nil {
			c.Stats = []model.Stat{{Name: "refreshes", Label: "refreshes counted", Value: fmt.Sprint(snap.N), Level: "good"}}
		}
		out = append(out, c)
	}
	return out
}

// Budget answers what stopping a member of a fake cluster would do: a is
// safe, b and c are not, and there is no other.
func Budget(snap *Snapshot, q budget.Question) (budget.Answer, error) {
	a := budget.Answer{Scope: q.Scope, ID: q.ID}
	switch q.ID {
	case "a":
		a.Safe = true
	case "b", "c":
		a.Add("fake_unsafe", 1, "member %s holds the last copy of count %d", q.ID, snap.N)
	default:
		return a, fmt.Errorf("member %s: %w (known: a, b, c)", q.ID, budget.ErrUnknown)
	}
	return a, nil
}

// flags are the fake system's convenience flags: --fake.addr names one
// cluster, --fake.name its name.
type flags struct{ addrs, name string }

// DeclareFlags declares them on a server command.
func DeclareFlags(cmd *kingpin.CmdClause) system.FlagCluster {
	f := &flags{}
	cmd.Flag("fake.addr", "A fake cluster's address.").StringVar(&f.addrs)
	cmd.Flag("fake.name", "The --fake.addr cluster's name.").Default(Key).StringVar(&f.name)
	return f
}

func (f *flags) Given() bool      { return f.addrs != "" }
func (f *flags) AddrFlag() string { return "--fake.addr" }
func (f *flags) Check() []error {
	if err := config.CheckAddr(f.addrs); f.addrs != "" && err != nil {
		return []error{fmt.Errorf("--fake.addr: %w", err)}
	}
	return nil
}
func (f *flags) AddTo(cfg *config.Config, refresh time.Duration) error {
	entries := append(config.Entries[Settings](cfg, Key), Settings{Name: f.name, Addrs: []string{f.addrs}, RefreshInterval: refresh})
	config.SetEntries(cfg, Key, entries)
	return nil
}

// Cluster is a fake cluster's settings.
func Cluster(name string, interval time.Duration) Settings {
	return Settings{Name: name, RefreshInterval: interval}
}

// Config is the config file listing the clusters under the fake system's
// own key, parsed as a file is: strictly, type-checked and completed
// through the sections table (Section must be registered).
func Config(t testing.TB, clusters ...Settings) *config.Config {
	t.Helper()
	var file strings.Builder
	if len(clusters) > 0 {
		file.WriteString(Key + ":\n")
	}
	for _, c := range clusters {
		fmt.Fprintf(&file, "  - name: %s\n    refresh_interval: %s\n", c.Name, c.RefreshInterval)
		if c.RefreshTimeout != 0 {
			fmt.Fprintf(&file, "    refresh_timeout: %s\n", c.RefreshTimeout)
		}
	}
	cfg, err := config.Parse([]byte(file.String()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
