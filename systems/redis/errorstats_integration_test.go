package redis

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// naiveClient speaks raw RESP to one node and follows no redirection, as a
// client on a stale topology does: it counts the error replies it gets by
// their first word (MOVED, ASK, READONLY, ...).
type naiveClient struct {
	conn   net.Conn
	r      *bufio.Reader
	errors map[string]int
}

func dialNaive(t *testing.T, addr string) *naiveClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &naiveClient{conn: conn, r: bufio.NewReader(conn), errors: map[string]int{}}
}

// do sends one command and reads a one-line reply (simple string, error
// or integer: what SET, GET of a missing key's redirection and READONLY
// answer), counting an error reply's kind. A bulk reply's body is read too.
func (c *naiveClient) do(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "-"):
		kind, _, _ := strings.Cut(line[1:], " ")
		c.errors[kind]++
	case strings.HasPrefix(line, "$") && line != "$-1":
		if _, err := c.r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	return line
}

// errorReplies is a node's redis_cluster_node_error_replies_total by kind.
func (e *exporter) errorReplies(t *testing.T, port int) map[string]float64 {
	t.Helper()
	s := e.gather()
	got := map[string]float64{}
	for _, kind := range RedirectErrors {
		v, ok := s.value("redis_cluster_node_error_replies_total", append(addrLabel(port), "error", kind)...)
		if !ok {
			t.Fatalf("no redis_cluster_node_error_replies_total{error=%q} for port %d", kind, port)
		}
		got[kind] = v
	}
	return got
}

// testRedirections sends writes the way a client on a stale topology does:
// to a master that does not own the key's slot, and to the owner's
// replica, with and without READONLY. Each node's counters must grow by
// exactly the error replies the client itself counted from it.
func testRedirections(t *testing.T, c *lab.RedisCluster, e *exporter) {
	masters := c.Masters(t)
	owner, other := masters[0], masters[1]
	replica := replicaOf(t, c, owner)
	key := keyInSlotsOf(t, owner, "stale")
	before := map[int]map[string]float64{other.Port: e.errorReplies(t, other.Port), replica.Port: e.errorReplies(t, replica.Port)}

	stale := dialNaive(t, other.Addr)
	for range 7 {
		stale.do(t, "SET", key, "v")
	}
	toReplica := dialNaive(t, replica.Addr)
	toReplica.do(t, "SET", key, "v")
	toReplica.do(t, "GET", key)
	if reply := toReplica.do(t, "READONLY"); reply != "+OK" {
		t.Fatalf("READONLY: %s", reply)
	}
	toReplica.do(t, "GET", key)
	toReplica.do(t, "SET", key, "v")
	if stale.errors["MOVED"] != 7 {
		t.Fatalf("the client got %v from the master that does not own the slot, want 7 MOVED", stale.errors)
	}
	t.Logf("client's error replies: from the other master %v, from the owner's replica %v", stale.errors, toReplica.errors)

	beforeOwner := e.errorReplies(t, owner.Port)
	asked := askDuringReshard(t, c, owner, other, key)
	t.Logf("client's error replies from the owner while its slot migrated (MIGRATE-based): %v", asked)

	for _, n := range []struct {
		port int
		want map[string]int
	}{{other.Port, stale.errors}, {replica.Port, toReplica.errors}, {owner.Port, asked}} {
		if n.port == owner.Port {
			before[owner.Port] = beforeOwner
		}
		lab.RedisWaitFor(t, 10*time.Second, "error replies counted", func() error {
			got := e.errorReplies(t, n.port)
			for _, kind := range RedirectErrors {
				if d := got[kind] - before[n.port][kind]; d != float64(n.want[kind]) {
					return fmt.Errorf("port %d: %s grew by %v, the client counted %d", n.port, kind, d, n.want[kind])
				}
			}
			return nil
		})
	}
}

// askDuringReshard starts a MIGRATE-based reshard of key's slot from
// owner to other (SETSLOT IMPORTING and MIGRATING, the key MIGRATEd), has
// a client that follows no redirection GET the key from owner 5 times
// (each an ASK: the key left, the slot is migrating), then undoes the move
// (the key MIGRATEd back, SETSLOT STABLE on both), and returns the
// client's count of error replies from owner.
func askDuringReshard(t *testing.T, c *lab.RedisCluster, owner, other lab.RedisNode, key string) map[string]int {
	t.Helper()
	slot := strconv.Itoa(int(redisproto.KeySlot(key)))
	c.CLI(t, owner.Port, "SET", key, "v")
	c.CLI(t, other.Port, "CLUSTER", "SETSLOT", slot, "IMPORTING", owner.ID)
	c.CLI(t, owner.Port, "CLUSTER", "SETSLOT", slot, "MIGRATING", other.ID)
	c.CLI(t, owner.Port, "MIGRATE", c.Host(other.Port), strconv.Itoa(other.Port), key, "0", "5000")
	client := dialNaive(t, owner.Addr)
	for range 5 {
		client.do(t, "GET", key)
	}
	// Back as it was: the owner stable, the key back to it (ASKING lets
	// the importing end serve the key), then the importing end stable.
	c.CLI(t, owner.Port, "CLUSTER", "SETSLOT", slot, "STABLE") // it takes the key back
	importer := dialNaive(t, other.Addr)
	if reply := importer.do(t, "ASKING"); reply != "+OK" {
		t.Fatalf("ASKING: %s", reply)
	}
	if reply := importer.do(t, "MIGRATE", c.Host(owner.Port), strconv.Itoa(owner.Port), key, "0", "5000"); reply != "+OK" {
		t.Fatalf("MIGRATE back to the owner: %s", reply)
	}
	c.CLI(t, other.Port, "CLUSTER", "SETSLOT", slot, "STABLE")
	if client.errors["ASK"] != 5 {
		t.Fatalf("the client got %v from the migrating owner, want 5 ASK", client.errors)
	}
	return client.errors
}

// TestIntegrationStaleRouting kills a master by PID, lets its replica take
// over, restarts it (it rejoins as a replica) and has a client that
// follows no redirection keep writing a key of its old slots to it, as a
// client on a stale topology does. The client's own count of MOVED
// replies and the time of its last are the oracle: the exporter's
// stale-routing episode counts the same replies and its last redirection
// comes within a refresh of the client's last; it ends after the quiet
// window (shortened here to 3 s), with its events.
func TestIntegrationStaleRouting(t *testing.T) {
	skipIfShort(t)
	quiet := staleRoutingQuiet
	staleRoutingQuiet = 3 * time.Second
	t.Cleanup(func() { staleRoutingQuiet = quiet })
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	e := startExporter(t, c.Addrs())
	e.waitHealthy(c, 1)
	log := watchEvents(t, e)
	master := c.Masters(t)[0]
	replica := replicaOf(t, c, master)
	key := keyInSlotsOf(t, master, "stale")

	c.Kill(t, master.Port)
	lab.RedisWaitFor(t, c.NodeTimeout()+10*time.Second, "the replica promoted", func() error {
		return e.gather().expect(float64(master.Slots), "redis_cluster_node_slots", addrLabel(replica.Port)...)
	})
	c.Restart(t, master.Port)
	lab.RedisWaitFor(t, 20*time.Second, "the old master back as a replica", func() error {
		s := e.gather()
		return firstError(s.expect(1, "redis_cluster_node_up", addrLabel(master.Port)...), s.expect(0, "redis_cluster_node_master", addrLabel(master.Port)...))
	})

	client := dialNaive(t, master.Addr)
	// Redis 7.2+ and Valkey 8+ take a library name (Redis 7.0 answers
	// ERR); the started event names it then.
	named := client.do(t, "CLIENT", "SETINFO", "LIB-NAME", "naive-test") == "+OK" && client.do(t, "CLIENT", "SETINFO", "LIB-VER", "1.2.3") == "+OK"
	var lastMoved time.Time
	for range 30 {
		if reply := client.do(t, "SET", key, "v"); strings.HasPrefix(reply, "-MOVED") {
			lastMoved = time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	moved := client.errors["MOVED"]
	if moved != 30 {
		t.Fatalf("the client got %v from the demoted master, want 30 MOVED", client.errors)
	}
	var w StaleRouting
	lab.RedisWaitFor(t, 20*time.Second, "the last redirection seen", func() error {
		if st := e.w.Current(); st != nil && st.Snapshot != nil {
			if sr := st.Snapshot.StaleRouting[master.ID]; sr != nil {
				w = *sr
			}
		}
		if w.Redirections < uint64(moved) {
			return fmt.Errorf("the exporter counted %d redirections so far", w.Redirections)
		}
		return nil
	})
	ended := waitEvent(t, log, EventStaleRoutingEnded, 30*time.Second)
	lag := w.LastRedirectionAt.Sub(lastMoved)
	t.Logf("FIGURE redis stale routing: the client's last MOVED %s after the demotion; the exporter's last redirection %s after it (refresh %s); %d redirections counted, %d by the client; ended: %s / %s",
		lastMoved.Sub(w.DemotedAt).Round(10*time.Millisecond), lag.Round(10*time.Millisecond), testRefreshInterval, w.Redirections, moved, ended.Before, ended.After)
	if w.Redirections != uint64(moved) {
		t.Errorf("the exporter counted %d redirections on the demoted master, the client %d", w.Redirections, moved)
	}
	if lag < -testRefreshInterval || lag > 10*testRefreshInterval {
		t.Errorf("the exporter's last redirection came %s after the client's last MOVED, want within a refresh (%s; bound 10x)", lag, testRefreshInterval)
	}
	started := log.of(EventStaleRoutingStarted)
	if len(started) != 1 || started[0].Subject.Address != master.Addr || !strings.Contains(started[0].After, "clients still routing to the demoted node") {
		t.Errorf("stale_routing_started events %+v, want one for %s", started, master.Addr)
	} else {
		t.Logf("stale_routing_started: %s", started[0].After)
		if libs := strings.Contains(started[0].After, "naive-test 1.2.3 (1)"); libs != named {
			t.Errorf("stale_routing_started says %q; the client named its library: %v", started[0].After, named)
		}
	}
	if !strings.Contains(ended.Before, fmt.Sprintf("%d MOVED or READONLY replies", moved)) {
		t.Errorf("stale_routing_ended says %q, want the client's %d", ended.Before, moved)
	}
	if f := e.gather()["redis_cluster_stale_routing_seconds"]; f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("redis_cluster_stale_routing_seconds: %v, want one episode observed", f)
	}
}

// waitEvent waits until log has an event of kind and returns the first.
func waitEvent(t *testing.T, log *eventLog, kind events.Kind, timeout time.Duration) events.Event {
	t.Helper()
	var ev events.Event
	lab.RedisWaitFor(t, timeout, string(kind), func() error {
		got := log.of(kind)
		if len(got) == 0 {
			return errors.New("none yet")
		}
		ev = got[0]
		return nil
	})
	return ev
}
