package collector

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/fakesystem"
	"github.com/failover-exporter/failover_exporter/systems"
)

// moduleConfig is a config file with the fake system's clusters and
// modules, each "name interval".
func moduleConfig(t *testing.T, clusters, modules []string) *config.Config {
	t.Helper()
	var b strings.Builder
	for key, entries := range map[string][]string{"fake": clusters, "fake_modules": modules} {
		if len(entries) == 0 {
			continue
		}
		b.WriteString(key + ":\n")
		for _, e := range entries {
			name, interval, _ := strings.Cut(e, " ")
			line := "  - {name: \"" + name + "\", refresh_interval: " + interval
			if key == "fake_modules" { // a module says where it may go
				line += ", allow_any_target: true"
			}
			b.WriteString(line + "}\n")
		}
	}
	cfg, err := config.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// probeModuleText is what /probe with module= serves.
func probeModuleText(t *testing.T, m *Manager, module, addr string) string {
	t.Helper()
	writers, err := m.ProbeModule("fake", module, addr, 5*time.Second)
	if err != nil {
		t.Fatalf("ProbeModule(fake, %s, %s): %v", module, addr, err)
	}
	text, err := exposition.PlainText(writers...)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// TestDiscoveredTargets: a probe with module= starts a cluster the config
// does not list, named by its address, and its first answer has waited for
// the first refresh; the bounds hold (one module per target, no name of the
// config, at most MaxTargets, each refusal counted); a reload carries a
// target on with its module's new settings, stops one whose module is
// gone, and hands one the config now lists over to the config; a target
// nobody probes stops after the idle timeout; nothing leaks (goleak in
// TestMain).
func TestDiscoveredTargets(t *testing.T) {
	const (
		first, second, third = "127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"
		configured           = "127.0.0.1:9009"
		idle                 = 1500 * time.Millisecond
	)
	f := &fakesystem.Sources{}
	m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
	metrics := NewDiscoveryMetrics(systems.All)
	m.ConfigureDiscovery(DiscoveryOptions{MaxTargets: 2, IdleTimeout: idle, Metrics: metrics})
	t.Cleanup(m.Stop)
	if err := apply(t, m, moduleConfig(t, []string{configured + " 100ms"}, []string{"fast 100ms", "slow 200ms"})); err != nil {
		t.Fatal(err)
	}

	// The first probe waited for the first refresh: the cluster is up in
	// its first answer, with its part's series, under its address.
	text := probeModuleText(t, m, "fast", first)
	for _, want := range []string{`fake_up{fake_cluster="` + first + `"} 1`, `fake_part_up{fake_cluster="` + first + `"} 1`} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("first probe of %s lacks %s:\n%s", first, want, text)
		}
	}
	if strings.Contains(text, configured) || strings.Contains(text, "twin") {
		t.Errorf("the probe of %s serves another cluster's or system's series:\n%s", first, text)
	}
	// Its events and status are the other clusters': Known lists it.
	if known := m.Known()["fake"]; !strings.Contains(strings.Join(known, " "), first) {
		t.Errorf("Known()[fake] = %v, want it to list %s", known, first)
	}

	refusals := []struct {
		system, module, addr string
		want                 error
		says                 string
	}{
		{"fake", "slow", first, ErrTargetInUse, `probed with module "fast" already`},
		{"fake", "fast", configured, ErrTargetInUse, "the config has a fake cluster called"},
		{"fake", "nosuch", second, ErrUnknownModule, `no fake module called "nosuch"`},
		{"fake", "fast", "orders", ErrBadTarget, `target "orders"`},
		{"", "fast", second, ErrBadTarget, `fake and twin have a module called "fast"; say which with system=fake or system=twin`},
		{"", "nosuch", second, ErrUnknownModule, `the config has no module called "nosuch" (in fake_modules or twin_modules)`},
		{"kafka", "fast", second, ErrBadTarget, `system "kafka" has no modules`},
	}
	for _, r := range refusals {
		if _, err := m.ProbeModule(r.system, r.module, r.addr, time.Second); !errors.Is(err, r.want) || !strings.Contains(err.Error(), r.says) {
			t.Errorf("ProbeModule(%q, %q, %q): err = %v, want %v saying %q", r.system, r.module, r.addr, err, r.want, r.says)
		}
	}
	probeModuleText(t, m, "slow", second)
	if _, err := m.ProbeModule("fake", "fast", third, time.Second); !errors.Is(err, ErrTooManyTargets) {
		t.Errorf("a third target past MaxTargets 2: err = %v, want ErrTooManyTargets", err)
	}
	for reason, want := range map[string]float64{"in_use": 2, "unknown_module": 2, "bad_target": 3, "limit": 1} {
		if got := testutil.ToFloat64(metrics.Refused.WithLabelValues(reason)); got != want {
			t.Errorf("refused{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	if got := testutil.ToFloat64(metrics.Targets.WithLabelValues("fake")); got != 2 {
		t.Errorf("discovered targets = %v, want 2", got)
	}

	// A reload: fast's interval changes (first carries on, counts kept),
	// slow is gone (second stops).
	before := countOf(t, m, first)
	if err := m.Apply(moduleConfig(t, []string{configured + " 100ms"}, []string{"fast 150ms"})); err != nil {
		t.Fatal(err)
	}
	if after := countOf(t, m, first); after < before {
		t.Errorf("after the reload %s counts %d refreshes, before it %d: its restart lost its state", first, after, before)
	}
	if _, err := m.Probe("fake", second); !errors.Is(err, ErrUnknownTarget) {
		t.Errorf("a target whose module the reload removed is still served (err %v)", err)
	}
	// The config now lists a cluster called third: the config's wins.
	probeModuleText(t, m, "fast", third)
	if err := m.Apply(moduleConfig(t, []string{configured + " 100ms", third + " 100ms"}, []string{"fast 150ms"})); err != nil {
		t.Fatal(err)
	}
	if r, ok := m.current("fake/" + third); !ok || r.target != nil {
		t.Errorf("after the config listed %s, its watcher is %+v, want the config's", third, r)
	}
	for reason, want := range map[string]float64{"reload": 1, "config": 1} {
		if got := testutil.ToFloat64(metrics.Stopped.WithLabelValues("fake", reason)); got != want {
			t.Errorf("stopped{reason=%q} = %v, want %v", reason, got, want)
		}
	}

	// Nobody probes first any more: it stops after the idle timeout.
	stoppedAt := time.Now()
	deadline := stoppedAt.Add(10 * idle)
	for {
		if _, err := m.Probe("fake", first); errors.Is(err, ErrUnknownTarget) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still served %s after its last probe (idle timeout %s)", first, time.Since(stoppedAt), idle)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("an idle target stopped %s after its last probe (idle timeout %s)", time.Since(stoppedAt).Round(10*time.Millisecond), idle)
	if got := testutil.ToFloat64(metrics.Targets.WithLabelValues("fake")); got != 0 {
		t.Errorf("discovered targets = %v after every one stopped, want 0", got)
	}
	if _, ok := m.current("fake_part/" + first); ok {
		t.Errorf("the idle target's part still runs")
	}
}

// countOf is the refreshes the fake cluster called name has counted.
func countOf(t *testing.T, m *Manager, name string) int {
	t.Helper()
	for _, st := range fakeStates(t, m) {
		if st.Name == name && st.State.Snapshot != nil {
			return st.State.Snapshot.N
		}
	}
	t.Fatalf("no state of %s", name)
	return 0
}

// TestReloadStopsAHungTargetOutsideTheLock: a reload that removes the
// module of a target whose cluster hangs (its refresh ignores its deadline)
// waits for that target's watchers without holding up the first probe of
// another target.
func TestReloadStopsAHungTargetOutsideTheLock(t *testing.T) {
	const hung, next = "127.0.0.1:9101", "127.0.0.1:9102"
	const hang = 3 * time.Second
	f := &fakesystem.Sources{}
	// Last to run: the hung refreshes finish before goleak looks.
	t.Cleanup(func() {
		for deadline := time.Now().Add(3 * hang); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			built, closed := f.Counts()
			done := closed == built
			if done {
				return
			}
		}
		t.Error("sources still open after the hung refreshes ended")
	})
	m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
	m.ConfigureDiscovery(DiscoveryOptions{MaxTargets: 4, IdleTimeout: time.Minute})
	t.Cleanup(m.Stop)
	// slow's refresh timeout is 80% of its 2 s interval: a stop waits for
	// its hung refresh up to that and a second's grace.
	if err := apply(t, m, moduleConfig(t, nil, []string{"fast 100ms", "slow 2s"})); err != nil {
		t.Fatal(err)
	}
	probeModuleText(t, m, "slow", hung)
	f.Set(hang, true)
	time.Sleep(2300 * time.Millisecond) // its next refresh has begun, and hangs

	reloaded := make(chan error, 1)
	go func() { reloaded <- m.Apply(moduleConfig(t, nil, []string{"fast 100ms"})) }()
	for deadline := time.Now().Add(hang); ; time.Sleep(10 * time.Millisecond) {
		if _, err := m.Probe("fake", hung); errors.Is(err, ErrUnknownTarget) {
			break // out of service: the reload is now waiting for it
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reload did not take %s out of service within %s", hung, hang)
		}
	}
	start := time.Now()
	if _, err := m.ProbeModule("fake", "fast", next, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("first probe of %s while the reload stops the hung %s: %s", next, hung, took.Round(time.Millisecond))
	// It waits 100 ms for a first refresh that hangs too; waiting for the
	// hung target's stop would take the rest of the 3 s hang (2.6 s).
	if took > time.Second {
		t.Errorf("the first probe of %s took %s: it waited for the reload's stop of the hung %s", next, took, hung)
	}
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	f.Set(0, false) // the clusters recover: cleanup waits for one hang at most
}

// TestDiscoveredTargetNotAllowed: a target with an address outside its
// module's allowed_targets is refused before anything is built (the fake
// source counts what is built), counted as not_allowed, and served by no
// one; one inside is built and served; a reload that narrows the list
// stops the target it no longer allows.
func TestDiscoveredTargetNotAllowed(t *testing.T) {
	const inside, outside, elsewhere = "127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"
	fenced := func(allowed string) *config.Config {
		cfg, err := config.Parse([]byte("fake_modules:\n  - {name: fenced, refresh_interval: 100ms, allowed_targets: [\"" + allowed + "\"]}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	f := &fakesystem.Sources{}
	m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
	metrics := NewDiscoveryMetrics(systems.All)
	m.ConfigureDiscovery(DiscoveryOptions{MaxTargets: 2, IdleTimeout: time.Minute, Metrics: metrics})
	t.Cleanup(m.Stop)
	if err := apply(t, m, fenced(inside)); err != nil {
		t.Fatal(err)
	}
	built := func() int {
		built, _ := f.Counts()
		return built
	}

	for _, target := range []string{outside, inside + "," + outside} {
		_, err := m.ProbeModule("fake", "fenced", target, time.Second)
		if !errors.Is(err, ErrTargetNotAllowed) || !strings.Contains(err.Error(), `fake module "fenced"`) || !strings.Contains(err.Error(), `address "`+outside+`" is not in`) {
			t.Errorf("ProbeModule(fake, fenced, %s): %v, want ErrTargetNotAllowed naming the module and %q", target, err, outside)
		}
	}
	if n := built(); n != 0 {
		t.Errorf("%d sources built for targets the module does not allow", n)
	}
	if known := strings.Join(m.Known()["fake"], " "); strings.Contains(known, outside) {
		t.Errorf("Known()[fake] = %v lists a refused target", known)
	}
	if got := testutil.ToFloat64(metrics.Refused.WithLabelValues("not_allowed")); got != 2 {
		t.Errorf("refused{reason=not_allowed} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(metrics.Targets.WithLabelValues("fake")); got != 0 {
		t.Errorf("discovered targets = %v, want 0", got)
	}

	// Inside the list: built and served, so the refusal above was the
	// list's doing.
	if text := probeModuleText(t, m, "fenced", inside); !strings.Contains(text, `fake_up{fake_cluster="`+inside+`"} 1`) {
		t.Errorf("the allowed target's probe:\n%s", text)
	}
	if n := built(); n == 0 {
		t.Error("no source built for the allowed target")
	}

	// A reload that no longer allows it stops it.
	if err := m.Apply(fenced(elsewhere)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ProbeModule("fake", "fenced", inside, time.Second); !errors.Is(err, ErrTargetNotAllowed) {
		t.Errorf("after a reload that dropped it from allowed_targets, a probe of %s: %v, want ErrTargetNotAllowed", inside, err)
	}
	if got := testutil.ToFloat64(metrics.Stopped.WithLabelValues("fake", "reload")); got != 1 {
		t.Errorf("stopped{reason=reload} = %v, want 1", got)
	}
}

// Every system with modules refuses a target its module does not allow,
// canaries included: the check is the manager's, not each system's.
func TestEverySystemRefusesTargetsNotAllowed(t *testing.T) {
	cfg, err := config.Parse([]byte(`kafka_modules:
  - {name: m, allowed_targets: ["10.0.0.0/8:9092"], canary: {enabled: true}}
redis_modules:
  - {name: m, allowed_targets: ["10.0.0.0/8:6379"], canary: {enabled: true}}
sentinel_modules:
  - {name: m, allowed_targets: ["10.0.0.0/8:26379"], canary: {enabled: true}}
`))
	if err != nil {
		t.Fatal(err)
	}
	logger := log.NewNopLogger()
	eventLog := events.NewLog(10, logger)
	var checked []string
	for _, s := range systems.All {
		if !s.Discovers() {
			continue
		}
		checked = append(checked, s.Name())
		serving := s.Serving(eventLog, logger)
		for addr, allowed := range map[string]bool{"127.0.0.1:9092": false, "127.0.0.1:6379": false, "10.0.0.1:9092": s.EventSystem() == "kafka", "10.0.0.1:6379": s.EventSystem() == "redis",
			"127.0.0.1:26379": false, "10.0.0.1:26379": s.EventSystem() == "sentinel"} {
			_, ok, err := serving.Discover(cfg, "m", addr, []string{addr})
			if !ok {
				t.Fatalf("%s: no module m", s.Name())
			}
			if allowed != (err == nil) || (err != nil && !errors.Is(err, ErrTargetNotAllowed)) {
				t.Errorf("%s: Discover(m, %s): %v, want allowed %v", s.Name(), addr, err, allowed)
			}
		}
	}
	if slices.Sort(checked); !slices.Equal(checked, []string{"kafka", "kafka_canary", "redis", "redis_canary", "sentinel", "sentinel_canary"}) {
		t.Errorf("systems with modules %v, want kafka, kafka_canary, redis, redis_canary, sentinel and sentinel_canary", checked)
	}
}
