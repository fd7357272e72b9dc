package collector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"go.uber.org/goleak"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/metricsdoc"
	"github.com/failover-exporter/failover_exporter/systems"
)

func TestMain(m *testing.M) {
	// The fake system's section joins the table as a system's config file
	// would add its own.
	for _, s := range []config.Section{fakeSection} {
		if err := config.Register(s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	goleak.VerifyTestMain(m)
}

// A minimal system, defined as a new system's package and config file
// would define one: its own section of the config file (fake:, registered
// in the config's sections table from here), its own event kind, and a
// source that counts its refreshes and records one event per refresh. It
// proves that the registry and the sections table are all the manager,
// the config and the check need to know.

// fakeSettings is the fake system's entry in the config file.
type fakeSettings struct {
	Name string `yaml:"name"`
	// Addrs are a discovered target's; a fake source reads nothing.
	Addrs           []string      `yaml:"addrs"`
	RefreshInterval time.Duration `yaml:"refresh_interval"`
	RefreshTimeout  time.Duration `yaml:"refresh_timeout"`
	// AllowedTargets and AllowAnyTarget say where a module may go.
	AllowedTargets []string `yaml:"allowed_targets"`
	AllowAnyTarget bool     `yaml:"allow_any_target"`
}

// CheckTarget makes the fake settings a config.TargetChecker, as the
// manager asks of every system with modules.
func (f fakeSettings) CheckTarget() error {
	return config.CheckAllowedTargets(f.AllowedTargets, f.AllowAnyTarget, f.Addrs)
}

// fakeSection is the fake system's config format: its key, defaults,
// validation and name, and its modules (fake_modules:, entries of the same
// type), as config/kafka.go declares Kafka's.
var fakeSection = config.NewSection(fakeSectionSpec("fake", "fake cluster"))

func fakeSectionSpec(key, noun string) config.SectionSpec[fakeSettings] {
	return config.SectionSpec[fakeSettings]{
		Key: key, Noun: noun,
		Modules: &config.ModuleSpec[fakeSettings]{
			AddrKey: "addrs",
			Addrs:   func(f *fakeSettings) []string { return f.Addrs },
			At: func(m fakeSettings, name string, addrs []string) fakeSettings {
				m.Name, m.Addrs = name, addrs
				return m
			},
			Check: func(*fakeSettings) error { return nil },
			Targets: func(f *fakeSettings) config.ModuleTargets {
				return config.ModuleTargets{Allowed: f.AllowedTargets, AllowAny: f.AllowAnyTarget}
			},
		},
		Defaults: func(f *fakeSettings) {
			if f.Name == "" {
				f.Name = "fake"
			}
			if f.RefreshInterval == 0 {
				f.RefreshInterval = config.DefaultRefreshInterval
			}
			if f.RefreshTimeout == 0 {
				f.RefreshTimeout = f.RefreshInterval * 8 / 10
			}
		},
		Name: func(f *fakeSettings) string { return f.Name },
		Validate: func(*config.Config) func(*fakeSettings) error {
			return func(f *fakeSettings) error {
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

// fakeCounted is the fake system's one event kind, declared by it.
const fakeCounted events.Kind = "fake_counted"

// fakeHealth and fakeSeries are the fake system's metric tables.
var fakeHealth, fakeSeries = countingTables("fake")

// countingTables are a fake system's tables, named from prefix: whether
// its last refresh succeeded (health), and the refreshes its snapshot
// counted.
func countingTables(prefix string) (health, series *exposition.Set) {
	health, series = &exposition.Set{}, &exposition.Set{}
	health.Gauge(prefix+"_up", "Whether the last refresh of the fake cluster succeeded.", "fake_cluster")
	series.Counter(prefix+"_refreshes_total", "Refreshes the fake source counted.", "fake_cluster")
	return health, series
}

// countingCollector serves the tables' series of each cluster: its
// health, and its count once it has a snapshot.
func countingCollector(health, series *exposition.Set) system.Collector[counted, fakeSettings] {
	up, refreshes := health.Descs()[0], series.Descs()[0]
	emit := func(h, sink exposition.Sink, cluster string, st *watch.State[counted]) {
		v := 0.0
		if st.Up {
			v = 1
		}
		h.Add(up, v, cluster)
		if st.Up && st.Snapshot != nil {
			sink.Add(refreshes, float64(st.Snapshot.N), cluster)
		}
	}
	return system.Unconfigured[counted, fakeSettings](func() *exposition.Collector[counted] {
		return exposition.NewCollector(emit, health, series)
	})()
}

// counted is the fake system's snapshot: how many refreshes the chain of
// snapshots has seen, across watchers.
type counted struct {
	N      int
	Events events.List
}

// fakeSources lets a test steer the fake sources: how long a refresh
// takes, and whether it ignores its context.
type fakeSources struct {
	mu       sync.Mutex
	delay    time.Duration
	stubborn bool // sleeps through a cancelled context
	built    int  // sources built
	closed   int  // sources closed
	// ids are the ids a cluster reports once read, by name; down are
	// clusters whose refreshes fail (a closed port), by name.
	ids  map[string][]string
	down map[string]bool
}

func (f *fakeSources) idsOf(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ids[name]
}

func (f *fakeSources) source(c fakeSettings, _ log.Logger) (system.Source[counted], error) {
	f.mu.Lock()
	f.built++
	f.mu.Unlock()
	refresh := func(ctx context.Context, prev *counted) (*counted, error) {
		f.mu.Lock()
		delay, stubborn, down := f.delay, f.stubborn, f.down[c.Name]
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
		next := &counted{}
		if prev != nil {
			next.N = prev.N
		}
		next.N++
		next.Events.Add(time.Now(), fakeCounted, events.Subject{NodeID: c.Name}, "", fmt.Sprint(next.N))
		return next, nil
	}
	closeSource := func() {
		f.mu.Lock()
		f.closed++
		f.mu.Unlock()
	}
	return system.Source[counted]{Refresh: refresh, Close: closeSource}, nil
}

func fakeSystem(f *fakeSources) system.System { return system.Define(fakeSpec(f)) }

func fakeSpec(f *fakeSources) system.Spec[counted, fakeSettings] {
	return system.Spec[counted, fakeSettings]{
		Name:        "fake",
		Clusters:    func(cfg *config.Config) []fakeSettings { return config.Entries[fakeSettings](cfg, "fake") },
		ClusterName: func(c fakeSettings) string { return c.Name },
		Discover: func(cfg *config.Config, module, name string, addrs []string) (fakeSettings, bool) {
			return config.ModuleAt[fakeSettings](cfg, "fake", module, name, addrs)
		},
		// A fake cluster is known by its addresses, and by the ids
		// fakeSources.ids gives a name, once read.
		Members: func(c fakeSettings, snap *counted) (ids, addrs []string) {
			if snap != nil {
				ids = f.idsOf(c.Name)
			}
			return ids, append(addrs, c.Addrs...)
		},
		Fingerprint: func(c fakeSettings) (string, error) {
			b, err := json.Marshal(c)
			return string(b), err
		},
		Timing:     func(c fakeSettings) (time.Duration, time.Duration) { return c.RefreshInterval, c.RefreshTimeout },
		Source:     f.source,
		Events:     func(s *counted) []events.Event { return s.Events.All() },
		EventKinds: []events.Kind{fakeCounted},
		NewCollector: func() system.Collector[counted, fakeSettings] {
			return countingCollector(fakeHealth, fakeSeries)
		},
		Sets: func() []*exposition.Set { return []*exposition.Set{fakeHealth, fakeSeries} },
		Doc:  system.Doc{Title: "Fake", Intro: "A system of the tests."},
		// Its failure budget: of its members a, b and c, only a may stop.
		BudgetScopes: []budget.ScopeSpec{{Scope: "member", Member: "NAME", Help: "A fake member."}},
		Budget:       fakeBudget,
		Flags:        declareFakeFlags,
	}
}

// fakeBudget answers what stopping a member of a fake cluster would do:
// a is safe, b and c are not, and there is no other.
func fakeBudget(snap *counted, q budget.Question) (budget.Answer, error) {
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

// fakeFlags are the fake system's convenience flags: --fake.addr names
// one cluster, --fake.name its name.
type fakeFlags struct{ addrs, name string }

func declareFakeFlags(cmd *kingpin.CmdClause) system.FlagCluster {
	f := &fakeFlags{}
	cmd.Flag("fake.addr", "A fake cluster's address.").StringVar(&f.addrs)
	cmd.Flag("fake.name", "The --fake.addr cluster's name.").Default("fake").StringVar(&f.name)
	return f
}

func (f *fakeFlags) Given() bool      { return f.addrs != "" }
func (f *fakeFlags) AddrFlag() string { return "--fake.addr" }
func (f *fakeFlags) Check() []error {
	if err := config.CheckAddr(f.addrs); f.addrs != "" && err != nil {
		return []error{fmt.Errorf("--fake.addr: %w", err)}
	}
	return nil
}
func (f *fakeFlags) AddTo(cfg *config.Config, refresh time.Duration) error {
	entries := append(config.Entries[fakeSettings](cfg, "fake"), fakeSettings{Name: f.name, Addrs: []string{f.addrs}, RefreshInterval: refresh})
	config.SetEntries(cfg, "fake", entries)
	return nil
}

func fakeCluster(name string, interval time.Duration) fakeSettings {
	return fakeSettings{Name: name, RefreshInterval: interval}
}

// fakeConfig is the config file listing the clusters under the fake
// system's own key, parsed as a file is: strictly, type-checked and
// completed through the sections table.
func fakeConfig(t *testing.T, clusters ...fakeSettings) *config.Config {
	t.Helper()
	var file strings.Builder
	if len(clusters) > 0 {
		file.WriteString("fake:\n")
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

func fakeStates(t *testing.T, m *Manager) []watch.Named[counted] {
	t.Helper()
	states, ok := m.States("fake").([]watch.Named[counted])
	if !ok {
		t.Fatalf("States(fake) is %T", m.States("fake"))
	}
	return states
}

// waitCount waits until the fake cluster's snapshot has counted at least n
// refreshes and returns it.
func waitCount(t *testing.T, m *Manager, n int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		states := fakeStates(t, m)
		if len(states) == 1 && states[0].State.Snapshot != nil && states[0].State.Snapshot.N >= n {
			return states[0].State.Snapshot.N
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake cluster never counted %d refreshes: %+v", n, states)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A new system is one Spec and one registry line: the manager starts,
// serves, reloads and stops it, records its events under its name, and
// a cluster restarted by a changed setting carries on from its last state.
func TestFakeSystemThroughTheRegistry(t *testing.T) {
	f := &fakeSources{}
	m := NewManager([]system.System{fakeSystem(f)}, log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	cfg := fakeConfig(t, fakeCluster("one", 100*time.Millisecond))
	if err := apply(t, m, cfg); err != nil {
		t.Fatal(err)
	}
	before := waitCount(t, m, 3)

	// A changed setting restarts the watcher from its last snapshot.
	changed := fakeConfig(t, fakeCluster("one", 150*time.Millisecond))
	if err := m.Apply(changed); err != nil {
		t.Fatal(err)
	}
	after := fakeStates(t, m)[0].State.Snapshot.N
	if after < before {
		t.Errorf("after the reload the cluster counts %d refreshes, before it %d: the restart lost its state", after, before)
	}
	resumed := waitCount(t, m, after+2)
	// Every count appears once in the event log: nothing lost, nothing
	// twice. The log follows a publish on the watcher's goroutine, after
	// the collector has rendered it: wait for the last count's event.
	var evs []events.Event
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		evs = m.Events().Query("", "", time.Time{}, 0)
		if slices.ContainsFunc(evs, func(e events.Event) bool { return e.After == fmt.Sprint(resumed) }) || time.Now().After(deadline) {
			break
		}
	}
	seen := map[string]int{}
	for _, e := range evs {
		if e.System != "fake" || e.Cluster != "one" {
			t.Errorf("event %+v not under system fake, cluster one", e)
		}
		seen[e.After]++
	}
	for n := 1; n <= resumed; n++ {
		if c := seen[fmt.Sprint(n)]; c != 1 {
			t.Errorf("count %d recorded %d times across the reload (want once): %v", n, c, seen)
		}
	}
	if known := m.Known(); len(known["fake"]) != 1 || known["fake"][0] != "one" {
		t.Errorf("Known() = %v", known)
	}

	// Removed: no longer served; its source closed.
	if err := m.Apply(fakeConfig(t)); err != nil {
		t.Fatal(err)
	}
	if states := fakeStates(t, m); len(states) != 0 {
		t.Errorf("removed cluster still served: %+v", states)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.built != f.closed {
		t.Errorf("%d sources built, %d closed", f.built, f.closed)
	}
}

// A check, and a reload that fails after building some watchers, close
// everything they built and start nothing.
func TestCheckAndFailedApplyLeakNothing(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	cfg := completed(t, []config.KafkaCluster{kafkaCluster("k")}, []config.RedisCluster{redisCluster("r")})
	for range 100 {
		if err := Check(systems.All, cfg); err != nil {
			t.Fatal(err)
		}
	}
	goleak.VerifyNone(t, ignore)

	m := NewManager(systems.All, log.NewNopLogger(), 0)
	if err := apply(t, m, cfg); err != nil {
		t.Fatal(err)
	}
	// b builds (a real Kafka source), then s cannot: b must be closed.
	broken := redisCluster("s")
	broken.Password = config.Secret{Env: "FAILOVER_TEST_UNSET_PASSWORD"}
	bad := &config.Config{Kafka: []config.KafkaCluster{kafkaCluster("k"), kafkaCluster("b")}, Redis: []config.RedisCluster{redisCluster("r"), broken}}
	// Complete would refuse the missing variable; the manager must too,
	// whatever reaches it.
	for range 20 {
		if err := m.Apply(bad); err == nil {
			t.Fatal("Apply accepted a cluster whose password variable is unset")
		}
	}
	m.Stop()
	goleak.VerifyNone(t, ignore)
}

// A reload never makes /-/ready or a scrape wait: with a watcher whose
// refresh ignores cancellation for a second, Ready and TextWriters answer
// at once while Apply waits for it.
func TestApplyDoesNotBlockReaders(t *testing.T) {
	f := &fakeSources{}
	m := NewManager([]system.System{fakeSystem(f)}, log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	one := fakeCluster("one", time.Second)
	one.RefreshTimeout = time.Second
	if err := apply(t, m, fakeConfig(t, one)); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.delay, f.stubborn = 900*time.Millisecond, true
	f.mu.Unlock()
	time.Sleep(1100 * time.Millisecond) // the next refresh is under way, stubborn

	done := make(chan struct{})
	applyStart := time.Now()
	go func() {
		defer close(done)
		changed := fakeCluster("one", 2*time.Second)
		changed.RefreshTimeout = time.Second
		if err := m.Apply(fakeConfig(t, changed)); err != nil {
			t.Error(err)
		}
	}()
	var slowest time.Duration
	for {
		select {
		case <-done:
			t.Logf("FIGURE reload with a stubborn watcher took %s; slowest Ready or render meanwhile %s", time.Since(applyStart).Round(time.Millisecond), slowest)
			if slowest > 50*time.Millisecond {
				t.Errorf("a reader waited %s on the reload", slowest)
			}
			return
		default:
		}
		start := time.Now()
		if !m.Ready() {
			t.Error("not ready during a reload")
		}
		if _, err := exposition.PlainText(m.TextWriters()...); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(start))
		time.Sleep(5 * time.Millisecond)
	}
}

// The fake system's section is the config's like any other: decoded
// strictly, its durations type-checked by key path, its entries defaulted,
// validated and named uniquely through the sections table; the check
// builds and closes its sources; METRICS.md documents its table; its event
// kinds are its own. No file outside this one knows it.
func TestFakeSystemOwnsItsConfigSection(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"fake:\n  - name: a\n    refresh_interval: 5\n", "line 3: fake[0].refresh_interval: 5 is not a duration"},
		{"fake:\n  - name: a\n    refesh_interval: 5s\n", "field refesh_interval not found in type collector.fakeSettings"},
		{"fake:\n  - name: a\n    refresh_interval: 50ms\n", `fake cluster 1 ("a"): refresh_interval 50ms is shorter than 100ms`},
		{"fake:\n  - name: a\n  - name: a\n", `fake cluster "a" is defined twice`},
		{"[]\n", "the file must be a mapping of kafka, redis, mirrors, kafka_modules, redis_modules, fake and fake_modules lists"},
	} {
		_, err := config.Parse([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.file, err, tc.want)
		}
	}
	if err := config.Register(fakeSection); err == nil {
		t.Error("a second fake section was registered")
	}
	cfg, err := config.Parse([]byte("fake:\n  - {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := config.Entries[fakeSettings](cfg, "fake"); len(got) != 1 || got[0].Name != "fake" || got[0].RefreshInterval != config.DefaultRefreshInterval {
		t.Errorf("defaults not applied: %+v", got)
	}

	f := &fakeSources{}
	sys := fakeSystem(f)
	if err := NewManager([]system.System{sys}, log.NewNopLogger(), 1).Check(cfg); err != nil {
		t.Fatal(err)
	}
	if f.built != 1 || f.closed != 1 {
		t.Errorf("the check built %d sources and closed %d, want 1 and 1", f.built, f.closed)
	}

	doc := metricsdoc.Markdown([]metricsdoc.Section{{Title: sys.Doc().Title, Intro: sys.Doc().Intro, Metrics: metricsdoc.FromSets(sys.Sets()...)}})
	if !strings.Contains(doc, "fake_refreshes_total") || !strings.Contains(doc, "Fake") {
		t.Errorf("METRICS.md section of the fake system lacks its table:\n%s", doc)
	}
	if kinds := sys.EventKinds(); len(kinds) != 1 || kinds[0] != fakeCounted {
		t.Errorf("EventKinds() = %v", kinds)
	}
}

// TestFakeSystemDeclaresItsFlagsAndBudget: the engine learns the fake
// system's convenience flags and failure budget from its Spec alone. Its
// flags, declared on a server command, check their values and add their
// cluster to a config file's; the manager watches both clusters; and
// /api/v1/safe-to-stop takes the system's own scope as its parameter,
// names it in its 400s, and answers from the system's budget.
func TestFakeSystemDeclaresItsFlagsAndBudget(t *testing.T) {
	sys := fakeSystem(&fakeSources{})
	app := kingpin.New("test", "")
	serve := app.Command("serve", "").Default()
	flagged := sys.DeclareFlags(serve)
	if _, err := app.Parse([]string{"--fake.addr=127.0.0.1:7", "--fake.name=flagged"}); err != nil {
		t.Fatal(err)
	}
	if !flagged.Given() || len(flagged.Check()) != 0 {
		t.Fatalf("the fake flags: given %v, checks %v", flagged.Given(), flagged.Check())
	}
	cfg, err := config.Parse([]byte("fake:\n  - {name: filed, refresh_interval: 100ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := flagged.AddTo(cfg, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	m := NewManager([]system.System{sys}, log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	if err := m.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if known := m.Known()["fake"]; !slices.Equal(known, []string{"filed", "flagged"}) {
		t.Fatalf("the manager watches %v, want the file's and the flags' clusters", known)
	}

	handler := budget.Handler(m, false)
	ask := func(query string) (int, string) {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, budget.SafeToStopPath+"?"+query, nil))
		return rec.Code, rec.Body.String()
	}
	deadline := time.Now().Add(10 * time.Second)
	for code, _ := ask("cluster=flagged&member=a"); code != http.StatusOK; code, _ = ask("cluster=flagged&member=a") {
		if time.Now().After(deadline) {
			t.Fatalf("member a of the flags' cluster: %d, want 200 once it is read", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct {
		query string
		code  int
		says  string
	}{
		{"cluster=flagged&member=b", http.StatusConflict, "fake_unsafe"},
		{"system=fake&cluster=filed&member=c", http.StatusConflict, "member c holds the last copy"},
		{"cluster=filed&member=z", http.StatusBadRequest, "member z: unknown"},
		{"cluster=filed", http.StatusBadRequest, "name what to stop: member=NAME (fake)"},
		{"cluster=filed&broker=1", http.StatusBadRequest, "unknown parameter broker: want system, cluster and one of member"},
	} {
		if code, body := ask(c.query); code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("?%s: %d %s, want %d saying %q", c.query, code, body, c.code, c.says)
		}
	}
}
