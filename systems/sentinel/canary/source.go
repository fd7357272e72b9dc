// Package sentinelcanary is the Redis Sentinel write canary: per watched
// master name, one key (PREFIX{name}), written every interval to the
// master the sentinels name, as a client of Sentinel finds it. The engine
// the Redis canaries share (systems/redis/keycanary) writes it (with WAIT
// when configured) and, when the master holding it changes (a failover,
// or a restart: a new run id), reads it from the new master before the
// next write, counting the writes the old one acknowledged that the new
// one does not have.
//
// source.go finds each master and its run id; collector.go turns the
// engine's snapshots into metrics.
package sentinelcanary

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/systems/redis/keycanary"
	redisproto "github.com/failover-exporter/failover_exporter/systems/redis/proto"
	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// Snapshot is the canary's counters after one round (the engine's).
type Snapshot = keycanary.Snapshot

// MasterStats are the canary's counters for one master node, keyed by its
// address.
type MasterStats = keycanary.MasterStats

// source asks the sentinels for the masters each round and hands the
// engine one key per master name. Only the watcher's goroutine calls
// round, so runIDs needs no lock.
type source struct {
	cfg    settings.Set
	logger log.Logger
	engine *keycanary.Engine

	// sentinels are the connections to the configured sentinels, with
	// sentinel_connection's credentials.
	sentinels *keycanary.Clients

	// runIDs are the run ids the data nodes last gave, by address: a master
	// that does not answer keeps its last one, so that its death is not
	// taken for a new master (which would read the key again).
	runIDs map[string]string
	// disagreed is the master names whose sentinels disagreed last round,
	// to log a change once.
	disagreed map[string]bool
}

func newSource(cfg settings.Set, logger log.Logger) (*source, error) {
	if len(cfg.Sentinels) == 0 {
		return nil, errors.New("no sentinel addresses")
	}
	sentinelOption, err := clientOption(cfg, cfg.SentinelConnection)
	if err != nil {
		return nil, fmt.Errorf("sentinel_connection: %w", err)
	}
	sentinelOption.ClientName = keycanary.ClientName
	nodeOption, err := clientOption(cfg, cfg.NodeConnection)
	if err != nil {
		return nil, fmt.Errorf("node_connection: %w", err)
	}
	engine, err := keycanary.New(cfg.Canary, cfg.CommandTimeout, nodeOption, logger)
	if err != nil {
		return nil, err
	}
	return &source{
		cfg: cfg, logger: logger, engine: engine, sentinels: keycanary.NewClients(sentinelOption),
		runIDs: map[string]string{}, disagreed: map[string]bool{},
	}, nil
}

// clientOption is the watchers' client with one of the deployment's
// connections' credentials and TLS: one connection to exactly the process
// named, no retries, no client-side cache, small buffers.
func clientOption(cfg settings.Set, c settings.Connection) (rueidis.ClientOption, error) {
	return redisproto.ClientOption(redissettings.Cluster{
		Username: c.Username, Password: c.Password, TLS: c.TLS,
		DialTimeout: cfg.DialTimeout, CommandTimeout: cfg.CommandTimeout,
	})
}

// round asks the sentinels for the masters and the masters for their run
// ids, then writes every master's key once.
func (s *source) round(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	// A hung sentinel or node must not hold up the round: take what
	// answered in time.
	wait := min(s.cfg.CommandTimeout, s.cfg.Canary.Interval/4)
	askCtx, cancel := context.WithTimeout(ctx, wait)
	masters, err := s.masters(askCtx)
	if err != nil {
		cancel()
		return nil, err
	}
	addrs := make([]string, 0, len(masters))
	for _, m := range masters {
		addrs = append(addrs, m.addr)
	}
	ids := s.readRunIDs(askCtx, addrs)
	cancel()
	targets := make([]keycanary.Target, 0, len(masters))
	for _, m := range masters {
		owner := ids[m.addr]
		if owner == "" {
			owner = s.runIDs[m.addr]
		}
		if owner == "" {
			// Never read: the address stands for the node until it answers.
			owner = "address:" + m.addr
		}
		s.runIDs[m.addr] = owner
		targets = append(targets, keycanary.Target{
			Key: s.cfg.Canary.KeyPrefix + "{" + m.name + "}", Owner: owner, ID: m.addr, Addr: m.addr, Set: m.name,
		})
	}
	next := s.engine.Round(ctx, prev, targets)
	// Every write of the round has returned: connections to nodes that are
	// no master any more are closed, and their run ids forgotten.
	s.engine.DropClientsExcept(addrs)
	for addr := range s.runIDs {
		if !slices.Contains(addrs, addr) {
			delete(s.runIDs, addr)
		}
	}
	return next, nil
}

// master is one watched master name and the address the sentinels give.
type master struct {
	name, addr string
}

// masters asks every configured sentinel for SENTINEL MASTERS at once and
// returns each watched master, in name order, at the address most of the
// sentinels that answered give (on a tie, the first sentinel's in the
// config's order), as a client asking the sentinels would find it.
func (s *source) masters(ctx context.Context) ([]master, error) {
	answers := make([]map[string]string, len(s.cfg.Sentinels))
	errs := make([]error, len(s.cfg.Sentinels))
	var wg sync.WaitGroup
	for i, addr := range s.cfg.Sentinels {
		wg.Go(func() { answers[i], errs[i] = s.askSentinel(ctx, addr) })
	}
	wg.Wait()
	answered := slices.IndexFunc(errs, func(err error) bool { return err == nil }) >= 0
	if !answered {
		return nil, fmt.Errorf("no sentinel answered SENTINEL MASTERS: %w", errors.Join(errs...))
	}
	names := map[string]bool{}
	for _, a := range answers {
		for name := range a {
			if s.cfg.MasterWatched(name) {
				names[name] = true
			}
		}
	}
	var out []master
	for _, name := range slices.Sorted(maps.Keys(names)) {
		addr, disagree := pick(answers, name)
		if disagree != s.disagreed[name] {
			s.disagreed[name] = disagree
			if disagree {
				level.Warn(s.logger).Log("msg", "sentinels disagree on the master; the canary writes to the one most of them name", "master", name, "address", addr)
			}
		}
		out = append(out, master{name, addr})
	}
	return out, nil
}

// pick is the address most answers give for name, the earliest answer's
// on a tie, and whether the answers disagree.
func pick(answers []map[string]string, name string) (addr string, disagree bool) {
	votes := map[string]int{}
	var order []string
	for _, a := range answers {
		if v, ok := a[name]; ok {
			if votes[v] == 0 {
				order = append(order, v)
			}
			votes[v]++
		}
	}
	for _, v := range order {
		if votes[v] > votes[addr] {
			addr = v
		}
	}
	return addr, len(order) > 1
}

// askSentinel reads one sentinel's SENTINEL MASTERS: the address of every
// master it monitors, by name. A name or address that cannot be a label
// is refused, as the watcher refuses it.
func (s *source) askSentinel(ctx context.Context, addr string) (map[string]string, error) {
	client, err := s.sentinels.Get(addr)
	if err != nil {
		return nil, err
	}
	entries, err := client.Do(ctx, client.B().Arbitrary("SENTINEL", "MASTERS").Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("%s: SENTINEL MASTERS: %w", addr, err)
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		// A map in RESP3, pairs in RESP2: AsStrMap reads both.
		fields, err := e.AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("%s: SENTINEL MASTERS: %w", addr, err)
		}
		name, at := fields["name"], hostPort(fields["ip"], fields["port"])
		if !settings.LabelSafe(name) || at == "" {
			return nil, fmt.Errorf("%s: SENTINEL MASTERS: a master name or address that is empty, longer than %d bytes or not printable ASCII", addr, settings.MaxLabel)
		}
		out[name] = at
	}
	return out, nil
}

// hostPort joins a reply's ip and port, "" when they are no address.
func hostPort(ip, port string) string {
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 || !settings.LabelSafe(ip) {
		return ""
	}
	return net.JoinHostPort(ip, port)
}

// readRunIDs asks each master for its run id (INFO server) at once; a
// master that does not answer is left out.
func (s *source) readRunIDs(ctx context.Context, addrs []string) map[string]string {
	ids := make([]string, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() {
			client, err := s.engine.Client(addr)
			if err != nil {
				return
			}
			info, err := client.Do(ctx, client.B().Info().Section("server").Build()).ToString()
			if err != nil {
				level.Debug(s.logger).Log("msg", "master's run id not read", "address", addr, "err", err)
				return
			}
			ids[i] = runID(info)
		})
	}
	wg.Wait()
	out := make(map[string]string, len(addrs))
	for i, addr := range addrs {
		if ids[i] != "" {
			out[addr] = ids[i]
		}
	}
	return out
}

// runID is INFO server's run_id, "" if it has none that could be one.
func runID(info string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "run_id:"); ok && settings.LabelSafe(v) {
			return v
		}
	}
	return ""
}

// close stops the engine (giving the lease back if held) and closes the
// sentinels' connections.
func (s *source) close() {
	s.engine.Close()
	s.sentinels.Close()
}
