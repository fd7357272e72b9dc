package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// leaseCanaryInterval is the canary interval of the lease tests: its lease
// lasts a third of it (333 ms), and the takeover must come within two.
const leaseCanaryInterval = time.Second

// canarySeries names one system's canary series the lease tests read.
type canarySeries struct {
	leader, acked, lost string
}

var (
	redisCanarySeries = canarySeries{"redis_canary_leader", "redis_canary_writes_acknowledged_total", "redis_canary_acknowledged_lost_writes_total"}
	kafkaCanarySeries = canarySeries{"kafka_canary_leader", "kafka_canary_produce_acknowledged_total", "kafka_canary_acknowledged_lost_total"}
)

// acknowledged is what an exporter serves of acknowledged canary writes,
// over every master or partition; served false when it serves none (it
// does not hold the lease).
func (c canarySeries) acknowledged(m exportertest.Metrics) (float64, bool) {
	s := m.Series(c.acked, nil)
	total := 0.0
	for _, x := range s {
		total += x.Value
	}
	return total, len(s) > 0
}

// leaderValue is an exporter's *_canary_leader, -1 when not served.
func (c canarySeries) leaderValue(m exportertest.Metrics) float64 {
	if v, ok := m.Value(c.leader, nil); ok {
		return v
	}
	return -1
}

// lostSeries are the series of acknowledged writes counted lost that are
// not 0.
func (c canarySeries) lostSeries(m exportertest.Metrics) []exportertest.Sample {
	var out []exportertest.Sample
	for _, s := range m.Series(c.lost, nil) {
		if s.Value != 0 {
			out = append(out, s)
		}
	}
	return out
}

// waitOneLeader waits until exactly one of es holds the canary lease and
// has acknowledged at least acked writes, and returns it.
func (c canarySeries) waitOneLeader(t *testing.T, timeout time.Duration, acked float64, es ...*exportertest.Exporter) *exportertest.Exporter {
	t.Helper()
	var leader *exportertest.Exporter
	var last string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		leader, last = nil, ""
		leaders := 0
		for i, e := range es {
			m, err := e.TryScrape()
			if err != nil {
				last += fmt.Sprintf("exporter %d: %v; ", i, err)
				continue
			}
			l := c.leaderValue(m)
			n, _ := c.acknowledged(m)
			last += fmt.Sprintf("exporter %d: leader %v, %v acknowledged; ", i, l, n)
			if l == 1 && n >= acked {
				leader = e
			}
			if l == 1 {
				leaders++
			}
		}
		if leader != nil && leaders == 1 {
			return leader
		}
	}
	t.Fatalf("no single canary leader writing within %s: %s", timeout, last)
	return nil
}

// waitTakeover waits at most timeout from since for e to hold the lease
// and serve acknowledged writes (scraped every 20 ms), and returns how long
// after since it did.
func (c canarySeries) waitTakeover(t *testing.T, e *exportertest.Exporter, since time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	for deadline := since.Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		if m, err := e.TryScrape(); err == nil {
			if acked, _ := c.acknowledged(m); c.leaderValue(m) == 1 && acked > 0 {
				return time.Since(since)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no takeover within %s:\n%s", timeout, e.Logs())
		}
	}
}

// checkAfterWake checks, once a stopped writer woke, that it serves
// leader 0 and no write counters and logged that it lost the lease, and
// that the standby that took over leads and counted no write lost.
func (c canarySeries) checkAfterWake(t *testing.T, collector string, woken, standby *exportertest.Exporter) {
	t.Helper()
	m := woken.Scrape(t)
	if l := c.leaderValue(m); l != 0 {
		t.Errorf("the woken writer serves %s %v, want 0", c.leader, l)
	}
	if _, served := c.acknowledged(m); served {
		t.Error("the woken writer serves write counters")
	}
	if !logLineWith(woken.Logs(), "collector="+collector, `msg="canary lease lost: this exporter stops writing the canary"`) {
		t.Errorf("the woken writer did not log that it lost the lease:\n%s", woken.Logs())
	}
	ms := standby.Scrape(t)
	if lost := c.lostSeries(ms); len(lost) > 0 {
		t.Errorf("the standby counted acknowledged writes lost: %v", lost)
	}
	if l := c.leaderValue(ms); l != 1 {
		t.Errorf("the standby serves %s %v after the writer woke, want 1", c.leader, l)
	}
}

// canaryValues reads every master's canary key.
func canaryValues(t *testing.T, c *lab.RedisCluster, masters []lab.RedisNode) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, m := range masters {
		for _, key := range strings.Fields(c.CLI(t, m.Port, "--scan", "--pattern", "__failover_exporter_canary:{*")) {
			v, err := strconv.ParseUint(c.CLI(t, m.Port, "get", key), 10, 64)
			if err == nil {
				out[key] = v
			}
		}
	}
	return out
}

// startRedisLeaseExporters starts two exporters with the canary on (at
// leaseCanaryInterval) against the Redis lab c, as it is set up (the
// cut-off test has its masters announce proxies first), waits until one
// of them holds the lease and writes, and returns it and the other, with
// the config file they read (to start a third).
func startRedisLeaseExporters(t *testing.T, c *lab.RedisCluster) (writer, other *exportertest.Exporter, cfg string) {
	t.Helper()
	cfg = faultConfig(t, fmt.Sprintf(`redis:
  - name: lab
    addrs: [%s]
    refresh_interval: 500ms
    canary: {enabled: true, interval: %s}
`, strings.Join(c.Addrs(), ", "), leaseCanaryInterval))
	a := exportertest.Start(t, "--config.file="+cfg)
	b := exportertest.Start(t, "--config.file="+cfg)
	writer = redisCanarySeries.waitOneLeader(t, 30*time.Second, 6, a, b)
	if writer == a {
		return a, b, cfg
	}
	return b, a, cfg
}

// TestRedisCanaryLeaseTwoExporters runs two exporters with the canary on
// against one real Redis Cluster: one writes, the other serves
// redis_canary_leader 0 and no write counters. kill -9 of the writer: the
// other takes over within two canary intervals, counting no acknowledged
// write lost for the takeover. SIGSTOP of the writer for longer than its
// lease: the other takes over, and the woken one writes nothing (every
// canary key's value only rises, which a stale writer's lower values would
// break) and serves leader 0.
func TestRedisCanaryLeaseTwoExporters(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	holder, other, cfg := startRedisLeaseExporters(t, c)
	masters := c.Masters(t)
	if m := other.Scrape(t); redisCanarySeries.leaderValue(m) != 0 {
		t.Errorf("the other exporter serves redis_canary_leader %v, want 0", redisCanarySeries.leaderValue(m))
	} else if _, served := redisCanarySeries.acknowledged(m); served {
		t.Errorf("the exporter without the lease serves write counters")
	}

	// kill -9 of the writer.
	killedAt := time.Now()
	if err := holder.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	tookOver := redisCanarySeries.waitTakeover(t, other, killedAt, 10*2*leaseCanaryInterval)
	t.Logf("FIGURE redis canary lease: kill -9 of the writer -> the other's first acknowledged write after %s (canary interval %s, requirement two intervals)",
		tookOver.Round(10*time.Millisecond), leaseCanaryInterval)
	waitMetrics(t, other, 10*time.Second, "writes to every master after the takeover", func(m exportertest.Metrics) (bool, string) {
		var short []string
		for _, master := range masters {
			if v, _ := m.Value("redis_canary_writes_acknowledged_total", map[string]string{"node_id": master.ID}); v < 3 {
				short = append(short, fmt.Sprintf("%s: %v", master.Addr, v))
			}
		}
		return len(short) == 0, strings.Join(short, ", ")
	})
	for _, s := range other.Scrape(t).Series("redis_canary_acknowledged_lost_writes_total", nil) {
		if s.Value != 0 {
			t.Errorf("the takeover counted acknowledged writes lost: %v", s)
		}
	}

	// A standby again, then SIGSTOP of the writer for six leases.
	standby := exportertest.Start(t, "--config.file="+cfg)
	if redisCanarySeries.waitOneLeader(t, 30*time.Second, 6, other, standby) != other {
		t.Fatal("the standby took the lease from a live writer")
	}
	if err := other.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	waitMetrics(t, standby, 10*2*leaseCanaryInterval, "the standby writing while the writer is stopped", func(m exportertest.Metrics) (bool, string) {
		acked, _ := redisCanarySeries.acknowledged(m)
		return redisCanarySeries.leaderValue(m) == 1 && acked >= 3, fmt.Sprintf("leader %v, %v acknowledged", redisCanarySeries.leaderValue(m), acked)
	})
	t.Logf("FIGURE redis canary lease: SIGSTOP of the writer -> the standby writing (3 acknowledged) after %s", time.Since(stoppedAt).Round(10*time.Millisecond))
	time.Sleep(time.Until(stoppedAt.Add(2 * time.Second)))
	if err := other.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// For three intervals after it wakes, every key only rises: the woken
	// writer's next values would be lower than the standby's.
	prev := canaryValues(t, c, masters)
	for end := time.Now().Add(3 * leaseCanaryInterval); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		now := canaryValues(t, c, masters)
		for key, v := range now {
			if v < prev[key] {
				t.Errorf("canary key %s went from %d to %d after the stopped writer woke: a stale write landed", key, prev[key], v)
			}
		}
		prev = now
	}
	redisCanarySeries.checkAfterWake(t, "redis_canary", other, standby)
}

// TestRedisCanaryLeaseHolderCutOff cuts the canary's writer off the
// masters by the network alone: every master announces the port of a TCP
// proxy of the test's (cluster-announce-port; the cluster bus stays
// direct), so both exporters reach the masters through the proxies, and
// the proxies hold the writer's connections alone (found by their sockets
// in /proc): timeouts, no reset. The lease moves to the other exporter
// within two canary intervals, no write of the cut-off writer lands (every
// canary key's value only rises, through the cut and after it ends), and
// once reconnected it stands by.
func TestRedisCanaryLeaseHolderCutOff(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	masters := c.Masters(t)
	var proxies []*lab.Proxy
	for _, m := range masters {
		p := lab.StartProxy(t, "127.0.0.1:0", m.Addr)
		proxies = append(proxies, p)
		_, port, _ := strings.Cut(p.Addr, ":")
		c.CLI(t, m.Port, "CONFIG", "SET", "cluster-announce-port", port)
	}
	lab.RedisWaitFor(t, 30*time.Second, "every node lists the masters at their proxies", func() error {
		for _, addr := range c.Addrs() {
			text, err := clusterNodes(addr)
			if err != nil {
				return err
			}
			for i, m := range masters {
				if !strings.Contains(text, m.ID+" "+proxies[i].Addr+"@") {
					return fmt.Errorf("%s does not list %s at %s yet", addr, m.ID, proxies[i].Addr)
				}
			}
		}
		return nil
	})
	writer, other, _ := startRedisLeaseExporters(t, c)
	series := redisCanarySeries

	cutAt := time.Now()
	for _, p := range proxies {
		p.Cut(writer.PID())
	}
	// Every key only rises from the cut on: a write of the cut-off writer
	// landing after the other's would lower it.
	prev := canaryValues(t, c, masters)
	watchKeys := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			now := canaryValues(t, c, masters)
			for key, v := range now {
				if v < prev[key] {
					t.Errorf("canary key %s went from %d to %d: a stale write landed", key, prev[key], v)
				}
			}
			prev = now
		}
	}
	took := series.waitTakeover(t, other, cutAt, 10*2*leaseCanaryInterval)
	t.Logf("FIGURE redis canary lease: writer cut off the masters (proxies hold its connections) -> the other's first acknowledged write after %s (canary interval %s, requirement two intervals)",
		took.Round(10*time.Millisecond), leaseCanaryInterval)
	watchKeys(3 * leaseCanaryInterval)
	for _, p := range proxies {
		p.Restore()
	}
	watchKeys(3 * leaseCanaryInterval) // the writer reconnected, as a standby
	series.checkAfterWake(t, "redis_canary", writer, other)
}

// TestRedisCanaryLeaseTakeoverStillCountsALoss is the seed's lost-write
// scenario across a takeover: a master's replica is cut off, the writer's
// writes to that master are acknowledged, the writer is killed (kill -9)
// and the other exporter takes over and writes to it too, then the master
// is killed and the replica promoted without any of them. The new holder
// counts them all lost, its predecessor's included: it read them on the
// master when it took over.
func TestRedisCanaryLeaseTakeoverStillCountsALoss(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	writer, other, _ := startRedisLeaseExporters(t, c)
	series := redisCanarySeries
	master := c.Masters(t)[0]
	var replica lab.RedisNode
	for _, n := range c.Nodes(t) {
		if n.MasterID == master.ID {
			replica = n
		}
	}
	node := map[string]string{"node_id": master.ID}
	acked := func(e *exportertest.Exporter) uint64 {
		v, _ := e.Scrape(t).Value(series.acked, node)
		return uint64(v)
	}

	// The replica stops taking the master's writes, and the writer's writes
	// are acknowledged all the same; then the writer is killed, and its
	// successor's are acknowledged too, until the master is killed.
	counting, writerAtKill := writer, uint64(0)
	atPause, byHolder := c.BurstKillPromote(t, master, replica, 2*leaseCanaryInterval, func() uint64 { return acked(counting) }, func() {
		time.Sleep(5 * leaseCanaryInterval)
		writerAtKill = acked(writer)
		if err := writer.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		counting = other
		series.waitTakeover(t, other, time.Now(), 10*2*leaseCanaryInterval)
		waitMetrics(t, other, 20*time.Second, "the new holder's writes to the master", func(m exportertest.Metrics) (bool, string) {
			v, _ := m.Value(series.acked, node)
			return v >= 2, fmt.Sprint(v, " acknowledged")
		})
	})
	byWriter := writerAtKill - atPause
	m, _ := waitMetrics(t, other, 30*time.Second, "the loss counted", func(m exportertest.Metrics) (bool, string) {
		v, _ := m.Value(series.lost, node)
		return v > 0, m.Describe(series.lost, nil)
	})
	lostValue, _ := m.Value(series.lost, node)
	lost := uint64(lostValue)
	t.Logf("FIGURE redis canary lease: writes acknowledged while the replica was cut off: %v by the killed writer, %v by its successor; the successor counted %v lost",
		byWriter, byHolder, lost)
	// Give or take the write in flight at each end, and the last before
	// the pause that had not reached the replica.
	if want := byWriter + byHolder; lost+2 < want || lost > want+2 {
		t.Errorf("%v acknowledged writes counted lost, want about %v (%v of the killed writer's, %v of its successor's)", lost, want, byWriter, byHolder)
	}
	if lost <= byHolder+1 {
		t.Errorf("%v counted lost: the successor's own %v at most, none of the %v its predecessor had acknowledged", lost, byHolder, byWriter)
	}
}
