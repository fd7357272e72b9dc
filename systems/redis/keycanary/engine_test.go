package keycanary

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// apply is where lost writes are counted: values base+1..acked were
// acknowledged by the old owner; whatever the new owner lacks is lost. A
// key missing altogether lost only the writes whose TTL cannot have run
// out when it was read (recent of them, sent a second before the read);
// the others may have expired and are unverifiable.
func TestApplyCountsLostWrites(t *testing.T) {
	src := &Engine{logger: log.NewNopLogger(), canary: settings.Canary{KeyTTL: time.Minute}}
	old := Target{Key: "k", Owner: "old", ID: "old", Addr: "127.0.0.1:1"}
	promoted := Target{Key: "k", Owner: "new", ID: "new", Addr: "127.0.0.1:2"}
	cases := []struct {
		name               string
		base, acked, found uint64
		recent             int
		wantLost, wantUnv  uint64
	}{
		{"new owner has everything", 10, 25, 25, 15, 0, 0},
		{"new owner has a write that was never acknowledged", 10, 25, 26, 15, 0, 0},
		{"new owner lacks the last five", 10, 25, 20, 15, 5, 0},
		{"new owner lacks the last five, the others' TTL run out: the key is there, so lost", 10, 25, 20, 0, 5, 0},
		{"new owner lacks the key, no TTL can have run out: only writes since the key was read count", 10, 25, 0, 15, 15, 0},
		{"new owner lacks the key, every TTL may have run out: unverifiable", 10, 25, 0, 0, 0, 15},
		{"new owner lacks the key, five TTLs cannot have run out: five lost", 10, 25, 0, 5, 5, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next := (*Snapshot)(nil).clone()
			at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			st := &keyState{key: "k", holder: old, base: c.base, acked: c.acked}
			for range c.recent {
				st.ackedAt = append(st.ackedAt, at.Add(-time.Second))
			}
			src.apply(next, at, st, writeResult{owner: promoted, checked: true, read: true, found: c.found, readAt: at, wrote: true, ok: true, sent: at})
			var got, unv uint64
			if m, ok := next.Masters["old"]; ok {
				got, unv = m.Lost, m.Unverifiable
			}
			if got != c.wantLost || unv != c.wantUnv {
				t.Errorf("lost = %d, unverifiable = %d; want %d and %d", got, unv, c.wantLost, c.wantUnv)
			}
			if next.Checks != 1 || st.holder.Owner != "new" || st.acked != c.found+1 || next.Masters["new"].Acknowledged != 1 {
				t.Errorf("after the check: checks %d, state %+v, new master %+v", next.Checks, st, next.Masters["new"])
			}
			// The loss is an event about the old master, with the count,
			// for the event log; no loss, no event.
			var want []events.Event
			if c.wantLost > 0 {
				want = []events.Event{{Time: at, Kind: canary.EventAcknowledgedWritesLost,
					Subject: events.NodeSubject(old.ID, old.Addr), After: strconv.FormatUint(c.wantLost, 10)}}
			}
			if got := next.Events.All(); !reflect.DeepEqual(got, want) {
				t.Errorf("events %+v, want %+v", got, want)
			}
		})
	}
}

// The times of acknowledged writes kept for a key are bounded: those whose
// TTL may have run out are forgotten, and at most maxTrackedAcks kept.
func TestTrackAckIsBounded(t *testing.T) {
	st := &keyState{}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ttl := time.Hour
	for i := range maxTrackedAcks + 10 {
		sent := start.Add(time.Duration(i) * time.Millisecond)
		st.trackAck(sent, sent, ttl)
	}
	if len(st.ackedAt) != maxTrackedAcks {
		t.Errorf("%d write times kept, want at most %d", len(st.ackedAt), maxTrackedAcks)
	}
	// An hour later every one of them may have expired.
	later := start.Add(ttl)
	st.trackAck(later, later, ttl)
	if len(st.ackedAt) != 1 || !st.ackedAt[0].Equal(later) {
		t.Errorf("after a TTL, %d write times kept, want only the newest", len(st.ackedAt))
	}
}

// With the lease, the first read of a key (a takeover) counts what the
// master held as acknowledged, the previous holder's writes: a failover
// that then loses them is counted by the new holder. Without it, only the
// exporter's own writes count.
func TestFirstReadOfATakeoverCountsThePredecessorsWrites(t *testing.T) {
	m := Target{Key: "k", Owner: "m", ID: "m", Addr: "127.0.0.1:1"}
	promoted := Target{Key: "k", Owner: "p", ID: "p", Addr: "127.0.0.1:2"}
	for _, c := range []struct {
		name     string
		lease    *leaseRunner
		wantLost uint64
	}{
		{"lease: the predecessor's 10 and this holder's 3", newLeaseRunner(time.Second, time.Second), 13},
		{"no lease: this exporter's 3 only", nil, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &Engine{logger: log.NewNopLogger(), lease: c.lease}
			st := &keyState{key: "k"}
			next := (*Snapshot)(nil).clone()
			// The first read finds 110 on the master; three writes follow.
			src.apply(next, time.Now(), st, writeResult{owner: m, read: true, found: 110, wrote: true, ok: true})
			src.apply(next, time.Now(), st, writeResult{owner: m, wrote: true, ok: true})
			src.apply(next, time.Now(), st, writeResult{owner: m, wrote: true, ok: true})
			// The replica promoted had 100: 13 writes the master applied.
			src.apply(next, time.Now(), st, writeResult{owner: promoted, checked: true, read: true, found: 100, wrote: true, ok: true})
			if got := next.Masters["m"].Lost; got != c.wantLost {
				t.Errorf("lost = %d, want %d", got, c.wantLost)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestErrorKind(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("SET k: %w", context.DeadlineExceeded), "timeout"},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, "timeout"},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, "connection"},
		{fmt.Errorf("SET k: %w", io.EOF), "connection"},
		{errNotReplicated, "not_replicated"},
		{errors.New("something else"), "other"},
	}
	for _, c := range cases {
		if got := ErrorKind(c.err); got != c.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", c.err, got, c.want)
		}
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
	src := newTestEngine(t, settings.Clusters(&cfg)[0], log.NewNopLogger())
	for _, n := range nodes {
		c, err := src.Client(n.addr())
		if err != nil {
			t.Fatalf("client of %s: %v", n.addr(), err)
		}
		if err := c.Do(t.Context(), c.B().Ping().Build()).Error(); err != nil {
			t.Fatalf("PING %s: %v", n.addr(), err)
		}
	}

	// The seed stays whatever the topology says, as in topology.
	src.DropClientsExcept(append([]string{seed}, staying, "127.0.0.1:9"))

	kept := src.clients.addrs()
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

// The stall clock: from the last acknowledgement before a failed write to
// the first acknowledgement after, observed for the master that
// acknowledged the last write before; failures before any acknowledgement
// date nothing.
func TestStallClock(t *testing.T) {
	e := &Engine{}
	next := (*Snapshot)(nil).clone()
	st := &keyState{key: "k"}
	old, promoted := Target{ID: "old", Addr: "10.0.0.1:7000"}, Target{ID: "new", Addr: "10.0.0.2:7000"}
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	fail := writeResult{owner: old, wrote: true, errKind: "connection"}
	e.stallClock(next, st, fail) // before any acknowledgement: nothing to date
	e.stallClock(next, st, writeResult{owner: old, wrote: true, ok: true, sent: t0, latency: time.Millisecond})
	if next.Masters["old"] != nil && next.Masters["old"].Stalls != nil {
		t.Fatalf("a failure before any acknowledgement was observed: %+v", next.Masters["old"].Stalls)
	}
	e.stallClock(next, st, fail)
	e.stallClock(next, st, writeResult{owner: promoted, wrote: true, errKind: "CLUSTERDOWN"})
	e.stallClock(next, st, writeResult{owner: promoted, wrote: true, ok: true, sent: t0.Add(3 * time.Second), latency: 2 * time.Millisecond})
	h := next.Masters["old"].Stalls
	if h == nil || h.Count != 1 || h.Sum < 3.0009 || h.Sum > 3.0011 {
		t.Fatalf("stall observed for the old master: %+v, want one of 3.001 s", h)
	}
	if m := next.Masters["new"]; m != nil && m.Stalls != nil {
		t.Errorf("the new master observed a stall: %+v", m.Stalls)
	}
	// Acknowledged again without a failure between: no stall.
	e.stallClock(next, st, writeResult{owner: promoted, wrote: true, ok: true, sent: t0.Add(4 * time.Second)})
	if h := next.Masters["old"].Stalls; h.Count != 1 {
		t.Errorf("%d stalls, want 1", h.Count)
	}
}

// A stall across another exporter's writes is not timed: the key, read
// again when this exporter's new hold of the lease began, holds more than
// it acknowledged, so the stall it saw begin may have ended on those.
func TestStallClockAcrossAnotherWriter(t *testing.T) {
	e := &Engine{logger: log.NewNopLogger()}
	next := (*Snapshot)(nil).clone()
	owner := Target{ID: "m", Owner: "m", Addr: "10.0.0.1:7000"}
	st := &keyState{key: "k", holder: owner}
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	e.apply(next, t0, st, writeResult{owner: owner, wrote: true, ok: true, sent: t0})
	e.apply(next, t0, st, writeResult{owner: owner, wrote: true, errKind: "connection"})
	st.reread = true
	e.apply(next, t0, st, writeResult{owner: owner, read: true, found: st.acked + 5, wrote: true, ok: true, sent: t0.Add(10 * time.Second)})
	if h := next.Masters["m"].Stalls; h != nil {
		t.Errorf("a stall across another exporter's 5 writes was timed: %+v", h)
	}
	// The same without another writer: timed.
	e.apply(next, t0, st, writeResult{owner: owner, wrote: true, errKind: "connection"})
	st.reread = true
	e.apply(next, t0, st, writeResult{owner: owner, read: true, found: st.acked, wrote: true, ok: true, sent: t0.Add(12 * time.Second)})
	if h := next.Masters["m"].Stalls; h == nil || h.Count != 1 || h.Sum != 2 {
		t.Errorf("stall without another writer: %+v, want one of 2 s", h)
	}
}
