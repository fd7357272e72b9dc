package e2e

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// nodesProbe reads CLUSTER NODES from every given node every probeInterval
// over plain RESP, independently of the exporter, and records what the
// cluster itself says: the stopwatch for the failover histograms.
type nodesProbe struct {
	mu      sync.Mutex
	samples []nodesSample
	stop    chan struct{}
	done    chan struct{}
}

type nodesSample struct {
	at time.Time
	// lines are every answering node's CLUSTER NODES lines, split in fields.
	lines [][]string
}

func startNodesProbe(t *testing.T, addrs []string) *nodesProbe {
	t.Helper()
	p := &nodesProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ticker := time.NewTicker(probeInterval)
		defer ticker.Stop()
		for {
			s := nodesSample{at: time.Now()}
			for _, addr := range addrs {
				text, err := clusterNodes(addr)
				if err != nil {
					continue // a dead node says nothing
				}
				for _, line := range strings.Split(text, "\n") {
					if f := strings.Fields(line); len(f) >= 8 {
						s.lines = append(s.lines, f)
					}
				}
			}
			p.mu.Lock()
			p.samples = append(p.samples, s)
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(func() {
		close(p.stop)
		<-p.done
	})
	return p
}

// clusterNodes sends CLUSTER NODES and reads the bulk-string reply.
func clusterNodes(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	header, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(header, "$") {
		return "", fmt.Errorf("CLUSTER NODES from %s: %q", addr, header)
	}
	n, err := strconv.Atoi(strings.TrimSpace(header[1:]))
	if err != nil {
		return "", err
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// span returns the first span after since during which cond held for some
// sample, and whether it ended.
func (p *nodesProbe) span(since time.Time, cond func(nodesSample) bool) (start, end time.Time, ended bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.samples {
		if s.at.Before(since) || len(s.lines) == 0 {
			continue
		}
		switch {
		case start.IsZero() && cond(s):
			start = s.at
		case !start.IsZero() && !cond(s):
			return start, s.at, true
		}
	}
	return start, time.Time{}, false
}

// flagged reports whether some node's view flags id PFAIL or FAIL.
func (s nodesSample) flagged(id string) bool {
	for _, f := range s.lines {
		if f[0] == id && (strings.Contains(f[2], "fail")) {
			return true
		}
	}
	return false
}

// servesSlots reports whether the views that mention id all see it as a
// master owning slots and not failing: promoted and serving.
func (s nodesSample) servesSlots(id string) bool {
	seen := false
	for _, f := range s.lines {
		if f[0] != id {
			continue
		}
		seen = true
		if !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") || len(f) < 9 {
			return false
		}
	}
	return seen
}

// TestRedisFailoverDuration kills a real master and checks the failover
// and unserved-slot histograms against the cluster's own timeline, read
// from CLUSTER NODES of every node every 100 ms: from the first view
// flagging the master PFAIL or FAIL to every view showing its replica a
// master serving slots. The event log has the story in order.
func TestRedisFailoverDuration(t *testing.T) {
	const refresh = 500 * time.Millisecond
	tolerate := refresh + 2*probeInterval
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	e := exportertest.Start(t, "--redis.addr="+strings.Join(c.Addrs(), ","), "--redis.cluster-name=lab", "--refresh.interval="+refresh.String())
	waitMetrics(t, e, 30*time.Second, "6 nodes, all slots ok", func(m exportertest.Metrics) (bool, string) {
		ok, _ := m.Value("redis_cluster_slots", map[string]string{"state": "ok"})
		nodes, _ := m.Value("redis_cluster_known_nodes", nil)
		return ok == 16384 && nodes == 6, m.Describe("redis_cluster_slots", nil)
	})
	probe := startNodesProbe(t, c.Addrs())

	victim := c.Masters(t)[0]
	var replica lab.RedisNode
	for _, n := range c.Nodes(t) {
		if n.MasterID == victim.ID {
			replica = n
		}
	}
	if replica.ID == "" {
		t.Fatalf("master %s has no replica", victim.Addr)
	}
	killedAt := time.Now()
	c.Kill(t, victim.Port)
	m, took := waitMetrics(t, e, 60*time.Second, "one failover observed", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("redis_cluster_failover_seconds_count", nil)
		return n >= 1, m.Describe("redis_cluster_node_slots", nil)
	})
	t.Logf("kill -9 of master %s to the failover histogram: %s", victim.Addr, took.Round(10*time.Millisecond))
	// Let the probe see every view agree.
	time.Sleep(time.Second)

	flagStart, _, _ := probe.span(killedAt, func(s nodesSample) bool { return s.flagged(victim.ID) })
	promotedAt, _, _ := probe.span(killedAt, func(s nodesSample) bool { return s.servesSlots(replica.ID) })
	if flagStart.IsZero() || promotedAt.IsZero() {
		t.Fatalf("the probe saw no complete failover: flagged at %v, replica serving at %v", flagStart, promotedAt)
	}
	measured := promotedAt.Sub(flagStart)
	count := value(t, m, "redis_cluster_failover_seconds_count", nil)
	sum := value(t, m, "redis_cluster_failover_seconds_sum", nil)
	t.Logf("FIGURE redis failover (node timeout %s): cluster views measured %s from first PFAIL/FAIL flag to replica serving, exporter observed %.2fs (refresh %s)",
		c.NodeTimeout(), measured.Round(10*time.Millisecond), sum, refresh)
	if count != 1 {
		t.Errorf("failovers observed = %v, want 1", count)
	}
	if diff := math.Abs(sum - measured.Seconds()); diff > tolerate.Seconds() {
		t.Errorf("failover took %.2fs per the exporter, %s per the cluster's views: off by %.2fs, more than %s", sum, measured, diff, tolerate)
	}
	if _, open := m.Value("redis_cluster_failover_open_episode_seconds", nil); open {
		t.Errorf("a failover is still open after the promotion")
	}

	unservedStart, unservedEnd, ended := probe.span(killedAt, func(s nodesSample) bool { return s.flagged(victim.ID) && !s.servesSlots(replica.ID) })
	m = e.Scrape(t)
	if n, ok := m.Value("redis_cluster_slots_unserved_episode_seconds_count", nil); !ok || n != 1 || !ended {
		t.Errorf("unserved-slot episodes = %v (present %v), want 1; probe span ended %v", n, ok, ended)
	} else {
		got := value(t, m, "redis_cluster_slots_unserved_episode_seconds_sum", nil)
		measured := unservedEnd.Sub(unservedStart)
		t.Logf("FIGURE redis unserved slots: cluster views measured %s, exporter observed %.2fs", measured.Round(10*time.Millisecond), got)
		if diff := math.Abs(got - measured.Seconds()); diff > tolerate.Seconds() {
			t.Errorf("slots unserved for %.2fs per the exporter, %s per the cluster's views", got, measured)
		}
	}

	evs := fetchEvents(t, e, "?cluster=lab")
	flaggedAt := -1
	for i, ev := range evs {
		if (ev.Kind == "node_pfail" || ev.Kind == "node_fail") && ev.Subject.NodeID == victim.ID {
			flaggedAt = i // the oldest such event: the list is newest first
		}
	}
	promotion := -1
	for i, ev := range evs {
		if ev.Kind == "promotion" && ev.Subject.NodeID == replica.ID {
			promotion = i
			break
		}
	}
	if flaggedAt < 0 || promotion < 0 || promotion > flaggedAt {
		t.Errorf("events: want the master flagged, then its replica promoted (newest first: promotion at a lower index); flagged at %d, promotion at %d:\n%s",
			flaggedAt, promotion, describeEvents(evs))
	}
}

// TestRedisRestartMidOutage kills a master that has no replica (its slots
// stay unserved until it returns) and restarts one of two exporters in the
// middle: the restarted one reports the open episode from its first
// refresh and observes nothing when the master comes back, since it never
// saw the outage begin; the one that ran throughout observes one episode
// as long as the cluster's views show.
func TestRedisRestartMidOutage(t *testing.T) {
	const refresh = 500 * time.Millisecond
	tolerate := refresh + 2*probeInterval
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3})
	args := []string{"--redis.addr=" + strings.Join(c.Addrs(), ","), "--redis.cluster-name=lab", "--refresh.interval=" + refresh.String()}
	steady := exportertest.Start(t, args...)
	restarted := exportertest.Start(t, args...)
	for _, e := range []*exportertest.Exporter{steady, restarted} {
		waitMetrics(t, e, 30*time.Second, "all slots ok", func(m exportertest.Metrics) (bool, string) {
			ok, _ := m.Value("redis_cluster_slots", map[string]string{"state": "ok"})
			return ok == 16384, m.Describe("redis_cluster_slots", nil)
		})
	}
	probe := startNodesProbe(t, c.Addrs())
	victim := c.Masters(t)[0]
	killedAt := time.Now()
	c.Kill(t, victim.Port)
	waitMetrics(t, steady, 30*time.Second, "slots unserved", func(m exportertest.Metrics) (bool, string) {
		_, open := m.Value("redis_cluster_slots_unserved_open_episode_seconds", nil)
		return open, m.Describe("redis_cluster_slots", nil)
	})

	restarted.Stop()
	restartedAt := time.Now()
	restarted = exportertest.Start(t, args...)
	restarted.WaitReady(t, 30*time.Second)
	first := restarted.Scrape(t)
	age, open := first.Value("redis_cluster_slots_unserved_open_episode_seconds", nil)
	if !open {
		t.Errorf("the restarted exporter's first refresh does not report the outage:\n%s", first.Describe("redis_cluster_slots", nil))
	} else if age > time.Since(restartedAt).Seconds() {
		t.Errorf("the restarted exporter reports an outage %.1fs old, older than itself (%s)", age, time.Since(restartedAt))
	}
	if _, open := first.Value("redis_cluster_failover_open_episode_seconds", nil); !open {
		t.Errorf("the restarted exporter does not report the master failing without a replica taking over")
	}

	time.Sleep(time.Second)
	c.Restart(t, victim.Port)
	m, _ := waitMetrics(t, steady, 60*time.Second, "one unserved-slot episode", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("redis_cluster_slots_unserved_episode_seconds_count", nil)
		return n >= 1, m.Describe("redis_cluster_slots", nil)
	})
	time.Sleep(time.Second) // let the probe see the slots served
	start, end, ended := probe.span(killedAt, func(s nodesSample) bool { return s.flagged(victim.ID) })
	if !ended {
		t.Fatalf("the probe saw no end of the outage (started %v)", start)
	}
	measured := end.Sub(start)
	sum := value(t, m, "redis_cluster_slots_unserved_episode_seconds_sum", nil)
	t.Logf("FIGURE redis master without replica killed and restarted: cluster views measured %s of PFAIL/FAIL, exporter observed %.2fs unserved", measured.Round(10*time.Millisecond), sum)
	if n := value(t, m, "redis_cluster_slots_unserved_episode_seconds_count", nil); n != 1 {
		t.Errorf("unserved-slot episodes = %v, want 1", n)
	}
	if diff := math.Abs(sum - measured.Seconds()); diff > tolerate.Seconds() {
		t.Errorf("slots unserved for %.2fs per the exporter, %s per the cluster's views", sum, measured)
	}
	if n := value(t, m, "redis_cluster_failover_seconds_count", nil); n != 0 {
		t.Errorf("a master that came back without a replica taking over was timed as a failover")
	}

	after, _ := waitMetrics(t, restarted, 30*time.Second, "the restarted exporter sees the slots served", func(m exportertest.Metrics) (bool, string) {
		_, open := m.Value("redis_cluster_slots_unserved_open_episode_seconds", nil)
		return !open, m.Describe("redis_cluster_slots", nil)
	})
	// Served at zero from its first refresh, and still zero.
	if n := value(t, after, "redis_cluster_slots_unserved_episode_seconds_count", nil); n != 0 {
		t.Errorf("the restarted exporter observed %v unserved-slot episodes whose start it never saw", n)
	}
}
