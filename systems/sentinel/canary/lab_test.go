package sentinelcanary

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

const testInterval = 200 * time.Millisecond

// labCanary is one exporter's Sentinel canary running against a lab.
type labCanary struct {
	t    *testing.T
	l    *lab.Sentinel
	w    *watch.Watcher[Snapshot]
	elog *events.Log
	stop func()
}

// startCanary runs a canary against the lab, as the exporter would with
// canary.enabled, until stop (or the test's end); wait is canary.wait.
func startCanary(t *testing.T, l *lab.Sentinel, wait time.Duration) *labCanary {
	t.Helper()
	cfg := config.Config{}
	settings.SetEntries(&cfg, []settings.Set{{
		Name:           "lab",
		Sentinels:      l.SentinelAddrs(),
		DialTimeout:    300 * time.Millisecond,
		CommandTimeout: 300 * time.Millisecond,
		Canary:         settings.Canary{Enabled: true, Interval: testInterval, Wait: wait},
	}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	w, err := system.NewWatcher(Spec, settings.Entries(&cfg)[0], log.NewLogfmtLogger(log.NewSyncWriter(os.Stderr)))
	if err != nil {
		t.Fatal(err)
	}
	elog := events.NewLog(0, log.NewNopLogger())
	events.Follow(elog, "sentinel", "lab", w, func(s *Snapshot) []events.Event { return s.Events.All() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return &labCanary{t: t, l: l, w: w, elog: elog, stop: stop}
}

// stats is a copy of the latest counters of the node at port.
func (c *labCanary) stats(port int) MasterStats {
	s := c.w.Current().Snapshot
	if s == nil || s.Masters[c.l.Addr(port)] == nil {
		return MasterStats{}
	}
	return *s.Masters[c.l.Addr(port)]
}

func (c *labCanary) checks() uint64 {
	if s := c.w.Current().Snapshot; s != nil {
		return s.Checks
	}
	return 0
}

func (c *labCanary) leader() bool {
	s := c.w.Current().Snapshot
	return s != nil && s.Leader
}

// events are the logged events of one kind about the node at port.
func (c *labCanary) events(kind events.Kind, port int) []events.Event {
	var out []events.Event
	for _, e := range c.elog.Query("sentinel", "lab", time.Time{}, 0) {
		if e.Kind == kind && e.Subject.Address == c.l.Addr(port) {
			out = append(out, e)
		}
	}
	return out
}

// waitAcknowledged waits until the node at port has acknowledged at least
// n more canary writes than it had.
func (c *labCanary) waitAcknowledged(port int, n uint64, timeout time.Duration) {
	c.t.Helper()
	from := c.stats(port).Acknowledged
	lab.RedisWaitFor(c.t, timeout, fmt.Sprintf("%d canary writes acknowledged by %d", n, port), func() error {
		if st := c.stats(port); st.Acknowledged < from+n {
			return fmt.Errorf("%d acknowledged, last error %q", st.Acknowledged-from, st.LastError)
		}
		return nil
	})
}

// value is the canary key's value on the node at port, read by the test
// itself (0 when the key is missing): the oracle the counts are held to.
func value(t *testing.T, l *lab.Sentinel, port int, key string) uint64 {
	t.Helper()
	out := l.CLI(t, port, "GET", key)
	if out == "" {
		return 0
	}
	v, err := strconv.ParseUint(out, 10, 64)
	if err != nil {
		t.Fatalf("GET %s on %d: %q", key, port, out)
	}
	return v
}

// readAndKill reads the canary key on the node at port, then kills the
// node with SIGKILL at once, by its PID, and waits until it no longer
// answers: the value is the master's last before it died, but for a write
// that may land between the read and the signal. (A redis-cli and the
// lab's kill script, each a process to start, would leave several of the
// canary's writes between them on a loaded machine.)
func readAndKill(t *testing.T, l *lab.Sentinel, port int, key string) uint64 {
	t.Helper()
	pid := l.PID(t, port)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{l.Addr(port)}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	reply, err := client.Do(t.Context(), client.B().Get().Key(key).Build()).AsUint64()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("GET %s on %d: %v", key, port, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d (port %d): %v", pid, port, err)
	}
	lab.RedisWaitFor(t, 10*time.Second, fmt.Sprintf("%d gone", port), func() error {
		if _, err := l.TryCLI(port, "PING"); err == nil {
			return errors.New("still answers PING")
		}
		return nil
	})
	return reply
}

// burst is the seed lesson's failover: the replica is paused and its
// link cut on the master (a paused replica would apply what its socket
// buffered on resume), the canary writes to the master alone for two
// seconds, the master is killed and the replica resumed, for the
// sentinels to promote. It returns the canary's acknowledged count of the
// master at the pause and at the kill (writes in flight included), and
// the key's value on the master just before the kill and on the replica
// just after its resume, read by the test.
func burst(t *testing.T, c *labCanary, master, replica int) (atPause, atKill, onMaster, onReplica uint64) {
	t.Helper()
	l := c.l
	key := c.stats(master).Key
	// The master holds its clients' writes while the replica is stopped and
	// its link cut: a write applied between the two would sit in the
	// stopped replica's socket buffer and be applied at its resume, and the
	// master would hold nothing the replica lacks (a CI run of the WAIT case
	// had the master's one unconfirmed write reach the replica that way).
	l.CLI(t, master, "CLIENT", "PAUSE", "5000", "WRITE")
	l.Pause(t, replica)
	resumed := false
	defer func() {
		if !resumed {
			l.Resume(t, replica)
		}
	}()
	l.CLI(t, master, "CLIENT", "KILL", "TYPE", "replica")
	l.CLI(t, master, "CLIENT", "UNPAUSE")
	atPause = c.stats(master).Acknowledged
	time.Sleep(2 * time.Second)
	onMaster = readAndKill(t, l, master, key)
	atKill = c.stats(master).Acknowledged
	for end := time.Now().Add(3 * testInterval); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		atKill = max(atKill, c.stats(master).Acknowledged)
	}
	l.Resume(t, replica)
	resumed = true
	// The replica cannot be written before the sentinels promote it, a
	// second at least after the kill: this is what it brings.
	onReplica = value(t, l, replica, key)
	return atPause, atKill, onMaster, onReplica
}

// waitPromoted waits until every sentinel names the node at port, and the
// canary has read its key there.
func waitPromoted(t *testing.T, c *labCanary, port int) {
	t.Helper()
	lab.RedisWaitFor(t, 60*time.Second, fmt.Sprintf("the sentinels promote %d and the canary checks it", port), func() error {
		agreed, err := c.l.AgreedMaster(t)
		if err != nil {
			return err
		}
		if agreed != port {
			return fmt.Errorf("sentinels name %d", agreed)
		}
		if n := c.checks(); n < 1 {
			return fmt.Errorf("%d checks", n)
		}
		return nil
	})
}

// TestSeedLessonThroughSentinel is the seed lesson on real processes: one
// master, one replica, three sentinels. The replica is cut off while the
// master acknowledges writes; the master is killed, the stale replica
// promoted, and the canary counts the acknowledged writes it lacks, held
// to what the test itself read from both nodes. With WAIT the same
// failover loses nothing acknowledged: the writes failed instead.
func TestSeedLessonThroughSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Sentinel deployment; run without -short")
	}
	t.Run("without WAIT the writes acknowledged while the replica was cut off are lost", func(t *testing.T) {
		l := lab.StartSentinel(t, lab.SentinelOptions{Replicas: 1})
		master, replica := l.DataPorts()[0], l.DataPorts()[1]
		c := startCanary(t, l, 0)
		c.waitAcknowledged(master, 3, 20*time.Second)
		atPause, atKill, onMaster, onReplica := burst(t, c, master, replica)
		waitPromoted(t, c, replica)
		c.waitAcknowledged(replica, 3, 20*time.Second)
		old := c.stats(master)
		gap := onMaster - onReplica
		t.Logf("FIGURE sentinel canary without WAIT (%s): %d writes acknowledged during a 2 s cut-off, the master %d writes ahead of the promoted replica, %d counted lost; old master failures %v",
			l.Server(), atKill-atPause, gap, old.Lost, old.Failures)
		if atKill-atPause < 5 {
			t.Fatalf("only %d writes acknowledged while the replica was cut off; the test needs a burst", atKill-atPause)
		}
		// The value on the master may include one write applied but not
		// acknowledged before the kill, and the canary may have had one
		// acknowledged after the test's read: one either way.
		if old.Lost+1 < gap || old.Lost > gap+1 {
			t.Errorf("old master: %d acknowledged writes counted lost; the master was %d writes ahead of the replica promoted", old.Lost, gap)
		}
		// Besides the burst counted from the cut, a write or two acknowledged
		// between the link's cut and the test's first count are lost too.
		if old.Lost > atKill-atPause+2 {
			t.Errorf("%d counted lost, more than the %d acknowledged while the replica was cut off", old.Lost, atKill-atPause)
		}
		if st := c.stats(replica); st.Lost != 0 || st.Set != l.MasterName() {
			t.Errorf("promoted replica: %+v, want nothing lost, set %s", st, l.MasterName())
		}
		lost := c.events(canary.EventAcknowledgedWritesLost, master)
		if len(lost) != 1 || lost[0].Subject.NodeID != l.MasterName() || lost[0].After != strconv.FormatUint(old.Lost, 10) {
			t.Errorf("acknowledged_writes_lost events about %d: %+v, want one naming %s with %d", master, lost, l.MasterName(), old.Lost)
		}
		if len(c.events(canary.EventWriteFailing, master)) == 0 || old.Failures["connection"]+old.Failures["timeout"] == 0 {
			t.Errorf("the dead master's writes: failures %v, events %+v; want them failing", old.Failures, c.events(canary.EventWriteFailing, master))
		}
	})

	t.Run("with WAIT nothing acknowledged is lost; the writes fail instead", func(t *testing.T) {
		l := lab.StartSentinel(t, lab.SentinelOptions{Replicas: 1})
		master, replica := l.DataPorts()[0], l.DataPorts()[1]
		c := startCanary(t, l, 100*time.Millisecond)
		c.waitAcknowledged(master, 3, 20*time.Second)
		atPause, atKill, onMaster, onReplica := burst(t, c, master, replica)
		waitPromoted(t, c, replica)
		old := c.stats(master)
		t.Logf("FIGURE sentinel canary with WAIT 1 100 (%s): %d writes acknowledged during a 2 s cut-off, %d not_replicated, the master %d writes ahead of the promoted replica, %d counted lost",
			l.Server(), atKill-atPause, old.Failures["not_replicated"], onMaster-onReplica, old.Lost)
		// Valkey 9.1 twice in about a dozen runs lost the one write WAIT had
		// confirmed just as the replica was paused: the replica promoted
		// lacked it (the test's own read of the replica agreed), yet WAIT
		// had returned 1 for it. Not explained yet (BENCHMARKS.md); the
		// count is held to the test's reads there, to 0 on the others.
		allowed := uint64(0)
		if l.Server() == "valkey9" && onMaster > onReplica {
			allowed = min(1, onMaster-onReplica-1)
		}
		if old.Lost > allowed {
			t.Errorf("old master: %d acknowledged writes lost with WAIT on, want at most %d (the master held %d, the replica promoted %d)", old.Lost, allowed, onMaster, onReplica)
		} else if old.Lost > 0 {
			t.Logf("valkey9: %d write WAIT had confirmed was lost by the failover (the master held %d, the replica promoted %d)", old.Lost, onMaster, onReplica)
		}
		// The master applied a write no replica confirmed (each failed
		// write sets the same next value again): the failover lost it, but
		// it was never acknowledged.
		if onMaster <= onReplica {
			t.Errorf("the master held %d, the replica promoted %d; the test needs a write the master applied unconfirmed", onMaster, onReplica)
		}
		if atKill-atPause > 1 || old.Failures["not_replicated"] < 5 {
			t.Errorf("%d writes acknowledged with the only replica cut off, failures %v; want not_replicated", atKill-atPause, old.Failures)
		}
		if !slices.ContainsFunc(c.events(canary.EventWriteFailing, master), func(e events.Event) bool { return e.After == "not_replicated" }) {
			t.Errorf("write_failing events of %d: %+v, want one to say not_replicated", master, c.events(canary.EventWriteFailing, master))
		}
	})
}

// TestMasterRestartedEmpty: a master restarted without persistence before
// the sentinels see it down (down-after 5 s) comes back empty, and its
// replica resyncs to empty too; no failover happened, yet every write it
// had acknowledged is gone. The canary sees a new run id on the same
// address, reads the key first, and counts them lost.
func TestMasterRestartedEmpty(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Sentinel deployment; run without -short")
	}
	l := lab.StartSentinel(t, lab.SentinelOptions{Replicas: 1, DownAfter: 5 * time.Second})
	master, replica := l.DataPorts()[0], l.DataPorts()[1]
	c := startCanary(t, l, 0)
	c.waitAcknowledged(master, 5, 20*time.Second)
	key := c.stats(master).Key
	field := func(port int, section, name string) string {
		for _, line := range strings.Split(l.CLI(t, port, "INFO", section), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
				return v
			}
		}
		t.Fatalf("INFO %s of %d has no %s", section, port, name)
		return ""
	}
	runID, history := field(master, "server", "run_id"), field(master, "replication", "master_replid")
	onMaster := readAndKill(t, l, master, key)
	l.Restart(t, master)
	if after := field(master, "server", "run_id"); after == runID {
		t.Fatalf("run id %s unchanged by a restart", after)
	}
	lab.RedisWaitFor(t, 30*time.Second, "the canary checks the restarted master", func() error {
		if n := c.checks(); n < 1 {
			return fmt.Errorf("%d checks", n)
		}
		return nil
	})
	c.waitAcknowledged(master, 3, 20*time.Second)
	if agreed, err := l.AgreedMaster(t); err != nil || agreed != master {
		t.Fatalf("the sentinels name %d (%v): a failover happened, and this test is about a restart without one", agreed, err)
	}
	st := c.stats(master)
	t.Logf("FIGURE sentinel canary: master restarted empty (%s): key at %d before the kill, %d counted lost", l.Server(), onMaster, st.Lost)
	if st.Lost+1 < onMaster || st.Lost > onMaster+1 {
		t.Errorf("%d counted lost, want the %d writes the key held before the restart", st.Lost, onMaster)
	}
	// The loss is real: the restarted master began a new replication
	// history (a new id, changed again when its first replica synced),
	// and the replica, which had the writes, took it over them.
	lab.RedisWaitFor(t, 30*time.Second, "the replica resynced to the restarted master's history", func() error {
		got, now := field(replica, "replication", "master_replid"), field(master, "replication", "master_replid")
		if got == history || got != now {
			return fmt.Errorf("replica on history %s, the master's is %s (before the restart: %s)", got, now, history)
		}
		return nil
	})
}

// TestTwoExportersOneWriter: two exporters watching one deployment share
// the canary by its lease: one writes and serves the counters, the other
// serves redis_sentinel_canary_leader 0; when the writer stops, the other
// takes over within a few intervals and counts nothing lost.
func TestTwoExportersOneWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Sentinel deployment; run without -short")
	}
	l := lab.StartSentinel(t, lab.SentinelOptions{Replicas: 1})
	master := l.DataPorts()[0]
	a, b := startCanary(t, l, 0), startCanary(t, l, 0)
	lab.RedisWaitFor(t, 20*time.Second, "one exporter holds the lease and writes", func() error {
		if a.leader() == b.leader() {
			return fmt.Errorf("leaders: %v and %v", a.leader(), b.leader())
		}
		return nil
	})
	holder, other := a, b
	if b.leader() {
		holder, other = b, a
	}
	holder.waitAcknowledged(master, 5, 20*time.Second)
	if st := other.stats(master); st.Attempts != 0 {
		t.Errorf("the exporter without the lease wrote: %+v", st)
	}
	holder.stop()
	took := time.Now()
	other.waitAcknowledged(master, 3, 30*time.Second)
	t.Logf("FIGURE sentinel canary lease: the second exporter writing %s after the first stopped", time.Since(took).Round(10*time.Millisecond))
	if st := other.stats(master); st.Lost != 0 || !other.leader() {
		t.Errorf("the exporter that took over: leader %v, %+v; want the leader, nothing lost", other.leader(), st)
	}
}
