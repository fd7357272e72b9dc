package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/failover-exporter/failover_exporter/collector/peer"
	"github.com/failover-exporter/failover_exporter/config"
)

// minISRConfig is the only topic config the exporter reads.
const minISRConfig = "min.insync.replicas"

// source talks to one Kafka cluster. It keeps one connection to one broker
// and falls back to the other known brokers, then to the bootstrap servers,
// when that broker stops answering. Only the watcher goroutine uses it.
type source struct {
	cfg    config.KafkaCluster
	conf   *sarama.Config
	logger log.Logger

	conn *sarama.Broker
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

func newSource(cfg config.KafkaCluster, logger log.Logger) (*source, error) {
	conf, err := saramaConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &source{cfg: cfg, conf: conf, logger: logger, now: time.Now}, nil
}

// saramaConfig translates the cluster config. Every network call gets the
// dial and request timeouts, so a hung broker costs at most one timeout.
func saramaConfig(cfg config.KafkaCluster) (*sarama.Config, error) {
	conf := sarama.NewConfig()
	version, err := sarama.ParseKafkaVersion(cfg.Version)
	if err != nil {
		return nil, fmt.Errorf("kafka version %q: %w", cfg.Version, err)
	}
	conf.Version = version
	conf.ClientID = cfg.ClientID
	conf.Net.DialTimeout = cfg.DialTimeout
	conf.Net.ReadTimeout = cfg.RequestTimeout
	conf.Net.WriteTimeout = cfg.RequestTimeout
	conf.Net.MaxOpenRequests = 1
	conf.Metadata.AllowAutoTopicCreation = false

	tlsConf, err := cfg.TLS.ClientConfig()
	if err != nil {
		return nil, err
	}
	if tlsConf != nil {
		conf.Net.TLS.Enable = true
		conf.Net.TLS.Config = tlsConf
	}
	if err := configureSASL(conf, cfg.SASL); err != nil {
		return nil, err
	}
	if err := conf.Validate(); err != nil {
		return nil, fmt.Errorf("kafka client config: %w", err)
	}
	return conf, nil
}

// refresh reads the cluster once: one Metadata request for all topics and,
// when due or when new topics appeared, one batched DescribeConfigs request.
func (s *source) refresh(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	md, broker, err := s.readMetadata(ctx)
	if err != nil {
		return nil, err
	}
	var cached TopicConfigCache
	if prev != nil {
		cached = prev.TopicConfigs
	}
	configs, err := s.topicConfigs(broker, md, cached)
	if err != nil {
		// Min ISR is refreshed on the next attempt; meanwhile topics whose
		// value was never read get no min-ISR series rather than a guess.
		level.Warn(s.logger).Log("msg", "reading topic configs failed; keeping cached min.insync.replicas", "err", err)
	}
	snap := buildSnapshot(md, s.cfg.Topics.Match, configs, s.now())
	carryTransitions(prev, snap)
	s.probeBrokers(ctx, snap, broker.Addr())

	s.known = s.known[:0]
	for _, b := range md.Brokers {
		s.known = append(s.known, b.Addr())
	}
	return snap, nil
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
	if conn != nil {
		if ok, _ := conn.Connected(); !ok {
			_ = conn.Close()
			conn = nil
		}
	}
	if conn == nil {
		var err error
		if conn, err = s.open(addr); err != nil {
			return metadataAttempt{err: err}
		}
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

// probeBrokers dials every broker with a known address, concurrently, each
// dial bounded by the dial timeout and the refresh deadline, and records
// which ones accept a connection. connected is the broker that just
// answered the Metadata request.
func (s *source) probeBrokers(ctx context.Context, snap *Snapshot, connected string) {
	dialer := net.Dialer{Timeout: s.cfg.DialTimeout}
	var wg sync.WaitGroup
	for i := range snap.Brokers {
		b := &snap.Brokers[i]
		switch {
		case b.Address == "":
			continue
		case b.Address == connected:
			b.Reachable = true
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := dialer.DialContext(ctx, "tcp", b.Address)
			if err != nil {
				level.Debug(s.logger).Log("msg", "broker not reachable", "broker", b.ID, "addr", b.Address, "err", err)
				return
			}
			_ = conn.Close()
			b.Reachable = true
		}()
	}
	wg.Wait()
}

// close releases the connection; the watcher calls it when it stops.
func (s *source) close() {
	s.disconnect()
	for addr, done := range s.inFlight {
		go func() { s.discard(addr, <-done) }()
	}
	s.inFlight = nil
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
		if !s.cfg.Topics.Match(t.Name) || (t.Err != sarama.ErrNoError && len(t.Partitions) == 0) {
			continue
		}
		if _, ok := cached.MinISR[t.Name]; full || !ok {
			wanted = append(wanted, t.Name)
		}
	}
	// Keep cached values only for topics that still exist.
	next := TopicConfigCache{MinISR: make(map[string]int, len(md.Topics)), ReadAt: cached.ReadAt}
	for _, t := range md.Topics {
		if v, ok := cached.MinISR[t.Name]; ok {
			next.MinISR[t.Name] = v
		}
	}
	if len(wanted) == 0 {
		if full {
			next.ReadAt = now
		}
		return next, nil
	}
	read, err := describeMinISR(broker, s.conf.Version, wanted)
	if err != nil {
		return next, fmt.Errorf("describe configs for %d topics: %w", len(wanted), err)
	}
	for name, v := range read {
		next.MinISR[name] = v
	}
	if full {
		next.ReadAt = now
	}
	return next, nil
}

// describeMinISR sends one DescribeConfigs request for the given topics and
// returns their effective min.insync.replicas (the topic override, else the
// broker or cluster default, as the broker resolves it). Topics that fail
// individually (deleted meanwhile) are left out.
func describeMinISR(broker *sarama.Broker, version sarama.KafkaVersion, topics []string) (map[string]int, error) {
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
			Type: sarama.TopicResource, Name: t, ConfigNames: []string{minISRConfig},
		})
	}
	resp, err := broker.DescribeConfigs(req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(topics))
	var errs []error
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			kerr := sarama.KError(r.ErrorCode)
			if kerr != sarama.ErrUnknownTopicOrPartition {
				errs = append(errs, fmt.Errorf("topic %s: %w", r.Name, kerr))
			}
			continue
		}
		for _, c := range r.Configs {
			if c.Name != minISRConfig {
				continue
			}
			v, err := strconv.Atoi(c.Value)
			if err != nil || v < 1 {
				errs = append(errs, fmt.Errorf("topic %s: %s=%q is not a positive integer", r.Name, minISRConfig, c.Value))
				continue
			}
			out[r.Name] = v
		}
	}
	return out, errors.Join(errs...)
}

// configureSASL sets PLAIN or SCRAM authentication from the config.
func configureSASL(conf *sarama.Config, sc config.SASL) error {
	if sc.Mechanism == "" {
		return nil
	}
	password, err := sc.Password.Value()
	if err != nil {
		return fmt.Errorf("sasl.password: %w", err)
	}
	conf.Net.SASL.Enable = true
	conf.Net.SASL.Handshake = true
	conf.Net.SASL.User = sc.Username
	conf.Net.SASL.Password = password
	switch sc.Mechanism {
	case "PLAIN":
		conf.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case "SCRAM-SHA-256":
		conf.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		conf.Net.SASL.SCRAMClientGeneratorFunc = newSCRAMClient(sha256Hash)
	case "SCRAM-SHA-512":
		conf.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		conf.Net.SASL.SCRAMClientGeneratorFunc = newSCRAMClient(sha512Hash)
	default:
		return fmt.Errorf("unsupported sasl.mechanism %q", sc.Mechanism)
	}
	return nil
}
