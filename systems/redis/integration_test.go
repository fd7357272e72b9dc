package redis

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/collector/system"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// Timings of the integration tests. The refresh interval is short so that
// state changes show up quickly; the timeouts are short so that a hung node
// is given up on within one refresh.
const (
	testRefreshInterval = 500 * time.Millisecond
	testCommandTimeout  = 300 * time.Millisecond
	testDialTimeout     = 300 * time.Millisecond
)

// exporter runs the real watcher and collector against a lab cluster.
type exporter struct {
	t   *testing.T
	w   *watch.Watcher[Snapshot]
	reg *prometheus.Registry
}

func startExporter(t *testing.T, seeds []string, opts ...func(*settings.Cluster, *log.Logger)) *exporter {
	t.Helper()
	cfg := config.Config{}
	settings.SetClusters(&cfg, []settings.Cluster{{
		Name:            "lab",
		Addrs:           seeds,
		RefreshInterval: testRefreshInterval,
		CommandTimeout:  testCommandTimeout,
		DialTimeout:     testDialTimeout,
	}})
	logger := log.NewNopLogger()
	for _, o := range opts {
		o(&settings.Clusters(&cfg)[0], &logger)
	}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	w, err := system.NewWatcher(Spec, settings.Clusters(&cfg)[0], logger)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollector()
	c.Set("lab", w)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	<-w.Ready()
	return &exporter{t: t, w: w, reg: reg}
}

// sample is one gather of the registry.
type sample map[string]*dto.MetricFamily

func (e *exporter) gather() sample {
	e.t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		e.t.Fatalf("gather: %v", err)
	}
	s := sample{}
	for _, f := range families {
		s[f.GetName()] = f
	}
	return s
}

// value returns the value of the series of name carrying all the given
// label pairs ("name", "value", ...); ok is false if there is none.
func (s sample) value(name string, labels ...string) (float64, bool) {
	f, found := s[name]
	if !found {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// expect returns an error unless the series exists with value want.
func (s sample) expect(want float64, name string, labels ...string) error {
	got, ok := s.value(name, labels...)
	if !ok {
		return fmt.Errorf("%s%v: no such series", name, labels)
	}
	if got != want {
		return fmt.Errorf("%s%v = %g, want %g", name, labels, got, want)
	}
	return nil
}

// firstError returns the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func addrLabel(port int) []string { return []string{"address", "127.0.0.1:" + strconv.Itoa(port)} }

func nodeLabels3(port int, extra ...string) []string { return append(addrLabel(port), extra...) }

// waitHealthy waits until the exporter shows a cluster with every slot ok,
// every node ok and reachable, and (with replicas) every replica synced.
func (e *exporter) waitHealthy(c *lab.RedisCluster, replicas int) {
	e.t.Helper()
	lab.RedisWaitFor(e.t, 20*time.Second, "cluster healthy in the exporter", func() error {
		s := e.gather()
		errs := []error{
			s.expect(1, "redis_cluster_up"),
			s.expect(1, "redis_cluster_state_ok"),
			s.expect(redisproto.SlotCount, "redis_cluster_slots", "state", "ok"),
			s.expect(float64(len(c.Ports())), "redis_cluster_known_nodes"),
			s.expect(1, "redis_cluster_views_consistent"),
		}
		if replicas > 0 {
			errs = append(errs, s.expect(0, "redis_cluster_slots_without_replica"))
		}
		for _, p := range c.Ports() {
			errs = append(errs,
				s.expect(1, "redis_cluster_node_up", addrLabel(p)...),
				s.expect(1, "redis_cluster_node_state", nodeLabels3(p, "state", "ok")...))
			if lag, ok := s.value("redis_cluster_node_replication_lag_bytes", addrLabel(p)...); ok && lag != 0 {
				errs = append(errs, fmt.Errorf("node %d lags %g bytes", p, lag))
			}
		}
		return firstError(errs...)
	})
}

// replicaOf returns a node replicating master, in the lab's view.
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

// keyInSlotsOf returns a key whose slot master owns.
func keyInSlotsOf(t *testing.T, master lab.RedisNode, prefix string) string {
	t.Helper()
	for i := range 100000 {
		key := prefix + strconv.Itoa(i)
		if master.OwnsSlot(redisproto.KeySlot(key)) {
			return key
		}
	}
	t.Fatalf("no key found for %s", master.Addr)
	return ""
}

// skipIfShort skips an integration test under -short, and only then: a
// missing redis-server fails the test (lab.StartRedisCluster says how to
// install it) rather than skipping it.
func skipIfShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real Redis Cluster; run without -short")
	}
}

func TestIntegrationWithReplicas(t *testing.T) {
	skipIfShort(t)
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	// One seed only: the rest of the topology must be discovered.
	e := startExporter(t, c.Addrs()[:1])
	e.waitHealthy(c, 1)
	s := e.gather()
	for _, m := range c.Masters(t) {
		if err := firstError(
			s.expect(float64(m.Slots), "redis_cluster_node_slots", addrLabel(m.Port)...),
			s.expect(1, "redis_cluster_node_master", addrLabel(m.Port)...),
			s.expect(1, "redis_cluster_node_replicas", addrLabel(m.Port)...),
			s.expect(1, "redis_cluster_node_info", nodeLabels3(m.Port, "role", "master", "node_id", m.ID)...),
		); err != nil {
			t.Error(err)
		}
	}
	if err := s.expect(3, "redis_cluster_masters"); err != nil {
		t.Error(err)
	}

	t.Run("redirections counted per node", func(t *testing.T) { testRedirections(t, c, e) })
	t.Run("replication lag", func(t *testing.T) {
		master := c.Masters(t)[0]
		replica := replicaOf(t, c, master)
		c.Pause(t, replica.Port)
		resumed := false
		defer func() {
			if !resumed {
				c.Resume(t, replica.Port)
			}
		}()
		key := keyInSlotsOf(t, master, "lag")
		c.CLI(t, master.Port, "SET", key, strings.Repeat("x", 10000))
		took := lab.RedisWaitFor(t, 5*time.Second, "replication lag > 0", func() error {
			lag, ok := e.gather().value("redis_cluster_node_replication_lag_bytes", addrLabel(replica.Port)...)
			if !ok || lag < 10000 {
				return fmt.Errorf("lag = %g (present %v), want >= 10000", lag, ok)
			}
			return nil
		})
		t.Logf("lag seen %s after the write", took.Round(time.Millisecond))
		c.Resume(t, replica.Port)
		resumed = true
		took = lab.RedisWaitFor(t, 10*time.Second, "replication lag back to 0", func() error {
			return e.gather().expect(0, "redis_cluster_node_replication_lag_bytes", addrLabel(replica.Port)...)
		})
		t.Logf("lag back to 0 %s after resume", took.Round(time.Millisecond))
		e.waitHealthy(c, 1)
	})

	t.Run("hung node", func(t *testing.T) {
		master := c.Masters(t)[1]
		replica := replicaOf(t, c, master)
		before := runtime.NumGoroutine()
		c.Pause(t, replica.Port)
		defer c.Resume(t, replica.Port)
		lab.RedisWaitFor(t, 5*time.Second, "hung node down", func() error {
			return e.gather().expect(0, "redis_cluster_node_up", addrLabel(replica.Port)...)
		})
		var counts []int
		for range 8 {
			time.Sleep(testRefreshInterval)
			start := time.Now()
			s := e.gather()
			if took := time.Since(start); took > 100*time.Millisecond {
				t.Errorf("gather took %s while a node hangs", took)
			}
			if err := firstError(
				s.expect(1, "redis_cluster_up"),
				s.expect(0, "redis_cluster_node_up", addrLabel(replica.Port)...),
				s.expect(1, "redis_cluster_node_up", addrLabel(master.Port)...),
			); err != nil {
				t.Error(err)
			}
			if d, _ := s.value("redis_cluster_exporter_refresh_duration_seconds"); d > testRefreshInterval.Seconds() {
				t.Errorf("refresh took %gs, more than the interval", d)
			}
			counts = append(counts, runtime.NumGoroutine())
		}
		t.Logf("goroutines: %d before the pause, then %v", before, counts)
		// A leak stays in every later sample; one sample taken while a
		// refresh runs has its goroutines too (10 against 5 in one CI run
		// on a loaded machine), so compare the fewest of the first and of
		// the last three.
		if growth := slices.Min(counts[len(counts)-3:]) - slices.Min(counts[:3]); growth > 2 {
			t.Errorf("goroutines grew by %d over %d refreshes while a node hangs: %v", growth, len(counts)-3, counts)
		}
		if peak := slicesMax(counts); peak > before+10 {
			t.Errorf("goroutines peaked at %d, %d before the pause", peak, before)
		}
		c.Resume(t, replica.Port)
		e.waitHealthy(c, 1)
	})

	t.Run("master killed, replica takes over, old master rejoins", func(t *testing.T) {
		// Kill the exporter's only seed: it must keep finding the cluster
		// through the topology it already knows.
		seedPort := c.Ports()[0]
		var master lab.RedisNode
		for _, m := range c.Masters(t) {
			if m.Port == seedPort {
				master = m
			}
		}
		if master.ID == "" {
			t.Fatalf("seed %d is not a master any more", seedPort)
		}
		replica := replicaOf(t, c, master)
		failovers, _ := e.gather().value("redis_cluster_failovers_total")
		c.Kill(t, master.Port)
		bound := c.NodeTimeout() + 2*testRefreshInterval + 3*time.Second
		took := lab.RedisWaitFor(t, bound, "failover seen by the exporter", func() error {
			s := e.gather()
			err := firstError(
				s.expect(1, "redis_cluster_node_master", addrLabel(replica.Port)...),
				s.expect(float64(master.Slots), "redis_cluster_node_slots", addrLabel(replica.Port)...),
				s.expect(1, "redis_cluster_node_state", nodeLabels3(master.Port, "state", "fail")...),
				s.expect(0, "redis_cluster_node_up", addrLabel(master.Port)...),
				s.expect(redisproto.SlotCount, "redis_cluster_slots", "state", "ok"),
				s.expect(1, "redis_cluster_state_ok"),
				s.expect(failovers+1, "redis_cluster_failovers_total"),
			)
			if err == nil {
				if n, _ := s.value("redis_cluster_node_role_changes_total", addrLabel(replica.Port)...); n < 1 {
					err = fmt.Errorf("role_changes_total of the promoted replica is %g", n)
				}
			}
			return err
		})
		t.Logf("FAILOVER DETECTION: kill -9 of master %d to exporter showing replica %d as master with its %d slots: %s "+
			"(cluster-node-timeout %s, refresh interval %s, bound %s)",
			master.Port, replica.Port, master.Slots, took.Round(time.Millisecond), c.NodeTimeout(), testRefreshInterval, bound)

		c.Restart(t, master.Port)
		took = lab.RedisWaitFor(t, 20*time.Second, "old master rejoins as a replica of the new master", func() error {
			s := e.gather()
			return firstError(
				s.expect(1, "redis_cluster_node_up", addrLabel(master.Port)...),
				s.expect(0, "redis_cluster_node_master", addrLabel(master.Port)...),
				s.expect(1, "redis_cluster_node_info", nodeLabels3(master.Port, "role", "replica", "master_id", replica.ID)...),
				s.expect(1, "redis_cluster_node_master_link_up", addrLabel(master.Port)...),
				s.expect(1, "redis_cluster_node_replicas", addrLabel(replica.Port)...),
			)
		})
		t.Logf("old master rejoined as replica %s after restart", took.Round(time.Millisecond))
		e.waitHealthy(c, 1)
	})

	t.Run("manual failover", func(t *testing.T) {
		// A pair the previous subtest did not touch: the node it killed
		// and restarted may still be resyncing, and voters refuse a second
		// election for the same slots within 2 × cluster-node-timeout.
		killed := c.Ports()[0]
		var master, replica lab.RedisNode
		for _, m := range c.Masters(t) {
			if r := replicaOf(t, c, m); m.Port != killed && r.Port != killed {
				master, replica = m, r
				break
			}
		}
		if master.ID == "" {
			t.Fatal("no master/replica pair left that the previous subtest did not kill")
		}
		s := e.gather()
		failovers, _ := s.value("redis_cluster_failovers_total")
		// Watch the slots while Redis hands them over: a manual failover
		// must never show a slot as unassigned.
		stop, watched := make(chan struct{}), make(chan float64, 1)
		go func() {
			worst := 0.0
			defer func() { watched <- worst }()
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if families, err := e.reg.Gather(); err == nil {
					s := sample{}
					for _, f := range families {
						s[f.GetName()] = f
					}
					v, _ := s.value("redis_cluster_slots", "state", "unassigned")
					worst = max(worst, v)
				}
			}
		}()
		redisTook := c.ManualFailover(t, replica.Port)
		t.Logf("redis finished the manual failover of %d to %d in %s", master.Port, replica.Port, redisTook.Round(time.Millisecond))
		took := lab.RedisWaitFor(t, 2*testRefreshInterval+5*time.Second, "manual failover seen by the exporter", func() error {
			s := e.gather()
			if v, _ := s.value("redis_cluster_slots", "state", "unassigned"); v != 0 {
				t.Errorf("%g slots unassigned during a manual failover", v)
			}
			return firstError(
				s.expect(1, "redis_cluster_node_master", addrLabel(replica.Port)...),
				s.expect(0, "redis_cluster_node_master", addrLabel(master.Port)...),
				s.expect(float64(master.Slots), "redis_cluster_node_slots", addrLabel(replica.Port)...),
				s.expect(0, "redis_cluster_node_slots", addrLabel(master.Port)...),
				s.expect(failovers+1, "redis_cluster_failovers_total"),
				s.expect(redisproto.SlotCount, "redis_cluster_slots", "state", "ok"),
			)
		})
		close(stop)
		if v := <-watched; v != 0 {
			t.Errorf("%g slots unassigned during a manual failover", v)
		}
		t.Logf("manual failover seen %s after redis finished it", took.Round(time.Millisecond))
		e.waitHealthy(c, 1)
	})
}

func slicesMax(xs []int) int {
	m := xs[0]
	for _, x := range xs[1:] {
		m = max(m, x)
	}
	return m
}

func TestIntegrationWithoutReplicas(t *testing.T) {
	skipIfShort(t)
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 0})
	e := startExporter(t, c.Addrs())
	e.waitHealthy(c, 0)
	if err := e.gather().expect(redisproto.SlotCount, "redis_cluster_slots_without_replica"); err != nil {
		t.Error(err)
	}

	t.Run("resharding", func(t *testing.T) { testResharding(t, c, e) })
	t.Run("slot owners", func(t *testing.T) { testSlotOwners(t, c) })
	t.Run("RESP3 verbatim strings", func(t *testing.T) { testVerbatimStrings(t, c) })
	t.Run("minimal ACL and password", func(t *testing.T) { testMinimalACL(t, c) })

	t.Run("master killed without replica", func(t *testing.T) {
		master := c.Masters(t)[1]
		c.Kill(t, master.Port)
		took := lab.RedisWaitFor(t, c.NodeTimeout()+10*time.Second, "slots of the dead master fail", func() error {
			s := e.gather()
			return firstError(
				s.expect(float64(master.Slots), "redis_cluster_slots", "state", "fail"),
				s.expect(float64(redisproto.SlotCount-master.Slots), "redis_cluster_slots", "state", "ok"),
				s.expect(0, "redis_cluster_state_ok"),
				s.expect(1, "redis_cluster_node_state", nodeLabels3(master.Port, "state", "fail")...),
				s.expect(0, "redis_cluster_node_up", addrLabel(master.Port)...),
			)
		})
		t.Logf("failed slots seen %s after kill -9", took.Round(time.Millisecond))
	})
}

// testResharding moves slots from one master to another by hand, with the
// same steps as redis-cli --cluster reshard, and watches the move.
func testResharding(t *testing.T, c *lab.RedisCluster, e *exporter) {
	masters := c.Masters(t)
	source, target := masters[0], masters[1]
	// Three slots of the source's first range, with keys in each.
	first := source.SlotRanges[0][0]
	slots := []int{first, first + 1, first + 2}
	keysPerSlot := map[int][]string{}
	for i := 0; len(keysPerSlot[slots[0]]) < 5 || len(keysPerSlot[slots[1]]) < 5 || len(keysPerSlot[slots[2]]) < 5; i++ {
		key := "reshard:" + strconv.Itoa(i)
		if slot := redisproto.KeySlot(key); slot >= first && slot <= first+2 && len(keysPerSlot[slot]) < 5 {
			keysPerSlot[slot] = append(keysPerSlot[slot], key)
			c.CLI(t, source.Port, "SET", key, "v")
		}
	}
	s := e.gather()
	sourceSlots, _ := s.value("redis_cluster_node_slots", addrLabel(source.Port)...)
	targetSlots, _ := s.value("redis_cluster_node_slots", addrLabel(target.Port)...)

	for _, slot := range slots {
		c.CLI(t, target.Port, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "IMPORTING", source.ID)
		c.CLI(t, source.Port, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "MIGRATING", target.ID)
	}
	lab.RedisWaitFor(t, 5*time.Second, "slots shown mid-move", func() error {
		s := e.gather()
		return firstError(
			s.expect(3, "redis_cluster_node_migrating_slots", addrLabel(source.Port)...),
			s.expect(3, "redis_cluster_node_importing_slots", addrLabel(target.Port)...),
			s.expect(0, "redis_cluster_node_importing_slots", addrLabel(source.Port)...),
			s.expect(sourceSlots, "redis_cluster_node_slots", addrLabel(source.Port)...),
		)
	})
	for _, slot := range slots {
		args := []string{"MIGRATE", "127.0.0.1", strconv.Itoa(target.Port), "", "0", "5000", "KEYS"}
		c.CLI(t, source.Port, append(args, keysPerSlot[slot]...)...)
		for _, m := range masters {
			c.CLI(t, m.Port, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "NODE", target.ID)
		}
	}
	took := lab.RedisWaitFor(t, 5*time.Second, "slots moved", func() error {
		s := e.gather()
		return firstError(
			s.expect(sourceSlots-3, "redis_cluster_node_slots", addrLabel(source.Port)...),
			s.expect(targetSlots+3, "redis_cluster_node_slots", addrLabel(target.Port)...),
			s.expect(0, "redis_cluster_node_migrating_slots", addrLabel(source.Port)...),
			s.expect(0, "redis_cluster_node_importing_slots", addrLabel(target.Port)...),
			s.expect(0, "redis_cluster_node_keys", addrLabel(source.Port)...),
			s.expect(15, "redis_cluster_node_keys", addrLabel(target.Port)...),
			s.expect(redisproto.SlotCount, "redis_cluster_slots", "state", "ok"),
			s.expect(1, "redis_cluster_views_consistent"),
		)
	})
	t.Logf("move of 3 slots seen %s after the last SETSLOT NODE", took.Round(time.Millisecond))
}

// testSlotOwners checks KeySlot against CLUSTER KEYSLOT and the owner
// ReadSlotOwners reads (what the slot command prints) against the lab's
// view.
func testSlotOwners(t *testing.T, c *lab.RedisCluster) {
	keys := []string{
		"foo", "bar", "{user1000}.following", "{user1000}.followers", "foo{}{bar}", "{}", "{{bar}}",
		"foo{bar}{zap}", "foo{{bar}}zap", "{bar", "bar}", "}{", "a{b}c", "", " ", "ключ", "{ключ}x", "日本語{タグ}",
		"emoji🙂", "tab\tkey", "{", "}",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b := make([]byte, 1+rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if b[i] == '\n' {
				b[i] = 'n' // the slot command prints one line per key
			}
			if rng.IntN(8) == 0 {
				b[i] = "{}"[rng.IntN(2)]
			}
		}
		keys = append(keys, string(b))
	}

	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: c.Addrs()[:1], ForceSingleClient: true, DisableCache: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = client.B().ClusterKeyslot().Key(k).Build()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, r := range client.DoMulti(ctx, cmds...) {
		want, err := r.AsInt64()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", keys[i], err)
		}
		if got := redisproto.KeySlot(keys[i]); got != int(want) {
			t.Errorf("redisproto.KeySlot(%q) = %d, CLUSTER KEYSLOT says %d", keys[i], got, want)
		}
	}

	owner := map[int]string{}
	for _, m := range c.Masters(t) {
		for _, r := range m.SlotRanges {
			for slot := r[0]; slot <= r[1]; slot++ {
				owner[slot] = m.Addr
			}
		}
	}
	// A dead seed first: any reachable seed is enough.
	cfg := config.Config{}
	settings.SetClusters(&cfg, []settings.Cluster{{Addrs: append([]string{"127.0.0.1:1"}, c.Addrs()[1:2]...)}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	owners, err := ReadSlotOwners(ctx, settings.Clusters(&cfg)[0])
	if err != nil {
		t.Fatal(err)
	}
	for slot, got := range owners {
		want, ok := owner[slot]
		if !ok {
			want = NoOwner
		}
		if got != want {
			t.Errorf("slot %d: ReadSlotOwners says %s, the lab says %s", slot, got, want)
		}
	}
	if _, err := ReadSlotOwners(ctx, settings.Cluster{Addrs: []string{"127.0.0.1:1"}}); err == nil {
		t.Error("config without defaults: want an error")
	}
	cfg = config.Config{}
	settings.SetClusters(&cfg, []settings.Cluster{{Addrs: []string{"127.0.0.1:1"}}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSlotOwners(ctx, settings.Clusters(&cfg)[0]); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("no reachable seed: err = %v, want one naming the seed", err)
	}
}

// testVerbatimStrings checks that rueidis really hands back CLUSTER NODES,
// CLUSTER INFO and INFO with the RESP3 "txt:" prefix the parsers strip.
func testVerbatimStrings(t *testing.T, c *lab.RedisCluster) {
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: c.Addrs()[:1], ForceSingleClient: true, DisableCache: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	replies := client.DoMulti(ctx,
		client.B().ClusterNodes().Build(), client.B().ClusterInfo().Build(), client.B().Info().Section("replication").Build())
	for i, r := range replies {
		text, err := r.ToString()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(text, "txt:") {
			t.Errorf("%s reply does not start with txt: (%.20q); is the prefix handling still needed?", commandNames[i], text)
		}
	}
	text, _ := replies[1].ToString()
	if _, err := redisproto.ParseClusterInfo(text); err != nil {
		t.Errorf("parse real CLUSTER INFO: %v", err)
	}
}

// aclCommands is the minimal ACL the exporter needs, as documented in
// docs/redis.md.
const aclCommands = "+hello +ping +cluster|nodes +cluster|info +info +dbsize"

// testMinimalACL runs the exporter as a user allowed only the documented
// commands, and checks that the password never reaches the log.
func testMinimalACL(t *testing.T, c *lab.RedisCluster) {
	const password = "s3cret-Pa55word"
	for _, p := range c.Ports() {
		c.CLI(t, p, append([]string{"ACL", "SETUSER", "exporter", "reset", "on", ">" + password, "-@all"},
			strings.Fields(aclCommands)...)...)
	}
	defer func() {
		for _, p := range c.Ports() {
			c.CLI(t, p, "ACL", "DELUSER", "exporter")
		}
	}()
	t.Setenv("FAILOVER_EXPORTER_TEST_REDIS_PASSWORD", password)
	var logs bytes.Buffer
	withUser := func() func(*settings.Cluster, *log.Logger) {
		return func(cfg *settings.Cluster, logger *log.Logger) {
			cfg.Username = "exporter"
			cfg.Password = config.Secret{Env: "FAILOVER_EXPORTER_TEST_REDIS_PASSWORD"}
			*logger = log.NewLogfmtLogger(log.NewSyncWriter(&logs))
		}
	}
	e := startExporter(t, c.Addrs()[:1], withUser())
	e.waitHealthy(c, 0)

	t.Setenv("FAILOVER_EXPORTER_TEST_REDIS_PASSWORD", "wrong-"+password)
	bad := startExporter(t, c.Addrs()[:1], withUser())
	if err := bad.gather().expect(0, "redis_cluster_up"); err != nil {
		t.Error(err)
	}
	if logs.Len() == 0 {
		t.Error("a failing refresh logged nothing")
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the password appears in the log:\n%s", logs.String())
	}
	t.Logf("log of the failing exporter: %s", strings.TrimSpace(logs.String()))
}
