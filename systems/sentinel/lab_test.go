package sentinel

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// labSet is the config entry that watches the lab, as a file gives it: the
// first sentinel as the only seed.
func labSet(t *testing.T, l *lab.Sentinel) settings.Set { return labSetB(t, l) }

func labSetB(t testing.TB, l *lab.Sentinel) settings.Set {
	t.Helper()
	file := fmt.Sprintf("sentinel:\n  - name: lab\n    sentinels: [%s]\n    refresh_interval: 1s\n    refresh_timeout: 800ms\n    command_timeout: 500ms\n    dial_timeout: 500ms\n",
		l.SentinelAddrs()[0])
	cfg, err := config.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return settings.Entries(cfg)[0]
}

// labSource reads the lab as the watcher does: each refresh from the last
// snapshot, within the refresh timeout.
type labSource struct {
	t    *testing.T
	src  *source
	snap *Snapshot
	// events are every event the refreshes recorded.
	events []events.Event
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

func (s *labSource) refresh() *Snapshot {
	s.t.Helper()
	started := time.Now()
	snap := refreshB(s.t, s.src, s.snap)
	if took := time.Since(started); took > 10*s.src.cfg.RefreshTimeout {
		s.t.Fatalf("a refresh took %s, its timeout is %s", took, s.src.cfg.RefreshTimeout)
	}
	s.snap = snap
	s.events = append(s.events, snap.Events.All()...)
	return snap
}

// refreshB is one refresh from prev, within the refresh timeout.
func refreshB(t testing.TB, src *source, prev *Snapshot) *Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), src.cfg.RefreshTimeout)
	defer cancel()
	snap, err := src.Refresh(ctx, prev)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	return snap
}

func nopLogger() log.Logger { return log.NewNopLogger() }

// waitFor refreshes every 250 ms until cond holds, and fails the test
// after timeout with what the last snapshot said.
func (s *labSource) waitFor(timeout time.Duration, what string, cond func(*Snapshot) bool) *Snapshot {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		snap := s.refresh()
		if cond(snap) {
			return snap
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("after %s, still not %s:\n%s", timeout, what, describe(snap))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// kinds are the kinds of the events recorded so far, from index from on.
func (s *labSource) kinds(from int) []events.Kind {
	var out []events.Kind
	for _, e := range s.events[from:] {
		out = append(out, e.Kind)
	}
	return out
}

// describe prints a snapshot for a failure message.
func describe(snap *Snapshot) string {
	var b strings.Builder
	for _, st := range snap.Sentinels {
		fmt.Fprintf(&b, "sentinel %s read %v %s\n", st.Addr, st.Read, st.Error)
	}
	for _, m := range snap.Masters {
		fmt.Fprintf(&b, "master %s at %s disagree %v up %v writable %v quorum %d known %d read %d candidate %q loss %d\n",
			m.Name, m.Addr, m.Disagree, m.Up, m.writable(), m.Quorum, len(m.KnownSentinels), len(m.ReadSentinels), m.Candidate, m.CandidateLoss)
		for _, r := range m.Reports {
			fmt.Fprintf(&b, "  sentinel %s says %s sdown %v odown %v failover %v\n", r.Sentinel, r.Addr, r.SDown, r.ODown, r.Failover)
		}
		for _, n := range m.Nodes {
			fmt.Fprintf(&b, "  node %s read %v role %s of %s link %v lag %d priority %d promotable %v %s\n",
				n.Addr, n.Read, n.Role, n.MasterAddr, n.LinkUp, n.Lag, n.Priority, n.Promotable, n.Error)
		}
	}
	return b.String()
}

// settled is a snapshot of a quiet deployment: every sentinel read and
// agreeing, the master writable with every replica promotable.
func settled(sentinels, replicas int) func(*Snapshot) bool {
	return func(s *Snapshot) bool {
		if len(s.Masters) != 1 || len(s.Sentinels) != sentinels {
			return false
		}
		m := &s.Masters[0]
		promotable := 0
		for _, n := range m.Nodes {
			if n.Promotable {
				promotable++
			}
		}
		return len(m.ReadSentinels) == sentinels && !m.Disagree && m.Up && m.writable() && promotable == replicas && m.Candidate != ""
	}
}

// stopAnswer is the budget's answer to stopping one member now.
func stopAnswer(t *testing.T, snap *Snapshot, scope budget.Scope, id string) budget.Answer {
	t.Helper()
	a, err := answerBudget(snap, budget.Question{Scope: scope, ID: id})
	if err != nil {
		t.Fatalf("stop %s %s: %v", scope, id, err)
	}
	return a
}

func reasons(a budget.Answer) []budget.Reason {
	var out []budget.Reason
	for _, f := range a.Findings {
		out = append(out, f.Reason)
	}
	return out
}

// TestLab runs the system against a real Sentinel deployment (one master,
// two replicas, three sentinels of quorum 2; the server REDIS_LAB_SERVER
// names), each step checked against what the processes say themselves.
// TestLabSentinelStops runs beside it, on a deployment of its own: both
// spend most of their time waiting on Sentinel's timers.
func TestLab(t *testing.T) {
	t.Parallel()
	l, src := startLab(t)
	snap := src.waitFor(60*time.Second, "settled", settled(3, 2))
	t.Run("reads what each process says", func(t *testing.T) { checkAgainstProcesses(t, l, snap) })
	t.Run("a hung sentinel stalls no refresh and counts as down", func(t *testing.T) { hungSentinel(t, l, src) })
	t.Run("split brain", func(t *testing.T) { splitBrain(t, l, src) })
	t.Run("a master called unsafe fails over to the replica named, then stops losing nothing", func(t *testing.T) { plannedFailover(t, l, src) })
}

// TestLabSentinelStops: sentinels called safe and unsafe to stop, stopped,
// do as predicted when the master is killed.
func TestLabSentinelStops(t *testing.T) {
	t.Parallel()
	l, src := startLab(t)
	sentinelPredictions(t, l, src)
}

// startLab starts a lab deployment and a source reading it, once the
// sentinels found each other and the replicas (a few hello and INFO
// periods: 2 s and 10 s).
func startLab(t *testing.T) (*lab.Sentinel, *labSource) {
	l := lab.StartSentinel(t, lab.SentinelOptions{})
	src := newLabSource(t, labSet(t, l))
	return l, src
}

// checkAgainstProcesses compares a snapshot with each sentinel's
// GET-MASTER-ADDR-BY-NAME and each node's ROLE, read by redis-cli.
func checkAgainstProcesses(t *testing.T, l *lab.Sentinel, snap *Snapshot) {
	m := snap.Masters[0]
	if m.Name != l.MasterName() || m.Quorum != l.Quorum() {
		t.Errorf("master %s quorum %d, want %s quorum %d", m.Name, m.Quorum, l.MasterName(), l.Quorum())
	}
	for port, addr := range l.MasterAddr(t) {
		if addr != m.Addr {
			t.Errorf("sentinel %d says the master is %s, the snapshot %s", port, addr, m.Addr)
		}
	}
	if len(m.Nodes) != len(l.DataPorts()) {
		t.Errorf("%d nodes, want %d:\n%s", len(m.Nodes), len(l.DataPorts()), describe(snap))
	}
	for _, port := range l.DataPorts() {
		role := l.Role(t, port)
		n := m.node(l.Addr(port))
		want := map[string]string{"master": roleMaster, "slave": roleReplica}[role.Role]
		if n == nil || n.Role != want || (want == roleReplica && n.MasterAddr != l.Addr(role.MasterPort)) {
			t.Errorf("node %d: ROLE says %+v, the snapshot %+v", port, role, n)
		}
	}
	for _, a := range l.SentinelAddrs() {
		if !slices.Contains(m.ReadSentinels, a) {
			t.Errorf("sentinel %s not read: %v", a, m.ReadSentinels)
		}
	}
	// Three sentinels of quorum 2: one may stop, not two.
	if got := snap.Budget.Tolerated[m.Name]; got != 1 {
		t.Errorf("sentinel losses tolerated %d, want 1", got)
	}
	master := stopAnswer(t, snap, ScopeNode, m.Addr)
	if master.Safe || master.FailoverTo != m.Candidate || !slices.Contains(reasons(master), ReasonMaster) {
		t.Errorf("stopping the master: %+v, want unsafe (master), failing over to %s first", master, m.Candidate)
	}
	for _, n := range m.Nodes {
		if n.Addr != m.Addr {
			if a := stopAnswer(t, snap, ScopeNode, n.Addr); !a.Safe {
				t.Errorf("stopping replica %s: %+v, want safe", n.Addr, a)
			}
		}
	}
	for _, a := range l.SentinelAddrs() {
		if ans := stopAnswer(t, snap, ScopeSentinel, a); !ans.Safe {
			t.Errorf("stopping sentinel %s: %+v, want safe", a, ans)
		}
	}
}

// hungSentinel pauses a sentinel (SIGSTOP): refreshes go on within their
// timeout, it reads as not read, and the others are no longer safe to stop
// since it counts as down.
func hungSentinel(t *testing.T, l *lab.Sentinel, src *labSource) {
	hung := l.SentinelPorts()[2]
	l.Pause(t, hung)
	resumed := false
	defer func() {
		if !resumed {
			l.Resume(t, hung)
		}
	}()
	started := time.Now()
	snap := src.refresh()
	took := time.Since(started)
	t.Logf("a refresh with a hung sentinel: %s (timeout %s)", took.Round(time.Millisecond), src.src.cfg.RefreshTimeout)
	m := snap.Masters[0]
	if len(m.ReadSentinels) != 2 || slices.Contains(m.ReadSentinels, l.Addr(hung)) || !m.Up {
		t.Fatalf("with sentinel %d hung:\n%s", hung, describe(snap))
	}
	for _, p := range l.SentinelPorts()[:2] {
		a := stopAnswer(t, snap, ScopeSentinel, l.Addr(p))
		if a.Safe || !slices.Contains(reasons(a), ReasonQuorum) {
			t.Errorf("stopping sentinel %d while %d hangs: %+v, want unsafe (quorum)", p, hung, a)
		}
	}
	l.Resume(t, hung)
	resumed = true
	src.waitFor(30*time.Second, "settled after the resume", settled(3, 2))
}

// splitBrain makes one sentinel monitor a replica under the master's name
// (SENTINEL REMOVE, then MONITOR): the others keep the real master, with
// config epochs equal neither side converts the other. The exporter must
// see the disagreement and judge nothing safe; undone, it clears.
func splitBrain(t *testing.T, l *lab.Sentinel, src *labSource) {
	before := len(src.events)
	snap := src.refresh()
	m := snap.Masters[0]
	var replica string
	for _, n := range m.Nodes {
		if n.Addr != m.Addr {
			replica = n.Addr
			break
		}
	}
	rogue := l.SentinelPorts()[2]
	monitor := func(addr string) {
		host, port, _ := strings.Cut(addr, ":")
		l.CLI(t, rogue, "SENTINEL", "REMOVE", l.MasterName())
		l.CLI(t, rogue, "SENTINEL", "MONITOR", l.MasterName(), host, port, strconv.Itoa(l.Quorum()))
		l.CLI(t, rogue, "SENTINEL", "SET", l.MasterName(), "down-after-milliseconds", strconv.Itoa(int(l.DownAfter().Milliseconds())),
			"failover-timeout", strconv.Itoa(int(l.FailoverTimeout().Milliseconds())))
	}
	monitor(replica)
	// The rogue sentinel's own word, read by redis-cli: the oracle.
	if said, _ := l.TryMasterAddr(rogue); said != replica {
		t.Fatalf("sentinel %d says the master is %s after MONITOR of %s", rogue, said, replica)
	}
	snap = src.waitFor(10*time.Second, "disagreeing", func(s *Snapshot) bool { return s.Masters[0].Disagree })
	m = snap.Masters[0]
	if m.Addr != l.Addr(l.FirstMasterPort()) && m.Addr != snap.Masters[0].Addr {
		t.Errorf("the agreed master %s, want the majority's", m.Addr)
	}
	for _, id := range append(l.SentinelAddrs(), l.DataAddrs()...) {
		scope := ScopeSentinel
		if slices.Contains(l.DataAddrs(), id) {
			scope = ScopeNode
		}
		if a := stopAnswer(t, snap, scope, id); a.Safe || !slices.Contains(reasons(a), ReasonDisagree) {
			t.Errorf("stopping %s %s while the sentinels disagree: %+v, want unsafe (sentinels_disagree)", scope, id, a)
		}
	}
	if !slices.Contains(src.kinds(before), EventDisagreementStarted) {
		t.Errorf("no %s event: %v", EventDisagreementStarted, src.kinds(before))
	}
	monitor(m.Addr)
	src.waitFor(30*time.Second, "agreeing again", func(s *Snapshot) bool { return !s.Masters[0].Disagree })
	if !slices.Contains(src.kinds(before), EventDisagreementEnded) {
		t.Errorf("no %s event: %v", EventDisagreementEnded, src.kinds(before))
	}
	src.waitFor(60*time.Second, "settled after the split healed", settled(3, 2))
}
