// Package rediscanary is the Redis Cluster write canary: per master, one
// key whose hash tag lands in a slot that master owns, written by the
// engine the Redis canaries share (systems/redis/keycanary), which reads
// the key from the new master after its slot changes master and counts
// the writes the old one acknowledged that the new one does not have.
//
// source.go finds the slot owners and each one's key; collector.go turns
// the engine's snapshots into metrics.
package rediscanary

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/systems/redis/keycanary"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// Snapshot is the canary's counters after one round (the engine's).
type Snapshot = keycanary.Snapshot

// MasterStats are the canary's counters for one master, keyed by node id.
type MasterStats = keycanary.MasterStats

// source reads the cluster's slot owners each round and hands the engine
// one key per master. Only the watcher's goroutine calls round.
type source struct {
	cfg    settings.Cluster
	engine *keycanary.Engine
	// known are the master addresses of the last topology, asked first.
	known []string
}

func newSource(cfg settings.Cluster, logger log.Logger) (*source, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("no seed addresses")
	}
	option, err := redisproto.ClientOption(cfg)
	if err != nil {
		return nil, err
	}
	engine, err := keycanary.New(cfg.Canary, cfg.CommandTimeout, option, logger)
	if err != nil {
		return nil, err
	}
	return &source{cfg: cfg, engine: engine}, nil
}

// round reads the topology, then writes every master's key once.
func (s *source) round(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	slots, err := s.topology(ctx)
	if err != nil {
		return nil, err
	}
	// One key per master that owns slots. A replica promoted in its
	// master's place owns the same slots and so gets the same key.
	var targets []keycanary.Target
	for _, m := range slots.Masters() {
		key, _, ok := s.chooseKey(m.ID, slots)
		if !ok {
			continue
		}
		targets = append(targets, keycanary.Target{Key: key, Owner: m.ID, ID: m.ID, Addr: m.Addr})
	}
	return s.engine.Round(ctx, prev, targets), nil
}

func (s *source) close() { s.engine.Close() }

// chooseKey finds the canary key of a master: the first hash tag "0",
// "1", ... whose slot the master owns. The search is deterministic, so a
// master's replica that takes over its slots gets the same key.
func (s *source) chooseKey(masterID string, slots *redisproto.SlotMap) (string, int, bool) {
	// 16384 slots and CRC16 spread tags evenly: a master owning one slot is
	// found within a few times 16384 tags.
	for i := range 1 << 20 {
		tag := strconv.Itoa(i)
		slot := redisproto.KeySlot(tag)
		if owner, ok := slots.Owner(slot); ok && owner.ID == masterID {
			return s.cfg.Canary.KeyPrefix + "{" + tag + "}", slot, true
		}
	}
	return "", 0, false
}

// topology asks the known masters and the seeds for CLUSTER NODES and
// CLUSTER INFO at once and merges their answers by the exporter's one
// slot-ownership rule (redisproto.NewSlotMap, the watcher's): members only, and
// per slot the claim with the highest config epoch, as Redis does. A
// master that died still owns its slots until a replica with a higher
// epoch claims them, so writes to it are tried and counted as failures.
// Clients of addresses no answer mentions any more are closed.
func (s *source) topology(ctx context.Context) (*redisproto.SlotMap, error) {
	seen := map[string]bool{}
	var addrs []string
	for _, a := range append(append([]string(nil), s.known...), s.cfg.Addrs...) {
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	// A hung node must not hold up the round: take what answered in time.
	wait := min(s.cfg.CommandTimeout, s.cfg.Canary.Interval/4)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	type answer struct {
		view redisproto.View
		err  error
	}
	answers := make(chan answer, len(addrs))
	for _, addr := range addrs {
		go func() {
			view, err := s.readView(ctx, addr)
			if err != nil {
				err = fmt.Errorf("%s: %w", addr, err)
			}
			answers <- answer{view, err}
		}()
	}
	var views []redisproto.View
	var errs []error
	for range addrs {
		a := <-answers
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		views = append(views, a.view)
	}
	if len(views) == 0 {
		return nil, fmt.Errorf("no node answered CLUSTER NODES: %w", errors.Join(errs...))
	}
	slots, err := redisproto.NewSlotMap(views)
	if err != nil {
		return nil, err
	}
	s.known = s.known[:0]
	for _, m := range slots.Masters() {
		if m.Addr != "" {
			s.known = append(s.known, m.Addr)
		}
	}
	// Every query of this round has returned: no write uses a client yet.
	keep := slices.Clone(s.cfg.Addrs)
	keep = append(keep, redisproto.Addrs(views)...)
	s.engine.DropClientsExcept(keep)
	return slots, nil
}

// readView reads one node's CLUSTER NODES and CLUSTER INFO in one round trip.
func (s *source) readView(ctx context.Context, addr string) (redisproto.View, error) {
	client, err := s.engine.Client(addr)
	if err != nil {
		return redisproto.View{}, err
	}
	replies := client.DoMulti(ctx, client.B().ClusterNodes().Build(), client.B().ClusterInfo().Build())
	nodes, err := replies[0].ToString()
	if err != nil {
		return redisproto.View{}, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	info, err := replies[1].ToString()
	if err != nil {
		return redisproto.View{}, fmt.Errorf("CLUSTER INFO: %w", err)
	}
	return redisproto.ParseView(addr, nodes, info)
}
