package sentinel

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// labSet is the config entry that watches the lab, as a file gives it.
func labSet(t *testing.T, l *lab.Sentinel, extra string) settings.Set {
	t.Helper()
	file := fmt.Sprintf("sentinel:\n  - name: lab\n    sentinels: [%s]\n    refresh_interval: 1s\n    refresh_timeout: 800ms\n    command_timeout: 500ms\n%s",
		l.SentinelAddrs()[0], extra)
	cfg, err := config.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return settings.Entries(cfg)[0]
}

// labSource reads the lab as the watcher would.
type labSource struct {
	t    *testing.T
	src  *source
	snap *Snapshot
}

func newLabSource(t *testing.T, set settings.Set) *labSource {
	t.Helper()
	src, err := newSource(set, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	return &labSource{t: t, src: src}
}

// refresh reads the lab once, within the refresh timeout, and keeps the
// snapshot for the next refresh.
func (s *labSource) refresh() *Snapshot {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.src.cfg.RefreshTimeout)
	defer cancel()
	snap, err := s.src.Refresh(ctx, s.snap)
	if err != nil {
		s.t.Fatalf("refresh: %v", err)
	}
	s.snap = snap
	return snap
}

func TestLabRead(t *testing.T) {
	l := lab.StartSentinel(t, lab.SentinelOptions{})
	src := newLabSource(t, labSet(t, l, ""))
	// The sentinels find each other within a couple of hello periods.
	deadline := time.Now().Add(20 * time.Second)
	var snap *Snapshot
	for {
		snap = src.refresh()
		if len(snap.Sentinels) == 3 && len(snap.Masters) == 1 && len(snap.Masters[0].Nodes) == 3 && snap.Masters[0].Candidate != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%+v", snap.Sentinels)
	for _, m := range snap.Masters {
		t.Logf("master %s at %s disagree %v quorum %d known %v read %v up %v candidate %s loss %d", m.Name, m.Addr, m.Disagree, m.Quorum, m.KnownSentinels, m.ReadSentinels, m.Up, m.Candidate, m.CandidateLoss)
		for _, n := range m.Nodes {
			t.Logf("  node %+v", n)
		}
		for _, r := range m.Reports {
			t.Logf("  report %+v", r)
		}
	}
	for k, a := range snap.Budget.Nodes {
		t.Logf("node %s: %v %+v", k, a.Safe, a.Findings)
	}
	for k, a := range snap.Budget.Sentinels {
		t.Logf("sentinel %s: %v %+v", k, a.Safe, a.Findings)
	}
	_ = strings.Join
}
