package collector

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/fakesystem"
)

// probeSystems are three fake systems over the fake config section: fake,
// its part (as a canary is its cluster's, recorded under fake), and twin,
// another system that watches only the cluster called "shared", so that
// "shared" names a cluster of two systems.
func probeSystems(f *fakesystem.Sources) []system.System {
	part := fakesystem.Spec(f)
	part.Name, part.EventSystem, part.Part, part.Maintenance = "fake_part", "fake", "part", nil
	partHealth, partSeries := fakesystem.CountingTables("fake_part")
	part.Sets = func() []*exposition.Set { return []*exposition.Set{partHealth, partSeries} }
	part.NewCollector = func() system.Collector[fakesystem.Snapshot, fakesystem.Settings] {
		return fakesystem.CountingCollector(partHealth, partSeries)
	}

	twin := fakesystem.Spec(f)
	twin.Name, twin.Maintenance = "twin", nil
	twinHealth, twinSeries := fakesystem.CountingTables("twin")
	twin.Sets = func() []*exposition.Set { return []*exposition.Set{twinHealth, twinSeries} }
	twin.NewCollector = func() system.Collector[fakesystem.Snapshot, fakesystem.Settings] {
		return fakesystem.CountingCollector(twinHealth, twinSeries)
	}
	twin.Clusters = func(cfg *config.Config) []fakesystem.Settings {
		var shared []fakesystem.Settings
		for _, c := range config.Entries[fakesystem.Settings](cfg, "fake") {
			if c.Name == "shared" {
				shared = append(shared, c)
			}
		}
		return shared
	}
	return []system.System{fakesystem.System(f), system.Define(part), system.Define(twin)}
}

// probeText is what /probe would serve for system and target.
func probeText(t *testing.T, m *Manager, eventSystem, target string) string {
	t.Helper()
	writers, err := m.Probe(eventSystem, target)
	if err != nil {
		t.Fatalf("Probe(%q, %q): %v", eventSystem, target, err)
	}
	text, err := exposition.PlainText(writers...)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// seriesLines are the text's sample lines (no comments), for messages and
// comparisons.
func seriesLines(text string) []string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l[:strings.LastIndexByte(l, ' ')])
		}
	}
	return lines
}

func TestProbeServesOneClusterOfItsSystem(t *testing.T) {
	f := &fakesystem.Sources{}
	m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	cfg := fakesystem.Config(t, fakesystem.Cluster("one", 100*time.Millisecond), fakesystem.Cluster("shared", 100*time.Millisecond))
	if err := apply(t, m, cfg); err != nil {
		t.Fatal(err)
	}

	// One cluster: its system's series and its part's, nothing of another
	// cluster or another system.
	got := seriesLines(probeText(t, m, "", "one"))
	want := []string{`fake_up{fake_cluster="one"}`, `fake_part_up{fake_cluster="one"}`, `fake_refreshes_total{fake_cluster="one"}`, `fake_part_refreshes_total{fake_cluster="one"}`}
	if !sameSet(got, want) {
		t.Errorf("probe of one serves\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Everything a probe serves, /metrics serves too.
	all, err := exposition.PlainText(m.TextWriters()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range got {
		if !strings.Contains(string(all), line+" ") {
			t.Errorf("/probe serves %s, /metrics does not", line)
		}
	}

	// A name two systems serve needs system=.
	_, err = m.Probe("", "shared")
	if !errors.Is(err, ErrAmbiguousTarget) || !strings.Contains(err.Error(), "system=fake or system=twin") {
		t.Errorf("Probe of a name two systems serve: err = %v, want ErrAmbiguousTarget naming system=fake or system=twin", err)
	}
	if got, want := seriesLines(probeText(t, m, "twin", "shared")), []string{`twin_up{fake_cluster="shared"}`, `twin_refreshes_total{fake_cluster="shared"}`}; !sameSet(got, want) {
		t.Errorf("probe of twin/shared serves %v, want %v", got, want)
	}
	if got := seriesLines(probeText(t, m, "fake", "shared")); len(got) != 4 || strings.Contains(strings.Join(got, " "), "twin") {
		t.Errorf("probe of fake/shared serves %v, want fake's and its part's four series", got)
	}

	for _, c := range []struct{ system, target, says string }{
		{"", "", "target= is required"},
		{"", "nowhere", `no cluster called "nowhere"`},
		{"twin", "one", `no twin cluster called "one"`},
		{"kafka", "one", `no system "kafka" (systems: fake, twin)`},
	} {
		if _, err := m.Probe(c.system, c.target); !errors.Is(err, ErrUnknownTarget) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Probe(%q, %q): err = %v, want ErrUnknownTarget saying %q", c.system, c.target, err, c.says)
		}
	}

	// A cluster a reload removed is no longer a target.
	if err := m.Apply(fakesystem.Config(t, fakesystem.Cluster("shared", 100*time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Probe("", "one"); !errors.Is(err, ErrUnknownTarget) {
		t.Errorf("Probe of a removed cluster: err = %v, want ErrUnknownTarget", err)
	}
}

// A cluster's open maintenance window is served with its series, on
// /probe and /metrics, labelled as the system's series are, so that a rule
// can join them; another cluster's window is not in its probe.
func TestProbeServesTheClustersWindows(t *testing.T) {
	f := &fakesystem.Sources{}
	m := NewManager(probeSystems(f), log.NewNopLogger(), 0)
	t.Cleanup(m.Stop)
	cfg := fakesystem.Config(t, fakesystem.Cluster("one", 100*time.Millisecond), fakesystem.Cluster("shared", 100*time.Millisecond))
	if err := apply(t, m, cfg); err != nil {
		t.Fatal(err)
	}
	until := time.Unix(1_800_000_000, 0)
	windows := []maintenance.Window{
		{System: "fake", Cluster: "one", Scope: "member", Member: "a", Members: []string{"a"}, Until: until},
		{System: "fake", Cluster: "shared", Scope: "zone", Member: "z", Members: []string{"b", "c"}, Until: until},
		{System: "fake", Cluster: "gone", Scope: "member", Member: "a", Members: []string{"a"}, Until: until},
	}
	if got := probeText(t, m, "fake", "one"); strings.Contains(got, "maintenance") {
		t.Fatalf("windows served before ServeWindows:\n%s", got)
	}
	m.ServeWindows(func() []maintenance.Window { return windows })

	text := probeText(t, m, "fake", "one")
	got := slices.DeleteFunc(seriesLines(text), func(l string) bool { return !strings.Contains(l, "maintenance") })
	want := []string{`fake_maintenance_active{fake_cluster="one",member="a",scope="member"}`, `fake_maintenance_end_timestamp_seconds{fake_cluster="one",member="a",scope="member"}`}
	if !sameSet(got, want) {
		t.Errorf("probe of one serves the windows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(text, `fake_maintenance_end_timestamp_seconds{fake_cluster="one",member="a",scope="member"} 1800000000`+"\n") {
		t.Errorf("the window's end is not its TTL:\n%s", text)
	}
	if got := probeText(t, m, "twin", "shared"); strings.Contains(got, "maintenance") {
		t.Errorf("another system's probe serves fake's window:\n%s", got)
	}
	all, err := exposition.PlainText(m.TextWriters()...)
	if err != nil {
		t.Fatal(err)
	}
	got = slices.DeleteFunc(seriesLines(string(all)), func(l string) bool { return !strings.Contains(l, "maintenance_active") })
	want = []string{`fake_maintenance_active{fake_cluster="one",member="a",scope="member"}`,
		`fake_maintenance_active{fake_cluster="shared",member="b",scope="zone"}`, `fake_maintenance_active{fake_cluster="shared",member="c",scope="zone"}`}
	if !sameSet(got, want) {
		t.Errorf("/metrics serves the windows\n%s\nwant\n%s (not the window of a cluster not served)", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := strings.Count(string(all), "# TYPE fake_maintenance_active "); n != 1 {
		t.Errorf("/metrics has %d TYPE lines of fake_maintenance_active, want 1", n)
	}
	windows = nil
	if got := probeText(t, m, "fake", "one"); strings.Contains(got, "maintenance") {
		t.Errorf("a closed window is still served:\n%s", got)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
