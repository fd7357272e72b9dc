package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/failover-exporter/failover_exporter/systems/kafka/client"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
	"github.com/failover-exporter/failover_exporter/systems/peer"
)

// The topic configs the exporter reads, in one batched DescribeConfigs.
const (
	minISRConfig  = "min.insync.replicas"
	uncleanConfig = "unclean.leader.election.enable"
	// remoteStorageConfig marks a topic whose rolled segments are copied
	// to tiered storage (KIP-405).
	remoteStorageConfig = "remote.storage.enable"
	// remoteCopyLagMsConfig and remoteCopyLagBytesConfig delay the copy of
	// a rolled segment (KIP-1241, Kafka 4.4).
	remoteCopyLagMsConfig    = "remote.copy.lag.ms"
	remoteCopyLagBytesConfig = "remote.copy.lag.bytes"
)

// source talks to one Kafka cluster. It keeps one connection to one broker
// and falls back to the other known brokers, then to the bootstrap servers,
// when that broker stops answering. Its fields belong to the watcher
// goroutine: the goroutines a refresh starts (metadata attempts, broker
// probes, the quorum read) get what they need as arguments and hand back
// what is to be stored, which the watcher goroutine stores after joining
// them (see refresh and readQuorum).
type source struct {
	cfg    kafkasettings.Cluster
	conf   *sarama.Config
	logger log.Logger

	// franz sends the requests sarama lacks (DescribeTopicPartitions,
	// DescribeQuorum).
	franz franzConn
	// logDirs and tiered read, beside the refreshes, what only each broker
	// can tell: its log directories, the offsets of its tiered partitions.
	logDirs logDirsReader
	tiered  tieredReader
	// coordinators asks, beside the refreshes, whether the group and
	// transaction coordinators answer (coordinators.go).
	coordinators coordinatorReader
	// transactions reads, beside the refreshes, the read_committed gaps
	// and hanging transactions (transactions.go).
	transactions transactionReader
	// catchUp measures, beside the refreshes, how far the replicas out of
	// the ISR are behind their leaders (catchup.go).
	catchUp catchUpReader
	// logged holds the last error logged per kind of optional request, so
	// that a lasting failure is a warning once, then debug lines.
	logged map[string]string

	conn *sarama.Broker
	// forwardConn is a second connection, to the same broker, for requests
	// the broker forwards to the active controller (see listReassignments).
	forwardConn *sarama.Broker
	// forwardLate reports the attempt that ran past its budget, if any.
	forwardLate chan forwardAttempt
	// reassignViaController is set once a broker answered
	// ListPartitionReassignments with NOT_CONTROLLER (ZooKeeper mode): the
	// request then goes to the controller Metadata names.
	reassignViaController bool
	// known are the addresses of the brokers in the last Metadata response,
	// tried after the current connection and before the bootstrap servers.
	known []string
	// failing are the addresses whose last attempt failed; they are tried
	// last, so that brokers which accept connections but never answer
	// cannot use up every refresh's deadline ahead of a live one.
	failing map[string]bool
	// inFlight are attempts abandoned at a refresh deadline that have not
	// answered yet, by address. A later refresh waits for such an attempt
	// instead of sending the same request again, so that a broker slower
	// than the deadline (a large cluster's Metadata on a busy broker) never
	// has more than one of our requests, and its response, in flight.
	inFlight map[string]chan metadataAttempt
	// now is time.Now, replaceable in tests.
	now func() time.Time
	// peers says what answered at an address that failed; answered are
	// the addresses that ever answered a Metadata request.
	peers    peer.Cache
	answered map[string]bool
}

func newSource(cfg kafkasettings.Cluster, logger log.Logger) (*source, error) {
	conf, security, err := kafkaclient.Configs(cfg)
	if err != nil {
		return nil, err
	}
	franz, err := kgo.NewClient(append(security, franzMaxVersions())...)
	if err != nil {
		return nil, fmt.Errorf("kafka client config: %w", err)
	}
	return &source{cfg: cfg, conf: conf, franz: franzConn{client: franz}, logger: logger, now: time.Now}, nil
}

// refresh reads the cluster once: one Metadata request for all topics, one
// ListPartitionReassignments request, one DescribeQuorum request, when due
// or when new topics appeared one batched DescribeConfigs request, and when
// partitions are below min ISR the DescribeTopicPartitions requests for
// their ELR.
func (s *source) Refresh(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	md, broker, err := s.readMetadata(ctx)
	if err != nil {
		return nil, err
	}
	// The broker probes start first and run beside the requests that
	// follow: those may wait on a controller the outage took (a
	// ListPartitionReassignments without one waits out its timeout), and
	// the outage clock dates episodes from the probes. Down brokers are
	// probed at their last known address.
	probedAt := s.now()
	probed := make(chan map[string]bool, 1)
	go func(addrs []string, connected string) { probed <- s.probeAddrs(ctx, addrs, connected) }(probeTargets(md, prev), broker.Addr())
	var cached TopicConfigCache
	if prev != nil {
		cached = prev.TopicConfigs
	}
	configs, err := s.topicConfigs(broker, md, cached)
	// Min ISR is refreshed on the next attempt; meanwhile topics whose
	// value was never read get no min-ISR series rather than a guess. A
	// topic whose config stays malformed is logged once.
	s.logFailure("topic_configs", "reading topic configs failed; keeping cached min.insync.replicas", err)
	s.franz.target = broker.Addr()
	reassignments := s.listReassignments(ctx, s.reassignmentsAddr(broker.Addr(), md), md)
	snap := buildSnapshotJudging(md, s.cfg.Topics.Match, s.cfg.Judged, configs, reassignments, s.now())
	s.readELR(ctx, snap)
	s.readFenced(ctx, snap)
	live := liveBrokers(md)
	s.readLogDirs(live, snap)
	s.readTiered(live, snap)
	s.readCoordinators(live, snap)
	s.readTransactions(live, snap)
	s.readCatchUp(live, snap)
	// The quorum request is forwarded to the active controller and hangs
	// when there is none; reading it beside the broker probes keeps it from
	// eating the probes' time, which is when they matter most. It works on
	// a copy of the franz-go state; the copy it updated is stored below,
	// once it has returned.
	quorum := make(chan quorumRead, 1)
	go func(franz franzConn, now func() time.Time) { quorum <- readQuorum(ctx, franz, now) }(s.franz, s.now)
	// The probes' outcome comes before carryTransitions, whose outage
	// clock dates episodes from the first failed probe.
	rememberDownBrokers(prev, snap)
	snap.ProbedAt = probedAt
	reached := <-probed
	for i := range snap.Brokers {
		snap.Brokers[i].Reachable = reached[snap.Brokers[i].Address]
	}
	snap.Quorum, snap.QuorumUnread = s.storeQuorum(<-quorum)
	snap.backdateLimit = s.cfg.BackdateLimit
	snap.detailHold = s.cfg.PartitionMetricsHold
	carryTransitions(prev, snap)
	// After carryTransitions, which may restore a stale ELR read.
	snap.countNoCleanLeader()
	snap.countRacks()
	// Last: it reads the racks, the quorum and the restored ELR.
	snap.computeBudget(s.cfg.FailureBudget.MinISRHeadroom)
	if s.cfg.FailureBudget.Coordinators.Settled() {
		// The coordinator read a refresh serves started a refresh before
		// (two when it outlasted one), each request bounded by the timeout.
		snap.budgetCoordinators(snap.Budget, 2*s.cfg.RefreshInterval+s.cfg.RequestTimeout)
	}

	s.known = s.known[:0]
	for _, b := range md.Brokers {
		s.known = append(s.known, b.Addr())
	}
	return snap, nil
}

// liveBrokers are the addresses of the brokers md lists, by ID.
func liveBrokers(md *sarama.MetadataResponse) map[int32]string {
	brokers := make(map[int32]string, len(md.Brokers))
	for _, b := range md.Brokers {
		brokers[b.ID()] = b.Addr()
	}
	return brokers
}

// franzMaxVersions caps the request versions franz-go clients send.
// ApiVersions v3 is what sarama sends too; later versions add nothing used
// here, and sarama's MockBroker (the tests' stand-in for clusters that
// lack an API) decodes no later one.
func franzMaxVersions() kgo.Opt { return kgo.MaxVersions(franzVersions()) }

// franzVersions are the request versions of franzMaxVersions, for a client
// that caps one more.
func franzVersions() *kversion.Versions {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(apiApiVersions, 3)
	return versions
}

// readMetadata sends one Metadata request for all topics, trying the
// current connection, then every known broker, then the bootstrap servers;
// addresses whose last attempt failed go last. Each attempt is
// abandoned when the refresh deadline passes: it finishes (within its dial
// and request timeouts) in the background, and the next attempt at the same
// address takes its outcome instead of sending another request.
func (s *source) readMetadata(ctx context.Context) (*sarama.MetadataResponse, *sarama.Broker, error) {
	candidates := make([]string, 0, 1+len(s.known)+len(s.cfg.BootstrapServers))
	if s.conn != nil {
		candidates = append(candidates, s.conn.Addr())
	}
	for _, addr := range append(slices.Clone(s.known), s.cfg.BootstrapServers...) {
		if !slices.Contains(candidates, addr) {
			candidates = append(candidates, addr)
		}
	}
	slices.SortStableFunc(candidates, func(a, b string) int {
		switch fa, fb := s.failing[a], s.failing[b]; {
		case fa == fb:
			return 0
		case fb:
			return -1
		}
		return 1
	})
	if s.failing == nil {
		s.failing = map[string]bool{}
	}
	// Abandoned attempts that answered since are stale: drop them, and
	// their connections, rather than keep their responses.
	for addr, done := range s.inFlight {
		select {
		case r := <-done:
			delete(s.inFlight, addr)
			s.discard(addr, r)
		default:
		}
	}
	var errs []error
	for _, addr := range candidates {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("refresh deadline reached: %w", err))
			break
		}
		done, pending := s.inFlight[addr]
		if pending {
			delete(s.inFlight, addr)
		} else {
			// The attempt owns the connection until it reports back.
			conn := s.conn
			s.conn = nil
			if conn != nil && conn.Addr() != addr {
				_ = conn.Close()
				conn = nil
			}
			done = make(chan metadataAttempt, 1)
			go func() { done <- s.fetchMetadata(conn, addr) }()
		}
		select {
		case r := <-done:
			if r.err != nil {
				s.failing[addr] = true
				errs = append(errs, fmt.Errorf("%s: %w", addr, s.explain(addr, r.err, peerHintWait)))
				continue
			}
			delete(s.failing, addr)
			if s.answered == nil {
				s.answered = map[string]bool{}
			}
			s.answered[addr] = true
			s.conn = r.broker
			return r.md, r.broker, nil
		case <-ctx.Done():
			s.failing[addr] = true
			errs = append(errs, fmt.Errorf("%s: %w", addr, s.explain(addr, fmt.Errorf("no answer before the refresh deadline: %w", ctx.Err()), 0)))
			if s.inFlight == nil {
				s.inFlight = map[string]chan metadataAttempt{}
			}
			s.inFlight[addr] = done
		}
		// Only the deadline case gets here: no time is left for another broker.
		break
	}
	return nil, nil, fmt.Errorf("no broker answered a metadata request: %w", errors.Join(errs...))
}

// peerHintWait is how long a failed attempt waits for the probe of what is
// at the address; Redis and KRaft controllers answer it in milliseconds.
const peerHintWait = 200 * time.Millisecond

// explain adds what answered at addr when that is not a Kafka broker
// (a Redis server, a KRaft controller listener), which the client library
// reports only as EOF, a timeout or an unsupported API version.
func (s *source) explain(addr string, err error, wait time.Duration) error {
	// A broker that answered before, or that the cluster lists, is one;
	// it is down or hung, which the error says well enough.
	if errors.Is(err, syscall.ECONNREFUSED) || s.answered[addr] || slices.Contains(s.known, addr) {
		return err
	}
	if hint := s.peers.Hint(addr, peer.KafkaBroker, wait); hint != "" {
		return fmt.Errorf("%w (%s)", err, hint)
	}
	return err
}

// metadataAttempt is the outcome of fetchMetadata.
type metadataAttempt struct {
	md     *sarama.MetadataResponse
	broker *sarama.Broker // open when err is nil
	err    error
}

// fetchMetadata sends a Metadata request to addr over conn, or over a new
// connection when conn is nil or broken. It does not touch the source's
// state, so that readMetadata can abandon it at the refresh deadline.
func (s *source) fetchMetadata(conn *sarama.Broker, addr string) metadataAttempt {
	conn, err := s.reuseOrOpen(conn, addr)
	if err != nil {
		return metadataAttempt{err: err}
	}
	req := sarama.NewMetadataRequest(s.conf.Version, nil)
	req.AllowAutoTopicCreation = false
	md, err := conn.GetMetadata(req)
	if err != nil {
		_ = conn.Close()
		return metadataAttempt{err: fmt.Errorf("metadata: %w", err)}
	}
	return metadataAttempt{md: md, broker: conn}
}

// reuseOrOpen returns conn while it is connected, else a new connection
// to addr (conn closed); conn may be nil.
func (s *source) reuseOrOpen(conn *sarama.Broker, addr string) (*sarama.Broker, error) {
	if conn != nil {
		if ok, _ := conn.Connected(); ok {
			return conn, nil
		}
		_ = conn.Close()
	}
	return s.open(addr)
}

// open opens a connection to addr.

func (s *source) open(addr string) (*sarama.Broker, error) {
	broker := sarama.NewBroker(addr)
	if err := broker.Open(s.conf); err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	// Open dials in the background; Connected waits for it (bounded by the
	// dial timeout) and reports the outcome, including SASL failures.
	if ok, err := broker.Connected(); !ok {
		_ = broker.Close()
		if err == nil {
			err = errors.New("not connected")
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	return broker, nil
}

func (s *source) disconnect() {
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
}

// probeTargets is every address a refresh probes: the brokers the
// metadata registers, and those prev knew that it no longer does (a broker
// that went down keeps its last known address; rememberDownBrokers gives it
// to the new snapshot).
func probeTargets(md *sarama.MetadataResponse, prev *Snapshot) []string {
	addrs := make([]string, 0, len(md.Brokers))
	registered := make(map[int32]bool, len(md.Brokers))
	for _, b := range md.Brokers {
		registered[b.ID()] = true
		addrs = append(addrs, b.Addr())
	}
	if prev != nil {
		for _, b := range prev.Brokers {
			if !registered[b.ID] && b.Address != "" && !slices.Contains(addrs, b.Address) {
				addrs = append(addrs, b.Address)
			}
		}
	}
	return addrs
}

// probeAddrs asks every address, concurrently, for its API versions, each
// bounded by the dial timeout and the refresh deadline, and returns those
// that answered as Kafka brokers (reach.go). connected is the broker that
// just answered the Metadata request: it counts as reached without a dial.
func (s *source) probeAddrs(ctx context.Context, addrs []string, connected string) map[string]bool {
	var tlsConf *tls.Config
	if s.conf != nil && s.conf.Net.TLS.Enable {
		tlsConf = s.conf.Net.TLS.Config
		if tlsConf == nil {
			tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	reached := make(map[string]bool, len(addrs))
	if connected != "" {
		reached[connected] = true
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, addr := range addrs {
		if addr == "" || addr == connected {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := askAPIVersions(ctx, addr, tlsConf, s.cfg.DialTimeout); err != nil {
				level.Debug(s.logger).Log("msg", "broker not reachable", "addr", addr, "err", err)
				return
			}
			mu.Lock()
			reached[addr] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	return reached
}

// listReassignments sends one ListPartitionReassignments request (Kafka
// 2.4+, API 46) naming every partition in md to the broker at addr, and
// returns the in-progress reassignments by topic and partition: empty when
// there are none, nil when they are unknown. Not knowing them is not a
// failed refresh: the reassignment series are left out and everything else
// is served. All topics are asked for, not only the watched ones, because
// broker series count every partition. (The protocol can ask for "all
// partitions" with a null topic list, but sarama always sends a list, and
// an empty one means none.)
//
// The broker forwards the request to the active controller and, while there
// is none (a lost quorum), answers only when the request times out. So it
// goes over a connection of its own, never the Metadata one, and gets at
// most half of the refresh's remaining time: the broker probes that follow
// are what shows a lost quorum.
func (s *source) listReassignments(ctx context.Context, addr string, md *sarama.MetadataResponse) map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus {
	budget := s.cfg.RequestTimeout
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline)/2)
	}
	req := reassignmentsRequest(md, budget)
	s.reclaimLateForward()
	r := s.forwardReassignments(addr, req, budget)
	err := r.err
	if err == nil && r.resp.ErrorCode != sarama.ErrNoError {
		err = r.resp.ErrorCode
	}
	if errors.Is(err, sarama.ErrNotController) && !s.reassignViaController {
		// A ZooKeeper-mode broker (Kafka 3.x) answers only when it is the
		// controller, where a KRaft broker forwards the request. From now
		// on ask the broker Metadata names as the controller.
		if c := controllerAddr(md); c != "" && c != addr {
			s.reassignViaController = true
			level.Info(s.logger).Log("msg", "the broker does not forward ListPartitionReassignments (ZooKeeper mode); asking the controller", "broker", addr, "controller", c)
			return s.listReassignments(ctx, c, md)
		}
	}
	switch {
	case errors.Is(err, sarama.ErrUnsupportedVersion):
		// sarama answers this without sending anything when the broker's
		// ApiVersions response does not list the API.
		level.Debug(s.logger).Log("msg", "broker does not offer ListPartitionReassignments (API 46); reassignment series are not served",
			"broker", addr)
		return nil
	case err != nil:
		// A refused request (no Describe ACL on the Cluster) fails the same
		// way every refresh: say it once, not every few seconds.
		s.logFailure("reassignments", "listing partition reassignments failed; reassignment series are not served", err, "broker", addr)
		return nil
	}
	s.logFailure("reassignments", "", nil)
	if r.resp.TopicStatus == nil {
		return map[string]map[int32]*sarama.PartitionReplicaReassignmentsStatus{}
	}
	return r.resp.TopicStatus
}

// reassignmentsRequest asks for every partition of md's topics, to be
// answered within budget.
func reassignmentsRequest(md *sarama.MetadataResponse, budget time.Duration) *sarama.ListPartitionReassignmentsRequest {
	req := &sarama.ListPartitionReassignmentsRequest{TimeoutMs: int32(max(budget.Milliseconds(), 1))}
	for _, t := range md.Topics {
		if len(t.Partitions) == 0 {
			continue
		}
		ids := make([]int32, len(t.Partitions))
		for i, p := range t.Partitions {
			ids[i] = p.ID
		}
		req.AddBlock(t.Name, ids)
	}
	return req
}

// reclaimLateForward takes back the connection of an attempt that ran past
// its budget last time and has answered since, to be reused rather than a
// new one opened; one still under way closes its connection when it ends.
func (s *source) reclaimLateForward() {
	late := s.forwardLate
	if late == nil {
		return
	}
	s.forwardLate = nil
	select {
	case r := <-late:
		if r.conn != nil && (r.err == nil || errors.Is(r.err, sarama.ErrUnsupportedVersion)) && s.forwardConn == nil {
			s.forwardConn = r.conn
		} else if r.conn != nil {
			_ = r.conn.Close()
		}
	default:
		go func() {
			if r := <-late; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
	}
}

// forwardReassignments sends req to addr over the forwarding connection
// (opened if need be) and waits at most budget for the answer; an attempt
// still under way then is left for the next refresh (s.forwardLate).
func (s *source) forwardReassignments(addr string, req *sarama.ListPartitionReassignmentsRequest, budget time.Duration) forwardAttempt {
	// The attempt owns the connection until it reports back.
	conn := s.forwardConn
	s.forwardConn = nil
	if conn != nil && conn.Addr() != addr {
		_ = conn.Close()
		conn = nil
	}
	done := make(chan forwardAttempt, 1)
	go func() {
		conn, err := s.reuseOrOpen(conn, addr)
		if err != nil {
			done <- forwardAttempt{err: err}
			return
		}
		resp, err := conn.ListPartitionReassignments(req)
		done <- forwardAttempt{conn: conn, resp: resp, err: err}
	}()
	var r forwardAttempt
	timer := time.NewTimer(budget)
	defer timer.Stop()
	select {
	case r = <-done:
		if r.err != nil && !errors.Is(r.err, sarama.ErrUnsupportedVersion) && r.conn != nil {
			_ = r.conn.Close() // a transport error leaves it unusable
		} else {
			s.forwardConn = r.conn
		}
	case <-timer.C:
		r.err = fmt.Errorf("no answer within %s (is there an active controller?)", budget.Round(time.Millisecond))
		// The next refresh takes its connection back if it answered by then.
		s.forwardLate = done
	}
	return r
}

// reassignmentsAddr is where to send ListPartitionReassignments: the broker
// that answered Metadata (any KRaft broker forwards it to the controller), or
// once a broker answered NOT_CONTROLLER (ZooKeeper mode), the broker this
// refresh's Metadata names as the controller.
func (s *source) reassignmentsAddr(metadataAddr string, md *sarama.MetadataResponse) string {
	if s.reassignViaController {
		if c := controllerAddr(md); c != "" {
			return c
		}
	}
	return metadataAddr
}

// controllerAddr is the address of the live broker md names as the
// controller, or "" when it names none that it lists.
func controllerAddr(md *sarama.MetadataResponse) string {
	for _, b := range md.Brokers {
		if b.ID() == md.ControllerID {
			return b.Addr()
		}
	}
	return ""
}

// forwardAttempt is the outcome of a ListPartitionReassignments attempt.
type forwardAttempt struct {
	conn *sarama.Broker // open unless the dial failed
	resp *sarama.ListPartitionReassignmentsResponse
	err  error
}

// close releases the connections; the watcher calls it when it stops.
func (s *source) Close() {
	s.disconnect()
	s.logDirs.close()
	s.tiered.close()
	s.coordinators.close()
	s.transactions.close()
	s.catchUp.close()
	for addr, done := range s.inFlight {
		go func() { s.discard(addr, <-done) }()
	}
	s.inFlight = nil
	if late := s.forwardLate; late != nil {
		s.forwardLate = nil
		go func() {
			if r := <-late; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
	}
	if s.forwardConn != nil {
		_ = s.forwardConn.Close()
		s.forwardConn = nil
	}
	s.franz.client.Close()
}

// logFailure logs err of an optional request of the given kind at warn
// when it differs from the last one logged for that kind, else at debug;
// a nil err clears the kind, so that the next failure is a warning again.
func (s *source) logFailure(kind, msg string, err error, keyvals ...any) {
	if err == nil {
		delete(s.logged, kind)
		return
	}
	if s.logged == nil {
		s.logged = map[string]string{}
	}
	logAt := level.Debug
	if text := err.Error(); s.logged[kind] != text {
		s.logged[kind], logAt = text, level.Warn
	}
	logAt(s.logger).Log(append([]any{"msg", msg, "err", err}, keyvals...)...)
}

// discard closes the connection of an abandoned attempt.
func (s *source) discard(addr string, r metadataAttempt) {
	if r.broker != nil {
		_ = r.broker.Close()
	}
	if r.err != nil {
		// The refresh already reported the deadline; this is the cause, for
		// whoever debugs a slow TLS or SASL login.
		level.Debug(s.logger).Log("msg", "abandoned metadata attempt failed", "addr", addr, "err", r.err)
	}
}

// topicConfigs returns the min.insync.replicas of every watched topic. All
// topics are re-read when the cache is older than the configured interval;
// otherwise only topics missing from the cache (new ones) are read. Either
// way it is one request, never one per topic.
func (s *source) topicConfigs(broker *sarama.Broker, md *sarama.MetadataResponse, cached TopicConfigCache) (TopicConfigCache, error) {
	now := s.now()
	full := cached.ReadAt.IsZero() || now.Sub(cached.ReadAt) >= s.cfg.TopicConfigRefreshInterval
	var wanted []string
	for _, t := range md.Topics {
		_, internal := InternalFeatures[t.Name]
		if !(s.cfg.Judged(t.Name) || internal) || (t.Err != sarama.ErrNoError && len(t.Partitions) == 0) {
			continue
		}
		if _, ok := cached.MinISR[t.Name]; full || !ok {
			wanted = append(wanted, t.Name)
		}
	}
	// Keep cached values only for topics that still exist.
	next := TopicConfigCache{MinISR: make(map[string]int, len(md.Topics)), Unclean: make(map[string]bool, len(md.Topics)), Tiered: make(map[string]TieredConfig, len(md.Topics)), ReadAt: cached.ReadAt}
	for _, t := range md.Topics {
		if v, ok := cached.MinISR[t.Name]; ok {
			next.MinISR[t.Name] = v
		}
		if v, ok := cached.Unclean[t.Name]; ok {
			next.Unclean[t.Name] = v
		}
		if v, ok := cached.Tiered[t.Name]; ok {
			next.Tiered[t.Name] = v
		}
	}
	if len(wanted) == 0 {
		if full {
			next.ReadAt = now
		}
		return next, nil
	}
	read, unclean, tiered, invalid, err := describeMinISR(broker, s.conf.Version, wanted)
	if err != nil {
		return next, fmt.Errorf("describe configs for %d topics: %w", len(wanted), err)
	}
	// A topic whose answer had an error or a value that does not parse
	// keeps its cached values; the others are read all the same.
	for name, v := range read {
		next.MinISR[name] = v
	}
	for name, v := range unclean {
		next.Unclean[name] = v
	}
	for name, v := range tiered {
		next.Tiered[name] = v
	}
	if full {
		next.ReadAt = now
	}
	if invalid != nil {
		// Not the count of topics asked, which changes between a full
		// read and the next: the same topics failing is logged once.
		return next, fmt.Errorf("describe configs: %w", invalid)
	}
	return next, nil
}

// set takes one tiered storage config of a DescribeConfigs answer. Before
// Kafka 3.6 the broker does not know remote.storage.enable and leaves it
// out: no tiered storage, which is the truth.
func (tc *TieredConfig) set(name, value string) error {
	if name == remoteStorageConfig {
		tc.Enabled = value == "true"
		return nil
	}
	v, err := strconv.ParseInt(value, 10, 64)
	if err != nil || v < -1 {
		return fmt.Errorf("%s=%q is not an integer of -1 or more", name, value)
	}
	if name == remoteCopyLagMsConfig {
		tc.CopyLagMs = v
	} else {
		tc.CopyLagBytes = v
	}
	return nil
}

// describeMinISR sends one DescribeConfigs request for the given topics and
// returns their effective min.insync.replicas and
// unclean.leader.election.enable (the topic override, else the broker or
// cluster default, as the broker resolves it), and their tiered storage
// settings. Topics that fail individually are left out: deleted meanwhile,
// silently; with another error or a value that does not parse, named in
// invalid. err is the request's failure.
func describeMinISR(broker *sarama.Broker, version sarama.KafkaVersion, topics []string) (minISR map[string]int, unclean map[string]bool, tiered map[string]TieredConfig, invalid, err error) {
	req := &sarama.DescribeConfigsRequest{Resources: make([]*sarama.ConfigResource, 0, len(topics))}
	switch {
	case version.IsAtLeast(sarama.V2_8_0_0):
		req.Version = 4
	case version.IsAtLeast(sarama.V2_6_0_0):
		req.Version = 3
	case version.IsAtLeast(sarama.V2_0_0_0):
		req.Version = 2
	case version.IsAtLeast(sarama.V1_1_0_0):
		req.Version = 1
	}
	for _, t := range topics {
		req.Resources = append(req.Resources, &sarama.ConfigResource{
			Type: sarama.TopicResource, Name: t, ConfigNames: []string{minISRConfig, uncleanConfig, remoteStorageConfig, remoteCopyLagMsConfig, remoteCopyLagBytesConfig},
		})
	}
	resp, err := broker.DescribeConfigs(req)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	out := make(map[string]int, len(topics))
	unclean = make(map[string]bool, len(topics))
	tiered = make(map[string]TieredConfig, len(topics))
	var errs []error
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			kerr := sarama.KError(r.ErrorCode)
			if kerr != sarama.ErrUnknownTopicOrPartition {
				errs = append(errs, fmt.Errorf("topic %s: %w", r.Name, kerr))
			}
			continue
		}
		var tc TieredConfig
		lags := 0
		for _, c := range r.Configs {
			var err error
			switch c.Name {
			case remoteStorageConfig, remoteCopyLagMsConfig, remoteCopyLagBytesConfig:
				err = tc.set(c.Name, c.Value)
				if err == nil && c.Name != remoteStorageConfig {
					lags++
				}
			case uncleanConfig:
				var v bool
				if v, err = strconv.ParseBool(c.Value); err != nil {
					err = fmt.Errorf("%s=%q is not a boolean", uncleanConfig, c.Value)
				} else {
					unclean[r.Name] = v
				}
			case minISRConfig:
				if v, perr := strconv.Atoi(c.Value); perr != nil || v < 1 {
					err = fmt.Errorf("%s=%q is not a positive integer", minISRConfig, c.Value)
				} else {
					out[r.Name] = v
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("topic %s: %w", r.Name, err))
			}
		}
		// Before 4.4 the broker leaves the copy lags out: unknown.
		tc.CopyLagKnown = lags == 2
		tiered[r.Name] = tc
	}
	return out, unclean, tiered, errors.Join(errs...), nil
}
