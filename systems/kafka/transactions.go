package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log/level"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/failover-exporter/failover_exporter/collector/events"
)

// Transactions: a read_committed consumer reads a partition up to its
// last stable offset (LSO), the first offset of its oldest open
// transaction, while read_uncommitted consumers and lag tools see up to
// the high watermark. A transaction left open (its producer died, its
// coordinator lost it, an unclean election left its marker behind) holds
// the LSO, and every read_committed consumer of the partition with it,
// until the coordinator aborts it at its timeout, or for ever when no
// coordinator knows it (a hanging transaction). The transaction read asks,
// beside the refreshes, each leader for the high watermark and the LSO of
// the partitions it leads, DescribeProducers of the partitions whose LSO
// stayed behind over two reads, and, for open transactions idle longer
// than transaction.max.timeout.ms, what their coordinators say of them,
// by the rule `kafka-transactions.sh find-hanging` applies. Every request
// is read-only.

// ReadCommittedGap is a partition whose read_committed consumers see
// fewer records than its read_uncommitted ones.
type ReadCommittedGap struct {
	// Records is the high watermark minus the LSO.
	Records int64
	// LSO is the last stable offset.
	LSO int64
	// StalledSince is the first read that found the LSO at this offset
	// with a gap: read_committed consumers have read nothing new since at
	// least then. Stalled reports whether an earlier read did.
	StalledSince time.Time
	// Open counts the open transactions DescribeProducers found on the
	// partition; -1 when it was not asked (the gap was new, or the read's
	// cap was reached) or did not answer.
	Open int
	// OldestIdle is, of the open transactions, the longest time since the
	// producer's last write (DescribeProducers' lastTimestamp): what
	// find-hanging compares with the timeout. Valid when Open > 0.
	OldestIdle time.Duration
}

// Stalled reports whether the LSO stayed at its offset since an earlier
// read with a gap: a transaction commits or aborts within a read in a
// healthy cluster, so a gap two reads see is one clients wait on.
func (g ReadCommittedGap) Stalled(at time.Time) bool { return g.StalledSince.Before(at) }

// HangingTransaction is an open transaction on a partition that no
// coordinator will end: find-hanging's rule.
type HangingTransaction struct {
	Partition     PartitionKey
	ProducerID    int64
	ProducerEpoch int32
	// StartOffset is the transaction's first offset on the partition.
	StartOffset int64
	// LastWrite is the producer's last write to the partition.
	LastWrite time.Time
	// TransactionalID is what ListTransactions named (client-chosen: shown
	// in the event log, never in a label); empty when no coordinator
	// knows the producer.
	TransactionalID string
	// Why says which part of the rule holds.
	Why string
}

// TransactionRead is one read of the cluster's read_committed gaps. It is
// shared between snapshots until the next read ends, and never modified.
type TransactionRead struct {
	// ReadAt is when the read began: a stall's clock runs from it.
	ReadAt time.Time
	// Gaps are the partitions with a gap; others have none or were not
	// answered.
	Gaps map[PartitionKey]ReadCommittedGap
	// Answered counts the partitions whose leader answered both offsets;
	// Complete is true when every watched partition with a leader did.
	Answered int
	Complete bool
	// MaxTimeout is the brokers' transaction.max.timeout.ms; 0 when it
	// could not be read.
	MaxTimeout time.Duration
	// Hanging are the hanging transactions found. HangingKnown is false
	// when the read could not tell whether there are others: a leader or
	// a coordinator did not answer, the timeout is unknown, a stalled
	// partition was not described, or the exporter may not see every
	// transactional id (hangingKnown).
	Hanging      []HangingTransaction
	HangingKnown bool
	// Unknown says why HangingKnown is false; empty when it is true.
	Unknown string
}

// Stalled counts the gaps stalled at the read.
func (r *TransactionRead) Stalled() int {
	n := 0
	for _, g := range r.Gaps {
		if g.Stalled(r.ReadAt) {
			n++
		}
	}
	return n
}

// transactionsRead is a TransactionRead with how it went.
type transactionsRead struct {
	read *TransactionRead
	readOutcome
}

type transactionReader = brokerReader[transactionsRead]

// transactionsMaxVersions are the request versions of the transaction
// read's client: ListOffsets at v6, which has the isolation level (v2+)
// and which every Kafka since 2.1 answers (4.x drops only v0); later
// versions add nothing the read uses, and sarama's MockBroker, the unit
// tests' stand-in cluster, decodes none after v6.
var transactionsMaxVersions = func() *kversion.Versions {
	v := franzVersions()
	v.SetMaxKeyVersion(apiListOffsets, 6)
	return v
}()

// apiListOffsets is ListOffsets' API key.
const apiListOffsets = 2

var transactionsKind = readKind{
	kind:        "transactions",
	unsupported: "brokers do not offer ListOffsets with an isolation level; read_committed series are not served",
	failed:      "reading the read_committed gaps failed for some leaders; kafka_read_committed_* counts only the partitions that answered",
}

// Bounds of one transaction read.
const (
	// maxDescribedPartitions bounds the stalled partitions one read asks
	// DescribeProducers of: a cluster whose every partition stalls (its
	// transaction coordinators lost) learns their producers over reads.
	maxDescribedPartitions = 1000
	// maxHangingCandidates bounds the producers one read looks up at the
	// coordinators.
	maxHangingCandidates = 1000
)

// transactionIsolation are ListOffsets' isolation levels.
const (
	readUncommitted int8 = 0
	readCommitted   int8 = 1
)

// aclProbeTransactionalID is a transactional id outside the coordinator
// read's prefix that the read describes to learn whether it may see every
// transactional id: ListTransactions leaves out, without an error, the
// ids an ACL hides, which would make their open transactions look unknown
// to every coordinator, that is hanging.
const aclProbeTransactionalID = "failover_exporter-acl-probe"

// offsetRequestsByLeader builds, per leader, the ListOffsets request of
// every watched partition it leads (for the latest offset; the read sends
// it at both isolation levels). Leaderless partitions cannot be asked (nor
// have a gap: a read needs a leader).
func offsetRequestsByLeader(snap *Snapshot) map[int32]*kmsg.ListOffsetsRequest {
	byLeader := map[int32]*kmsg.ListOffsetsRequest{}
	for ti := range snap.Topics {
		t := &snap.Topics[ti]
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				continue
			}
			req := byLeader[p.Leader]
			if req == nil {
				req = kmsg.NewPtrListOffsetsRequest()
				req.ReplicaID = -1
				byLeader[p.Leader] = req
			}
			if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != t.Name {
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = t.Name
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p.ID, latestTimestamp
			rt := &req.Topics[len(req.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	return byLeader
}

// requestedPartitions counts the partitions req asks about.
func requestedPartitions(req *kmsg.ListOffsetsRequest) int {
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	return n
}

// readTransactions takes the outcome of the read the previous refreshes
// started, starts the next one, and gives snap the last read.
func (s *source) readTransactions(brokers map[int32]string, snap *Snapshot) {
	r := &s.transactions
	r.keep(s, transactionsKind)
	if len(snap.Topics) == 0 {
		r.last = nil
		return
	}
	// The partitions are listed only when a read starts: a refresh while
	// one runs costs nothing per partition.
	if !r.running() && !r.paused(s.now()) {
		byLeader := offsetRequestsByLeader(snap)
		var prev *TransactionRead
		if r.last != nil {
			prev = r.last.read
		}
		// The read's time is taken here, on the watcher's goroutine, which
		// owns the source's clock.
		timeout, at := s.cfg.RequestTimeout, s.now()
		r.maxVersions = transactionsMaxVersions
		err := r.start(s.cfg, brokers, func(handles map[int32]*kgo.Broker) transactionsRead {
			return readTransactionState(handles, byLeader, prev, timeout, at)
		})
		if err != nil {
			s.logFailure("transactions", "reading the read_committed gaps failed; their series are not served", err)
		}
	}
	if r.last == nil || r.last.read == nil {
		return
	}
	switch r.last.read.Unknown {
	case firstReadUnknown:
		// Every exporter's first read: not worth a warning.
		level.Debug(s.logger).Log("msg", "cannot tell whether transactions hang yet; kafka_hanging_transactions is served from the next read", "why", firstReadUnknown)
	case "":
		s.logFailure("transactions_hanging", "", nil)
	default:
		s.logFailure("transactions_hanging", "cannot tell whether transactions hang; kafka_hanging_transactions is not served", errors.New(r.last.read.Unknown))
	}
	snap.Transactions = r.last.read
}

// firstReadUnknown is why a first read cannot tell whether transactions
// hang: a stall needs two reads.
const firstReadUnknown = "the first read cannot tell a stalled partition from a committing one"

// readTransactionState is one transaction read: the timeout, every
// leader's gaps (and their producers), then the hanging check.
func readTransactionState(handles map[int32]*kgo.Broker, byLeader map[int32]*kmsg.ListOffsetsRequest, prev *TransactionRead, timeout time.Duration, at time.Time) transactionsRead {
	read := &TransactionRead{ReadAt: at, Gaps: map[PartitionKey]ReadCommittedGap{}}
	maxTimeout, timeoutErr := describeMaxTimeout(handles, timeout)
	read.MaxTimeout = maxTimeout
	open, outcome := readGaps(handles, byLeader, prev, read, timeout)
	if outcome.unsupported {
		return transactionsRead{readOutcome: outcome}
	}
	want := 0
	for _, req := range byLeader {
		want += requestedPartitions(req)
	}
	read.Complete = read.Answered == want
	switch {
	case timeoutErr != nil:
		read.Unknown = "transaction.max.timeout.ms unread: " + timeoutErr.Error()
	case !read.Complete:
		read.Unknown = fmt.Sprintf("%d of %d partitions' leaders did not answer", want-read.Answered, want)
	default:
		for key, g := range read.Gaps {
			if g.Stalled(read.ReadAt) && g.Open < 0 {
				read.Unknown = fmt.Sprintf("the producers of %s-%d were not described", key.Topic, key.Partition)
				break
			}
		}
	}
	if read.Unknown == "" && prev == nil && len(read.Gaps) > 0 {
		// A hanging transaction's partition is stalled at every read but
		// the first, which cannot tell a stall yet.
		read.Unknown = firstReadUnknown
	}
	candidates := hangingCandidates(open, maxTimeout, read.ReadAt)
	if read.Unknown == "" {
		read.Hanging, read.Unknown = checkHanging(handles, candidates, timeout)
	}
	read.HangingKnown = read.Unknown == ""
	return transactionsRead{read: read, readOutcome: outcome}
}

// describeMaxTimeout reads transaction.max.timeout.ms from the first of
// (at most three) brokers that answers.
func describeMaxTimeout(handles map[int32]*kgo.Broker, timeout time.Duration) (time.Duration, error) {
	err := errors.New("no broker to ask")
	for i, id := range slices.Sorted(maps.Keys(handles)) {
		if i == findCoordinatorAttempts {
			break
		}
		var ms int64
		if ms, err = describeBrokerConfigInt(handles[id], id, "transaction.max.timeout.ms", timeout); err == nil {
			return time.Duration(ms) * time.Millisecond, nil
		}
	}
	return 0, err
}

// describeBrokerConfigInt reads one integer config of broker id.
func describeBrokerConfigInt(broker *kgo.Broker, id int32, name string, timeout time.Duration) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeBroker, strconv.FormatInt(int64(id), 10), []string{name}
	req.Resources = append(req.Resources, res)
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("describe configs of broker %d: %w", id, err)
	}
	for _, r := range kresp.(*kmsg.DescribeConfigsResponse).Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return 0, fmt.Errorf("describe configs of broker %d: %w", id, err)
		}
		for _, c := range r.Configs {
			if c.Name == name && c.Value != nil {
				v, err := strconv.ParseInt(*c.Value, 10, 64)
				if err != nil || v <= 0 {
					return 0, fmt.Errorf("broker %d: %s is %q, not a positive integer", id, name, *c.Value)
				}
				return v, nil
			}
		}
	}
	return 0, fmt.Errorf("broker %d did not answer %s", id, name)
}

// openTransaction is an open transaction DescribeProducers found.
type openTransaction struct {
	partition PartitionKey
	producer  kmsg.DescribeProducersResponseTopicPartitionActiveProducer
}

// readGaps asks every leader, at once, for its partitions' high
// watermarks and LSOs, then for the producers of its stalled partitions,
// and records them in read; it returns the open transactions found.
func readGaps(handles map[int32]*kgo.Broker, byLeader map[int32]*kmsg.ListOffsetsRequest, prev *TransactionRead, read *TransactionRead, timeout time.Duration) ([]openTransaction, readOutcome) {
	leaders, missing := liveLeaders(handles, byLeader, requestedPartitions, "partitions")
	var open []openTransaction
	described := 0
	var mu sync.Mutex
	o := askBrokers(leaders, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		gaps, answered, err := leaderGaps(ctx, broker, byLeader[id], prev, read.ReadAt)
		if err != nil {
			return nil, false, fmt.Errorf("list offsets of %d partitions led by broker %d: %w", requestedPartitions(byLeader[id]), id, err)
		}
		var stalled []PartitionKey
		for key, g := range gaps {
			if g.Stalled(read.ReadAt) {
				stalled = append(stalled, key)
			}
		}
		slices.SortFunc(stalled, comparePartitionKeys)
		mu.Lock()
		stalled = stalled[:min(len(stalled), maxDescribedPartitions-described)]
		described += len(stalled)
		mu.Unlock()
		found := describeProducers(ctx, broker, stalled, gaps, read.ReadAt)
		return func() {
			read.Answered += answered
			maps.Copy(read.Gaps, gaps)
			open = append(open, found...)
		}, true, nil
	})
	return open, o.plus(missing)
}

func comparePartitionKeys(a, b PartitionKey) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// leaderGaps sends req to its leader for the high watermark, then the
// LSO: in that order, so that writes between the two requests can only
// hide a gap, never make one up. A gap's stall carries from prev while its
// LSO stays. req is the read's own: it is sent once, then changed and
// sent again.
func leaderGaps(ctx context.Context, broker *kgo.Broker, req *kmsg.ListOffsetsRequest, prev *TransactionRead, at time.Time) (map[PartitionKey]ReadCommittedGap, int, error) {
	var resps [2]*kmsg.ListOffsetsResponse
	for i, isolation := range []int8{readUncommitted, readCommitted} {
		req.IsolationLevel = isolation
		kresp, err := broker.Request(ctx, req)
		if err != nil {
			return nil, 0, err
		}
		resps[i] = kresp.(*kmsg.ListOffsetsResponse)
	}
	gaps, answered := gapsOf(resps[0], resps[1], prev, at)
	return gaps, answered, nil
}

// gapsOf compares a leader's answers for the high watermarks and the LSOs
// of the same partitions: the partitions with a gap, whose stall carries
// from prev while their LSO stays, and how many partitions answered both.
// The answers list the partitions in the order asked; they are compared
// in that order, without a map per partition (a leader of 100,000
// partitions answers each read), and by name only if the orders differ.
func gapsOf(hwm, lso *kmsg.ListOffsetsResponse, prev *TransactionRead, at time.Time) (map[PartitionKey]ReadCommittedGap, int) {
	gaps := map[PartitionKey]ReadCommittedGap{}
	answered := 0
	var byName map[PartitionKey]*kmsg.ListOffsetsResponseTopicPartition
	stableOf := func(ti, pi int, topic string, partition int32) *kmsg.ListOffsetsResponseTopicPartition {
		if byName == nil && ti < len(lso.Topics) && lso.Topics[ti].Topic == topic && pi < len(lso.Topics[ti].Partitions) && lso.Topics[ti].Partitions[pi].Partition == partition {
			return &lso.Topics[ti].Partitions[pi]
		}
		if byName == nil {
			byName = map[PartitionKey]*kmsg.ListOffsetsResponseTopicPartition{}
			for i := range lso.Topics {
				for j := range lso.Topics[i].Partitions {
					byName[PartitionKey{lso.Topics[i].Topic, lso.Topics[i].Partitions[j].Partition}] = &lso.Topics[i].Partitions[j]
				}
			}
		}
		return byName[PartitionKey{topic, partition}]
	}
	for ti := range hwm.Topics {
		t := &hwm.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			s := stableOf(ti, pi, t.Topic, p.Partition)
			if s == nil || p.ErrorCode != 0 || s.ErrorCode != 0 {
				continue
			}
			answered++
			if p.Offset <= s.Offset {
				continue
			}
			key := PartitionKey{t.Topic, p.Partition}
			g := ReadCommittedGap{Records: p.Offset - s.Offset, LSO: s.Offset, StalledSince: at, Open: -1}
			if prev != nil {
				if before, ok := prev.Gaps[key]; ok && before.LSO == s.Offset {
					g.StalledSince = before.StalledSince
				}
			}
			gaps[key] = g
		}
	}
	return gaps, answered
}

// describeProducers asks the leader for the producers of parts (sorted),
// records each one's open transactions in gaps and returns them. A
// partition that did not answer keeps Open -1.
func describeProducers(ctx context.Context, broker *kgo.Broker, parts []PartitionKey, gaps map[PartitionKey]ReadCommittedGap, at time.Time) []openTransaction {
	if len(parts) == 0 {
		return nil
	}
	// parts are sorted: each topic's partitions follow one another.
	req := kmsg.NewPtrDescribeProducersRequest()
	for _, key := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != key.Topic {
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic = key.Topic
			req.Topics = append(req.Topics, rt)
		}
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, key.Partition)
	}
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		return nil
	}
	var open []openTransaction
	for _, t := range kresp.(*kmsg.DescribeProducersResponse).Topics {
		for _, p := range t.Partitions {
			key := PartitionKey{t.Topic, p.Partition}
			g, ok := gaps[key]
			if !ok || kerr.ErrorForCode(p.ErrorCode) != nil {
				continue
			}
			g.Open = 0
			for _, producer := range p.ActiveProducers {
				if producer.CurrentTxnStartOffset < 0 {
					continue
				}
				g.Open++
				g.OldestIdle = max(g.OldestIdle, at.Sub(time.UnixMilli(producer.LastTimestamp)))
				open = append(open, openTransaction{partition: key, producer: producer})
			}
			gaps[key] = g
		}
	}
	return open
}

// hangingCandidates are the open transactions find-hanging would look
// up: idle longer than the timeout (unknown timeout: none).
func hangingCandidates(open []openTransaction, maxTimeout time.Duration, at time.Time) []openTransaction {
	if maxTimeout <= 0 {
		return nil
	}
	var candidates []openTransaction
	for _, o := range open {
		if at.Sub(time.UnixMilli(o.producer.LastTimestamp)) > maxTimeout {
			candidates = append(candidates, o)
		}
	}
	return candidates
}

// checkHanging applies find-hanging's rule to candidates: an open
// transaction is hanging when no coordinator lists its producer
// (ListTransactions of every broker), when its transactional id's
// coordinator does not know the id, or when the coordinator's transaction
// does not include the partition (it will write no marker there). unknown
// is non-empty when the read could not tell.
func checkHanging(handles map[int32]*kgo.Broker, candidates []openTransaction, timeout time.Duration) ([]HangingTransaction, string) {
	if len(candidates) == 0 {
		return nil, ""
	}
	if len(candidates) > maxHangingCandidates {
		return nil, fmt.Sprintf("%d open transactions idle past the timeout, more than the %d a read looks up", len(candidates), maxHangingCandidates)
	}
	if why := seesEveryTransactionalID(handles, timeout); why != "" {
		return nil, why
	}
	pids := make([]int64, 0, len(candidates))
	for _, c := range candidates {
		pids = append(pids, c.producer.ProducerID)
	}
	slices.Sort(pids)
	ids, err := transactionalIDs(handles, slices.Compact(pids), timeout)
	if err != nil {
		return nil, err.Error()
	}
	described, err := describeTransactions(handles, slices.Collect(maps.Values(ids)), timeout)
	if err != nil {
		return nil, err.Error()
	}
	return hangingOf(candidates, ids, described), ""
}

// hangingOf applies find-hanging's rule to candidates, given the
// transactional id each producer has (ids; none when no coordinator
// lists it) and what the coordinators said of those ids (described; an
// id left out is unknown to its coordinator).
func hangingOf(candidates []openTransaction, ids map[int64]string, described map[string]transactionDescription) []HangingTransaction {
	var hanging []HangingTransaction
	for _, c := range candidates {
		h := HangingTransaction{Partition: c.partition, ProducerID: c.producer.ProducerID, ProducerEpoch: c.producer.ProducerEpoch,
			StartOffset: c.producer.CurrentTxnStartOffset, LastWrite: time.UnixMilli(c.producer.LastTimestamp)}
		id, listed := ids[h.ProducerID]
		h.TransactionalID = id
		d, known := described[id]
		switch {
		case !listed:
			h.Why = "no coordinator lists its producer"
		case !known:
			h.Why = "its transactional id is unknown to its coordinator"
		case !d.includes(c.partition):
			h.Why = fmt.Sprintf("its coordinator's transaction (%s) does not include the partition", d.state)
		default:
			continue
		}
		hanging = append(hanging, h)
	}
	return hanging
}

// transactionDescription is what a coordinator said of a transactional id.
type transactionDescription struct {
	state      string
	partitions map[PartitionKey]bool
}

func (d transactionDescription) includes(key PartitionKey) bool { return d.partitions[key] }

// seesEveryTransactionalID describes aclProbeTransactionalID: an
// authorization error says ACLs hide some transactional ids from the
// exporter, so a producer no coordinator lists may only be hidden.
func seesEveryTransactionalID(handles map[int32]*kgo.Broker, timeout time.Duration) string {
	_, err := describeTransactions(handles, []string{aclProbeTransactionalID}, timeout)
	if err != nil {
		return err.Error()
	}
	return ""
}

// transactionalIDs asks every broker, at once, which transactional ids
// the producers pids have (each coordinator lists its own).
func transactionalIDs(handles map[int32]*kgo.Broker, pids []int64, timeout time.Duration) (map[int64]string, error) {
	ids := map[int64]string{}
	o := askBrokers(handles, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.ProducerIDFilters = pids
		kresp, err := broker.Request(ctx, req)
		if err != nil {
			return nil, false, fmt.Errorf("list transactions of broker %d: %w", id, err)
		}
		resp := kresp.(*kmsg.ListTransactionsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, false, fmt.Errorf("list transactions of broker %d: %w", id, err)
		}
		return func() {
			for _, s := range resp.TransactionStates {
				if slices.Contains(pids, s.ProducerID) {
					ids[s.ProducerID] = s.TransactionalID
				}
			}
		}, true, nil
	})
	if o.err != nil {
		return nil, o.err
	}
	return ids, nil
}

// describeTransactions describes ids at their coordinators (one batched
// FindCoordinator, then each coordinator at once). An id its coordinator
// does not know is left out; any other error fails the whole.
func describeTransactions(handles map[int32]*kgo.Broker, ids []string, timeout time.Duration) (map[string]transactionDescription, error) {
	described := map[string]transactionDescription{}
	if len(ids) == 0 {
		return described, nil
	}
	found, _, err := findFromSome(CoordinatorTransaction, handles, ids, timeout)
	if err != nil {
		return nil, fmt.Errorf("transaction coordinators: %w", err)
	}
	byNode := map[int32][]string{}
	for _, c := range found.Coordinators {
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return nil, fmt.Errorf("transaction coordinator of %q: %w", c.Key, err)
		}
		if _, live := handles[c.NodeID]; !live {
			return nil, fmt.Errorf("transaction coordinator %d is not a live broker", c.NodeID)
		}
		byNode[c.NodeID] = append(byNode[c.NodeID], c.Key)
	}
	nodes := map[int32]*kgo.Broker{}
	for id := range byNode {
		nodes[id] = handles[id]
	}
	o := askBrokers(nodes, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = byNode[id]
		kresp, err := broker.Request(ctx, req)
		if err != nil {
			return nil, false, fmt.Errorf("describe transactions at broker %d: %w", id, err)
		}
		got := map[string]transactionDescription{}
		for _, s := range kresp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
			switch err := kerr.ErrorForCode(s.ErrorCode); {
			case errors.Is(err, kerr.TransactionalIDNotFound):
			case err != nil:
				return nil, false, fmt.Errorf("describe transaction at broker %d: %w", id, err)
			default:
				d := transactionDescription{state: s.State, partitions: map[PartitionKey]bool{}}
				for _, t := range s.Topics {
					for _, p := range t.Partitions {
						d.partitions[PartitionKey{t.Topic, p}] = true
					}
				}
				got[s.TransactionalID] = d
			}
		}
		return func() { maps.Copy(described, got) }, true, nil
	})
	if o.err != nil {
		return nil, o.err
	}
	return described, nil
}

// Transaction events: an open transaction found hanging (Before: the
// partition's LSO, After: its producer, transactional id and why), and
// one no longer hanging (its partition's LSO moved on, or it is no longer
// open). Listed only between two reads that both could tell.
const (
	EventTransactionHanging      events.Kind = "transaction_hanging"
	EventTransactionHangingEnded events.Kind = "transaction_hanging_ended"
)

// carryTransactions lists the hanging transactions next's read found that
// prev's did not, and those it no longer finds.
func carryTransactions(prev, next *Snapshot) {
	if prev == nil || prev.Transactions == nil || next.Transactions == nil || prev.Transactions == next.Transactions {
		return
	}
	before, after := prev.Transactions, next.Transactions
	if !before.HangingKnown || !after.HangingKnown {
		return
	}
	type hangingKey struct {
		PartitionKey
		producer int64
	}
	keyOf := func(h HangingTransaction) hangingKey { return hangingKey{h.Partition, h.ProducerID} }
	was := map[hangingKey]bool{}
	for _, h := range before.Hanging {
		was[keyOf(h)] = true
	}
	is := map[hangingKey]bool{}
	for _, h := range after.Hanging {
		is[keyOf(h)] = true
		if !was[keyOf(h)] {
			next.Events.Add(after.ReadAt, EventTransactionHanging, events.PartitionSubject(h.Partition.Topic, h.Partition.Partition),
				fmt.Sprintf("transaction open since offset %d", h.StartOffset), h.text(after.ReadAt))
		}
	}
	for _, h := range before.Hanging {
		if !is[keyOf(h)] {
			next.Events.Add(after.ReadAt, EventTransactionHangingEnded, events.PartitionSubject(h.Partition.Topic, h.Partition.Partition),
				h.text(before.ReadAt), "no longer open")
		}
	}
}

// maxIDText bounds a transactional id as an event shows it.
const maxIDText = 100

// text is a hanging transaction as an event shows it; the transactional
// id, which a client chose, is quoted and cut.
func (h HangingTransaction) text(at time.Time) string {
	id := "none"
	if h.TransactionalID != "" {
		id = h.TransactionalID
		if len(id) > maxIDText {
			id = id[:maxIDText] + "..."
		}
		id = strconv.Quote(id)
	}
	return fmt.Sprintf("producer %d epoch %d (transactional id %s), last write %s ago: %s",
		h.ProducerID, h.ProducerEpoch, id, at.Sub(h.LastWrite).Round(time.Second), h.Why)
}
