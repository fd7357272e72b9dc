package collector

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A minimal system, defined as a new system's package would define one:
// it "watches" every Kafka cluster of the config (a real system would have
// its own config section) with a source that counts its refreshes and
// records one event per refresh. It proves that the registry is all the
// manager needs to know.

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
}

func (f *fakeSources) source(c config.KafkaCluster, _ log.Logger) (system.Source[counted], error) {
	f.mu.Lock()
	f.built++
	f.mu.Unlock()
	refresh := func(ctx context.Context, prev *counted) (*counted, error) {
		f.mu.Lock()
		delay, stubborn := f.delay, f.stubborn
		f.mu.Unlock()
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
		next.Events.Add(time.Now(), "counted", events.Subject{NodeID: c.Name}, "", fmt.Sprint(next.N))
		return next, nil
	}
	closeSource := func() {
		f.mu.Lock()
		f.closed++
		f.mu.Unlock()
	}
	return system.Source[counted]{Refresh: refresh, Close: closeSource}, nil
}

// fakeCollector serves nothing but keeps what it was given.
type fakeCollector struct {
	mu       sync.Mutex
	watchers map[string]*watch.Watcher[counted]
}

func (c *fakeCollector) AppendText(*exposition.Stream)    {}
func (c *fakeCollector) Describe(chan<- *prometheus.Desc) {}
func (c *fakeCollector) Collect(chan<- prometheus.Metric) {}

func (c *fakeCollector) Serve(name string, w *watch.Watcher[counted], _ config.KafkaCluster) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers[name] = w
}

func (c *fakeCollector) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.watchers, name)
}

func (c *fakeCollector) States() []watch.Named[counted] {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []watch.Named[counted]
	for name, w := range c.watchers {
		out = append(out, watch.Named[counted]{Name: name, State: w.Current()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func fakeSystem(f *fakeSources) system.System {
	return system.Define(system.Spec[counted, config.KafkaCluster]{
		Name:        "fake",
		Clusters:    func(cfg *config.Config) []config.KafkaCluster { return cfg.Kafka },
		ClusterName: func(c config.KafkaCluster) string { return c.Name },
		Fingerprint: func(c config.KafkaCluster) (string, error) {
			b, err := json.Marshal(c)
			return string(b), err
		},
		Timing:     func(c config.KafkaCluster) (time.Duration, time.Duration) { return c.RefreshInterval, c.RefreshTimeout },
		Source:     f.source,
		Events:     func(s *counted) []events.Event { return s.Events.All() },
		EventKinds: []events.Kind{"counted"},
		NewCollector: func() system.Collector[counted, config.KafkaCluster] {
			return &fakeCollector{watchers: map[string]*watch.Watcher[counted]{}}
		},
		Sets: func() []*exposition.Set { return nil },
	})
}

func fakeCluster(name string, interval time.Duration) config.KafkaCluster {
	return config.KafkaCluster{Name: name, BootstrapServers: []string{nowhere}, RefreshInterval: interval}
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
	m := NewManagerOf([]system.System{fakeSystem(f)}, log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	cfg := completed(t, []config.KafkaCluster{fakeCluster("one", 100*time.Millisecond)}, nil)
	if err := apply(t, m, cfg); err != nil {
		t.Fatal(err)
	}
	before := waitCount(t, m, 3)

	// A changed setting restarts the watcher from its last snapshot.
	changed := completed(t, []config.KafkaCluster{fakeCluster("one", 150*time.Millisecond)}, nil)
	if err := m.Apply(changed); err != nil {
		t.Fatal(err)
	}
	after := fakeStates(t, m)[0].State.Snapshot.N
	if after < before {
		t.Errorf("after the reload the cluster counts %d refreshes, before it %d: the restart lost its state", after, before)
	}
	resumed := waitCount(t, m, after+2)
	// Every count appears once in the event log: nothing lost, nothing twice.
	evs := m.Events().Query("", "", time.Time{}, 0)
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
	if err := m.Apply(completed(t, nil, nil)); err != nil {
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
		if err := Check(cfg); err != nil {
			t.Fatal(err)
		}
	}
	goleak.VerifyNone(t, ignore)

	m := NewManager(log.NewNopLogger(), 0)
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
	m := NewManagerOf([]system.System{fakeSystem(f)}, log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	one := fakeCluster("one", time.Second)
	one.RefreshTimeout = time.Second
	if err := apply(t, m, completed(t, []config.KafkaCluster{one}, nil)); err != nil {
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
		if err := m.Apply(completed(t, []config.KafkaCluster{changed}, nil)); err != nil {
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
