package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/redis/rueidis"

	redisproto "github.com/failover-exporter/failover_exporter/systems/redis/proto"
	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
	"github.com/failover-exporter/failover_exporter/systems/sentinel/settings"
)

// source reads one Sentinel deployment: every sentinel it knows of, then
// every data node they name.
type source struct {
	cfg    settings.Set
	logger log.Logger
	// sentinels and nodes hold the connections, each with its own
	// credentials and TLS.
	sentinels, nodes *pool
}

func newSource(cfg settings.Set, logger log.Logger) (*source, error) {
	if len(cfg.Sentinels) == 0 {
		return nil, errors.New("no sentinel addresses")
	}
	if cfg.CommandTimeout <= 0 || cfg.DialTimeout <= 0 {
		return nil, errors.New("command and dial timeouts must be positive; was config.Complete called?")
	}
	sentinelOpt, err := clientOption(cfg, cfg.SentinelConnection)
	if err != nil {
		return nil, fmt.Errorf("sentinel_connection: %w", err)
	}
	nodeOpt, err := clientOption(cfg, cfg.NodeConnection)
	if err != nil {
		return nil, fmt.Errorf("node_connection: %w", err)
	}
	return &source{cfg: cfg, logger: logger, sentinels: newPool(sentinelOpt), nodes: newPool(nodeOpt)}, nil
}

// clientOption is the Redis Cluster watcher's client, with one of the
// deployment's connections' credentials and TLS: one connection to exactly
// the process named, no retries, no client-side cache, small buffers.
func clientOption(cfg settings.Set, c settings.Connection) (rueidis.ClientOption, error) {
	return redisproto.ClientOption(redissettings.Cluster{
		Username: c.Username, Password: c.Password, TLS: c.TLS,
		DialTimeout: cfg.DialTimeout, CommandTimeout: cfg.CommandTimeout,
	})
}

// Close closes every connection.
func (s *source) Close() {
	s.sentinels.close()
	s.nodes.close()
}

// Refresh reads the sentinels (the seeds, the ones known before, and the
// ones those list), then the data nodes they name.
func (s *source) Refresh(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	probedAt := time.Now()
	addrs := slices.Clone(s.cfg.Sentinels)
	if prev != nil {
		for _, st := range prev.Sentinels {
			addrs = append(addrs, st.Addr)
		}
	}
	views := map[string]sentinelView{}
	s.readSentinels(ctx, addrs, views)
	// Sentinels the ones read list, and the refresh has not read yet: a
	// few rounds, each of those the last one found.
	for range maxDiscoveryRounds {
		if !s.readSentinels(ctx, listedSentinels(views), views) {
			break
		}
	}
	if !anyRead(views) {
		return nil, &noSentinelAnsweredError{views: views}
	}
	nodes := map[string]nodeView{}
	s.readNodes(ctx, nodeAddrs(views), nodes)
	snap := build(s.cfg, views, nodes)
	snap.ProbedAt = probedAt
	carry(prev, snap, s.cfg)
	s.sentinels.keep(sentinelAddrs(snap))
	s.nodes.keep(nodeAddrs(views))
	return snap, nil
}

// sentinelView is what one sentinel answered: every watched master it
// monitors, by name.
type sentinelView struct {
	addr       string
	err        error
	answeredAt time.Time
	masters    map[string]Report
	// extra are masters it monitors that are not watched, by name: not
	// read further, but their count is logged once.
	extra int
}

// maxDiscoveryRounds bounds the rounds of a refresh that read sentinels
// found in the previous round's lists.
const maxDiscoveryRounds = 3

// readSentinels reads the sentinels at addrs that views does not hold yet,
// concurrently, until ctx ends; a sentinel still answering then is left to
// finish on its own. It reports whether there was any to read.
func (s *source) readSentinels(ctx context.Context, addrs []string, views map[string]sentinelView) bool {
	var todo []string
	for _, a := range addrs {
		if _, done := views[a]; !done && a != "" && !slices.Contains(todo, a) {
			todo = append(todo, a)
		}
	}
	for _, v := range gather(ctx, todo, s.readSentinel) {
		if v.err != nil {
			level.Debug(s.logger).Log("msg", "sentinel read failed", "sentinel", v.addr, "err", v.err)
		}
		views[v.addr] = v
	}
	for _, a := range todo {
		if _, answered := views[a]; !answered {
			views[a] = sentinelView{addr: a, err: errors.New("did not answer before the refresh deadline")}
		}
	}
	return len(todo) > 0
}

// gather runs read for every address at once and returns what answered
// before ctx ended, and a deadline error for the rest.
func gather[V any](ctx context.Context, addrs []string, read func(context.Context, string) V) []V {
	results := make(chan V, len(addrs)) // buffered: late senders never block
	for _, a := range addrs {
		go func() { results <- read(ctx, a) }()
	}
	var out []V
	for range addrs {
		select {
		case v := <-results:
			out = append(out, v)
		case <-ctx.Done():
			return out
		}
	}
	return out
}

// readSentinel asks one sentinel for its masters, then, for each watched
// one, its master address, replicas, fellow sentinels and quorum check.
func (s *source) readSentinel(ctx context.Context, addr string) sentinelView {
	v := sentinelView{addr: addr, masters: map[string]Report{}}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	defer cancel()
	replies, err := s.sentinels.do(ctx, addr, func(b rueidis.Builder) rueidis.Commands {
		return rueidis.Commands{b.Arbitrary("SENTINEL", "MASTERS").Build()}
	})
	if err == nil {
		err = replies[0].Error()
	}
	if err != nil {
		v.err = fmt.Errorf("SENTINEL MASTERS: %w", err)
		return v
	}
	masters, err := parseMasters(replies[0])
	if err != nil {
		v.err = err
		return v
	}
	var names []string
	for name := range masters {
		if s.cfg.MasterWatched(name) {
			names = append(names, name)
		} else {
			v.extra++
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		v.answeredAt = time.Now()
		return v
	}
	replies, err = s.sentinels.do(ctx, addr, func(b rueidis.Builder) rueidis.Commands {
		var cmds rueidis.Commands
		for _, name := range names {
			cmds = append(cmds,
				b.Arbitrary("SENTINEL", "GET-MASTER-ADDR-BY-NAME").Args(name).Build(),
				b.Arbitrary("SENTINEL", "REPLICAS").Args(name).Build(),
				b.Arbitrary("SENTINEL", "SENTINELS").Args(name).Build(),
				b.Arbitrary("SENTINEL", "CKQUORUM").Args(name).Build())
		}
		return cmds
	})
	if err != nil {
		v.err = err
		return v
	}
	v.answeredAt = time.Now()
	for i, name := range names {
		r, err := parseReport(addr, masters[name], replies[4*i:4*i+4])
		if err != nil {
			v.err = fmt.Errorf("master %s: %w", name, err)
			return v
		}
		v.masters[name] = r
	}
	return v
}

// nodeView is what one data node answered: INFO replication.
type nodeView struct {
	addr       string
	err        error
	answeredAt time.Time
	info       redisproto.InfoFields
}

// readNodes reads the data nodes at addrs, as readSentinels does.
func (s *source) readNodes(ctx context.Context, addrs []string, views map[string]nodeView) {
	for _, v := range gather(ctx, addrs, s.readNode) {
		if v.err != nil {
			level.Debug(s.logger).Log("msg", "node read failed", "node", v.addr, "err", v.err)
		}
		views[v.addr] = v
	}
}

// readNode asks one data node for its replication state: its own role,
// offset, link and priority.
func (s *source) readNode(ctx context.Context, addr string) nodeView {
	v := nodeView{addr: addr}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	defer cancel()
	replies, err := s.nodes.do(ctx, addr, func(b rueidis.Builder) rueidis.Commands {
		return rueidis.Commands{b.Info().Section("replication").Build()}
	})
	var text string
	if err == nil {
		text, err = replies[0].ToString()
	}
	if err == nil {
		v.info, err = redisproto.ParseInfoFields(text)
	}
	if err != nil {
		v.err = fmt.Errorf("INFO replication: %w", err)
		return v
	}
	v.answeredAt = time.Now()
	return v
}

// noSentinelAnsweredError is a refresh that read no sentinel.
type noSentinelAnsweredError struct{ views map[string]sentinelView }

func (e *noSentinelAnsweredError) Error() string {
	addrs := make([]string, 0, len(e.views))
	for a := range e.views {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	var parts []string
	for _, a := range addrs {
		if err := e.views[a].err; err != nil {
			parts = append(parts, a+": "+err.Error())
		}
	}
	if len(parts) == 0 {
		return "no sentinel answered before the refresh deadline"
	}
	return "no sentinel answered: " + strings.Join(parts, "; ")
}

// anyRead reports whether some sentinel was read.
func anyRead(views map[string]sentinelView) bool {
	for _, v := range views {
		if v.err == nil && !v.answeredAt.IsZero() {
			return true
		}
	}
	return false
}

// listedSentinels are the sentinels the views list for their masters.
func listedSentinels(views map[string]sentinelView) []string {
	var out []string
	for _, v := range views {
		for _, r := range v.masters {
			out = append(out, r.Sentinels...)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// nodeAddrs are every data node the views name: each master's address as
// each sentinel reports it, and its replicas.
func nodeAddrs(views map[string]sentinelView) []string {
	var out []string
	for _, v := range views {
		for _, r := range v.masters {
			if r.Addr != "" {
				out = append(out, r.Addr)
			}
			for _, rep := range r.Replicas {
				out = append(out, rep.Addr)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// sentinelAddrs are the snapshot's sentinels' addresses.
func sentinelAddrs(snap *Snapshot) []string {
	out := make([]string, 0, len(snap.Sentinels))
	for _, st := range snap.Sentinels {
		out = append(out, st.Addr)
	}
	return out
}

// hostPort joins what Sentinel reports as ip and port; "" when port is not
// a port number.
func hostPort(ip, port string) string {
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return ""
	}
	return net.JoinHostPort(ip, port)
}

// atoi64 parses a decimal reply field, 0 when it is not one.
func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
