package kafkacanary

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/systems/kafka/client"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// source owns the canary's clients and what it knows of the records it
// wrote. Its fields belong to the watcher's goroutine, which calls round
// and close. The sarama calls of a round, which take no context, run on
// goroutines of their own (call) that get the clients as values and touch
// no field, so that a round returns as soon as its context ends and
// nothing is left writing the source's state after it returned.
type source struct {
	cfg    settings.Cluster
	conf   *sarama.Config
	logger log.Logger
	// run tells this process's records apart from an earlier run's.
	run string
	// lease is nil when the config turns the lease off: the canary then
	// writes whether or not another exporter does.
	lease *leaseRunner

	// c is nil until the first round connects and after close.
	c *clients
	// calls are the sarama calls running, abandoned ones included; close
	// waits for them once it has closed the clients they use.
	calls sync.WaitGroup

	seq map[int32]uint64
	// pending are acknowledged records not yet read back, by partition,
	// oldest first, at most maxPending each.
	pending map[int32][]ack
	// verified are acknowledged records a read-back found at their
	// offset, by partition, oldest first, the last maxPending of each: each
	// leader change since they were found reads them again, for a replica
	// elected uncleanly lacks what its predecessor had served (issue 47: a
	// record verified on the old leader is lost all the same).
	verified map[int32][]ack
	// readFrom is, per partition, the offset after the last one a
	// read-back compared: the next read starts there, below its first
	// pending record, so that an extra copy of that record appended
	// before it (a retried attempt) is read too. Cleared with pending.
	readFrom map[int32]int64
	// overflowLogged is set for a partition whose pending records passed
	// maxPending, until its next read-back: the drop is logged once.
	overflowLogged map[int32]bool
	// topicID is the canary topic's ID (Metadata v10+) when the pending
	// records were written; zero while unknown (a broker before 2.8).
	topicID sarama.Uuid
	// tenure is the lease hold the pending records belong to.
	tenure uint64
	// lastError is each partition's last error kind, for logging changes.
	lastError map[int32]string
	// lastAck is each partition's last acknowledged write, and stalled
	// whether a write failed since: the stall clock (stall).
	lastAck      map[int32]Stall
	stalled      map[int32]bool
	lastRespread time.Time
	// created is set by a round that created the topic: it writes nothing.
	created bool

	// What the canary knows of its topic between rounds (topic.go): its
	// min.insync.replicas and when it was read, whether reassignments of
	// its partitions must be checked and whether it started one, each
	// healing step's last error, and the reasons last logged for a topic
	// it may not change.
	minISR             int
	minISRReadAt       time.Time
	checkReassignments bool
	reassignStarted    bool
	stepErrors         map[string]string
	unmanagedReasons   string
}

// ack is one acknowledged record: where the leader said it is, and what it
// holds.
type ack struct {
	offset int64
	value  string
	leader int32
	// checkedUnder is the leader under which a read-back last found a
	// verified record at its offset.
	checkedUnder int32
}

// readBackAfter is how many acknowledged records of a partition wait for a
// leader change before they are read back anyway.
const readBackAfter = 100

// maxPending bounds the acknowledged records a partition keeps while its
// read-backs fail (a leader that cannot be fetched from for long): past
// it the oldest are dropped as unverifiable, so memory stays bounded
// (about 50 bytes a record) and a partition never stops being checked
// for what it acknowledged last.
const maxPending = 10 * readBackAfter

func newSource(cfg settings.Cluster, logger log.Logger) (*source, error) {
	if cfg.Canary.Interval <= 0 {
		return nil, errors.New("canary interval must be positive; was config.Complete called?")
	}
	conf, err := kafkaclient.SaramaConfig(cfg)
	if err != nil {
		return nil, err
	}
	// acks=all with an idempotent producer: an acknowledged record is in
	// every in-sync replica, at least min.insync.replicas of them, and a
	// retry never writes it twice.
	conf.Producer.RequiredAcks = sarama.WaitForAll
	conf.Producer.Idempotent = true
	conf.Net.MaxOpenRequests = 1
	// One retry, soon: enough to follow a leader that moved, few enough
	// that a broker refusing writes shows as failures, not as latency.
	conf.Producer.Retry.Max = 1
	conf.Producer.Retry.Backoff = 100 * time.Millisecond
	conf.Producer.Return.Successes = true
	conf.Producer.Return.Errors = true
	conf.Producer.Partitioner = sarama.NewManualPartitioner
	conf.Producer.Timeout = cfg.RequestTimeout
	conf.Metadata.Retry.Max = 1
	conf.Metadata.Retry.Backoff = 100 * time.Millisecond
	// Admin requests (topic healing) are retried next round, not within.
	conf.Admin.Retry.Max = 1
	conf.Consumer.Return.Errors = true
	conf.ClientID = cfg.ClientID + "_canary"
	if err := conf.Validate(); err != nil {
		return nil, fmt.Errorf("kafka canary client config: %w", err)
	}
	run := make([]byte, 4)
	_, _ = rand.Read(run)
	var lr *leaseRunner
	if cfg.Canary.LeaseEnabled() {
		if lr, err = newLeaseRunner(cfg, logger); err != nil {
			return nil, err
		}
	}
	return &source{
		lease:          lr,
		cfg:            cfg,
		conf:           conf,
		logger:         logger,
		run:            hex.EncodeToString(run),
		seq:            map[int32]uint64{},
		pending:        map[int32][]ack{},
		verified:       map[int32][]ack{},
		overflowLogged: map[int32]bool{},
		lastError:      map[int32]string{},
		lastAck:        map[int32]Stall{},
		stalled:        map[int32]bool{},
		// A reassignment may be left from before a restart.
		checkReassignments: true,
		stepErrors:         map[string]string{},
	}, nil
}

// clients are the canary's sarama client and what it built on it. They
// are safe for concurrent use, and immutable once built: a call running on
// its own goroutine gets them as a value.
type clients struct {
	client   sarama.Client
	admin    sarama.ClusterAdmin
	producer sarama.SyncProducer
	consumer sarama.Consumer
}

// dial connects to the cluster and builds the canary's clients.
func dial(bootstrap []string, conf *sarama.Config, topic string) (*clients, error) {
	client, err := sarama.NewClient(bootstrap, conf)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("admin client: %w", err)
	}
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		admin.Close()
		// The idempotent producer starts with InitProducerId, which Kafka
		// allows with Write on any topic (or IdempotentWrite on the cluster):
		// a user without write permission fails here, before any topic.
		return nil, fmt.Errorf("idempotent producer (needs Write on the canary topic %s): %w", topic, err)
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		producer.Close()
		admin.Close()
		return nil, fmt.Errorf("consumer: %w", err)
	}
	return &clients{client: client, admin: admin, producer: producer, consumer: consumer}, nil
}

// close closes the producer, consumer and client.
func (c *clients) close() {
	c.producer.Close()
	c.consumer.Close()
	c.admin.Close() // closes the client too
}

func (s *source) connect(ctx context.Context) error {
	if s.c != nil {
		return nil
	}
	bootstrap, conf, topic := s.cfg.BootstrapServers, s.conf, s.cfg.Canary.Topic
	c, err := call(ctx, s, "connect", func() (*clients, error) { return dial(bootstrap, conf, topic) }, (*clients).close)
	if err != nil {
		return err
	}
	s.c = c
	return nil
}

// close closes the clients, then waits for the sarama calls still running
// (abandoned by a round whose context ended): with their connections
// closed they fail at once, and none outlives the watcher.
func (s *source) close() {
	if s.lease != nil {
		s.lease.stop()
	}
	if s.c != nil {
		s.c.close()
		s.c = nil
	}
	s.calls.Wait()
}

// errAbandoned marks a sarama call a round stopped waiting for because its
// context ended.
var errAbandoned = errors.New("abandoned")

// call runs f, a sarama call that takes no context, on a goroutine of its
// own and returns its outcome, or an errAbandoned error as soon as ctx ends.
// sarama bounds f by the dial and request timeouts, and close waits for it.
// f must touch no field of the source (it gets the clients as a value) and
// its outcome is dropped when abandoned; drop, when not nil, releases what
// an abandoned f built.
func call[T any](ctx context.Context, s *source, what string, f func() (T, error), drop func(T)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("%s: %w before it started: %w", what, errAbandoned, err)
	}
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome)
	abandoned := make(chan struct{})
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		v, err := f()
		select {
		case done <- outcome{v, err}:
		case <-abandoned:
			if drop != nil && err == nil {
				drop(v)
			}
		}
	}()
	select {
	case o := <-done:
		return o.v, o.err
	case <-ctx.Done():
		close(abandoned)
		return zero, fmt.Errorf("%s: %w: %w", what, errAbandoned, ctx.Err())
	}
}

// callErr is call for a sarama call that returns only an error.
func callErr(ctx context.Context, s *source, what string, f func() error) error {
	_, err := call(ctx, s, what, func() (struct{}, error) { return struct{}{}, f() }, nil)
	return err
}

// round writes one record to every partition of the canary topic, then
// reads back the acknowledged records of partitions whose leader changed.
// Every call to the cluster is bounded by ctx: when it is cancelled the
// round returns its error at once; when its deadline passes while writes
// wait, those writes count as failed with a timeout, as a client's timeout
// would count them, and the read-backs wait for the next round.
func (s *source) round(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	next, err := s.writeRound(ctx, prev)
	if err != nil {
		// A round that could not write is a failed write to a client: the
		// stalls of the partitions acknowledged before start (stall).
		for p := range s.lastAck {
			s.stalled[p] = true
		}
	}
	return next, err
}

// writeRound is round but for the stall clock of a failed round.
func (s *source) writeRound(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	if leading, err := s.leading(); !leading {
		// Another exporter writes, and heals the topic: this one keeps
		// its counters from when it wrote, and serves none of them.
		if err != nil {
			return nil, err
		}
		return prev.clone(), nil
	}
	health, err := s.ensureTopic(ctx)
	if err != nil {
		return nil, err
	}
	c, topic := s.c, s.cfg.Canary.Topic
	partitions, err := call(ctx, s, "partitions", func() ([]int32, error) { return c.client.Partitions(topic) }, nil)
	if err != nil {
		return nil, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	next := prev.clone()
	next.Topic, next.Leader = health, true
	if s.created {
		// The partitions of a topic created this round have no leader
		// everywhere yet: a write now would wait for one and could count
		// a startup delay as a failing broker. The next round writes.
		s.created = false
		s.topicCreated(ctx, next)
		return next, nil
	}
	at := time.Now() // the time of this round's events
	if leading, _ := s.leading(); !leading {
		// The hold ran out while the topic was read: write nothing, and
		// end as a standby's round does. The error dropped can only be the
		// lease's last failed attempt (the first call started the lease),
		// which the lease keeps until an attempt is answered: the next
		// round's first call returns it, an interval later.
		return prev.clone(), nil
	}
	s.startTenure(next)

	// The topic's ID is read beside the writes, so that a broker slow to
	// answer it delays no write; the read-backs wait for it.
	topicID := s.readTopicIDAsync(ctx)
	results, err := s.produceAll(ctx, partitions)
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		s.apply(next, at, r)
	}
	id := <-topicID
	if id.err != nil {
		// Without it a re-created topic cannot be ruled out: nothing is
		// judged this round.
		level.Debug(s.logger).Log("msg", "canary topic ID not read; read-backs wait for the next round", "err", id.err)
		return next, nil
	}
	s.noteTopicID(next, id.id)
	for _, p := range partitions {
		if ctx.Err() != nil {
			break // the rest wait for the next round, as after a failed read
		}
		s.readBack(ctx, next, at, p)
	}
	return next, nil
}

// leading reports whether this exporter writes the canary now: the lease
// is off, or held. A standby whose last attempt at the lease failed (the
// coordinator unreachable, the group refused) returns why.
func (s *source) leading() (bool, error) {
	if s.lease == nil {
		return true, nil
	}
	if err := s.lease.start(); err != nil {
		return false, err
	}
	if s.lease.MayWrite(time.Now()) {
		return true, nil
	}
	if err := s.lease.err(); err != nil {
		return false, fmt.Errorf("canary lease: %w", err)
	}
	return false, nil
}

// produceAll writes one record to each partition, all at once, and returns
// the outcomes in the partitions' order. When ctx's deadline passes first,
// the writes still waiting are failures of kind timeout (they are left to
// end within the request timeout; their outcome is dropped); when ctx is
// cancelled, it returns the error.
func (s *source) produceAll(ctx context.Context, partitions []int32) ([]produceResult, error) {
	c, topic := s.c, s.cfg.Canary.Topic
	type indexed struct {
		i int
		r produceResult
	}
	done := make(chan indexed, len(partitions))
	// The leader each write was sent to, for the writes that time out.
	leaders := make([]atomic.Int32, len(partitions))
	results := make([]produceResult, len(partitions))
	for i, p := range partitions {
		s.seq[p]++
		value := fmt.Sprintf("%s:%d:%d", s.run, p, s.seq[p])
		results[i] = produceResult{partition: p, leader: -1, value: value}
		leaders[i].Store(-1)
		s.calls.Add(1)
		go func() {
			defer s.calls.Done()
			done <- indexed{i, produce(c, topic, p, value, &leaders[i])}
		}()
	}
	finished := make([]bool, len(partitions))
	for range partitions {
		select {
		case d := <-done:
			results[d.i], finished[d.i] = d.r, true
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, fmt.Errorf("canary writes: %w", ctx.Err())
			}
			for i := range results {
				if !finished[i] {
					results[i].leader = leaders[i].Load()
					results[i].errKind = "timeout"
					results[i].err = fmt.Errorf("no acknowledgement before the round's deadline: %w", ctx.Err())
				}
			}
			return results, nil
		}
	}
	return results, nil
}

type produceResult struct {
	partition int32
	leader    int32
	value     string
	offset    int64
	latency   time.Duration
	// acked is when the acknowledgement came.
	acked   time.Time
	errKind string
	err     error
}

// leaderID is the partition's leader as the client knows it, -1 when it
// knows none. The client asks the cluster when its metadata has no leader.
func leaderID(client sarama.Client, topic string, p int32) int32 {
	if b, err := client.Leader(topic, p); err == nil {
		return b.ID()
	}
	return -1
}

// produce writes one record; it runs on a goroutine of its own, so it
// touches nothing of the source. sentTo is set to the leader it writes to
// before it waits for the acknowledgement.
func produce(c *clients, topic string, p int32, value string, sentTo *atomic.Int32) produceResult {
	r := produceResult{partition: p, leader: leaderID(c.client, topic, p), value: value}
	sentTo.Store(r.leader)
	start := time.Now()
	_, offset, err := c.producer.SendMessage(&sarama.ProducerMessage{
		Topic: topic, Partition: p, Value: sarama.StringEncoder(value),
	})
	r.acked = time.Now()
	r.latency = r.acked.Sub(start)
	if err != nil {
		r.errKind, r.err = errorKind(err), err
		return r
	}
	// A retry may have followed the partition to a new leader: the one
	// that acknowledged is the one the producer knows now.
	r.leader, r.offset = leaderID(c.client, topic, p), offset
	return r
}

func (s *source) apply(next *Snapshot, at time.Time, r produceResult) {
	st := next.stats(r.partition, r.leader)
	st.Attempts++
	s.stall(next, r)
	if r.err == nil {
		st.Acknowledged++
		next.Latency[r.leader] = next.Latency[r.leader].Observe(r.latency.Seconds())
		s.pending[r.partition] = append(s.pending[r.partition], ack{offset: r.offset, value: r.value, leader: r.leader})
		s.boundPending(next, r.partition)
	} else {
		st.Failures[r.errKind]++
	}
	if r.errKind == s.lastError[r.partition] {
		return
	}
	// The event log logs each event once. The failing line stays, at warn:
	// it carries the error's text, which the event does not (docs/canary.md
	// and the e2e tests point users at it).
	subject := s.subject(r.partition, r.leader)
	if r.errKind != "" {
		next.Events.Add(at, canary.EventWriteFailing, subject, "", r.errKind)
		level.Warn(s.logger).Log("msg", "canary write failing", "partition", r.partition, "leader", r.leader, "error", r.errKind, "err", r.err)
	} else {
		next.Events.Add(at, canary.EventWriteRecovered, subject, s.lastError[r.partition], "")
	}
	s.lastError[r.partition] = r.errKind
}

// stall runs the clients' stall clock of r's partition: a failed write
// after an acknowledged one starts a stall, dated from that
// acknowledgement; the next acknowledged write ends it, observed by the
// leader that acknowledged the last write before. A failure before any
// acknowledgement (the exporter started during an outage) dates nothing.
func (s *source) stall(next *Snapshot, r produceResult) {
	if s.lastAck == nil {
		s.lastAck, s.stalled = map[int32]Stall{}, map[int32]bool{}
	}
	p := r.partition
	last, known := s.lastAck[p]
	if r.err != nil {
		s.stalled[p] = known
		return
	}
	if s.stalled[p] {
		st := Stall{From: last.From, To: r.acked, Leader: last.Leader, After: r.leader}
		next.Stalls[st.Leader] = next.Stalls[st.Leader].ObserveDuration(st.To.Sub(st.From))
		next.LastStall[p] = st
		s.stalled[p] = false
	}
	s.lastAck[p] = Stall{From: r.acked, Leader: r.leader}
}

// readBack reads the partition's acknowledged records when its leader
// changed since one of them was acknowledged (or when many wait). A record
// at its offset with the same value survived; another value at its offset
// means the log was truncated and rewritten: the record is lost. A record
// beyond what can be read yet stays pending for the next round, so that a
// new leader's lagging high watermark is never mistaken for a loss. A
// record below the log's start offset (retention, DeleteRecords) can no
// longer be read: it is dropped as unverifiable, and the read carries on
// from the log's start.
func (s *source) readBack(ctx context.Context, next *Snapshot, at time.Time, p int32) {
	pending, verified := s.pending[p], s.verified[p]
	if len(pending) == 0 && len(verified) == 0 {
		return
	}
	c, topic, timeout := s.c, s.cfg.Canary.Topic, s.cfg.RequestTimeout
	leader, err := call(ctx, s, "leader", func() (int32, error) { return leaderID(c.client, topic, p), nil }, nil)
	if err != nil || leader < 0 {
		return
	}
	changed := slices.ContainsFunc(pending, func(a ack) bool { return a.leader != leader }) ||
		slices.ContainsFunc(verified, func(a ack) bool { return a.checkedUnder != leader })
	if !changed && len(pending) < readBackAfter {
		return
	}
	var recheck []ack
	if changed {
		recheck = verified
	}
	first, last, ok := readRange(pending, recheck, s.readFrom[p])
	if !ok {
		return
	}
	got, err := call(ctx, s, "read back", func() (readResult, error) { return read(ctx, c, topic, p, first, last, timeout) }, nil)
	if err != nil {
		level.Debug(s.logger).Log("msg", "canary read-back failed; retrying next round", "partition", p, "err", err)
		return
	}
	if changed {
		next.Checks++
	}
	keep, lost, unverifiable, duplicates, intact := compareReadBack(pending, got)
	stillVerified, lostVerified := recheckVerified(recheck, got, leader)
	for l, n := range lostVerified {
		lost[l] += n
	}
	if len(lost) > 0 {
		if recreated, known := s.recreated(ctx, next); recreated || !known {
			// Recreated: the records were the old topic's, dropped. Not
			// known: they wait for a round that can tell.
			return
		}
	}
	s.keepVerified(p, changed, stillVerified, intact, leader)
	s.pending[p] = keep
	s.overflowLogged[p] = false
	if len(keep) == 0 && len(pending) > 0 {
		if s.readFrom == nil {
			s.readFrom = map[int32]int64{}
		}
		s.readFrom[p] = pending[len(pending)-1].offset + 1
	}
	for _, l := range sortedKeys(duplicates) {
		next.stats(p, l).Duplicates += duplicates[l]
		level.Warn(s.logger).Log("msg", "acknowledged canary records found at more than one offset: duplicates", "partition", p, "acknowledged_by", l, "extra_copies", duplicates[l])
	}
	for _, l := range sortedKeys(unverifiable) {
		next.stats(p, l).Unverifiable += unverifiable[l]
	}
	if len(unverifiable) > 0 {
		level.Info(s.logger).Log("msg", "acknowledged canary records no longer in the log (retention or DeleteRecords): counted unverifiable, not lost",
			"partition", p, "log_start_offset", got.logStart, "unverifiable", sumValues(unverifiable))
	}
	for _, l := range sortedKeys(lost) {
		next.stats(p, l).Lost += lost[l]
		// The subject is the broker that acknowledged the lost records.
		next.Events.Add(at, canary.EventAcknowledgedWritesLost, s.subject(p, l), "", strconv.FormatUint(lost[l], 10))
		// Warn, with the new leader, for whoever reads the logs first.
		level.Warn(s.logger).Log("msg", "acknowledged canary records lost", "partition", p, "acknowledged_by", l, "lost", lost[l], "leader", leader)
	}
	if changed && len(lost) == 0 {
		level.Info(s.logger).Log("msg", "no acknowledged canary record lost after the leader changed", "partition", p, "leader", leader,
			"read", len(pending)-len(keep), "still_pending", len(keep), "verified_again", len(recheck))
	}
}

// readRange is the offsets a read-back reads: from the first record to
// check (or from, the offset after the last one compared, when it is
// below and near: an extra copy of the first pending record appended
// before it is read too) to the last; false when there is none.
func readRange(pending, recheck []ack, from int64) (first, last int64, ok bool) {
	all := [][]ack{recheck, pending}
	first, last = int64(math.MaxInt64), int64(-1)
	for _, list := range all {
		for _, a := range list {
			first, last = min(first, a.offset), max(last, a.offset)
		}
	}
	if last < 0 {
		return 0, 0, false
	}
	if len(pending) > 0 && from > 0 && from < first && first-from <= maxPending {
		first = from
	}
	return first, last, true
}

// recheckVerified reads again records found before, after a leader
// change: one with another value at its offset is lost (by the leader
// that acknowledged it); one still there is verified under leader; one
// beyond what can be read yet (a new leader's shorter log, before the
// canary's next writes fill it) stays as it was, to be read again next
// round; one below the log's start is dropped (it was verified once: not
// unverifiable).
func recheckVerified(recheck []ack, got readResult, leader int32) (still []ack, lost map[int32]uint64) {
	lost = map[int32]uint64{}
	for _, a := range recheck {
		if a.offset < got.logStart {
			continue
		}
		value, ok := got.values[a.offset]
		switch {
		case !ok:
			still = append(still, a)
		case value != a.value:
			lost[a.leader]++
		default:
			a.checkedUnder = leader
			still = append(still, a)
		}
	}
	return still, lost
}

// keepVerified stores the partition's verified records after a read-back:
// those read again (on a leader change) or kept as they were, then those
// just found, under leader, the last maxPending of them.
func (s *source) keepVerified(p int32, changed bool, still, intact []ack, leader int32) {
	verified := s.verified[p]
	if changed {
		verified = still
	}
	verified = slices.Clone(verified)
	for _, a := range intact {
		a.checkedUnder = leader
		verified = append(verified, a)
	}
	if excess := len(verified) - maxPending; excess > 0 {
		verified = slices.Clone(verified[excess:])
	}
	s.verified[p] = verified
}

// boundPending drops a partition's oldest pending records past maxPending
// as unverifiable, and logs it once until the partition is read back.
func (s *source) boundPending(next *Snapshot, p int32) {
	pending := s.pending[p]
	excess := len(pending) - maxPending
	if excess <= 0 {
		return
	}
	for _, a := range pending[:excess] {
		next.stats(p, a.leader).Unverifiable++
	}
	s.pending[p] = slices.Clone(pending[excess:])
	if !s.overflowLogged[p] {
		s.overflowLogged[p] = true
		level.Warn(s.logger).Log("msg", "canary read-back has not succeeded for too long: the oldest acknowledged records are dropped as unverifiable", "partition", p, "max_pending", maxPending)
	}
}

// startTenure starts the pending records afresh when a new hold of the
// lease began: another exporter may have written for hours since this one
// last did, and retention may have removed what it acknowledged then.
// Those records are dropped as unverifiable, not judged.
func (s *source) startTenure(next *Snapshot) {
	if s.lease == nil || s.lease.Tenure() == s.tenure {
		return
	}
	s.dropPending(next, "a new hold of the canary lease began: records acknowledged during an earlier hold are counted unverifiable, not read back")
	s.tenure = s.lease.Tenure()
	// Another exporter wrote in between: no stall spans the holds.
	clear(s.lastAck)
	clear(s.stalled)
}

// dropPending drops every pending record as unverifiable, saying why.
func (s *source) dropPending(next *Snapshot, why string) {
	dropped := 0
	for _, p := range sortedKeys(s.pending) {
		for _, a := range s.pending[p] {
			next.stats(p, a.leader).Unverifiable++
			dropped++
		}
		delete(s.pending, p)
		s.overflowLogged[p] = false
	}
	// The records found before were the old topic's, or another hold's.
	clear(s.verified)
	clear(s.readFrom)
	if dropped > 0 {
		level.Warn(s.logger).Log("msg", why, "topic", s.cfg.Canary.Topic, "unverifiable", dropped)
	}
}

// topicCreated follows a round that created the canary topic: records
// still pending were written to a topic since deleted, and are dropped;
// the new topic's ID is read, so that the next round's check does not
// take the new topic's first records for the old one's.
func (s *source) topicCreated(ctx context.Context, next *Snapshot) {
	s.dropPending(next, "the canary topic was re-created (it was missing): records acknowledged to the old topic are counted unverifiable, not compared with the new one")
	s.topicID = sarama.Uuid{}
	if id, err := s.readTopicID(ctx); err == nil {
		s.topicID = id
	}
}

// topicIDResult is the outcome of readTopicIDAsync.
type topicIDResult struct {
	id  sarama.Uuid
	err error
}

// readTopicIDAsync reads the topic's ID on a goroutine of its own; its
// result comes by the time ctx ends at the latest (call).
func (s *source) readTopicIDAsync(ctx context.Context) <-chan topicIDResult {
	out := make(chan topicIDResult, 1)
	read := s.topicIDReader()
	go func() {
		id, err := call(ctx, s, "topic ID", read, nil)
		out <- topicIDResult{id, err}
	}()
	return out
}

// recreated reads the topic's ID again before records are counted lost:
// the topic may have been re-created since this round's check. It reports
// whether it was (the pending records are then dropped), and whether the
// ID could be read at all (if not, nothing may be judged).
func (s *source) recreated(ctx context.Context, next *Snapshot) (recreated, known bool) {
	id, err := s.readTopicID(ctx)
	if err != nil {
		return false, false
	}
	return s.noteTopicID(next, id), true
}

// noteTopicID records the topic's ID; when it differs from the one the
// pending records were written to, they are dropped and it returns true.
// Topic IDs are never reused, so an ID unchanged since the last check
// means the records written in between went to the same topic.
func (s *source) noteTopicID(next *Snapshot, id sarama.Uuid) bool {
	if id == (sarama.Uuid{}) {
		return false // unknown: a broker that answers Metadata before v10
	}
	old := s.topicID
	s.topicID = id
	if old == (sarama.Uuid{}) || old == id {
		return false
	}
	s.dropPending(next, "the canary topic was re-created (its topic ID changed): records acknowledged to the old topic are counted unverifiable, not compared with the new one")
	level.Info(s.logger).Log("msg", "canary topic re-created", "topic", s.cfg.Canary.Topic, "old_topic_id", old.String(), "topic_id", id.String())
	return true
}

// readTopicID asks a broker for the canary topic's ID, with the newest
// Metadata version the configured Kafka version allows (the zero ID before
// 2.8, which has no topic IDs).
func (s *source) readTopicID(ctx context.Context) (sarama.Uuid, error) {
	return call(ctx, s, "topic ID", s.topicIDReader(), nil)
}

// topicIDReader returns the sarama call readTopicID makes; it touches no
// field of the source. It asks the known brokers in turn, the least loaded
// first, until one answers: a dead broker (which has no request pending,
// so is the least loaded) must not keep the canary from judging.
func (s *source) topicIDReader() func() (sarama.Uuid, error) {
	c, topic, conf := s.c, s.cfg.Canary.Topic, s.conf
	return func() (sarama.Uuid, error) {
		brokers := c.client.Brokers()
		if first := c.client.LeastLoadedBroker(); first != nil {
			brokers = append([]*sarama.Broker{first}, slices.DeleteFunc(brokers, func(b *sarama.Broker) bool { return b.ID() == first.ID() })...)
		}
		var errs []error
		for _, broker := range brokers {
			openErr := broker.Open(conf)
			if openErr != nil && !errors.Is(openErr, sarama.ErrAlreadyConnected) {
				errs = append(errs, fmt.Errorf("broker %d: %w", broker.ID(), openErr))
				continue
			}
			resp, err := broker.GetMetadata(sarama.NewMetadataRequest(conf.Version, []string{topic}))
			if openErr == nil { // this call connected it
				closeOrphan(c.client, broker)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("broker %d: %w", broker.ID(), err))
				continue
			}
			for _, t := range resp.Topics {
				if t.Name == topic && t.Err == sarama.ErrNoError {
					return t.Uuid, nil
				}
			}
			return sarama.Uuid{}, nil
		}
		if len(errs) == 0 {
			return sarama.Uuid{}, errors.New("no broker known")
		}
		return sarama.Uuid{}, fmt.Errorf("metadata of %s: %w", topic, errors.Join(errs...))
	}
}

// closeOrphan closes a broker connection the caller opened that no client
// owns any more: the client closed (the source stopped while the read ran
// on its goroutine) or it replaced or dropped the broker (a metadata
// refresh after a broker died) between Brokers() and Open. A client closes
// only the brokers it holds; without this the connection and its reader
// goroutine would outlive the source.
func closeOrphan(client sarama.Client, broker *sarama.Broker) {
	if client.Closed() || !slices.Contains(client.Brokers(), broker) {
		_ = broker.Close()
	}
}

func sumValues(m map[int32]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// subject names a canary partition and a broker that led it (none when
// the leader was unknown) in an event.
func (s *source) subject(p, leader int32) events.Subject {
	subject := events.PartitionSubject(s.cfg.Canary.Topic, p)
	if leader >= 0 {
		subject.NodeID = strconv.FormatInt(int64(leader), 10)
	}
	return subject
}

// compareReadBack compares acknowledged records with what was read at their
// offsets: a record below the log's start offset is unverifiable; one not
// read yet is kept for the next round; one whose offset holds another
// value is lost; one found at its offset is kept by the log, and each
// other offset read that holds its value is a duplicate. The counts are by
// the leader that acknowledged the record. Every record is judged once (it
// leaves pending), so no copy is counted twice.
func compareReadBack(pending []ack, got readResult) (keep []ack, lost, unverifiable, duplicates map[int32]uint64, intact []ack) {
	lost, unverifiable, duplicates = map[int32]uint64{}, map[int32]uint64{}, map[int32]uint64{}
	var copies map[string]int
	for _, a := range pending {
		if a.offset < got.logStart {
			unverifiable[a.leader]++
			continue
		}
		value, ok := got.values[a.offset]
		switch {
		case !ok:
			keep = append(keep, a)
		case value != a.value:
			lost[a.leader]++
		default:
			intact = append(intact, a)
			if copies == nil {
				copies = make(map[string]int, len(got.values))
				for _, v := range got.values {
					copies[v]++
				}
			}
			if n := copies[a.value]; n > 1 {
				duplicates[a.leader] += uint64(n - 1)
			}
		}
	}
	return keep, lost, unverifiable, duplicates, intact
}

// readResult is what a read-back found: the values at the offsets it
// read, and the log's start offset when the records asked for begin below
// it (0 otherwise).
type readResult struct {
	values   map[int64]string
	logStart int64
}

// read returns the values at offsets first..last that can be read now,
// stopping at the high watermark, within timeout. When the log now starts
// after first (retention, DeleteRecords), it reads from the log's start
// and says where that is. It runs on a goroutine of its own (call) and
// stops when ctx ends.
func read(ctx context.Context, c *clients, topic string, p int32, first, last int64, timeout time.Duration) (readResult, error) {
	res := readResult{values: map[int64]string{}}
	pc, err := c.consumer.ConsumePartition(topic, p, first)
	if errors.Is(err, sarama.ErrOffsetOutOfRange) {
		oldest, oerr := c.client.GetOffset(topic, p, sarama.OffsetOldest)
		if oerr != nil {
			return res, fmt.Errorf("offset %d out of range, and the log start offset: %w", first, oerr)
		}
		if oldest <= first {
			// Beyond the log's end: a new leader whose log is shorter. The
			// records stay pending until the log has grown past them.
			return res, fmt.Errorf("offset %d out of range (log start %d): %w", first, oldest, err)
		}
		res.logStart = oldest
		if oldest > last {
			return res, nil // every record asked for is gone
		}
		pc, err = c.consumer.ConsumePartition(topic, p, oldest)
	}
	if err != nil {
		return res, err
	}
	defer pc.Close()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case msg := <-pc.Messages():
			res.values[msg.Offset] = string(msg.Value)
			if msg.Offset >= last || msg.Offset+1 >= pc.HighWaterMarkOffset() {
				return res, nil
			}
		case cerr := <-pc.Errors():
			return res, cerr
		case <-deadline.C:
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}

// errorKind names an error for the error label: the Kafka error code's
// name, or timeout, connection, no_broker or other.
func errorKind(err error) string {
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		if name, ok := kafkaErrorNames[kerr]; ok {
			return name
		}
		return fmt.Sprintf("KAFKA_ERROR_%d", int16(kerr))
	}
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, sarama.ErrOutOfBrokers), errors.Is(err, sarama.ErrNotConnected), errors.Is(err, sarama.ErrClosedClient):
		return "no_broker"
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection"
	case strings.Contains(err.Error(), "timed out"):
		return "timeout"
	}
	return "other"
}

// kafkaErrorNames are the protocol's names of the errors a produce meets.
var kafkaErrorNames = map[sarama.KError]string{
	sarama.ErrNotEnoughReplicas:                  "NOT_ENOUGH_REPLICAS",
	sarama.ErrNotEnoughReplicasAfterAppend:       "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
	sarama.ErrNotLeaderForPartition:              "NOT_LEADER_OR_FOLLOWER",
	sarama.ErrLeaderNotAvailable:                 "LEADER_NOT_AVAILABLE",
	sarama.ErrRequestTimedOut:                    "REQUEST_TIMED_OUT",
	sarama.ErrUnknownTopicOrPartition:            "UNKNOWN_TOPIC_OR_PARTITION",
	sarama.ErrTopicAuthorizationFailed:           "TOPIC_AUTHORIZATION_FAILED",
	sarama.ErrClusterAuthorizationFailed:         "CLUSTER_AUTHORIZATION_FAILED",
	sarama.ErrOutOfOrderSequenceNumber:           "OUT_OF_ORDER_SEQUENCE_NUMBER",
	sarama.ErrDuplicateSequenceNumber:            "DUPLICATE_SEQUENCE_NUMBER",
	sarama.ErrKafkaStorageError:                  "KAFKA_STORAGE_ERROR",
	sarama.ErrNetworkException:                   "NETWORK_EXCEPTION",
	sarama.ErrInvalidProducerEpoch:               "INVALID_PRODUCER_EPOCH",
	sarama.ErrUnknownProducerID:                  "UNKNOWN_PRODUCER_ID",
	sarama.ErrMessageSizeTooLarge:                "MESSAGE_TOO_LARGE",
	sarama.ErrPolicyViolation:                    "POLICY_VIOLATION",
	sarama.ErrNotController:                      "NOT_CONTROLLER",
	sarama.ErrTransactionalIDAuthorizationFailed: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
}
