package redis

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// lockedBuffer is a log sink the test reads while the watcher writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// withSlotStatsTop turns on the hot slots and captures the exporter's log.
func withSlotStatsTop(top int, logs *lockedBuffer) func(*settings.Cluster, *log.Logger) {
	return func(cfg *settings.Cluster, logger *log.Logger) {
		cfg.SlotStats.Top = top
		*logger = log.NewLogfmtLogger(logs)
	}
}

// hotSlotSeries is one redis_cluster_slot_* series: the master's address
// and the slot.
type hotSlotSeries struct {
	addr string
	slot int
}

// hotSlots returns the series of a hot-slot family by master and slot.
func (s sample) hotSlots(t *testing.T, name string) map[hotSlotSeries]float64 {
	t.Helper()
	out := map[hotSlotSeries]float64{}
	f, ok := s[name]
	if !ok {
		return out
	}
	for _, m := range f.GetMetric() {
		var key hotSlotSeries
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "address":
				key.addr = l.GetValue()
			case "slot":
				slot, err := strconv.Atoi(l.GetValue())
				if err != nil {
					t.Fatalf("%s: slot label %q", name, l.GetValue())
				}
				key.slot = slot
			}
		}
		out[key] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return out
}

// TestHotSlots checks the slot_stats series against the server's own count
// on Valkey 8.1 (CLUSTER SLOT-STATS is Valkey 8.0+), whatever
// REDIS_LAB_SERVER says, and that on Redis 7.0, which lacks the command,
// the refresh still succeeds with the series absent and one log line.
func TestHotSlots(t *testing.T) {
	skipIfShort(t)
	t.Run("valkey 8.1 agrees with COUNTKEYSINSLOT", testHotSlotsValkey)
	t.Run("redis 7.0 has no SLOT-STATS", testHotSlotsUnsupported)
}

func testHotSlotsValkey(t *testing.T) {
	const top = 3
	c := lab.StartRedisCluster(t, lab.RedisOptions{Server: "valkey", Masters: 3, Replicas: 1})
	for _, p := range c.Ports() {
		c.CLI(t, p, "CONFIG", "SET", "cluster-slot-stats-enabled", "yes")
	}
	masters := c.Masters(t)
	// Per master, five slots with 40, 25, 10, 3 and 1 keys: the top 3 are
	// served, the other two not. Each slot's keys share a hash tag, so one
	// MSET writes them.
	counts := []int{40, 25, 10, 3, 1}
	slotsOf := map[int][]int{} // master port -> its chosen slots, as counts
	tags := map[int]string{}   // slot -> hash tag
	for i := 0; len(tags) < len(masters)*len(counts); i++ {
		tag := "hs" + strconv.Itoa(i)
		slot := redisproto.KeySlot(tag)
		if _, taken := tags[slot]; taken {
			continue
		}
		for _, m := range masters {
			if m.OwnsSlot(slot) && len(slotsOf[m.Port]) < len(counts) {
				tags[slot] = tag
				slotsOf[m.Port] = append(slotsOf[m.Port], slot)
			}
		}
	}
	write := func(port, slot, keys int) {
		args := []string{"MSET"}
		for k := range keys {
			args = append(args, fmt.Sprintf("{%s}:%d", tags[slot], k), "v")
		}
		c.CLI(t, port, args...)
	}
	for port, slots := range slotsOf {
		for i, slot := range slots {
			write(port, slot, counts[i])
		}
	}

	logs := &lockedBuffer{}
	e := startExporter(t, c.Addrs()[:1], withSlotStatsTop(top, logs))
	e.waitHealthy(c, 1)
	// agree checks the served hot slots against COUNTKEYSINSLOT on every
	// master: its top slots by that count, and each value.
	agree := func() error {
		s := e.gather()
		keys := s.hotSlots(t, "redis_cluster_slot_keys")
		for _, m := range masters {
			type slotKeys struct{ slot, keys int }
			var truth []slotKeys
			for _, slot := range slotsOf[m.Port] {
				n, err := strconv.Atoi(c.CLI(t, m.Port, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)))
				if err != nil {
					return err
				}
				truth = append(truth, slotKeys{slot, n})
			}
			sort.Slice(truth, func(i, j int) bool { return truth[i].keys > truth[j].keys })
			var want, got []string
			for _, sk := range truth[:top] {
				want = append(want, fmt.Sprintf("%d:%d", sk.slot, sk.keys))
			}
			for k, v := range keys {
				if k.addr == m.Addr {
					got = append(got, fmt.Sprintf("%d:%g", k.slot, v))
				}
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				return fmt.Errorf("master %s: exporter's hot slots (slot:keys) %v, COUNTKEYSINSLOT's top %d %v", m.Addr, got, top, want)
			}
		}
		if len(keys) != top*len(masters) {
			return fmt.Errorf("%d redis_cluster_slot_keys series, want %d (top %d of %d masters): %v", len(keys), top*len(masters), top, len(masters), keys)
		}
		return nil
	}
	lab.RedisWaitFor(t, 10*time.Second, "hot slots agree with COUNTKEYSINSLOT", agree)

	// The usage counters (cluster-slot-stats-enabled is on): at most top
	// slots per master, each one the MSETs wrote to.
	s := e.gather()
	for _, name := range []string{"redis_cluster_slot_cpu_seconds_total", "redis_cluster_slot_network_received_bytes_total", "redis_cluster_slot_network_sent_bytes_total"} {
		series := s.hotSlots(t, name)
		if len(series) == 0 || len(series) > top*len(masters) {
			t.Errorf("%s: %d series, want 1 to %d", name, len(series), top*len(masters))
		}
		for k, v := range series {
			if _, written := tags[k.slot]; !written || v <= 0 {
				t.Errorf("%s{address=%s,slot=%d} = %g: want a positive value for a slot the test wrote to", name, k.addr, k.slot, v)
			}
		}
	}

	// A slot that overtakes: the fourth slot of the first master gets 100
	// more keys and the third drops out of its top.
	m := masters[0]
	write(m.Port, slotsOf[m.Port][3], 100)
	lab.RedisWaitFor(t, 10*time.Second, "hot slots follow a slot that grew", agree)
	// It is now the cluster's hottest slot, first on the status page too,
	// with the server's count.
	grown := slotsOf[m.Port][3]
	count := c.CLI(t, m.Port, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(grown))
	snap := e.w.Current().Snapshot
	if snap == nil {
		t.Fatal("no snapshot after the hot slots agreed")
	}
	km := newClusterView(snap).Keys
	if km == nil || len(km.Hot) == 0 || km.Hot[0].Slot != grown || strconv.FormatInt(km.Hot[0].Keys, 10) != count || km.Hot[0].Owner != m.Addr {
		t.Errorf("status page's hottest slots %+v, want slot %d with %s keys (COUNTKEYSINSLOT) on %s first", km, grown, count, m.Addr)
	}

	// Sent to masters only.
	for _, n := range c.Nodes(t) {
		stats := c.CLI(t, n.Port, "INFO", "commandstats")
		asked := strings.Contains(stats, "cmdstat_cluster|slot-stats:")
		if asked != n.Master {
			t.Errorf("node %s (master %v): CLUSTER SLOT-STATS in its commandstats: %v", n.Addr, n.Master, asked)
		}
	}
	testHotSlotsACL(t, c)
	if out := logs.String(); strings.Contains(out, "not supported here") || strings.Contains(out, "allow +cluster|slot-stats") {
		t.Errorf("the exporter warned about SLOT-STATS on a server that has it:\n%s", out)
	}
}

func testHotSlotsUnsupported(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Server: "redis", Masters: 3, Replicas: 0})
	logs := &lockedBuffer{}
	e := startExporter(t, c.Addrs()[:1], withSlotStatsTop(3, logs))
	e.waitHealthy(c, 0)
	// Several refreshes, all successful, none with hot slots.
	var refreshes float64
	lab.RedisWaitFor(t, 10*time.Second, "five refreshes", func() error {
		s := e.gather()
		refreshes, _ = s.value("redis_cluster_exporter_refreshes_total")
		if refreshes < 5 {
			return fmt.Errorf("%g refreshes", refreshes)
		}
		return nil
	})
	s := e.gather()
	if err := firstError(s.expect(1, "redis_cluster_up"), s.expect(0, "redis_cluster_exporter_refresh_failures_total")); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"redis_cluster_slot_keys", "redis_cluster_slot_cpu_seconds_total", "redis_cluster_slot_network_received_bytes_total", "redis_cluster_slot_network_sent_bytes_total"} {
		if _, ok := s[name]; ok {
			t.Errorf("%s served by a server without CLUSTER SLOT-STATS", name)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "CLUSTER SLOT-STATS is not supported here"); n != 1 {
		t.Errorf("after %g refreshes the missing command was logged %d times, want once:\n%s", refreshes, n, out)
	}
	t.Logf("the exporter's log line: %s", strings.TrimSpace(out))
}

// testHotSlotsACL runs the exporter as the documented minimal ACL user
// with +cluster|slot-stats (docs/redis.md), which reads the hot slots, and
// without it, which reads the rest and says once what to allow.
func testHotSlotsACL(t *testing.T, c *lab.RedisCluster) {
	const password = "hot-Sl0ts"
	for _, p := range c.Ports() {
		for user, extra := range map[string]string{"hot": " +cluster|slot-stats", "cold": ""} {
			c.CLI(t, p, append([]string{"ACL", "SETUSER", user, "reset", "on", ">" + password, "-@all"}, strings.Fields(aclCommands+extra)...)...)
		}
	}
	t.Setenv("FAILOVER_EXPORTER_TEST_REDIS_PASSWORD", password)
	as := func(user string, logs *lockedBuffer) func(*settings.Cluster, *log.Logger) {
		return func(cfg *settings.Cluster, logger *log.Logger) {
			withSlotStatsTop(3, logs)(cfg, logger)
			cfg.Username = user
			cfg.Password = config.Secret{Env: "FAILOVER_EXPORTER_TEST_REDIS_PASSWORD"}
		}
	}
	hotLogs, coldLogs := &lockedBuffer{}, &lockedBuffer{}
	hot := startExporter(t, c.Addrs()[:1], as("hot", hotLogs))
	cold := startExporter(t, c.Addrs()[:1], as("cold", coldLogs))
	hot.waitHealthy(c, 1)
	cold.waitHealthy(c, 1)
	lab.RedisWaitFor(t, 10*time.Second, "hot slots read with +cluster|slot-stats", func() error {
		if n := len(hot.gather().hotSlots(t, "redis_cluster_slot_keys")); n == 0 {
			return fmt.Errorf("no redis_cluster_slot_keys series")
		}
		return nil
	})
	lab.RedisWaitFor(t, 10*time.Second, "three refreshes without +cluster|slot-stats", func() error {
		if n, _ := cold.gather().value("redis_cluster_exporter_refreshes_total"); n < 3 {
			return fmt.Errorf("%g refreshes", n)
		}
		return nil
	})
	s := cold.gather()
	if err := firstError(s.expect(1, "redis_cluster_up"), s.expect(0, "redis_cluster_exporter_refresh_failures_total")); err != nil {
		t.Error(err)
	}
	if _, ok := s["redis_cluster_slot_keys"]; ok {
		t.Error("hot slots served to a user refused CLUSTER SLOT-STATS")
	}
	if n := strings.Count(coldLogs.String(), "allow +cluster|slot-stats"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, coldLogs.String())
	}
	if strings.Contains(hotLogs.String()+coldLogs.String(), password) {
		t.Error("the password appears in the log")
	}
}
