package redis

// Hot slots: each master's hottest slots from CLUSTER SLOT-STATS (Valkey
// 8.0+, Redis 8.2+), opt-in per cluster with slot_stats.top.
//
// The command is read on every refresh, after the snapshot is built (only
// then is it known which nodes are masters serving slots), in one more
// pipelined round trip per such master. It is cheap enough for that: each
// ORDERBY is a pass over the node's per-slot counters, which the server keeps
// anyway (no key is scanned; Valkey and Redis document it as O(N log N) in
// the 16384 slots), and each reply is at most top (≤ 100) entries. Reading
// every slot (SLOTSRANGE 0 16383) would be 16384 entries per refresh and is
// not done.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// SlotStat is one slot's counters from CLUSTER SLOT-STATS. CPU time and
// network bytes are counted only while cluster-slot-stats-enabled is on,
// and start again from 0 when the slot moves or the server's statistics
// are reset (CONFIG RESETSTAT).
type SlotStat struct {
	Slot                            int
	Keys                            int64
	CPUMicroseconds                 int64
	NetworkBytesIn, NetworkBytesOut int64
}

// SlotStats is one master's hottest slots: for each statistic, at most
// slot_stats.top slots, highest first, leaving out slots where it is 0.
type SlotStats struct {
	ByKeys []SlotStat
	// Usage is true when the server counts CPU time and network bytes per
	// slot (cluster-slot-stats-enabled yes); without it the other lists are
	// empty.
	Usage                            bool
	ByCPU, ByNetworkIn, ByNetworkOut []SlotStat
}

// slotStatOrders are the ORDERBY metrics, in the order of SlotStats' lists.
var slotStatOrders = [...]string{"key-count", "cpu-usec", "network-bytes-in", "network-bytes-out"}

// slotStatsReader reads the hot slots for one source and says once per
// source why it cannot.
type slotStatsReader struct {
	top    int
	logger log.Logger
	// unsupportedLogged and refusedLogged make each kind of failure a
	// single log line: it repeats on every refresh until the servers or
	// the ACL change.
	unsupportedLogged, refusedLogged atomic.Bool
}

// readSlotStats asks every reachable master that serves slots for its
// hottest slots and sets Node.SlotStats on those that answered. A master
// without the command, or one that fails or does not answer before ctx
// ends, keeps nil: its series are absent and the refresh goes on.
func (s *source) readSlotStats(ctx context.Context, snap *Snapshot) {
	r := s.slotStats
	if r == nil || r.top <= 0 {
		return
	}
	type result struct {
		index int
		stats *SlotStats
	}
	var started int
	results := make(chan result, len(snap.Nodes)) // buffered: late senders never block
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if n.Role != RoleMaster || !n.Reachable || n.Slots == 0 || n.Addr == "" {
			continue
		}
		nc := s.nodeClient(n.Addr)
		if nc == nil {
			return // source closed
		}
		started++
		go func() {
			stats, err := r.query(ctx, nc, s.option, s.cfg.CommandTimeout)
			if err != nil {
				r.report(nc.addr, err)
			}
			results <- result{i, stats}
		}()
	}
	for range started {
		select {
		case res := <-results:
			snap.Nodes[res.index].SlotStats = res.stats
		case <-ctx.Done():
			return
		}
	}
}

// query sends the four ORDERBY queries in one pipeline. Only the first must
// succeed: the others fail with "Unrecognized sort metric" while
// cluster-slot-stats-enabled is off.
func (r *slotStatsReader) query(ctx context.Context, nc *nodeClient, option rueidis.ClientOption, timeout time.Duration) (*SlotStats, error) {
	if !nc.busy.CompareAndSwap(false, true) {
		return nil, errNodeBusy
	}
	defer nc.busy.Store(false)
	client, err := nc.get(option)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmds := make(rueidis.Commands, 0, len(slotStatOrders))
	for _, order := range slotStatOrders {
		cmds = append(cmds, client.B().ClusterSlotStats().Orderby().Metric(order).Limit(int64(r.top)).Desc().Build())
	}
	replies := client.DoMulti(ctx, cmds...)
	stats := &SlotStats{}
	lists := [...]*[]SlotStat{&stats.ByKeys, &stats.ByCPU, &stats.ByNetworkIn, &stats.ByNetworkOut}
	for i, reply := range replies {
		entries, err := slotStatEntries(reply)
		if err == nil {
			*lists[i], err = hottestSlots(entries, slotStatOrders[i], r.top)
		}
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("CLUSTER SLOT-STATS ORDERBY %s: %w", slotStatOrders[i], err)
			}
			// Usage counters are off (or unreadable): those lists stay empty.
			*lists[i] = nil
			continue
		}
		if i == 0 {
			stats.Usage = len(entries) > 0 && entries[0].hasUsage
		}
	}
	if !stats.Usage {
		stats.ByCPU, stats.ByNetworkIn, stats.ByNetworkOut = nil, nil, nil
	}
	return stats, nil
}

// report logs a failed read: once per source for a server without the
// command and for a refused one (both last until someone acts), at debug
// level otherwise (a slow or busy node is the topology query's to report).
func (r *slotStatsReader) report(addr string, err error) {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "unknown subcommand") || strings.Contains(msg, "unknown command"):
		if r.unsupportedLogged.CompareAndSwap(false, true) {
			level.Warn(r.logger).Log("msg", "CLUSTER SLOT-STATS is not supported here (it needs Valkey 8.0+ or Redis 8.2+): the redis_cluster_slot_* series are absent for masters without it; logged once",
				"node", addr, "err", err)
			return
		}
	case strings.Contains(msg, "noperm"):
		if r.refusedLogged.CompareAndSwap(false, true) {
			level.Warn(r.logger).Log("msg", "CLUSTER SLOT-STATS refused: allow +cluster|slot-stats to the exporter's ACL user; the redis_cluster_slot_* series are absent until then; logged once",
				"node", addr, "err", err)
			return
		}
	}
	level.Debug(r.logger).Log("msg", "slot stats not read", "node", addr, "err", err)
}

// slotStatEntry is one entry of a CLUSTER SLOT-STATS reply: a slot and its
// statistics by name.
type slotStatEntry struct {
	slot   int64
	fields map[string]int64
	// hasUsage is true when the entry carries cpu-usec.
	hasUsage bool
}

// slotStatEntries decodes a reply: an array of [slot, map] pairs, the map
// flattened to an array in RESP2.
func slotStatEntries(reply rueidis.RedisResult) ([]slotStatEntry, error) {
	items, err := reply.ToArray()
	if err != nil {
		return nil, err
	}
	entries := make([]slotStatEntry, 0, len(items))
	for _, item := range items {
		pair, err := item.ToArray()
		if err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("entry is not a [slot, statistics] pair")
		}
		slot, err := pair[0].AsInt64()
		if err != nil {
			return nil, fmt.Errorf("slot: %w", err)
		}
		values, err := pair[1].AsIntMap()
		if err != nil {
			return nil, fmt.Errorf("slot %d statistics: %w", slot, err)
		}
		_, usage := values["cpu-usec"]
		entries = append(entries, slotStatEntry{slot: slot, fields: values, hasUsage: usage})
	}
	return entries, nil
}

// hottestSlots keeps the entries whose metric is positive, highest first
// (ties by slot, as the server orders them), at most top of them.
func hottestSlots(entries []slotStatEntry, metric string, top int) ([]SlotStat, error) {
	var out []SlotStat
	for _, e := range entries {
		if e.slot < 0 || e.slot >= redisproto.SlotCount {
			return nil, fmt.Errorf("slot %d out of range", e.slot)
		}
		value, ok := e.fields[metric]
		if !ok {
			return nil, fmt.Errorf("slot %d has no %s", e.slot, metric)
		}
		if value <= 0 {
			continue
		}
		out = append(out, SlotStat{Slot: int(e.slot), Keys: e.fields["key-count"], CPUMicroseconds: e.fields["cpu-usec"],
			NetworkBytesIn: e.fields["network-bytes-in"], NetworkBytesOut: e.fields["network-bytes-out"]})
	}
	slices.SortStableFunc(out, func(a, b SlotStat) int {
		va, vb := a.value(metric), b.value(metric)
		switch {
		case va != vb && va > vb:
			return -1
		case va != vb:
			return 1
		}
		return a.Slot - b.Slot
	})
	if len(out) > top {
		out = out[:top]
	}
	return out, nil
}

// value is the slot's statistic of the given ORDERBY name.
func (s SlotStat) value(metric string) int64 {
	switch metric {
	case "cpu-usec":
		return s.CPUMicroseconds
	case "network-bytes-in":
		return s.NetworkBytesIn
	case "network-bytes-out":
		return s.NetworkBytesOut
	}
	return s.Keys
}

// slotStatsMetrics is the hot-slot families' metric table. At most
// slot_stats.top series per master per family, each labelled by slot.
var slotStatsMetrics = func() struct{ keys, cpu, networkIn, networkOut *exposition.Desc } {
	slot := []string{"node_id", "address", "slot"}
	const source = " For each master's hottest slots by this statistic, at most slot_stats.top of them (CLUSTER SLOT-STATS, Valkey 8.0+ and Redis 8.2+; absent on servers without it)."
	const usage = " Counted while the server has cluster-slot-stats-enabled on; starts again from 0 when the slot moves or the server's statistics are reset."
	return struct{ keys, cpu, networkIn, networkOut *exposition.Desc }{
		keys:       table.Gauge("redis_cluster_slot_keys", "Keys in the hash slot."+source+fromRefresh, slot...),
		cpu:        table.Counter("redis_cluster_slot_cpu_seconds_total", "CPU time the master spent on commands for the hash slot."+source+usage+fromRefresh, slot...),
		networkIn:  table.Counter("redis_cluster_slot_network_received_bytes_total", "Bytes of commands for the hash slot the master received."+source+usage+fromRefresh, slot...),
		networkOut: table.Counter("redis_cluster_slot_network_sent_bytes_total", "Bytes of replies for the hash slot the master sent."+source+usage+fromRefresh, slot...),
	}
}()

// emitSlotStats emits the masters' hottest slots.
func emitSlotStats(ch exposition.Sink, cluster string, s *Snapshot) {
	m := &slotStatsMetrics
	if !exposition.Wants(ch, m.keys, m.cpu, m.networkIn, m.networkOut) {
		return
	}
	labels := []string{cluster, "", "", ""}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.SlotStats == nil {
			continue
		}
		labels[1], labels[2] = n.ID, n.Addr
		emit := func(d *exposition.Desc, list []SlotStat, value func(SlotStat) float64) {
			for _, st := range list {
				labels[3] = strconv.Itoa(st.Slot)
				ch.Add(d, value(st), labels...)
			}
		}
		emit(m.keys, n.SlotStats.ByKeys, func(st SlotStat) float64 { return float64(st.Keys) })
		emit(m.cpu, n.SlotStats.ByCPU, func(st SlotStat) float64 { return float64(st.CPUMicroseconds) / 1e6 })
		emit(m.networkIn, n.SlotStats.ByNetworkIn, func(st SlotStat) float64 { return float64(st.NetworkBytesIn) })
		emit(m.networkOut, n.SlotStats.ByNetworkOut, func(st SlotStat) float64 { return float64(st.NetworkBytesOut) })
	}
}
