package redis

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/lab"
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

	for _, n := range []struct {
		port int
		want map[string]int
	}{{other.Port, stale.errors}, {replica.Port, toReplica.errors}} {
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
