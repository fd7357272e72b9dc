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
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// nodesProbe reads CLUSTER NODES from every given node every probeInterval
// over plain RESP, independently of the exporter, and records what the
// cluster itself says: when a failover ended, for the failover histograms.
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
			// All nodes at once; the sample is dated by the last answer,
			// so that a hung node (read until its deadline) delays neither
			// the other reads nor, wrongly, the sample's time.
			var s nodesSample
			texts := make([]string, len(addrs))
			answered := make([]time.Time, len(addrs))
			var wg sync.WaitGroup
			for i, addr := range addrs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if text, err := clusterNodes(addr); err == nil { // a dead node says nothing
						texts[i], answered[i] = text, time.Now()
					}
				}()
			}
			wg.Wait()
			for i, text := range texts {
				if answered[i].After(s.at) {
					s.at = answered[i]
				}
				for _, line := range strings.Split(text, "\n") {
					if f := strings.Fields(line); len(f) >= 8 {
						s.lines = append(s.lines, f)
					}
				}
			}
			if s.at.IsZero() {
				s.at = time.Now()
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
	_ = conn.SetDeadline(time.Now().Add(200 * time.Millisecond)) // a healthy node on loopback answers in milliseconds
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

// TestRedisFailoverDuration kills a real master by PID, then stops
// another with SIGSTOP, and checks the failover and unserved-slot
// histograms against the kill's own clock: from the moment the test
// signalled the master to the first moment every view of the cluster
// (CLUSTER NODES of every node every 100 ms, read by the test) showed its
// replica a master serving slots. The exporter's episodes begin at its
// first failed query of the master, once the cluster flags it, so they
// agree with that clock within one refresh; the cluster's own flag comes
// a node timeout later (2 s here). The event log has the story in order,
// with the first failure on the flag's event.
func TestRedisFailoverDuration(t *testing.T) {
	const refresh = 500 * time.Millisecond
	tolerate := refresh + 2*probeInterval
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1, NodeTimeout: 2 * time.Second})
	e := exportertest.Start(t, "--redis.addr="+strings.Join(c.Addrs(), ","), "--redis.cluster-name=lab", "--refresh.interval="+refresh.String())
	waitMetrics(t, e, 30*time.Second, "6 nodes, all slots ok", func(m exportertest.Metrics) (bool, string) {
		ok, _ := m.Value("redis_cluster_slots", map[string]string{"state": "ok"})
		nodes, _ := m.Value("redis_cluster_known_nodes", nil)
		return ok == 16384 && nodes == 6, m.Describe("redis_cluster_slots", nil)
	})
	probe := startNodesProbe(t, c.Addrs())
	masters := c.Masters(t)
	replicaOf := func(master lab.RedisNode) lab.RedisNode {
		for _, n := range c.Nodes(t) {
			if n.MasterID == master.ID {
				return n
			}
		}
		t.Fatalf("master %s has no replica", master.Addr)
		return lab.RedisNode{}
	}

	var failoverSum, unservedSum float64
	for i, how := range []struct {
		name   string
		signal syscall.Signal
	}{{"kill -9", syscall.SIGKILL}, {"SIGSTOP", syscall.SIGSTOP}} {
		victim, replica := masters[i], replicaOf(masters[i])
		pid := c.PID(t, victim.Port)
		signalledAt := time.Now()
		if err := syscall.Kill(pid, how.signal); err != nil {
			t.Fatalf("%s of master %s (pid %d): %v", how.name, victim.Addr, pid, err)
		}
		if how.signal == syscall.SIGSTOP {
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
		}
		m, took := waitMetrics(t, e, 60*time.Second, "a failover observed", func(m exportertest.Metrics) (bool, string) {
			n, _ := m.Value("redis_cluster_failover_seconds_count", nil)
			return n >= float64(i+1), m.Describe("redis_cluster_node_slots", nil)
		})
		t.Logf("%s of master %s to the failover histogram: %s", how.name, victim.Addr, took.Round(10*time.Millisecond))
		// Let the probe see every view agree.
		time.Sleep(time.Second)

		flagStart, _, _ := probe.span(signalledAt, func(s nodesSample) bool { return s.flagged(victim.ID) })
		promotedAt, _, _ := probe.span(signalledAt, func(s nodesSample) bool { return s.servesSlots(replica.ID) })
		if flagStart.IsZero() || promotedAt.IsZero() {
			t.Fatalf("%s: the probe saw no complete failover: flagged at %v, replica serving at %v", how.name, flagStart, promotedAt)
		}
		outage := promotedAt.Sub(signalledAt)
		if n := value(t, m, "redis_cluster_failover_seconds_count", nil); n != float64(i+1) {
			t.Errorf("%s: failovers observed = %v, want %d", how.name, n, i+1)
		}
		observed := value(t, m, "redis_cluster_failover_seconds_sum", nil) - failoverSum
		failoverSum += observed
		t.Logf("FIGURE redis failover after %s (node timeout %s, refresh %s): %s from the signal to the replica serving, cluster's first flag after %s; exporter observed %.2fs",
			how.name, c.NodeTimeout(), refresh, outage.Round(10*time.Millisecond), flagStart.Sub(signalledAt).Round(10*time.Millisecond), observed)
		if diff := math.Abs(observed - outage.Seconds()); diff > tolerate.Seconds() {
			t.Errorf("%s: failover took %.2fs per the exporter, %s from the signal (%s) to the replica serving (%s): off by %.2fs, more than %s; events:\n%s",
				how.name, observed, outage.Round(10*time.Millisecond), signalledAt.Format("15:04:05.000"), promotedAt.Format("15:04:05.000"),
				diff, tolerate, describeEvents(fetchEvents(t, e, "?cluster=lab")))
		}
		if _, open := m.Value("redis_cluster_failover_open_episode_seconds", nil); open {
			t.Errorf("%s: a failover is still open after the promotion", how.name)
		}

		m = e.Scrape(t)
		if n, ok := m.Value("redis_cluster_slots_unserved_episode_seconds_count", nil); !ok || n != float64(i+1) {
			t.Errorf("%s: unserved-slot episodes = %v (present %v), want %d", how.name, n, ok, i+1)
		} else {
			got := value(t, m, "redis_cluster_slots_unserved_episode_seconds_sum", nil) - unservedSum
			unservedSum += got
			t.Logf("FIGURE redis unserved slots after %s: %s from the signal to the replica serving, exporter observed %.2fs", how.name, outage.Round(10*time.Millisecond), got)
			if diff := math.Abs(got - outage.Seconds()); diff > tolerate.Seconds() {
				t.Errorf("%s: slots unserved for %.2fs per the exporter, %s from the signal to the replica serving", how.name, got, outage.Round(10*time.Millisecond))
			}
		}

		evs := fetchEvents(t, e, "?cluster=lab")
		flagged := -1
		for j, ev := range evs {
			if (ev.Kind == "node_pfail" || ev.Kind == "node_fail") && ev.Subject.NodeID == victim.ID {
				flagged = j // the oldest such event: the list is newest first
			}
		}
		promotion := -1
		for j, ev := range evs {
			if ev.Kind == "promotion" && ev.Subject.NodeID == replica.ID {
				promotion = j
				break
			}
		}
		if flagged < 0 || promotion < 0 || promotion > flagged {
			t.Errorf("%s: events: want the master flagged, then its replica promoted (newest first: promotion at a lower index); flagged at %d, promotion at %d:\n%s",
				how.name, flagged, promotion, describeEvents(evs))
			continue
		}
		// The flag's event says when the exporter first failed to reach the
		// master: after the signal, within a refresh.
		first := evs[flagged].FirstFailure
		if first.Before(signalledAt) || first.Sub(signalledAt) > tolerate || !first.Before(evs[flagged].Time) {
			t.Errorf("%s: the %s event's first_failure is %v after the signal (event at %v): want within %s of it, before the flag",
				how.name, evs[flagged].Kind, first.Sub(signalledAt), evs[flagged].Time.Sub(signalledAt), tolerate)
		}
	}
}

// TestRedisProbeFailureAloneMakesNoEpisode cuts the exporter off from one
// healthy master while the cluster keeps seeing it: the master announces
// the port of a TCP proxy run by the test (cluster-announce-port), so
// every client, the exporter included, reaches it through the proxy, and
// the cluster bus does not. Stopping the proxy fails every query of the
// exporter's for longer than the cluster would need to flag a dead node,
// and no episode may begin: the outage clock only backdates what the
// cluster confirms.
func TestRedisProbeFailureAloneMakesNoEpisode(t *testing.T) {
	const refresh = 500 * time.Millisecond
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	victim := c.Masters(t)[0]
	proxy := startTCPProxy(t, victim.Addr)
	c.CLI(t, victim.Port, "CONFIG", "SET", "cluster-announce-port", strconv.Itoa(proxy.Port()))
	proxied := proxy.Addr
	lab.RedisWaitFor(t, 30*time.Second, "every node lists the master at the proxy", func() error {
		for _, addr := range c.Addrs() {
			text, err := clusterNodes(addr)
			if err != nil {
				return err
			}
			if !strings.Contains(text, victim.ID+" "+proxied+"@") {
				return fmt.Errorf("%s does not list %s at %s yet", addr, victim.ID, proxied)
			}
		}
		return nil
	})
	var seeds []string
	for _, addr := range c.Addrs() {
		if addr != victim.Addr {
			seeds = append(seeds, addr)
		}
	}
	e := exportertest.Start(t, "--redis.addr="+strings.Join(seeds, ","), "--redis.cluster-name=lab", "--refresh.interval="+refresh.String())
	node := map[string]string{"node_id": victim.ID, "address": proxied}
	waitMetrics(t, e, 30*time.Second, "the master read through the proxy", func(m exportertest.Metrics) (bool, string) {
		up, _ := m.Value("redis_cluster_node_up", node)
		ok, _ := m.Value("redis_cluster_slots", map[string]string{"state": "ok"})
		return up == 1 && ok == 16384, m.Describe("redis_cluster_node_up", nil)
	})
	probe := startNodesProbe(t, seeds)

	cutAt := time.Now()
	proxy.Close()
	waitMetrics(t, e, 30*time.Second, "the master unreachable to the exporter", func(m exportertest.Metrics) (bool, string) {
		up, ok := m.Value("redis_cluster_node_up", node)
		return ok && up == 0, m.Describe("redis_cluster_node_up", nil)
	})
	// Three node timeouts: a dead master would be flagged and replaced by now.
	deadline := time.Now().Add(3*c.NodeTimeout() + 4*refresh)
	for time.Now().Before(deadline) {
		m := e.Scrape(t)
		for _, name := range []string{"redis_cluster_failover_open_episode_seconds", "redis_cluster_slots_unserved_open_episode_seconds"} {
			if v, open := m.Value(name, nil); open {
				t.Fatalf("%s = %v after the exporter alone lost the master: an episode the cluster never confirmed", name, v)
			}
		}
		time.Sleep(refresh / 2)
	}
	m := e.Scrape(t)
	for _, name := range []string{"redis_cluster_failover_seconds_count", "redis_cluster_slots_unserved_episode_seconds_count"} {
		if n := value(t, m, name, nil); n != 0 {
			t.Errorf("%s = %v: the exporter timed an outage only it saw", name, n)
		}
	}
	if up := value(t, m, "redis_cluster_node_up", node); up != 0 {
		t.Errorf("redis_cluster_node_up of the cut-off master = %v, want 0 (the exporter cannot reach it)", up)
	}
	// The independent reader confirms the premise: the cluster never
	// flagged the master.
	if start, _, _ := probe.span(cutAt, func(s nodesSample) bool { return s.flagged(victim.ID) }); !start.IsZero() {
		t.Fatalf("the cluster flagged the master %s after the proxy stopped: the test did not cut the exporter alone off", start.Sub(cutAt))
	}
}

// startTCPProxy forwards connections from a loopback port to target until
// stopped (Close).
func startTCPProxy(t *testing.T, target string) *loopbackServer {
	t.Helper()
	return startLoopbackServer(t, func(s *loopbackServer, client net.Conn) {
		server, err := net.DialTimeout("tcp", target, time.Second)
		if err != nil || !s.Track(server) {
			client.Close()
			return
		}
		s.Go(func() { _, _ = io.Copy(server, client); server.Close() })
		_, _ = io.Copy(client, server)
		client.Close()
	})
}

// TestRedisRestartMidOutage kills a master that has no replica (its slots
// stay unserved until it returns) and restarts one of two exporters in the
// middle: the restarted one reports the open episode from its first
// refresh and observes nothing when the master comes back, since it never
// saw the outage begin; the one that ran throughout observes one episode
// from the kill to the cluster's views clearing the flag.
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
	pid := c.PID(t, victim.Port)
	killedAt := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 of master %s (pid %d): %v", victim.Addr, pid, err)
	}
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
	// From the kill to the last view's flag cleared: the steady exporter
	// dates the outage from its first failed query of the master.
	measured := end.Sub(killedAt)
	sum := value(t, m, "redis_cluster_slots_unserved_episode_seconds_sum", nil)
	t.Logf("FIGURE redis master without replica killed and restarted: %s from the kill to the flag cleared (first flag after %s), exporter observed %.2fs unserved",
		measured.Round(10*time.Millisecond), start.Sub(killedAt).Round(10*time.Millisecond), sum)
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
