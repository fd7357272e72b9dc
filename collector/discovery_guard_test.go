package collector

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/fakesystem"
	"github.com/failover-exporter/failover_exporter/systems"
)

// What a caller of /probe must not be able to make the manager do (issue
// 41): serve a cluster twice under two names, change what /metrics
// carries, fill the target table with junk, answer one of two first probes
// before the first refresh, or leave a watcher running past a reload.

// guardConfig is a config with a fake cluster "main" seeded at mainSeed and
// the modules fast and slow.
func guardConfig(t *testing.T, mainSeed string, extra ...string) *config.Config {
	t.Helper()
	text := "fake:\n  - {name: main, addrs: [\"" + mainSeed + "\"], refresh_interval: 100ms}\n"
	for _, name := range extra {
		text += "  - {name: \"" + name + "\", refresh_interval: 100ms}\n"
	}
	text += "fake_modules:\n  - {name: fast, refresh_interval: 100ms, allow_any_target: true}\n  - {name: slow, refresh_interval: 200ms, allow_any_target: true}\n"
	cfg, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// partRunning reports whether the part (the canary stand-in) of the
// cluster called name runs.
func partRunning(m *Manager, name string) bool {
	_, ok := m.current("fake_part/" + name)
	return ok
}

// TestDiscoveredAliasesAreRefused: a target that is an address of a
// cluster watched already (its seed, or an address one of its refreshes
// reported) is refused before anything connects; one that a first read
// shows to be that cluster (a member's id, under an address nobody listed)
// is stopped and refused, and its part never started; a target of its own
// starts its part once read.
func TestDiscoveredAliasesAreRefused(t *testing.T) {
	const seed, hostAlias, own = "127.0.0.1:9100", "localhost:9100", "127.0.0.1:9200"
	f := &fakesystem.Sources{IDs: map[string][]string{
		"main":    {"node-a", "node-b"},
		hostAlias: {"node-b"}, // the same cluster, by another name
		own:       {"node-z"},
	}}
	m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
	metrics := NewDiscoveryMetrics(systems.All)
	m.ConfigureDiscovery(DiscoveryOptions{MaxTargets: 10, IdleTimeout: time.Minute, Metrics: metrics})
	t.Cleanup(m.Stop)
	if err := apply(t, m, guardConfig(t, seed)); err != nil {
		t.Fatal(err)
	}

	builtBefore, _ := f.Counts()
	_, err := m.ProbeModule("fake", "fast", seed, time.Second)
	if !errors.Is(err, ErrAlias) || !strings.Contains(err.Error(), `fake cluster "main" of the config`) {
		t.Errorf("probe of main's seed %s: err = %v, want ErrAlias naming main", seed, err)
	}
	if built, _ := f.Counts(); built != builtBefore {
		t.Errorf("the refused alias %s built %d sources: it was refused after something could connect", seed, built-builtBefore)
	}

	_, err = m.ProbeModule("fake", "fast", hostAlias, 2*time.Second)
	if !errors.Is(err, ErrAlias) {
		t.Errorf("probe of %s, which reports main's node-b: err = %v, want ErrAlias", hostAlias, err)
	}
	if _, ok := m.current("fake/" + hostAlias); ok {
		t.Errorf("the alias %s still runs after it was refused", hostAlias)
	}
	if partRunning(m, hostAlias) {
		t.Errorf("the alias %s started its part (a canary writing to main under a second name)", hostAlias)
	}
	// Refused again on its next probe, and no copy of main is ever served.
	if _, err := m.ProbeModule("fake", "fast", hostAlias, 2*time.Second); !errors.Is(err, ErrAlias) {
		t.Errorf("second probe of the alias %s: err = %v, want ErrAlias", hostAlias, err)
	}

	text := probeModuleText(t, m, "fast", own)
	if !strings.Contains(text, `fake_part_up{fake_cluster="`+own+`"} 1`) {
		t.Errorf("a target of its own serves no part after its first read:\n%s", text)
	}
	// A second target naming the first's address with another is the same.
	if _, err := m.ProbeModule("fake", "fast", own+",127.0.0.1:9201", time.Second); !errors.Is(err, ErrAlias) || !strings.Contains(err.Error(), `the discovered fake target "`+own+`"`) {
		t.Errorf("a target sharing an address with the discovered %s: err = %v, want ErrAlias naming it", own, err)
	}
	if got := testutil.ToFloat64(metrics.Refused.WithLabelValues("alias")); got != 4 {
		t.Errorf("refused{reason=alias} = %v, want 4", got)
	}
	if got := testutil.ToFloat64(metrics.Stopped.WithLabelValues("fake", "alias")); got != 2 {
		t.Errorf("stopped{reason=alias} = %v, want 2 (the alias started twice, stopped twice)", got)
	}
}

// TestDiscoveredTargetsStayOffMetrics: a probe changes nothing /metrics
// serves, unless OnMetrics asks for it (the status page: e2e's
// TestProbeCannotBlindMetrics).
func TestDiscoveredTargetsStayOffMetrics(t *testing.T) {
	const probed = "127.0.0.1:9300"
	for _, onMetrics := range []bool{false, true} {
		f := &fakesystem.Sources{}
		m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
		m.ConfigureDiscovery(DiscoveryOptions{MaxTargets: 10, IdleTimeout: time.Minute, OnMetrics: onMetrics})
		if err := apply(t, m, guardConfig(t, "127.0.0.1:9100")); err != nil {
			t.Fatal(err)
		}
		before, err := exposition.PlainText(m.TextWriters()...)
		if err != nil {
			t.Fatal(err)
		}
		probeModuleText(t, m, "fast", probed)
		after, err := exposition.PlainText(m.TextWriters()...)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(after), probed); got != onMetrics {
			t.Errorf("OnMetrics %v: /metrics serves the probed %s: %v\n%s", onMetrics, probed, got, after)
		}
		if !strings.Contains(string(before), `fake_cluster="main"`) || !strings.Contains(string(after), `fake_cluster="main"`) {
			t.Errorf("OnMetrics %v: /metrics lost the config's cluster", onMetrics)
		}
		m.Stop()
	}
}

// TestJunkTargetsMakeWay: a full table of targets that never answered
// (closed ports) makes way for a new target, the one probed least recently
// first; a table of answering targets refuses it with when a place frees.
func TestJunkTargetsMakeWay(t *testing.T) {
	const junk1, junk2, real1, real2 = "127.0.0.1:9401", "127.0.0.1:9402", "127.0.0.1:9403", "127.0.0.1:9404"
	f := &fakesystem.Sources{Down: map[string]bool{junk1: true, junk2: true}}
	m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
	metrics := NewDiscoveryMetrics(systems.All)
	m.ConfigureDiscovery(DiscoveryOptions{MaxTargets: 2, IdleTimeout: time.Minute, Metrics: metrics})
	t.Cleanup(m.Stop)
	if err := apply(t, m, guardConfig(t, "127.0.0.1:9100")); err != nil {
		t.Fatal(err)
	}
	for _, junk := range []string{junk1, junk2} {
		text := probeModuleText(t, m, "fast", junk)
		if !strings.Contains(text, `fake_up{fake_cluster="`+junk+`"} 0`) {
			t.Fatalf("junk target %s is not down:\n%s", junk, text)
		}
		time.Sleep(20 * time.Millisecond) // junk1 probed before junk2
	}
	// A target refused on its own account takes nobody's place.
	if _, err := m.ProbeModule("fake", "nosuch", real1, time.Second); !errors.Is(err, ErrUnknownModule) {
		t.Fatalf("a target of a module the config lacks: err = %v, want ErrUnknownModule", err)
	}
	if _, ok := m.current("fake/" + junk1); !ok {
		t.Errorf("%s was evicted for a target that was then refused", junk1)
	}
	probeModuleText(t, m, "fast", real1)
	if _, ok := m.current("fake/" + junk1); ok {
		t.Errorf("%s, the junk probed least recently, still runs after %s took a place", junk1, real1)
	}
	probeModuleText(t, m, "fast", real2)
	if _, ok := m.current("fake/" + junk2); ok {
		t.Errorf("%s still runs after %s took a place", junk2, real2)
	}
	_, err := m.ProbeModule("fake", "fast", junk1, time.Second)
	var later interface{ RetryAfter() time.Duration }
	switch {
	case !errors.Is(err, ErrTooManyTargets):
		t.Fatalf("a new target with every place held by answering ones: err = %v, want ErrTooManyTargets", err)
	case !errors.As(err, &later) || later.RetryAfter() <= 0 || later.RetryAfter() > time.Minute:
		t.Errorf("the refusal %v does not say when a place frees (within the 1m idle timeout)", err)
	case !strings.Contains(err.Error(), "at the latest in"):
		t.Errorf("the refusal %q does not name when a place frees", err)
	}
	if got := testutil.ToFloat64(metrics.Stopped.WithLabelValues("fake", "evicted")); got != 2 {
		t.Errorf("stopped{reason=evicted} = %v, want 2", got)
	}
}

// TestConcurrentFirstProbesShareTheFirstRefresh: two first probes of a new
// target at once (an HA pair of Prometheus servers) both answer from its
// first refresh; neither answers before it.
func TestConcurrentFirstProbesShareTheFirstRefresh(t *testing.T) {
	const target = "127.0.0.1:9500"
	// The slow module's refresh timeout is 160 ms.
	f := &fakesystem.Sources{Delay: 120 * time.Millisecond}
	m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
	m.ConfigureDiscovery(DiscoveryOptions{MaxTargets: 10, IdleTimeout: time.Minute})
	t.Cleanup(m.Stop)
	if err := apply(t, m, guardConfig(t, "127.0.0.1:9100")); err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 2)
	var wg sync.WaitGroup
	for i := range texts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writers, err := m.ProbeModule("fake", "slow", target, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			text, err := exposition.PlainText(writers...)
			if err != nil {
				t.Error(err)
			}
			texts[i] = string(text)
		}()
	}
	wg.Wait()
	for i, text := range texts {
		if !strings.Contains(text, `fake_up{fake_cluster="`+target+`"} 1`) {
			t.Errorf("first probe %d of two at once answered before the first refresh:\n%s", i+1, text)
		}
	}
}

// TestReloadRefusesAFirstProbeOfItsNames: a first probe of a name the
// config being applied adds, coming between Apply's decision of what runs
// and its start of the new watchers, is refused; no watcher of a
// discovered target of that name is left running.
func TestReloadRefusesAFirstProbeOfItsNames(t *testing.T) {
	const name = "127.0.0.1:9600"
	f := &fakesystem.Sources{}
	m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
	m.ConfigureDiscovery(DiscoveryOptions{MaxTargets: 10, IdleTimeout: time.Minute})
	t.Cleanup(m.Stop)
	if err := apply(t, m, guardConfig(t, "127.0.0.1:9100")); err != nil {
		t.Fatal(err)
	}
	var probeErr error
	probed := false
	m.testHookApplyDecided = func() {
		if !probed {
			probed = true
			_, probeErr = m.ProbeModule("fake", "fast", name, time.Second)
		}
	}
	if err := m.Apply(guardConfig(t, "127.0.0.1:9100", name)); err != nil {
		t.Fatal(err)
	}
	if !probed {
		t.Fatal("the hook did not run")
	}
	if !errors.Is(probeErr, ErrTargetInUse) {
		t.Errorf("a first probe of %s inside the reload that adds it: err = %v, want ErrTargetInUse", name, probeErr)
	}
	r, ok := m.current("fake/" + name)
	if !ok || r.target != nil {
		t.Errorf("fake/%s after the reload: running %v, discovered %v; want the config's watcher", name, ok, ok && r.target != nil)
	}
	m.mu.Lock()
	left := len(m.discovery.targets)
	m.mu.Unlock()
	if left != 0 {
		t.Errorf("%d discovered targets left after the reload took %s over", left, name)
	}
}
