package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/redis/rueidis"

	"github.com/failover-exporter/failover_exporter/systems/peer"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// errNodeBusy is returned for a node whose previous query has not finished.
// Skipping it, rather than starting another query, keeps a hung node from
// accumulating goroutines and connections across refreshes.
var errNodeBusy = errors.New("previous query to this node is still in flight")

// source reads a Redis Cluster by querying every node it lists directly.
type source struct {
	cfg    settings.Cluster
	option rueidis.ClientOption
	logger log.Logger

	mu      sync.Mutex
	clients map[string]*nodeClient // by address; kept across refreshes
	closed  bool
	// peers says what answered at an address that failed.
	peers peer.Cache
	// slotStats reads the hot slots; nil unless slot_stats.top is set.
	slotStats *slotStatsReader
	// migrationsRefusedLogged makes an ACL refusing the atomic slot
	// migration command one log line: it repeats on every refresh.
	migrationsRefusedLogged atomic.Bool
}

// nodeClient is the connection to one node.
type nodeClient struct {
	addr string
	// busy is set while a query runs; see errNodeBusy.
	busy atomic.Bool
	// migrationAPI is the node's atomic slot migration command, a
	// migrationAPI read once (migrations.go).
	migrationAPI atomic.Int32
	// nodeTimeout is the node's cluster-node-timeout in milliseconds, read
	// once per connection: 0 unread, -1 refused or unreadable (budget.go).
	nodeTimeout atomic.Int64

	mu     sync.Mutex
	client rueidis.Client
	closed bool
}

func newSource(cfg settings.Cluster, logger log.Logger) (*source, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("no seed addresses")
	}
	if cfg.CommandTimeout <= 0 || cfg.DialTimeout <= 0 {
		return nil, errors.New("command and dial timeouts must be positive; was config.Complete called?")
	}
	option, err := redisproto.ClientOption(cfg)
	if err != nil {
		return nil, err
	}
	s := &source{
		cfg:     cfg,
		option:  option,
		logger:  logger,
		clients: map[string]*nodeClient{},
	}
	if cfg.SlotStats.Top > 0 {
		s.slotStats = &slotStatsReader{top: cfg.SlotStats.Top, logger: logger}
	}
	return s, nil
}

// refresh reads the topology and every node in it. Later refreshes start
// from the last known topology, so the cluster is still found when the seeds
// are gone; the seeds are tried only when none of those nodes answers.
func (s *source) Refresh(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	probedAt := time.Now()
	queried := map[string]bool{}
	clientsOf := staleRoutingAddrs(prev)
	var views []nodeView
	var errs []error
	query := func(addrs []string) {
		var todo []string
		for _, a := range addrs {
			if a != "" && !queried[a] {
				queried[a] = true
				todo = append(todo, a)
			}
		}
		v, e := s.queryNodes(ctx, todo, clientsOf)
		views, errs = append(views, v...), append(errs, e...)
	}

	if prev != nil {
		known := make([]string, 0, len(prev.Nodes)+len(prev.Foreign))
		for _, n := range prev.Nodes {
			known = append(known, n.Addr)
		}
		// Foreign nodes are read again so that they stay reported (a
		// forgotten replica is listed by no member) until they rejoin or
		// stop answering.
		for _, f := range prev.Foreign {
			known = append(known, f.Addr)
		}
		query(known)
	}
	if len(views) == 0 {
		query(s.cfg.Addrs)
	}
	if len(views) == 0 {
		return nil, &noNodeAnsweredError{errs: errs}
	}
	// Nodes that joined since the last refresh, or all of them on the first.
	query(topologyAddrs(views))

	snap, err := buildSnapshotLoading(views, loadingNodes(errs))
	if err != nil {
		return nil, err
	}
	// Dated by the last answer, not by the end of the refresh: a hung
	// node keeps the refresh waiting until its deadline, and the cluster's
	// state read from the others is that much older.
	snap.ReadAt = lastAnswer(views)
	snap.ProbedAt = probedAt
	snap.backdateLimit = s.cfg.BackdateLimit
	snap.FailureBudget = assessBudget(snap, s.cfg.FailureBudget, clusterNodeTimeout(views))
	s.readSlotStats(ctx, snap)
	carryTransitions(prev, snap)
	settleDisputes(prev, snap, time.Now())
	keep := append(topologyAddrs(views), s.cfg.Addrs...)
	for _, f := range snap.Foreign {
		keep = append(keep, f.Addr)
	}
	s.dropClientsExcept(keep)
	return snap, nil
}

// lastAnswer is when the last of the views arrived.
func lastAnswer(views []nodeView) time.Time {
	var last time.Time
	for _, v := range views {
		if v.AnsweredAt.After(last) {
			last = v.AnsweredAt
		}
	}
	if last.IsZero() {
		return time.Now()
	}
	return last
}

// topologyAddrs lists every address the views mention.
func topologyAddrs(views []nodeView) []string { return redisproto.Addrs(views) }

// queryNodes queries the nodes concurrently and returns the views of those
// that answered before ctx ended; it lists the clients of those in
// clientsOf. A node that has not answered by then is
// left to finish (or time out) on its own; refresh does not wait for it.
func (s *source) queryNodes(ctx context.Context, addrs []string, clientsOf map[string]bool) ([]nodeView, []error) {
	type result struct {
		view nodeView
		err  error
	}
	results := make(chan result, len(addrs)) // buffered: late senders never block
	for _, addr := range addrs {
		nc := s.nodeClient(addr)
		if nc == nil {
			continue // source closed
		}
		go func() {
			view, err := s.queryNode(ctx, nc, clientsOf[nc.addr])
			if err != nil {
				err = fmt.Errorf("%s: %w", nc.addr, s.explain(nc.addr, err))
			}
			results <- result{view, err}
		}()
	}
	var views []nodeView
	var errs []error
	for range addrs {
		select {
		case r := <-results:
			if r.err != nil {
				level.Debug(s.logger).Log("msg", "node query failed", "err", r.err)
				errs = append(errs, r.err)
				continue
			}
			views = append(views, r.view)
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("refresh deadline: %w", ctx.Err()))
			return views, errs
		}
	}
	return views, errs
}

// peerHintWait is how long a failed query waits for the probe of what is at
// the address. Kafka and a cluster bus answer it in milliseconds, but a
// loaded machine's Kafka took over 200 ms, and the first failure is the one
// logged as a warning: it waits up to a second, once per address (the
// answer is cached), and only for a closed or reset connection.
const peerHintWait = time.Second

// explain says what to do about a refused login, and what answered at addr
// when it is not Redis (a Kafka broker, a cluster bus port), which rueidis
// reports only as EOF or a reset connection.
func (s *source) explain(addr string, err error) error {
	if strings.Contains(err.Error(), "NOAUTH") && !s.cfg.Password.IsSet() {
		return fmt.Errorf("%w (the server wants a password: give --redis.password-file=FILE, or password: {file: FILE} or {env: VARIABLE} in the config file)", err)
	}
	// A reply is from Redis; a refused or timed-out connection is a node
	// that is down or hung. Only a closed or reset connection is probed.
	var netErr net.Error
	var loading *loadingError
	if _, isReply := rueidis.IsRedisErr(err); isReply || errors.Is(err, errNodeBusy) || errors.As(err, &loading) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout() {
		return err
	}
	if hint := s.peers.Hint(addr, peer.Redis, peerHintWait); hint != "" {
		return fmt.Errorf("%w (%s)", err, hint)
	}
	return err
}

// nodeClient returns the client for addr, creating the entry (not the
// connection) if needed. It returns nil once the source is closed.
func (s *source) nodeClient(addr string) *nodeClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	nc, ok := s.clients[addr]
	if !ok {
		nc = &nodeClient{addr: addr}
		s.clients[addr] = nc
	}
	return nc
}

// dropClientsExcept closes the clients of nodes that left the topology.
func (s *source) dropClientsExcept(keep []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, nc := range s.clients {
		if !slices.Contains(keep, addr) {
			delete(s.clients, addr)
			nc.close()
		}
	}
}

// close closes every client; the source cannot be used afterwards.
func (s *source) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for addr, nc := range s.clients {
		delete(s.clients, addr)
		nc.close()
	}
}

func (nc *nodeClient) close() {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	nc.closed = true
	if nc.client != nil {
		nc.client.Close()
		nc.client = nil
	}
}

// get returns the node's rueidis client, dialling it the first time. The
// dial is bounded by the dialer timeout (rueidis.NewClient takes no context).
func (nc *nodeClient) get(option rueidis.ClientOption) (rueidis.Client, error) {
	nc.mu.Lock()
	if nc.client != nil {
		defer nc.mu.Unlock()
		return nc.client, nil
	}
	nc.mu.Unlock()
	option.InitAddress = []string{nc.addr}
	// With ForceSingleClient rueidis returns a usable client even when the
	// first dial fails; it dials again on the next command.
	client, err := rueidis.NewClient(option)
	if client == nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if nc.closed {
		// Dropped from the topology while dialling: do not leak it.
		client.Close()
		return nil, errors.New("client closed")
	}
	if nc.client != nil {
		// Another caller won the race; keep one connection per node.
		client.Close()
		return nc.client, nil
	}
	nc.client = client
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return client, nil
}

// queryNode reads one node's view with one pipelined round trip, its
// clients too when clients is set.
func (s *source) queryNode(ctx context.Context, nc *nodeClient, clients bool) (nodeView, error) {
	if !nc.busy.CompareAndSwap(false, true) {
		return nodeView{}, errNodeBusy
	}
	defer nc.busy.Store(false)

	client, err := nc.get(s.option)
	if err != nil {
		return nodeView{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	defer cancel()
	cmds := nodeCommands(client)
	api := nc.readMigrationAPI(ctx, client)
	migrationReply := -1
	if api == migrationAPIValkey || api == migrationAPIRedis {
		migrationReply = len(cmds)
		cmds = append(cmds, migrationCommand(client, api))
	}
	clientsReply := -1
	if clients {
		clientsReply = len(cmds)
		cmds = append(cmds, clientListCommand(client))
	}
	nodeTimeoutReply := -1
	if nc.nodeTimeout.Load() == 0 {
		nodeTimeoutReply = len(cmds)
		cmds = append(cmds, client.B().ConfigGet().Parameter("cluster-node-timeout").Build())
	}
	replies := client.DoMulti(ctx, cmds...)
	answeredAt := time.Now()
	if err := loadingReply(nc.addr, replies); err != nil {
		err.load = readLoadProgress(ctx, client)
		return nodeView{}, err
	}
	texts := make([]string, 4)
	for i := range texts {
		if texts[i], err = replies[i].ToString(); err != nil {
			return nodeView{}, fmt.Errorf("%s: %w", commandNames[i], err)
		}
	}
	keys, err := replies[4].AsInt64()
	if err != nil {
		return nodeView{}, fmt.Errorf("%s: %w", commandNames[4], err)
	}
	view, err := parseNodeView(nc.addr, texts[0], texts[1], texts[2], texts[3], keys)
	if err != nil {
		return view, err
	}
	hello, err := replies[5].AsMap()
	if err != nil {
		return nodeView{}, fmt.Errorf("HELLO: %w", err)
	}
	if zone, ok := hello["availability_zone"]; ok {
		view.Zone, _ = zone.ToString()
	}
	s.readErrorStats(&view, nc.addr, replies[6])
	s.readSyncStats(&view, nc.addr, replies[7])
	if clientsReply >= 0 {
		s.readClients(&view, nc.addr, replies[clientsReply])
	}
	if nodeTimeoutReply >= 0 {
		nc.nodeTimeout.Store(parseNodeTimeout(replies[nodeTimeoutReply]))
	}
	if ms := nc.nodeTimeout.Load(); ms > 0 {
		view.NodeTimeout = time.Duration(ms) * time.Millisecond
	}
	if migrationReply >= 0 {
		// A node whose jobs cannot be read (an ACL refusing the command)
		// is still read; its migration series are absent.
		if view.Migrations, err = nc.readMigrations(replies[migrationReply], api); err != nil {
			s.reportMigrationsUnread(nc.addr, api, err)
		} else {
			view.MigrationsRead = true
		}
	}
	view.AnsweredAt = answeredAt
	return view, nil
}

// loadingError is a node that answered LOADING: it is loading its data set
// and answers INFO only. Sync is its sync in progress, from its INFO
// replication, for a replica loading a full sync's RDB.
type loadingError struct {
	addr string
	loadingNode
}

// loadingNode is what a node that answered LOADING said of its load: its
// sync from its master (a replica) and its load's progress.
type loadingNode struct {
	sync replicaSync
	load loadProgress
}

func (e *loadingError) Error() string {
	return "the node is loading its data set (LOADING)"
}

// loadingReply returns a *loadingError when one of the node's replies is
// LOADING (Redis refuses CLUSTER NODES while loading, Valkey only DBSIZE),
// nil otherwise.
func loadingReply(addr string, replies []rueidis.RedisResult) *loadingError {
	if !slices.ContainsFunc(replies, func(r rueidis.RedisResult) bool {
		re, ok := rueidis.IsRedisErr(r.Error())
		return ok && strings.HasPrefix(re.Error(), "LOADING")
	}) {
		return nil
	}
	e := &loadingError{addr: addr}
	if text, err := replies[2].ToString(); err == nil {
		if fields, err := redisproto.ParseInfoFields(text); err == nil && fields.Value("role") != "master" {
			e.sync = parseReplicaSync(fields)
		}
	}
	return e
}

// readLoadProgress asks a loading node its load's progress (INFO
// persistence, sent only to a node that answered LOADING); unread when it
// does not say.
func readLoadProgress(ctx context.Context, client rueidis.Client) loadProgress {
	text, err := client.Do(ctx, client.B().Info().Section("persistence").Build()).ToString()
	if err != nil {
		return loadProgress{}
	}
	fields, err := redisproto.ParseInfoFields(text)
	if err != nil {
		return loadProgress{}
	}
	return parseLoadProgress(fields)
}

// loadingNodes are the nodes whose query found them loading, by address.
func loadingNodes(errs []error) map[string]loadingNode {
	var loading map[string]loadingNode
	for _, err := range errs {
		var le *loadingError
		if errors.As(err, &le) {
			if loading == nil {
				loading = map[string]loadingNode{}
			}
			loading[le.addr] = le.loadingNode
		}
	}
	return loading
}

// nodeCommands are the commands every refresh sends each node, in the
// order of commandNames.
func nodeCommands(client rueidis.Client) rueidis.Commands {
	return rueidis.Commands{
		client.B().ClusterNodes().Build(),
		client.B().ClusterInfo().Build(),
		// Two sections in two commands: INFO with several sections needs Redis 7.
		client.B().Info().Section("replication").Build(),
		client.B().Info().Section("memory").Build(),
		client.B().Dbsize().Build(),
		// Valkey 8.1 reports the node's availability-zone only here.
		client.B().Hello().Build(),
		// MOVED, ASK, ... replies (Redis 6.2+, Valkey): clients on a stale
		// topology.
		client.B().Info().Section("errorstats").Build(),
		// sync_full, sync_partial_*: full resyncs, and their loops.
		client.B().Info().Section("stats").Build(),
	}
}

// readErrorStats keeps the node's redirect error counts from its INFO
// errorstats reply; a node whose reply cannot be read (a server without
// the section, an error) is still read, without them.
func (s *source) readErrorStats(view *nodeView, addr string, reply rueidis.RedisResult) {
	text, err := reply.ToString()
	if err == nil {
		view.ErrorReplies, _, err = parseErrorStats(text)
	}
	if err != nil {
		level.Debug(s.logger).Log("msg", "reading INFO errorstats failed", "addr", addr, "err", err)
	}
}

// readSyncStats keeps the syncs the node served from its INFO stats reply;
// a node whose reply cannot be read is still read, without them.
func (s *source) readSyncStats(view *nodeView, addr string, reply rueidis.RedisResult) {
	text, err := reply.ToString()
	if err == nil {
		var c SyncCounts
		if c, err = parseSyncStats(text); err == nil {
			view.Syncs = &c
		}
	}
	if err != nil {
		level.Debug(s.logger).Log("msg", "reading INFO stats failed", "addr", addr, "err", err)
	}
}

// readClients keeps the libraries of the node's clients from its CLIENT
// LIST reply; a node whose reply cannot be read (an ACL without
// +client|list, a server naming no library) is still read, without them.
func (s *source) readClients(view *nodeView, addr string, reply rueidis.RedisResult) {
	text, err := reply.ToString()
	if err == nil {
		var named bool
		if view.Clients, named, err = parseClientList(text, staleRoutingQuiet); err == nil && !named {
			view.Clients = nil
		}
	}
	if err != nil {
		level.Debug(s.logger).Log("msg", "reading CLIENT LIST failed", "addr", addr, "err", err)
	}
}

// reportMigrationsUnread logs a node whose atomic slot migration jobs could
// not be read: once per source, at warn level, when the ACL refuses the
// command (it lasts until someone allows it), at debug level otherwise.
func (s *source) reportMigrationsUnread(addr string, api migrationAPI, err error) {
	if strings.Contains(strings.ToLower(err.Error()), "noperm") && s.migrationsRefusedLogged.CompareAndSwap(false, true) {
		allow := "+cluster|getslotmigrations"
		if api == migrationAPIRedis {
			allow = "+cluster|migration"
		}
		level.Warn(s.logger).Log("msg", "atomic slot migration jobs refused: allow "+allow+" to the exporter's ACL user (docs/redis.md); the redis_cluster_node_slot_migration_* series are absent until then; logged once",
			"node", addr, "err", err)
		return
	}
	level.Debug(s.logger).Log("msg", "reading atomic slot migrations failed", "addr", addr, "err", err)
}

// commandNames names the commands queryNode sends, in order, for errors.
var commandNames = []string{"CLUSTER NODES", "CLUSTER INFO", "INFO replication", "INFO memory", "DBSIZE", "HELLO", "INFO errorstats", "INFO stats"}

// parseNodeView decodes one node's replies.
func parseNodeView(addr, nodes, info, replication, memory string, keys int64) (nodeView, error) {
	view, err := redisproto.ParseView(addr, nodes, info)
	v := nodeView{View: view, Keys: keys}
	if err != nil {
		return v, err
	}
	fields, err := redisproto.ParseInfoFields(replication)
	if err != nil {
		return v, fmt.Errorf("INFO replication: %w", err)
	}
	if v.Replication, err = parseReplicationInfo(fields); err != nil {
		return v, err
	}
	if fields, err = redisproto.ParseInfoFields(memory); err != nil {
		return v, fmt.Errorf("INFO memory: %w", err)
	}
	if v.UsedMemory, err = parseUsedMemory(fields); err != nil {
		return v, err
	}
	return v, nil
}

// parseNodeTimeout reads CONFIG GET cluster-node-timeout's reply (a map in
// RESP3, pairs in RESP2) as milliseconds, -1 when it is refused (an ACL
// without +config|get) or not a positive number: the failure budget then
// estimates with DefaultClusterNodeTimeout.
func parseNodeTimeout(reply rueidis.RedisResult) int64 {
	values, err := reply.AsStrMap()
	if err != nil {
		return -1
	}
	ms, err := strconv.ParseInt(values["cluster-node-timeout"], 10, 64)
	if err != nil || ms <= 0 {
		return -1
	}
	return ms
}

// clusterNodeTimeout is the largest cluster-node-timeout the views report,
// 0 when none did.
func clusterNodeTimeout(views []nodeView) time.Duration {
	var timeout time.Duration
	for _, v := range views {
		timeout = max(timeout, v.NodeTimeout)
	}
	return timeout
}
