package sentinel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	redisproto "github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// The unit tests below build snapshots from answers a real deployment
// cannot be made to give on demand (replicas of equal priority and
// offset told apart by run id, a sentinel that lies, a read that fails
// for one node only); the lab tests (lab_test.go) run the real thing.

const (
	s1, s2, s3 = "10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"
	n1, n2, n3 = "10.0.1.1:6379", "10.0.1.2:6379", "10.0.1.3:6379"
)

// fixture is a deployment's answers: every sentinel reporting master at
// n1 with replicas n2 and n3, every node answering INFO replication.
type fixture struct {
	views map[string]sentinelView
	nodes map[string]nodeView
}

func newFixture() *fixture {
	f := &fixture{views: map[string]sentinelView{}, nodes: map[string]nodeView{}}
	for i, s := range []string{s1, s2, s3} {
		others := slices.Delete([]string{s1, s2, s3}, i, i+1)
		f.views[s] = sentinelView{addr: s, answeredAt: time.Unix(100, 0), masters: map[string]Report{"m": {
			Sentinel: s, Addr: n1, Instance: n1, Quorum: 2, DownAfter: time.Second, Sentinels: others, CKQuorum: true,
			Replicas: []ReplicaReport{{Addr: n2, RunID: "bbb", Priority: 100}, {Addr: n3, RunID: "aaa", Priority: 100}},
		}}}
	}
	f.node(n1, "role:master\r\nmaster_repl_offset:1000\r\nconnected_slaves:2\r\nslave0:ip=10.0.1.2,port=6379,state=online,offset=1000,lag=0\r\nslave1:ip=10.0.1.3,port=6379,state=online,offset=1000,lag=0\r\n")
	f.replica(n2, 1000, 100)
	f.replica(n3, 1000, 100)
	return f
}

func (f *fixture) node(addr, info string) {
	fields, err := redisproto.ParseInfoFields("# Replication\r\n" + info)
	if err != nil {
		panic(err)
	}
	f.nodes[addr] = nodeView{addr: addr, answeredAt: time.Unix(100, 0), info: fields}
}

func (f *fixture) replica(addr string, offset int64, priority int) {
	f.node(addr, fmt.Sprintf("role:slave\r\nmaster_host:10.0.1.1\r\nmaster_port:6379\r\nmaster_link_status:up\r\nslave_repl_offset:%d\r\nslave_priority:%d\r\nmaster_repl_offset:%d\r\n", offset, priority, offset))
}

// report edits sentinel s's report of master m.
func (f *fixture) report(s string, edit func(*Report)) {
	r := f.views[s].masters["m"]
	edit(&r)
	f.views[s].masters["m"] = r
}

func (f *fixture) snapshot(t *testing.T, prev *Snapshot, budget settings.Budget) *Snapshot {
	t.Helper()
	cfg := settings.Set{Sentinels: []string{s1}, FailureBudget: budget, BackdateLimit: time.Minute}
	snap := build(cfg, f.views, f.nodes)
	snap.ProbedAt = snap.ReadAt.Add(-10 * time.Millisecond)
	carry(prev, snap, cfg)
	return snap
}

func TestCandidateIsSentinelsChoice(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*fixture)
		want string
	}{
		{"equal priority and offset: the lower run id", func(*fixture) {}, n3},
		{"a lower priority first", func(f *fixture) { f.replica(n2, 1000, 10) }, n2},
		{"priority 0 never", func(f *fixture) { f.replica(n3, 1000, 0) }, n2},
		{"the higher offset, beyond caught_up_bytes", func(f *fixture) { f.replica(n3, 1000-2<<20, 100) }, n2},
		{"offsets within caught_up_bytes are equal", func(f *fixture) { f.replica(n3, 990, 100) }, n3},
		{"flagged down by one sentinel", func(f *fixture) {
			f.report(s2, func(r *Report) { r.Replicas[1].Down = true })
		}, n2},
		{"not read by the exporter", func(f *fixture) { f.nodes[n3] = nodeView{addr: n3, err: errors.New("refused")} }, n2},
		{"none", func(f *fixture) { f.replica(n2, 1000, 0); f.replica(n3, 1000, 0) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture()
			c.edit(f)
			m := f.snapshot(t, nil, settings.Budget{}).Masters[0]
			if m.Candidate != c.want {
				t.Errorf("candidate %q, want %q", m.Candidate, c.want)
			}
		})
	}
}

func TestCandidateLoss(t *testing.T) {
	f := newFixture()
	f.replica(n2, 400, 10) // the lowest priority, 600 bytes behind
	m := f.snapshot(t, nil, settings.Budget{}).Masters[0]
	if m.Candidate != n2 || m.CandidateLoss != 600 {
		t.Errorf("candidate %s loses %d, want %s losing 600", m.Candidate, m.CandidateLoss, n2)
	}
	f.nodes[n1] = nodeView{addr: n1, err: errors.New("timeout")}
	if m := f.snapshot(t, nil, settings.Budget{}).Masters[0]; m.CandidateLoss != -1 {
		t.Errorf("with the master unread, the loss is %d, want unknown (-1)", m.CandidateLoss)
	}
}

func TestDisagreement(t *testing.T) {
	f := newFixture()
	prev := f.snapshot(t, nil, settings.Budget{})
	f.report(s3, func(r *Report) { r.Addr = n2 })
	snap := f.snapshot(t, prev, settings.Budget{})
	m := snap.Masters[0]
	if !m.Disagree || m.Addr != n1 || m.Settled != n1 {
		t.Fatalf("one sentinel of three says n2: disagree %v, addr %s, settled %s; want true, n1, n1", m.Disagree, m.Addr, m.Settled)
	}
	if !slices.ContainsFunc(snap.Events.All(), func(e events.Event) bool { return e.Kind == EventDisagreementStarted }) {
		t.Errorf("no disagreement event: %v", snap.Events.All())
	}
	// The majority flips to n2 while one sentinel stays: still a split,
	// not a failover.
	f.report(s2, func(r *Report) { r.Addr = n2 })
	snap = f.snapshot(t, snap, settings.Budget{})
	if m := snap.Masters[0]; !m.Disagree || m.Addr != n2 || m.Settled != n1 || snap.Episodes.Failovers["m"] != 0 {
		t.Errorf("majority flipped: disagree %v addr %s settled %s failovers %d; want true, n2, n1, 0", m.Disagree, m.Addr, m.Settled, snap.Episodes.Failovers["m"])
	}
	// All agree on n2: one failover, one switch.
	f.report(s1, func(r *Report) { r.Addr = n2 })
	f.node(n2, "role:master\r\nmaster_repl_offset:1000\r\nconnected_slaves:0\r\n")
	snap = f.snapshot(t, snap, settings.Budget{})
	if snap.Episodes.Failovers["m"] != 1 || !slices.ContainsFunc(snap.Events.All(), func(e events.Event) bool { return e.Kind == EventSwitchMaster }) {
		t.Errorf("agreed on n2: failovers %d, events %v; want 1 and a switch", snap.Episodes.Failovers["m"], snap.Events.All())
	}
}

func TestOutageIsTimedFromTheFirstFailedRead(t *testing.T) {
	f := newFixture()
	prev := f.snapshot(t, nil, settings.Budget{})
	// The exporter cannot read the master, no sentinel flags it yet: the
	// exporter's own network, not an outage.
	f.nodes[n1] = nodeView{addr: n1, err: errors.New("connection refused")}
	next := func() *Snapshot {
		for _, v := range f.views {
			v.answeredAt = v.answeredAt.Add(time.Second)
			f.views[v.addr] = v
		}
		for a, v := range f.nodes {
			v.answeredAt = v.answeredAt.Add(time.Second)
			f.nodes[a] = v
		}
		prev = f.snapshot(t, prev, settings.Budget{})
		return prev
	}
	snap := next()
	failedAt := snap.ProbedAt
	if len(snap.Episodes.Open) != 0 {
		t.Fatalf("an outage opened on the exporter's failed read alone")
	}
	f.report(s1, func(r *Report) { r.SDown = true })
	snap = next()
	o, open := snap.Episodes.Open["m"]
	if !open || !o.Since.Equal(failedAt) || o.From != n1 {
		t.Fatalf("sdown: outage %+v (open %v), want one from %s, at the first failed read %s", o, open, n1, failedAt)
	}
	// n2 promoted and agreed on, read as a master: the failover ends,
	// though the leader still flags the old master's instance, as Sentinel
	// does until the replicas are reconfigured.
	for _, s := range []string{s2, s3} {
		f.report(s, func(r *Report) { r.Addr, r.Instance, r.SDown = n2, n2, false })
	}
	f.report(s1, func(r *Report) { r.Addr, r.ODown, r.Failover = n2, true, true })
	f.node(n2, "role:master\r\nmaster_repl_offset:1000\r\nconnected_slaves:0\r\n")
	snap = next()
	h := snap.Episodes.FailoverSeconds["m"]
	if len(snap.Episodes.Open) != 0 || h.Count != 1 || h.Sum != snap.ReadAt.Sub(failedAt).Seconds() {
		t.Errorf("after the promotion: open %v, histogram count %d sum %v; want none open, one failover of %v s", snap.Episodes.Open, h.Count, h.Sum, snap.ReadAt.Sub(failedAt).Seconds())
	}
}

func TestBudgetNeverSafeWhenItCannotKnow(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(*fixture)
		scope  string
		id     string
		reason string
	}{
		{"the master", func(*fixture) {}, "node", n1, "master"},
		{"a replica the exporter could not read", func(f *fixture) { f.nodes[n2] = nodeView{addr: n2, err: errors.New("timeout")} }, "node", n2, "not_read"},
		{"a replica of a master the exporter could not read", func(f *fixture) { f.nodes[n1] = nodeView{addr: n1, err: errors.New("timeout")} }, "node", n2, "not_read"},
		{"a replica while a sentinel flags the master down", func(f *fixture) { f.report(s2, func(r *Report) { r.SDown = true }) }, "node", n2, "failover_in_progress"},
		{"a sentinel while the others disagree", func(f *fixture) { f.report(s3, func(r *Report) { r.Addr = n2 }) }, "sentinel", s1, "sentinels_disagree"},
		{"a sentinel when one is unread: it counts as down", func(f *fixture) {
			f.views[s3] = sentinelView{addr: s3, err: errors.New("timeout")}
		}, "sentinel", s1, "quorum"},
		{"the last promotable caught-up replica, with headroom", func(f *fixture) { f.replica(n3, 1000, 0) }, "node", n2, "last_promotable_replica"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture()
			c.edit(f)
			b := f.snapshot(t, nil, settings.Budget{HealthyReplicaHeadroom: true}).Budget
			a, ok := b.Nodes[c.id]
			if c.scope == "sentinel" {
				a, ok = b.Sentinels[c.id]
			}
			if !ok || a.Safe || !strings.Contains(fmt.Sprint(reasons(a)), c.reason) {
				t.Errorf("%s %s: safe %v, findings %+v; want unsafe (%s)", c.scope, c.id, a.Safe, a.Findings, c.reason)
			}
		})
	}
	// And what it can know is safe: a replica, a sentinel of three.
	b := newFixture().snapshot(t, nil, settings.Budget{}).Budget
	if !b.Nodes[n2].Safe || !b.Sentinels[s1].Safe || b.Tolerated["m"] != 1 {
		t.Errorf("quiet deployment: replica %+v, sentinel %+v, tolerated %d", b.Nodes[n2], b.Sentinels[s1], b.Tolerated["m"])
	}
}

func TestRepliesThatCannotBeLabelsAreRefused(t *testing.T) {
	for _, bad := range []string{"", "has space", "new\nline", "ümlaut", strings.Repeat("x", settings.MaxLabel+1)} {
		if settings.LabelSafe(bad) {
			t.Errorf("settings.LabelSafe(%q) = true", bad)
		}
	}
	for _, good := range []string{"mymaster", "10.0.0.1:6379", "[::1]:6379", "cache-eu_1.x"} {
		if !settings.LabelSafe(good) {
			t.Errorf("settings.LabelSafe(%q) = false", good)
		}
	}
	if hostPort("10.0.0.1", "0") != "" || hostPort("10.0.0.1", "x") != "" || hostPort("10.0.0.1", "70000") != "" {
		t.Errorf("hostPort accepts a port that is none")
	}
}
