package collector

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
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
	"github.com/failover-exporter/failover_exporter/internal/fakesystem"
	"github.com/failover-exporter/failover_exporter/internal/metricsdoc"
	"github.com/failover-exporter/failover_exporter/systems"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

func TestMain(m *testing.M) {
	// The fake system's section joins the table as a system's config file
	// would add its own.
	for _, s := range []config.Section{fakesystem.Section} {
		if err := config.Register(s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	goleak.VerifyTestMain(m)
}

func fakeStates(t *testing.T, m *Manager) []watch.Named[fakesystem.Snapshot] {
	t.Helper()
	states, ok := m.states("fake").([]watch.Named[fakesystem.Snapshot])
	if !ok {
		t.Fatalf("States(fake) is %T", m.states("fake"))
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
	f := &fakesystem.Sources{}
	m := NewManager([]system.System{fakesystem.System(f)}, log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	cfg := fakesystem.Config(t, fakesystem.Cluster("one", 100*time.Millisecond))
	if err := apply(t, m, cfg); err != nil {
		t.Fatal(err)
	}
	before := waitCount(t, m, 3)

	// A changed setting restarts the watcher from its last snapshot.
	changed := fakesystem.Config(t, fakesystem.Cluster("one", 150*time.Millisecond))
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
	if err := m.Apply(fakesystem.Config(t)); err != nil {
		t.Fatal(err)
	}
	if states := fakeStates(t, m); len(states) != 0 {
		t.Errorf("removed cluster still served: %+v", states)
	}
	if built, closed := f.Counts(); built != closed {
		t.Errorf("%d sources built, %d closed", built, closed)
	}
}

// A check, and a reload that fails after building some watchers, close
// everything they built and start nothing.
func TestCheckAndFailedApplyLeakNothing(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	cfg := completed(t, []kafkasettings.Cluster{kafkaCluster("k")}, []redissettings.Cluster{redisCluster("r")})
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
	bad := &config.Config{}
	kafkasettings.SetClusters(bad, []kafkasettings.Cluster{kafkaCluster("k"), kafkaCluster("b")})
	redissettings.SetClusters(bad, []redissettings.Cluster{redisCluster("r"), broken})
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
	f := &fakesystem.Sources{}
	m := NewManager([]system.System{fakesystem.System(f)}, log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	one := fakesystem.Cluster("one", time.Second)
	one.RefreshTimeout = time.Second
	if err := apply(t, m, fakesystem.Config(t, one)); err != nil {
		t.Fatal(err)
	}
	f.Set(900*time.Millisecond, true)
	time.Sleep(1100 * time.Millisecond) // the next refresh is under way, stubborn

	done := make(chan struct{})
	applyStart := time.Now()
	go func() {
		defer close(done)
		changed := fakesystem.Cluster("one", 2*time.Second)
		changed.RefreshTimeout = time.Second
		if err := m.Apply(fakesystem.Config(t, changed)); err != nil {
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
		{"fake:\n  - name: a\n    refesh_interval: 5s\n", "field refesh_interval not found in type fakesystem.Settings"},
		{"fake:\n  - name: a\n    refresh_interval: 50ms\n", `fake cluster 1 ("a"): refresh_interval 50ms is shorter than 100ms`},
		{"fake:\n  - name: a\n  - name: a\n", `fake cluster "a" is defined twice`},
		{"[]\n", "the file must be a mapping of kafka, redis, mirrors, sentinel, kafka_modules, redis_modules, sentinel_modules, fake and fake_modules lists"},
	} {
		_, err := config.Parse([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.file, err, tc.want)
		}
	}
	if err := config.Register(fakesystem.Section); err == nil {
		t.Error("a second fake section was registered")
	}
	cfg, err := config.Parse([]byte("fake:\n  - {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := config.Entries[fakesystem.Settings](cfg, "fake"); len(got) != 1 || got[0].Name != "fake" || got[0].RefreshInterval != config.DefaultRefreshInterval {
		t.Errorf("defaults not applied: %+v", got)
	}

	f := &fakesystem.Sources{}
	sys := fakesystem.System(f)
	if err := NewManager([]system.System{sys}, log.NewNopLogger(), 1).Check(cfg); err != nil {
		t.Fatal(err)
	}
	if built, closed := f.Counts(); built != 1 || closed != 1 {
		t.Errorf("the check built %d sources and closed %d, want 1 and 1", built, closed)
	}

	doc := metricsdoc.Markdown([]metricsdoc.Section{{Title: sys.Doc().Title, Intro: sys.Doc().Intro, Metrics: metricsdoc.FromSets(sys.Sets()...)}})
	if !strings.Contains(doc, "fake_refreshes_total") || !strings.Contains(doc, "Fake") {
		t.Errorf("METRICS.md section of the fake system lacks its table:\n%s", doc)
	}
	if kinds := sys.EventKinds(); len(kinds) != 1 || kinds[0] != fakesystem.Counted {
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
	sys := fakesystem.System(&fakesystem.Sources{})
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
