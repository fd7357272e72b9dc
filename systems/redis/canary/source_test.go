package rediscanary

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// Node ids, 40 hex digits as Redis gives them.
var (
	idA = strings.Repeat("a", 40)
	idB = strings.Repeat("b", 40)
	idC = strings.Repeat("c", 40)
	idD = strings.Repeat("d", 40)
	idE = strings.Repeat("e", 40)
)

// slotMap merges CLUSTER NODES replies, by the address that gave them, as
// topology does.
func slotMap(t *testing.T, replies map[string]string) *redisproto.SlotMap {
	t.Helper()
	var views []redisproto.View
	for addr, nodes := range replies {
		v, err := redisproto.ParseView(addr, nodes, "cluster_state:ok\r\ncluster_current_epoch:5\r\n")
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	slots, err := redisproto.NewSlotMap(views)
	if err != nil {
		t.Fatal(err)
	}
	return slots
}

// The canary names a slot's owner by the watcher's rule: the claim with the
// highest config epoch, from members only. A node that a majority of the
// slot-serving masters does not list (here one after CLUSTER RESET that
// claims slot 0 with a higher epoch) is not an owner, whatever it claims.
func TestTopologyRuleIsTheWatchers(t *testing.T) {
	var (
		a = idA + " 127.0.0.1:7000@17000 %smaster - 0 0 1 connected 0-5460\n"
		b = idB + " 127.0.0.1:7001@17001 %smaster - 0 0 2 connected 5461-10922\n"
		c = idC + " 127.0.0.1:7002@17002 %smaster%s - 0 0 3 connected 10923-16383\n"
		// D, C's replica, was promoted with epoch 4; only B has heard.
		d     = idD + " 127.0.0.1:7003@17003 %s %s 0 0 4 connected%s\n"
		reset = idE + " 127.0.0.1:7004@17004 myself,master - 0 0 9 connected 0\n"
	)
	f := fmt.Sprintf
	slots := slotMap(t, map[string]string{
		"127.0.0.1:7000": f(a, "myself,") + f(b, "") + f(c, "", "") + f(d, "slave", idC, ""),
		"127.0.0.1:7001": f(a, "") + f(b, "myself,") + f(c, "", ",fail") + f(d, "master", "-", " 10923-16383"),
		"127.0.0.1:7004": reset,
	})
	for slot, want := range map[int]redisproto.Master{
		0:     {ID: idA, Addr: "127.0.0.1:7000"},
		5461:  {ID: idB, Addr: "127.0.0.1:7001"},
		10923: {ID: idD, Addr: "127.0.0.1:7003"},
		16383: {ID: idD, Addr: "127.0.0.1:7003"},
	} {
		if got, ok := slots.Owner(slot); !ok || got != want {
			t.Errorf("slot %d: owner %+v, %v; want %+v", slot, got, ok, want)
		}
	}
	if got := slots.Masters(); len(got) != 3 || got[0].ID != idA || got[1].ID != idB || got[2].ID != idD {
		t.Errorf("masters %+v, want A, B, D", got)
	}
}

// Clients of addresses that left the topology are closed and forgotten;
// the others, seeds included, are kept.
func TestDropClientsExcept(t *testing.T) {
	nodes := []*fakeNode{startFakeNode(t), startFakeNode(t), startFakeNode(t)}
	seed, leaving, staying := nodes[0].addr(), nodes[1].addr(), nodes[2].addr()
	cfg := config.Config{}
	settings.SetClusters(&cfg, []settings.Cluster{{Addrs: []string{seed}, Canary: settings.Canary{Enabled: true}}})
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	src, err := newSource(settings.Clusters(&cfg)[0], log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer src.close()
	for _, n := range nodes {
		c, err := src.client(n.addr())
		if err != nil {
			t.Fatalf("client of %s: %v", n.addr(), err)
		}
		if err := c.Do(t.Context(), c.B().Ping().Build()).Error(); err != nil {
			t.Fatalf("PING %s: %v", n.addr(), err)
		}
	}

	// The seed stays whatever the topology says, as in topology.
	src.dropClientsExcept(append([]string{seed}, staying, "127.0.0.1:9"))

	src.mu.Lock()
	kept := slices.Sorted(maps.Keys(src.clients))
	src.mu.Unlock()
	if want := slices.Sorted(slices.Values([]string{seed, staying})); !slices.Equal(kept, want) {
		t.Errorf("kept clients of %v, want %v", kept, want)
	}
	deadline := time.Now().Add(5 * time.Second)
	for nodes[1].open() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := nodes[1].open(); n != 0 {
		t.Errorf("%s left the topology, yet the canary keeps %d connections to it", leaving, n)
	}
	for _, n := range []*fakeNode{nodes[0], nodes[2]} {
		if n.open() == 0 {
			t.Errorf("the connection to %s, still in the topology, was closed", n.addr())
		}
	}
}

// fakeNode answers HELLO with an empty map and every other command with
// +OK, enough for a rueidis client to connect, and counts its open
// connections.
type fakeNode struct {
	ln    net.Listener
	conns atomic.Int64
}

func startFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{ln: ln}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var accepted []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range accepted {
			c.Close() // whatever a client left open
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted = append(accepted, conn)
			mu.Unlock()
			n.conns.Add(1)
			wg.Go(func() {
				defer n.conns.Add(-1)
				defer conn.Close()
				serveFake(conn)
			})
		}
	})
	return n
}

func (n *fakeNode) addr() string { return n.ln.Addr().String() }
func (n *fakeNode) open() int64  { return n.conns.Load() }

// serveFake reads RESP arrays of bulk strings until the client hangs up.
func serveFake(conn net.Conn) {
	r := bufio.NewReader(conn)
	for {
		header, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(header, "*") {
			return
		}
		args, _ := strconv.Atoi(strings.TrimSpace(header[1:]))
		var command string
		for i := range args {
			size, err := r.ReadString('\n')
			if err != nil {
				return
			}
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(size, "$")))
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
			if i == 0 {
				command = strings.ToUpper(string(buf[:n]))
			}
		}
		reply := "+OK\r\n"
		if command == "HELLO" {
			reply = "%0\r\n"
		}
		if _, err := conn.Write([]byte(reply)); err != nil {
			return
		}
	}
}
