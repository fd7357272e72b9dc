package rediscanary

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/keycanary"
	redisproto "github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

const testInterval = 200 * time.Millisecond

// startCanary runs a canary against the lab until the returned stop is
// called (or the test ends). Its events go to the returned log, as the
// collector manager records them.
func startCanary(t *testing.T, c *lab.RedisCluster, wait time.Duration) (*watch.Watcher[Snapshot], func(), *events.Log) {
	t.Helper()
	return startCanaryKeyTTL(t, c, wait, 0)
}

// startCanaryKeyTTL is startCanary with the keys' TTL set to keyTTL (0:
// the default), past the config's check, as a config loaded before the
// check refused short TTLs would have it.
func startCanaryKeyTTL(t *testing.T, c *lab.RedisCluster, wait, keyTTL time.Duration) (*watch.Watcher[Snapshot], func(), *events.Log) {
	t.Helper()
	cfg := config.Config{}
	settings.SetClusters(&cfg, []settings.Cluster{{
		Name:           "lab",
		Addrs:          c.Addrs(),
		DialTimeout:    300 * time.Millisecond,
		CommandTimeout: 300 * time.Millisecond,
		Canary:         settings.Canary{Enabled: true, Interval: testInterval, Wait: wait},
	}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	if keyTTL > 0 {
		settings.Clusters(&cfg)[0].Canary.KeyTTL = keyTTL
	}
	w, err := system.NewWatcher(Spec, settings.Clusters(&cfg)[0], log.NewLogfmtLogger(log.NewSyncWriter(os.Stderr)))
	if err != nil {
		t.Fatal(err)
	}
	elog := events.NewLog(0, log.NewNopLogger())
	events.Follow(elog, "redis", "lab", w, func(s *Snapshot) []events.Event { return s.Events.All() })
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
	return w, stop, elog
}

// canaryEvents are the logged events of one kind about one master.
func canaryEvents(elog *events.Log, kind events.Kind, masterID string) []events.Event {
	var out []events.Event
	for _, e := range elog.Query("redis", "lab", time.Time{}, 0) {
		if e.Kind == kind && e.Subject.NodeID == masterID {
			out = append(out, e)
		}
	}
	return out
}

// stats returns a copy of the latest counters of one master.
func stats(w *watch.Watcher[Snapshot], id string) MasterStats {
	s := w.Current().Snapshot
	if s == nil || s.Masters[id] == nil {
		return MasterStats{}
	}
	return *s.Masters[id]
}

func checks(w *watch.Watcher[Snapshot]) uint64 {
	if s := w.Current().Snapshot; s != nil {
		return s.Checks
	}
	return 0
}

// waitWriting waits until the canary has acknowledged writes on every
// master of the lab.
func waitWriting(t *testing.T, c *lab.RedisCluster, w *watch.Watcher[Snapshot]) {
	t.Helper()
	lab.RedisWaitFor(t, 15*time.Second, "canary writing to every master", func() error {
		for _, m := range c.Masters(t) {
			if st := stats(w, m.ID); st.Acknowledged < 3 {
				return fmt.Errorf("master %s (%s): %d acknowledged, last error %q", m.ID, m.Addr, st.Acknowledged, st.LastError)
			}
		}
		return nil
	})
}

// replicaOf returns a replica of master.
func replicaOf(t *testing.T, c *lab.RedisCluster, master lab.RedisNode) lab.RedisNode {
	t.Helper()
	for _, n := range c.Nodes(t) {
		if n.MasterID == master.ID {
			return n
		}
	}
	t.Fatalf("master %s has no replica", master.Addr)
	return lab.RedisNode{}
}

// burstKillPromote is lab's failover that loses acknowledged writes
// (RedisCluster.BurstKillPromote), read from this canary's counters: the
// replica is paused for about 15 canary writes at 200ms, and writes in
// flight at the kill are counted up to three intervals after it.
func burstKillPromote(t *testing.T, c *lab.RedisCluster, w *watch.Watcher[Snapshot], master, replica lab.RedisNode) (ackedAtPause, ackedAtKill uint64) {
	t.Helper()
	acknowledged := func() uint64 { return stats(w, master.ID).Acknowledged }
	return c.BurstKillPromote(t, master, replica, 3*testInterval, acknowledged, func() { time.Sleep(3 * time.Second) })
}

// rejoin restarts the killed master and waits until it replicates the
// promoted one, so that every shard has a replica again.
func rejoin(t *testing.T, c *lab.RedisCluster, old, promoted lab.RedisNode) {
	t.Helper()
	c.Restart(t, old.Port)
	lab.RedisWaitFor(t, 30*time.Second, "old master rejoins as a replica", func() error {
		if n := c.Node(t, old.Port); n.MasterID != promoted.ID || n.Failed {
			return fmt.Errorf("%s: master id %q, failed %v", old.Addr, n.MasterID, n.Failed)
		}
		if out, err := c.TryCLI(old.Port, "info", "replication"); err != nil || !strings.Contains(out, "master_link_status:up") {
			return fmt.Errorf("%s: replication link not up: %v", old.Addr, err)
		}
		return nil
	})
}

// TestCanaryCountsAcknowledgedWritesLostInAFailover is the seed lesson on
// a real Redis Cluster (3 masters, 1 replica each): Redis replicates
// asynchronously, so writes a master acknowledged while its replica was
// cut off are gone once that replica is promoted, and the canary counts
// them. With WAIT the same failover loses nothing: the writes fail instead.
func TestCanaryCountsAcknowledgedWritesLostInAFailover(t *testing.T) {
	if testing.Short() {
		// Only under -short: a missing redis-server fails the test, saying
		// how to install it.
		t.Skip("starts a real Redis Cluster; run without -short")
	}
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	masters := c.Masters(t)
	if len(masters) != 3 {
		t.Fatalf("%d masters, want 3", len(masters))
	}

	t.Run("without WAIT the writes acknowledged during the burst are lost", func(t *testing.T) {
		w, stop, elog := startCanary(t, c, 0)
		defer stop()
		waitWriting(t, c, w)
		master := masters[0]
		replica := replicaOf(t, c, master)
		atPause, atKill := burstKillPromote(t, c, w, master, replica)
		burst := atKill - atPause
		if burst < 5 {
			t.Fatalf("only %d writes acknowledged while the replica was paused; the test needs a burst", burst)
		}
		lab.RedisWaitFor(t, 15*time.Second, "canary checks the promoted replica", func() error {
			if n := checks(w); n < 1 {
				return fmt.Errorf("%d checks", n)
			}
			if st := stats(w, replica.ID); st.Acknowledged < 3 {
				return fmt.Errorf("promoted replica: %d acknowledged, last error %q", st.Acknowledged, st.LastError)
			}
			return nil
		})
		old, promoted := stats(w, master.ID), stats(w, replica.ID)
		t.Logf("FIGURE redis canary without WAIT: %d writes acknowledged during a 3s replica pause, %d counted lost; old master failures %v",
			burst, old.Lost, old.Failures)
		// The writes acknowledged while the replica was paused (give or
		// take the one in flight at each end, and the last ones before the
		// pause that had not reached the replica yet) are the lost ones.
		if old.Lost+1 < burst || old.Lost > burst+2 {
			t.Errorf("old master %s: %d acknowledged writes counted lost, want about the %d acknowledged during the pause", master.Addr, old.Lost, burst)
		}
		if promoted.Lost != 0 {
			t.Errorf("promoted replica %s: %d lost, want 0", replica.Addr, promoted.Lost)
		}
		// The event log has the loss once, about the old master, with the
		// count the metric has, and the old master's writes failing.
		if lost := canaryEvents(elog, canary.EventAcknowledgedWritesLost, master.ID); len(lost) != 1 ||
			lost[0].System != "redis" || lost[0].Subject.Address != master.Addr || lost[0].After != strconv.FormatUint(old.Lost, 10) {
			t.Errorf("acknowledged_writes_lost events of %s: %+v, want one with address %s and after %d", master.Addr, lost, master.Addr, old.Lost)
		}
		if failing := canaryEvents(elog, canary.EventWriteFailing, master.ID); len(failing) == 0 {
			t.Errorf("no write_failing event for the dead master %s", master.Addr)
		}
		for _, m := range masters[1:] {
			if evs := canaryEvents(elog, canary.EventAcknowledgedWritesLost, m.ID); len(evs) != 0 {
				t.Errorf("acknowledged_writes_lost events for untouched master %s: %+v", m.Addr, evs)
			}
		}
		if old.Failures["connection"]+old.Failures["timeout"] == 0 {
			t.Errorf("no failed writes counted for the dead master %s: %v", master.Addr, old.Failures)
		}
		// The other masters were untouched.
		for _, m := range masters[1:] {
			if st := stats(w, m.ID); st.Lost != 0 || st.Acknowledged == 0 {
				t.Errorf("untouched master %s: %+v", m.Addr, st)
			}
		}
		// Only canary keys and their lease keys were written.
		out := c.CLI(t, replica.Port, "--scan")
		for _, key := range strings.Fields(out) {
			if !strings.HasPrefix(key, settings.DefaultCanaryKeyPrefix+"{") && !strings.HasPrefix(key, settings.DefaultCanaryKeyPrefix+"lease{") {
				t.Errorf("key %q on %s is neither a canary key nor its lease key", key, replica.Addr)
			}
		}
		if ttl := c.CLI(t, replica.Port, "pttl", stats(w, replica.ID).Key); ttl == "-1" || strings.HasPrefix(ttl, "-") {
			t.Errorf("canary key %s has no TTL (PTTL %s)", stats(w, replica.ID).Key, ttl)
		}
		stop()
		rejoin(t, c, master, replica)
	})

	t.Run("with WAIT nothing acknowledged is lost; the writes fail instead", func(t *testing.T) {
		w, stop, elog := startCanary(t, c, 50*time.Millisecond)
		defer stop()
		waitWriting(t, c, w)
		master := masters[1]
		replica := replicaOf(t, c, master)
		atPause, atKill := burstKillPromote(t, c, w, master, replica)
		lab.RedisWaitFor(t, 15*time.Second, "canary checks the promoted replica", func() error {
			if n := checks(w); n < 1 {
				return fmt.Errorf("%d checks", n)
			}
			return nil
		})
		old := stats(w, master.ID)
		t.Logf("FIGURE redis canary with WAIT 1 50: %d writes acknowledged during a 3s replica pause, %d not_replicated, %d counted lost",
			atKill-atPause, old.Failures["not_replicated"], old.Lost)
		if old.Lost != 0 {
			t.Errorf("old master %s: %d acknowledged writes lost with WAIT on, want 0", master.Addr, old.Lost)
		}
		if evs := canaryEvents(elog, canary.EventAcknowledgedWritesLost, master.ID); len(evs) != 0 {
			t.Errorf("acknowledged_writes_lost events with WAIT on: %+v", evs)
		}
		// The paused replica makes writes fail as not_replicated. On a
		// loaded machine a SET may also time out, and the kill ends with a
		// connection error: some event, not a given one, says not_replicated.
		if evs := canaryEvents(elog, canary.EventWriteFailing, master.ID); !slices.ContainsFunc(evs, func(e events.Event) bool { return e.After == "not_replicated" }) {
			t.Errorf("write_failing events of %s: %+v, want one to say not_replicated", master.Addr, evs)
		}
		if atKill-atPause > 1 {
			t.Errorf("%d writes acknowledged while the only replica was paused, want at most the one in flight", atKill-atPause)
		}
		if old.Failures["not_replicated"] < 5 {
			t.Errorf("old master %s: failures %v, want not_replicated counted for the paused replica", master.Addr, old.Failures)
		}
		// The promoted replica has no replica of its own until the old
		// master rejoins: WAIT fails there too, then succeeds.
		if st := stats(w, replica.ID); st.Acknowledged != 0 || st.Failures["not_replicated"] == 0 {
			t.Errorf("promoted replica %s without a replica: %+v, want only not_replicated failures", replica.Addr, st)
		}
		rejoin(t, c, master, replica)
		lab.RedisWaitFor(t, 15*time.Second, "writes acknowledged on the promoted replica once it has a replica", func() error {
			if st := stats(w, replica.ID); st.Acknowledged < 3 {
				return fmt.Errorf("%d acknowledged, last error %q", st.Acknowledged, st.LastError)
			}
			return nil
		})
	})

	t.Run("a key is chosen again when its slot moves to another master", func(t *testing.T) {
		w, stop, _ := startCanary(t, c, 0)
		defer stop()
		waitWriting(t, c, w)
		masters := c.Masters(t)
		from, to := masters[0], masters[1]
		key := stats(w, from.ID).Key
		slot := strconv.Itoa(redisproto.KeySlot(key))
		// The steps of redis-cli --cluster reshard, for the one slot.
		c.CLI(t, to.Port, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID)
		c.CLI(t, from.Port, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.ID)
		// Every key of the slot, as reshard moves them: the canary key and
		// its lease key.
		c.CLI(t, from.Port, "MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", "0", "5000", "KEYS", key, keycanary.LeaseKey(settings.DefaultCanaryKeyPrefix, key))
		for _, m := range masters {
			c.CLI(t, m.Port, "CLUSTER", "SETSLOT", slot, "NODE", to.ID)
		}
		fromAcked, toAcked := stats(w, from.ID).Acknowledged, stats(w, to.ID).Acknowledged
		lab.RedisWaitFor(t, 15*time.Second, "writes to both masters, the first under a new key", func() error {
			f, tt := stats(w, from.ID), stats(w, to.ID)
			if f.Key == key || f.Acknowledged < fromAcked+3 || tt.Acknowledged < toAcked+3 {
				return fmt.Errorf("%s: key %s, %d acknowledged since the move; %s: %d", from.Addr, f.Key, f.Acknowledged-fromAcked, to.Addr, tt.Acknowledged-toAcked)
			}
			return nil
		})
		newKey := stats(w, from.ID).Key
		if !c.Node(t, from.Port).OwnsSlot(redisproto.KeySlot(newKey)) {
			t.Errorf("new key %s of %s is in slot %d, which it does not own", newKey, from.Addr, redisproto.KeySlot(newKey))
		}
		for id, m := range w.Current().Snapshot.Masters {
			if m.Lost != 0 {
				t.Errorf("master %s (%s): %d lost after a slot move, want 0", id, m.Addr, m.Lost)
			}
		}
		t.Logf("slot %s of %s moved to %s: key %s -> %s", slot, from.Addr, to.Addr, key, newKey)
	})
}

// TestCanaryKeyExpiredInAFailoverIsUnverifiable is issue 42 item 10 on a
// real Redis Cluster: a master whose replica has every acknowledged write
// (WAIT 1) is killed, and the failover (cluster-node-timeout 5 s) takes
// longer than the canary key's TTL (2 s), so the promoted replica no
// longer has the key. Nothing was lost; the key expired. The canary
// counts the old master's writes unverifiable, none lost (it counted every
// one lost before).
func TestCanaryKeyExpiredInAFailoverIsUnverifiable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Redis Cluster; run without -short")
	}
	const keyTTL = 2 * time.Second
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1, NodeTimeout: 5 * time.Second})
	w, stop, elog := startCanaryKeyTTL(t, c, 50*time.Millisecond, keyTTL)
	defer stop()
	waitWriting(t, c, w)
	master := c.Masters(t)[0]
	replica := replicaOf(t, c, master)
	lab.RedisWaitFor(t, 15*time.Second, "10 writes acknowledged by the master", func() error {
		if st := stats(w, master.ID); st.Acknowledged < 10 {
			return fmt.Errorf("%d acknowledged, last error %q", st.Acknowledged, st.LastError)
		}
		return nil
	})
	beforeKill := time.Now()
	c.Kill(t, master.Port)
	killed := time.Now()
	lab.RedisWaitFor(t, 30*time.Second, "replica promoted", func() error {
		for _, n := range c.Masters(t) {
			if n.ID == replica.ID {
				return nil
			}
		}
		return fmt.Errorf("%s is not a master yet", replica.Addr)
	})
	promotedAfter := time.Since(killed)
	if promotedAfter < keyTTL {
		t.Fatalf("the failover took %s, less than the key's TTL %s: the key cannot have expired", promotedAfter, keyTTL)
	}
	lab.RedisWaitFor(t, 15*time.Second, "canary checks the promoted replica", func() error {
		if n := checks(w); n < 1 {
			return fmt.Errorf("%d checks", n)
		}
		return nil
	})
	old := stats(w, master.ID)
	t.Logf("FIGURE redis canary, key_ttl %s, failover after %s: %d acknowledged by the old master, %d unverifiable, %d lost",
		keyTTL, promotedAfter.Round(10*time.Millisecond), old.Acknowledged, old.Unverifiable, old.Lost)
	if old.Lost != 0 {
		t.Errorf("old master %s: %d writes counted lost, want 0: the replica had them all (WAIT 1) and the key expired", master.Addr, old.Lost)
	}
	if old.Acknowledged == 0 || old.Unverifiable != old.Acknowledged {
		t.Errorf("old master %s: %d unverifiable, want its %d acknowledged writes", master.Addr, old.Unverifiable, old.Acknowledged)
	}
	if evs := canaryEvents(elog, canary.EventAcknowledgedWritesLost, master.ID); len(evs) != 0 {
		t.Errorf("acknowledged_writes_lost events for an expired key: %+v", evs)
	}
	// With WAIT 1 a write is acknowledged only once the promoted replica
	// has a replica of its own: the stall a client of WAIT lives ends when
	// the old master is back as one.
	rejoin(t, c, master, replica)
	checkStall(t, w, master, c.NodeTimeout(), beforeKill, killed)
}

// checkStall waits for the stall clock of master, killed between
// beforeKill and killed, and checks it against the kill's own clock: it
// began at the master's last acknowledgement, after beforeKill less a
// round (the canary writes every 50 ms here; a second of margin for a busy
// machine) and not after killed, and ended at the first acknowledgement by
// the promoted replica, which the cluster cannot promote before the
// node timeout has passed since the kill.
func checkStall(t *testing.T, w *watch.Watcher[Snapshot], master lab.RedisNode, nodeTimeout time.Duration, beforeKill, killed time.Time) {
	t.Helper()
	var seen time.Time
	lab.RedisWaitFor(t, 15*time.Second, "the stall clock of the killed master", func() error {
		if h := stats(w, master.ID).Stalls; h == nil || h.Count != 1 {
			var all []string
			for id, m := range w.Current().Snapshot.Masters {
				all = append(all, fmt.Sprintf("%s %+v", id, *m))
			}
			return fmt.Errorf("stalls observed: %+v; all %v", h, all)
		}
		seen = time.Now()
		return nil
	})
	stall := time.Duration(stats(w, master.ID).Stalls.Sum * float64(time.Second))
	latest := seen.Sub(beforeKill.Add(-time.Second))
	t.Logf("FIGURE redis canary stall clock: %v for the killed master (cluster-node-timeout %v; at most %v by the kill's clock)", stall.Round(time.Millisecond), nodeTimeout, latest.Round(time.Millisecond))
	if stall < nodeTimeout || stall > latest {
		t.Errorf("stall %v, want between the node timeout %v and %v (the kill's clock)", stall, nodeTimeout, latest)
	}
}
