package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
	"github.com/failover-exporter/failover_exporter/systems/redis/slotcmd"
)

// slotShard is one master's slot range and the nodes that may own it: the
// master and its replica. A failover moves the range whole, so the owner
// of the range in /metrics is the copy with exactly the range's slots in
// redis_cluster_node_slots (the only series that names slot owners; the
// ranges themselves are not exported).
type slotShard struct {
	key    string
	slots  int
	copies []string // addresses
}

// metricsSample is what one refresh of the exporter said: when it read the
// cluster and the owner of each key, "" where no copy held the whole range.
type metricsSample struct {
	start, end time.Time
	owners     map[string]string
}

// slotSample is one run of the slot command's code: when it ran and the
// owner it printed for each key.
type slotSample struct {
	start, end time.Time
	owners     map[string]string
}

// TestSlotCommandAgreesWithMetricsDuringFailover checks that `failover_exporter
// slot KEY` and /metrics name the same owner while a real master is killed
// by PID, its replica takes over, and the old master is started again and
// rejoins (its own CLUSTER NODES claims its old slots, at the old epoch,
// until gossip corrects it). Every 200 ms the slot command's code runs for
// one key per master, seeds in the order that puts the killed master first;
// meanwhile /metrics is scraped every 50 ms, and each refresh's read window
// is known from the last-refresh timestamp and duration. Each slot sample
// must name, for every key, the owner of the last refresh read before it
// ran or of the first refresh read after it: only a change between the two
// can excuse a difference. scripts/test.sh runs it on Valkey 8 too (its
// name matches TestSlotCommand there).
func TestSlotCommandAgreesWithMetricsDuringFailover(t *testing.T) {
	const refresh = 200 * time.Millisecond
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	e := exportertest.Start(t, "--redis.addr="+strings.Join(c.Addrs(), ","), "--redis.cluster-name=lab", "--refresh.interval="+refresh.String())
	waitMetrics(t, e, 30*time.Second, "6 nodes, all slots ok", func(m exportertest.Metrics) (bool, string) {
		ok, _ := m.Value("redis_cluster_slots", map[string]string{"state": "ok"})
		nodes, _ := m.Value("redis_cluster_known_nodes", nil)
		return ok == 16384 && nodes == 6, m.Describe("redis_cluster_slots", nil)
	})

	nodes := c.Nodes(t)
	masters := c.Masters(t)
	var shards []slotShard
	for i, m := range masters {
		s := slotShard{slots: m.Slots, copies: []string{m.Addr}}
		for _, n := range nodes {
			if n.MasterID == m.ID {
				s.copies = append(s.copies, n.Addr)
			}
		}
		for tag := 0; s.key == ""; tag++ {
			key := fmt.Sprintf("slot-agreement:%d{%d}", i, tag)
			if m.OwnsSlot(redisproto.KeySlot(key)) {
				s.key = key
			}
		}
		shards = append(shards, s)
	}
	victim := masters[0]
	replica := shards[0].copies[1]
	keys := make([]string, len(shards))
	for i, s := range shards {
		keys[i] = s.key
	}
	// The killed master first: once back, it is the seed whose own view is
	// the stalest.
	seeds := []string{victim.Addr}
	for _, a := range c.Addrs() {
		if a != victim.Addr {
			seeds = append(seeds, a)
		}
	}

	scraper := startOwnerScraper(t, e, shards)
	var samples []slotSample
	// sampleUntil samples every 200 ms until done holds for the latest
	// refresh, or for d when done is nil.
	sampleUntil := func(what string, d time.Duration, done func(metricsSample) bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		ticker := time.NewTicker(200 * time.Millisecond)
		defer ticker.Stop()
		for {
			sample, err := runSlotSample(keys, seeds)
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, sample)
			if last, ok := scraper.last(); ok && done != nil && done(last) {
				return
			}
			if time.Now().After(deadline) {
				if done != nil {
					t.Fatalf("after %s, still waiting for %s", d, what)
				}
				return
			}
			<-ticker.C
		}
	}
	ownedBy := func(addr string) func(metricsSample) bool {
		return func(m metricsSample) bool { return m.owners[shards[0].key] == addr }
	}

	sampleUntil("a second before the kill", time.Second, nil)
	pid := c.PID(t, victim.Port)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 of master %s (pid %d): %v", victim.Addr, pid, err)
	}
	killedAt := time.Now()
	sampleUntil("the replica to own the killed master's slots", 60*time.Second, ownedBy(replica))
	t.Logf("replica %s owns %s's slots in /metrics %s after the kill", replica, victim.Addr, time.Since(killedAt).Round(10*time.Millisecond))
	sampleUntil("a second after the failover", time.Second, nil)

	c.Restart(t, victim.Port)
	sampleUntil("5 s of the old master rejoining", 5*time.Second, nil)
	time.Sleep(2 * refresh) // a refresh read after the last sample
	snaps := scraper.stop()

	checkSlotAgreement(t, shards, victim.Addr, replica, samples, snaps)
}

// runSlotSample runs the slot command's code as `failover_exporter slot
// --redis.addr=SEEDS KEYS...` does, and reads the owner of each key from
// its output.
func runSlotSample(keys, seeds []string) (slotSample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	s := slotSample{start: time.Now(), owners: map[string]string{}}
	err := slotcmd.Run(ctx, &out, keys, redissettings.Cluster{Addrs: seeds})
	s.end = time.Now()
	if err != nil {
		return s, fmt.Errorf("slot %s: %w", strings.Join(keys, " "), err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return s, fmt.Errorf("slot printed %q, want KEY SLOT ADDR", line)
		}
		s.owners[fields[0]] = fields[2]
	}
	return s, nil
}

// ownerScraper scrapes /metrics every 50 ms and keeps one sample per
// refresh.
type ownerScraper struct {
	mu    sync.Mutex
	snaps []metricsSample
	errs  []string
	stopc chan struct{}
	done  chan struct{}
}

func startOwnerScraper(t *testing.T, e *exportertest.Exporter, shards []slotShard) *ownerScraper {
	s := &ownerScraper{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			if m, err := e.TryScrape(); err == nil {
				s.add(m, shards)
			}
			select {
			case <-s.stopc:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *ownerScraper) add(m exportertest.Metrics, shards []slotShard) {
	up, _ := m.Value("redis_cluster_up", nil)
	last, ok1 := m.Value("redis_cluster_exporter_last_refresh_success_timestamp_seconds", nil)
	took, ok2 := m.Value("redis_cluster_exporter_refresh_duration_seconds", nil)
	if up != 1 || !ok1 || !ok2 {
		return
	}
	end := time.Unix(0, int64(last*1e9))
	snap := metricsSample{end: end, start: end.Add(-time.Duration(took * 1e9)), owners: map[string]string{}}
	for _, sh := range shards {
		for _, addr := range sh.copies {
			if v, _ := m.Value("redis_cluster_node_slots", map[string]string{"address": addr}); int(v) == sh.slots {
				snap.owners[sh.key] = addr
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.snaps); n > 0 && !end.After(s.snaps[n-1].end) {
		return // the same refresh, scraped again
	}
	s.snaps = append(s.snaps, snap)
}

func (s *ownerScraper) last() (metricsSample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.snaps) == 0 {
		return metricsSample{}, false
	}
	return s.snaps[len(s.snaps)-1], true
}

// stop ends the scraping and returns the samples, in refresh order.
func (s *ownerScraper) stop() []metricsSample {
	select {
	case <-s.stopc:
	default:
		close(s.stopc)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.snaps)
}

// checkSlotAgreement compares each slot sample with the refresh read last
// before it and the one read first after it.
func checkSlotAgreement(t *testing.T, shards []slotShard, victim, replica string, samples []slotSample, snaps []metricsSample) {
	t.Helper()
	var straddled, compared int
	sawVictim, sawReplica := false, false
	for i, s := range samples {
		before, after := -1, -1
		for j, m := range snaps {
			if !m.end.After(s.start) {
				before = j
			}
			if after < 0 && !m.start.Before(s.end) {
				after = j
			}
		}
		if before < 0 || after < 0 {
			t.Errorf("slot sample %d (%s): no refresh read before it (%d) or after it (%d)", i, s.start.Format("15:04:05.000"), before, after)
			continue
		}
		compared++
		for _, sh := range shards {
			got, was, will := s.owners[sh.key], snaps[before].owners[sh.key], snaps[after].owners[sh.key]
			switch {
			case got == was && got == will:
			case got == was || got == will:
				straddled++
				t.Logf("slot sample %d, %s: slot command %s, /metrics %s before (refresh read %s-%s), %s after (%s-%s): a change between them",
					i, sh.key, got, was, clock(snaps[before].start), clock(snaps[before].end), will, clock(snaps[after].start), clock(snaps[after].end))
			default:
				t.Errorf("slot sample %d (%s-%s), %s: slot command names %s, /metrics %s before (refresh read %s-%s) and %s after (%s-%s)",
					i, clock(s.start), clock(s.end), sh.key, got, was, clock(snaps[before].start), clock(snaps[before].end), will, clock(snaps[after].start), clock(snaps[after].end))
			}
		}
		switch s.owners[shards[0].key] {
		case victim:
			sawVictim = true
		case replica:
			sawReplica = true
		}
	}
	t.Logf("%d slot samples of %d keys compared with %d refreshes; %d key samples straddled a change", compared, len(shards), len(snaps), straddled)
	if !sawVictim || !sawReplica {
		t.Errorf("the samples did not see the failover: killed master named %v, replica named %v", sawVictim, sawReplica)
	}
	if straddled > 4*len(shards) {
		t.Errorf("%d key samples straddled a change; a failover and a rejoin make a few at most", straddled)
	}
}
