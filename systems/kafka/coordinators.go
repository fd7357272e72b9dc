package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/events"
)

// Coordinators: a consumer group's coordinator is the leader of one
// __consumer_offsets partition, a transactional producer's the leader of
// one __transaction_state partition. When that leader moves, the new one
// loads the partition before it answers, and until then clients' commits,
// fetches, joins and transaction markers fail (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE), while
// Metadata already shows a leader. The coordinator read asks, beside the
// refreshes, what a client asks: FindCoordinator for one key per
// partition, then the coordinator it names a read-only question (OffsetFetch
// for the group, DescribeTransactions for the transactional id), and
// records per partition whether its coordinator answered.

// CoordinatorKind is a kind of coordinator: what its keys name.
type CoordinatorKind int

// Coordinator kinds, in the order their series are emitted.
const (
	CoordinatorGroup CoordinatorKind = iota
	CoordinatorTransaction
	// CoordinatorShare: the share coordinator (KIP-932, Kafka 4.2+), which
	// holds share groups' delivery state on __share_group_state for the
	// brokers that lead the shared partitions. Its question is an
	// inter-broker one (ClusterAction); refused, the kind is not served.
	CoordinatorShare
	coordinatorKinds
)

// coordinatorKindInfo is each kind's label value, the internal topic whose
// partitions' leaders are its coordinators, FindCoordinator's key type,
// and the Kafka that answers its question.
var coordinatorKindInfo = [coordinatorKinds]struct {
	name, topic string
	keyType     int8
	// since is the first Kafka whose coordinators answer its question.
	since string
}{
	CoordinatorGroup:       {"group", "__consumer_offsets", 0, "3.0"},
	CoordinatorTransaction: {"transaction", "__transaction_state", 1, "3.0"},
	CoordinatorShare:       {"share", "__share_group_state", 2, "4.1"},
}

func (k CoordinatorKind) String() string { return coordinatorKindInfo[k].name }

// Topic is the internal topic that holds the kind's state.
func (k CoordinatorKind) Topic() string { return coordinatorKindInfo[k].topic }

// CoordinatorState is how a coordinator partition answered the last read.
type CoordinatorState int8

// Coordinator states, in the order their series are emitted.
const (
	// CoordinatorUnknown: the read could not tell (no broker answered
	// FindCoordinator, an ACL refused the question, an error that says
	// nothing about the coordinator). Neither answering nor unavailable.
	CoordinatorUnknown CoordinatorState = iota
	// CoordinatorAnswering: the coordinator FindCoordinator named answered
	// the question for the partition's key.
	CoordinatorAnswering
	// CoordinatorLoading: it answered COORDINATOR_LOAD_IN_PROGRESS: it
	// leads the partition and is still loading it. Clients fail as they do
	// when it is unavailable, and episodes count it so.
	CoordinatorLoading
	// CoordinatorUnavailable: FindCoordinator named no coordinator, or the
	// one it named did not answer, or said it is not the coordinator.
	CoordinatorUnavailable
	coordinatorStates
)

var coordinatorStateNames = [coordinatorStates]string{"unknown", "answering", "loading", "unavailable"}

func (s CoordinatorState) String() string { return coordinatorStateNames[s] }

// failing reports whether clients of the partition fail: its episodes are
// open while it is.
func (s CoordinatorState) failing() bool {
	return s == CoordinatorLoading || s == CoordinatorUnavailable
}

// CoordinatorPartition is one coordinator partition as the last read
// found it.
type CoordinatorPartition struct {
	State CoordinatorState
	// Coordinator is the broker FindCoordinator named, -1 when none.
	Coordinator int32
	// Reason says why the state is not answering: an error code's name, or
	// a request's error; empty when answering.
	Reason string
}

// CoordinatorRead is one read of a kind's coordinators. It is shared
// between snapshots until the next read ends, and never modified.
type CoordinatorRead struct {
	// ReadAt is when the read began: taken on the watcher's goroutine,
	// which owns the source's clock (tests move it), not on the read's.
	ReadAt time.Time
	// Partitions are the internal topic's partitions, by ID.
	Partitions []CoordinatorPartition
}

// Count counts the partitions in state s.
func (r *CoordinatorRead) Count(s CoordinatorState) int {
	n := 0
	for _, p := range r.Partitions {
		if p.State == s {
			n++
		}
	}
	return n
}

// BrokerGroups are the consumer groups one broker coordinates, as its
// ListGroups answered: what stopping it would move to other coordinators.
// Only counts are kept, so their cost does not grow with the groups'.
type BrokerGroups struct {
	Total int
	// ByProtocol counts them by protocol type (GroupProtocols: a client
	// names it, so any other is "other").
	ByProtocol map[string]int
	// ByState counts them by state (GroupStates); nil when the broker does
	// not say (ListGroups before v4, Kafka 2.6).
	ByState map[string]int
}

// BrokerTransactions are the transactional ids one broker coordinates,
// as its ListTransactions answered (KIP-664, Kafka 3.0): the producers a
// stop of it makes wait for a new coordinator, their transactions in
// flight above all. Only counts are kept.
type BrokerTransactions struct {
	Total   int
	ByState map[string]int
}

// InFlight counts the ids with a transaction begun and not yet complete
// (ongoing or completing): a stop holds their commit or abort until the
// new coordinator has loaded the partition.
func (b *BrokerTransactions) InFlight() int {
	return b.ByState["ongoing"] + b.ByState["completing"]
}

// TransactionStates are the state label's values: Kafka's transaction
// states folded into what a stop does to them (ongoing: Ongoing;
// completing: PrepareCommit, PrepareAbort, PrepareEpochFence; idle: Empty,
// CompleteCommit, CompleteAbort; dead; unknown: any other).
var TransactionStates = []string{"ongoing", "completing", "idle", "dead", "unknown"}

// transactionState is a transaction's state as a label value.
func transactionState(state string) string {
	switch state {
	case "Ongoing":
		return "ongoing"
	case "PrepareCommit", "PrepareAbort", "PrepareEpochFence":
		return "completing"
	case "Empty", "CompleteCommit", "CompleteAbort":
		return "idle"
	case "Dead":
		return "dead"
	default:
		return "unknown"
	}
}

// GroupProtocols are the protocol label's values: consumer (consumers,
// classic or KIP-848), connect (Kafka Connect workers), share (share
// groups, KIP-932), none (a group
// that only commits offsets, as MirrorMaker 2's checkpoints and
// kafka-consumer-groups.sh --reset-offsets make), other (any other name a
// client chose).
var GroupProtocols = []string{"consumer", "connect", "share", "none", "other"}

// groupProtocol is a group's protocol type as a label value.
func groupProtocol(t string) string {
	switch t {
	case "consumer", "connect", "share":
		return t
	case "":
		return "none"
	default:
		return "other"
	}
}

// GroupStates are the state label's values: Kafka's states (classic and
// KIP-848 groups) folded into what an operator asks after a failover.
var GroupStates = []string{"stable", "rebalancing", "reconciling", "empty", "dead", "unknown"}

// groupState is a group's state (ListGroups v4+) as a label value.
func groupState(state string) string {
	switch strings.ToLower(state) {
	case "stable":
		return "stable"
	case "preparingrebalance", "completingrebalance", "assigning":
		return "rebalancing"
	case "reconciling":
		return "reconciling"
	case "empty":
		return "empty"
	case "dead":
		return "dead"
	default:
		return "unknown"
	}
}

// Coordinators is the coordinator state of a snapshot: per kind, the last
// read that ended and the episodes of its failing partitions.
type Coordinators struct {
	// Reads are nil for a kind not read: its internal topic does not exist
	// (the cluster creates it on first use), its brokers do not offer the
	// requests, or no read ended yet.
	Reads [coordinatorKinds]*CoordinatorRead
	// Open holds, per kind, the partitions whose clients fail and since
	// when (backdated on the outage clock); empty while all answer.
	Open [coordinatorKinds]map[int32]episode.Open
	// Ended is, per kind, the histogram of the episodes that ended: nil
	// until an episode opened, then served from zero.
	Ended [coordinatorKinds]*episode.Histogram
	// Groups are, per broker that answered ListGroups in the last read,
	// the groups it coordinates; nil before a read, or while the cluster
	// has no __consumer_offsets. GroupsComplete is true when every live
	// broker answered, so that their sum is the cluster's.
	Groups         map[int32]*BrokerGroups
	GroupsComplete bool
	// ShareRefused is set while the brokers refuse the share kind's
	// question (ClusterAction): it is neither read nor served.
	ShareRefused bool
	// Transactions are, per broker that answered ListTransactions in the
	// last read, the transactional ids it coordinates; nil before a read,
	// while the cluster has no __transaction_state, or while the
	// exporter may not see every transactional id (an ACL: ListTransactions
	// leaves out, without an error, the ids it hides).
	Transactions map[int32]*BrokerTransactions
}

// CoordinatedBy counts the partitions of kind k whose coordinator the last
// read found to be one of brokers; ok is false when the kind was not read.
func (c *Coordinators) CoordinatedBy(k CoordinatorKind, brokers []int32) (n int, ok bool) {
	read := c.Reads[k]
	if read == nil {
		return 0, false
	}
	for _, p := range read.Partitions {
		if slices.Contains(brokers, p.Coordinator) {
			n++
		}
	}
	return n, true
}

// GroupsOf counts the groups brokers coordinate, by protocol; ok is false
// when one of them did not answer ListGroups.
func (c *Coordinators) GroupsOf(brokers []int32) (total int, byProtocol map[string]int, ok bool) {
	if c.Groups == nil {
		return 0, nil, false
	}
	byProtocol = map[string]int{}
	for _, id := range brokers {
		g := c.Groups[id]
		if g == nil {
			return 0, nil, false
		}
		total += g.Total
		for p, n := range g.ByProtocol {
			byProtocol[p] += n
		}
	}
	return total, byProtocol, true
}

// TransactionsOf counts the transactional ids brokers coordinate, and
// those with a transaction in flight; ok is false when one of them did not
// answer ListTransactions.
func (c *Coordinators) TransactionsOf(brokers []int32) (total, inFlight int, ok bool) {
	if c.Transactions == nil {
		return 0, 0, false
	}
	for _, id := range brokers {
		tx := c.Transactions[id]
		if tx == nil {
			return 0, 0, false
		}
		total += tx.Total
		inFlight += tx.InFlight()
	}
	return total, inFlight, true
}

// coordinatorProbePrefix starts every key the read asks about: ACLs may
// grant DESCRIBE on these group and transactional ids by prefix.
const coordinatorProbePrefix = "failover_exporter.coordinator-probe."

// javaStringHash is Java's String.hashCode of an ASCII string, which
// Kafka maps a group or transactional id to its partition with.
func javaStringHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		h = 31*h + int32(s[i])
	}
	return h
}

// coordinatorPartition is the partition of an internal topic of
// partitions partitions that holds key: Kafka's
// Utils.abs(key.hashCode()) % partitions.
func CoordinatorPartitionOf(key string, partitions int) int32 {
	h := javaStringHash(key)
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % int32(partitions)
}

// shareProbeKey is the share coordinator's key of partition n of a topic
// nobody has (the zero topic id, as Kafka's Uuid prints it) in the share
// group shareProbeGroup: groupId:topicId:partition, the form
// FindCoordinator takes for a share key.
func shareProbeKey(n int) string { return shareProbeGroup + ":" + zeroTopicID + ":" + strconv.Itoa(n) }

const (
	shareProbeGroup = coordinatorProbePrefix + "share"
	zeroTopicID     = "AAAAAAAAAAAAAAAAAAAAAA"
)

// coordinatorProbeKeys returns one key of kind per partition of an
// internal topic of partitions partitions, by partition: the first key of
// the form coordinatorProbePrefix + n (for shares, shareProbeKey(n)) that
// maps to it.
func coordinatorProbeKeys(kind CoordinatorKind, partitions int) []string {
	keys := make([]string, partitions)
	for n, left := 0, partitions; left > 0; n++ {
		key := coordinatorProbePrefix + strconv.Itoa(n)
		if kind == CoordinatorShare {
			key = shareProbeKey(n)
		}
		if p := CoordinatorPartitionOf(key, partitions); keys[p] == "" {
			keys[p] = key
			left--
		}
	}
	return keys
}

// coordinatorRead is one read of every kind whose topic exists.
type coordinatorRead struct {
	reads [coordinatorKinds]*CoordinatorRead
	// groups are the groups each broker that answered ListGroups
	// coordinates; nil when not asked (no __consumer_offsets). asked
	// counts the brokers asked.
	groups map[int32]*BrokerGroups
	asked  int
	// transactions are the transactional ids each broker that answered
	// ListTransactions coordinates; nil when not asked (no
	// __transaction_state) or when an ACL hides some ids (hidden says
	// why).
	transactions map[int32]*BrokerTransactions
	hidden       string
	readOutcome
}

// coordinatorReader reads the coordinators beside the refreshes.
type coordinatorReader struct {
	brokerReader[coordinatorRead]
	// keys caches coordinatorProbeKeys per kind, for its partition count.
	keys [coordinatorKinds][]string
	// shareRefusedAt is when the last read the share coordinators refused
	// began: the kind is not asked again for shareRefusedPause after it.
	shareRefusedAt time.Time
}

// shareRefusedPause is how long the share coordinators are not asked after
// they refused the question: each refusal is an entry in the brokers'
// authorizer log, and a permission granted takes effect within it.
const shareRefusedPause = time.Hour

// shareRefusal is the reason the share coordinators refused read, a
// ClusterAction refusal (the question is an inter-broker request), or "".
func shareRefusal(read *CoordinatorRead) string {
	if read == nil {
		return ""
	}
	for _, p := range read.Partitions {
		if p.State == CoordinatorUnknown && strings.Contains(p.Reason, kerrName(kerr.ClusterAuthorizationFailed)) {
			return p.Reason
		}
	}
	return ""
}

// shareRefused notes a refusal in the last read, logs it once, and reports
// whether the share kind is refused: neither served nor asked until
// shareRefusedPause after the refusal.
func (r *coordinatorReader) shareRefused(s *source) bool {
	if r.last != nil {
		read := r.last.reads[CoordinatorShare]
		switch why := shareRefusal(read); {
		case why != "" && read.ReadAt.After(r.shareRefusedAt):
			r.shareRefusedAt = read.ReadAt
			s.logFailure("coordinators_share_refused", "the share coordinators refused the exporter's question (ReadShareGroupStateSummary is an inter-broker request, allowed by ClusterAction on the cluster); kafka_coordinator_partitions{kind=\"share\"} is not served, asked again in an hour",
				errors.New(why))
		case why == "" && read != nil && read.ReadAt.After(r.shareRefusedAt):
			r.shareRefusedAt = time.Time{}
			s.logFailure("coordinators_share_refused", "", nil)
		}
	}
	return !r.shareRefusedAt.IsZero() && s.now().Sub(r.shareRefusedAt) < shareRefusedPause
}

var coordinatorsKind = readKind{
	kind:        "coordinators",
	unsupported: "brokers do not offer batched FindCoordinator, OffsetFetch v8 or DescribeTransactions (Kafka 3.0+); coordinator series are not served",
	failed:      "reading some coordinators failed; their partitions are counted unavailable or unknown",
}

// internalPartitionCounts is, per kind, the partition count of its topic
// in snap; 0 when the topic does not exist.
func internalPartitionCounts(snap *Snapshot) [coordinatorKinds]int {
	var counts [coordinatorKinds]int
	for _, t := range snap.Internal {
		for k := range coordinatorKinds {
			if t.Name == k.Topic() {
				counts[k] = t.Partitions
			}
		}
	}
	return counts
}

// readCoordinators takes the outcome of the read the previous refreshes
// started, starts the next one for the kinds whose topic exists, and
// gives snap the last read of each kind. A kind whose topic does not
// exist costs no request: FindCoordinator would create it.
func (s *source) readCoordinators(brokers map[int32]string, snap *Snapshot) {
	r := &s.coordinators
	r.keep(s, coordinatorsKind)
	counts := internalPartitionCounts(snap)
	refused := r.shareRefused(s)
	snap.Coordinators.ShareRefused = refused
	var keys [coordinatorKinds][]string
	wanted := false
	for k := range coordinatorKinds {
		if k == CoordinatorShare && refused {
			continue
		}
		if counts[k] == 0 {
			r.keys[k] = nil
			continue
		}
		if len(r.keys[k]) != counts[k] {
			r.keys[k] = coordinatorProbeKeys(k, counts[k])
		}
		keys[k], wanted = r.keys[k], true
	}
	if wanted && !r.paused(s.now()) {
		timeout, at := s.cfg.RequestTimeout, s.now()
		err := r.start(s.cfg, brokers, func(handles map[int32]*kgo.Broker) coordinatorRead {
			return askCoordinators(handles, keys, timeout, at)
		})
		if err != nil {
			s.logFailure("coordinators", "reading the coordinators failed; their series are not served", err)
		}
	}
	if r.last == nil {
		return
	}
	s.logUnknownCoordinators(r.last, refused)
	for k := range coordinatorKinds {
		// A read of a topic since deleted or grown is not served.
		if read := r.last.reads[k]; read != nil && len(read.Partitions) == counts[k] && (k != CoordinatorShare || !refused) {
			snap.Coordinators.Reads[k] = read
		}
	}
	if counts[CoordinatorGroup] > 0 && r.last.groups != nil {
		snap.Coordinators.Groups = r.last.groups
		snap.Coordinators.GroupsComplete = len(r.last.groups) == r.last.asked
	}
	var hidden error
	if r.last.hidden != "" {
		hidden = errors.New(r.last.hidden)
	}
	s.logFailure("coordinators_transactions_hidden", "cannot see every transactional id; kafka_broker_coordinated_transactional_ids is not served", hidden)
	if counts[CoordinatorTransaction] > 0 && r.last.transactions != nil {
		snap.Coordinators.Transactions = r.last.transactions
	}
}

// logUnknownCoordinators logs, once while it lasts, why the read could not
// tell whether some coordinators answer (an ACL's refusal above all):
// kafka_coordinator_partitions{state="unknown"} says how many.
func (s *source) logUnknownCoordinators(read *coordinatorRead, shareRefused bool) {
	for k, r := range read.reads {
		if CoordinatorKind(k) == CoordinatorShare && shareRefused {
			continue
		}
		var reason string
		unknown := 0
		if r != nil {
			for _, p := range r.Partitions {
				if p.State == CoordinatorUnknown {
					unknown++
					reason = p.Reason
				}
			}
		}
		var err error
		if unknown > 0 {
			err = errors.New(reason)
		}
		s.logFailure("coordinators_unknown_"+CoordinatorKind(k).String(), "cannot tell whether some coordinators answer; they are counted unknown", err,
			"kind", CoordinatorKind(k), "partitions", unknown)
	}
}

// askCoordinators reads every kind that has keys at once.
func askCoordinators(handles map[int32]*kgo.Broker, keys [coordinatorKinds][]string, timeout time.Duration, at time.Time) coordinatorRead {
	var read coordinatorRead
	var mu sync.Mutex
	var wg sync.WaitGroup
	asked, old := 0, 0
	for k := range coordinatorKinds {
		if keys[k] == nil {
			continue
		}
		asked++
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, supported, failed, err := askKind(k, handles, keys[k], timeout)
			if r != nil {
				r.ReadAt = at
			}
			mu.Lock()
			defer mu.Unlock()
			read.reads[k] = r
			if !supported {
				old++
			}
			read.failed += failed
			if err != nil {
				read.err = err
			}
		}()
	}
	if keys[CoordinatorGroup] != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			groups, o := listGroups(handles, timeout)
			mu.Lock()
			defer mu.Unlock()
			read.groups, read.asked = groups, len(handles)
			read.failed += o.failed
			if o.err != nil {
				read.err = o.err
			}
		}()
	}
	if keys[CoordinatorTransaction] != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if why := seesEveryTransactionalID(handles, timeout); why != "" {
				mu.Lock()
				defer mu.Unlock()
				read.hidden = why
				return
			}
			transactions, o := listTransactions(handles, timeout)
			mu.Lock()
			defer mu.Unlock()
			read.transactions = transactions
			read.failed += o.failed
			if o.err != nil {
				read.err = o.err
			}
		}()
	}
	wg.Wait()
	read.unsupported = asked > 0 && old == asked
	return read
}

// listTransactions asks every broker, at once, for the transactional ids
// it coordinates.
func listTransactions(handles map[int32]*kgo.Broker, timeout time.Duration) (map[int32]*BrokerTransactions, readOutcome) {
	transactions := map[int32]*BrokerTransactions{}
	o := askBrokers(handles, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		kresp, err := broker.Request(ctx, kmsg.NewPtrListTransactionsRequest())
		if err != nil {
			return nil, false, fmt.Errorf("list transactions of broker %d: %w", id, err)
		}
		resp := kresp.(*kmsg.ListTransactionsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, false, fmt.Errorf("list transactions of broker %d: %w", id, err)
		}
		tx := &BrokerTransactions{Total: len(resp.TransactionStates), ByState: map[string]int{}}
		for _, s := range resp.TransactionStates {
			tx.ByState[transactionState(s.TransactionState)]++
		}
		return func() { transactions[id] = tx }, true, nil
	})
	return transactions, o
}

// listGroups asks every broker, at once, for the groups it coordinates.
func listGroups(handles map[int32]*kgo.Broker, timeout time.Duration) (map[int32]*BrokerGroups, readOutcome) {
	groups := map[int32]*BrokerGroups{}
	o := askBrokers(handles, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		kresp, err := broker.Request(ctx, kmsg.NewPtrListGroupsRequest())
		if err != nil {
			return nil, false, fmt.Errorf("list groups of broker %d: %w", id, err)
		}
		resp := kresp.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, false, fmt.Errorf("list groups of broker %d: %w", id, err)
		}
		g := &BrokerGroups{Total: len(resp.Groups), ByProtocol: map[string]int{}}
		if resp.GetVersion() >= 4 {
			g.ByState = map[string]int{}
		}
		for _, group := range resp.Groups {
			g.ByProtocol[groupProtocol(group.ProtocolType)]++
			if g.ByState != nil {
				g.ByState[groupState(group.GroupState)]++
			}
		}
		return func() { groups[id] = g }, true, nil
	})
	return groups, o
}

// findCoordinatorAttempts bounds the brokers a read asks FindCoordinator
// before it gives up: the kind's partitions are then unknown.
const findCoordinatorAttempts = 3

// errNoFinder is the read's error when no broker answered FindCoordinator.
var errNoFinder = errors.New("no broker answered FindCoordinator")

// findCoordinatorBatchVersion is the first FindCoordinator version that
// takes many keys (KIP-699, Kafka 2.8).
const findCoordinatorBatchVersion = 4

// askKind reads one kind: FindCoordinator for every key, from the first
// broker that answers (of findCoordinatorAttempts from a random one), then each coordinator it named the kind's
// question for its keys, all coordinators at once. It returns nil (and
// supported false) when the brokers do not offer the requests; failed
// counts the requests that failed, err is one of their errors.
func askKind(kind CoordinatorKind, handles map[int32]*kgo.Broker, keys []string, timeout time.Duration) (read *CoordinatorRead, supported bool, failed int, err error) {
	read = &CoordinatorRead{Partitions: make([]CoordinatorPartition, len(keys))}
	for i := range read.Partitions {
		read.Partitions[i] = CoordinatorPartition{State: CoordinatorUnknown, Coordinator: -1, Reason: errNoFinder.Error()}
	}
	found, failed, err := findFromSome(kind, handles, keys, timeout)
	if found == nil {
		return read, true, failed, fmt.Errorf("%s coordinators: %w", kind, err)
	}
	if found.GetVersion() < findCoordinatorBatchVersion {
		return nil, false, failed, nil
	}
	byNode := read.named(found, keys, handles)
	outcome := read.ask(kind, handles, keys, byNode, timeout)
	if outcome.unsupported {
		return nil, false, failed, nil
	}
	failed += outcome.failed
	if outcome.err != nil {
		err = outcome.err
	}
	return read, true, failed, err
}

// findFromSome asks FindCoordinator of at most findCoordinatorAttempts
// brokers, so that a read of a large cluster with hung brokers still ends
// within a few request timeouts, from a random one, so that dead brokers
// Metadata still lists do not fail every read alike. It returns the first
// answer, or nil and the last error.
func findFromSome(kind CoordinatorKind, handles map[int32]*kgo.Broker, keys []string, timeout time.Duration) (found *kmsg.FindCoordinatorResponse, failed int, err error) {
	ids := slices.Sorted(maps.Keys(handles))
	if len(ids) == 0 {
		return nil, 0, errNoFinder
	}
	start := rand.IntN(len(ids))
	for i := range min(len(ids), findCoordinatorAttempts) {
		found, err = findCoordinators(handles[ids[(start+i)%len(ids)]], kind, keys, timeout)
		if err == nil {
			return found, failed, nil
		}
		failed++
	}
	return nil, failed, err
}

// named records what FindCoordinator said of each key's partition, and
// returns the partitions to ask each coordinator about: those it named a
// live broker for.
func (read *CoordinatorRead) named(found *kmsg.FindCoordinatorResponse, keys []string, handles map[int32]*kgo.Broker) map[int32][]int {
	partitionOf := make(map[string]int, len(keys))
	for i, key := range keys {
		partitionOf[key] = i
	}
	byNode := map[int32][]int{}
	for _, c := range found.Coordinators {
		i, ok := partitionOf[c.Key]
		if !ok {
			continue
		}
		p := &read.Partitions[i]
		p.Coordinator = -1
		switch _, live := handles[c.NodeID]; {
		case c.ErrorCode != 0:
			p.State, p.Reason = stateOfError(c.ErrorCode)
		case c.NodeID < 0:
			p.State, p.Reason = CoordinatorUnavailable, "no coordinator"
		case !live:
			p.Coordinator = c.NodeID
			p.State, p.Reason = CoordinatorUnknown, fmt.Sprintf("coordinator broker %d is not among the brokers Metadata lists", c.NodeID)
		default:
			// Named is not answering: unknown until the coordinator
			// answers its question (ask).
			p.Coordinator = c.NodeID
			p.State, p.Reason = CoordinatorUnknown, "its coordinator was not asked"
			byNode[c.NodeID] = append(byNode[c.NodeID], i)
		}
	}
	return byNode
}

// ask asks each coordinator of byNode, at once, the kind's question for
// its partitions' keys, and records how each partition's coordinator
// answered: a coordinator that did not answer is unavailable to its
// partitions, as it is to clients.
func (read *CoordinatorRead) ask(kind CoordinatorKind, handles map[int32]*kgo.Broker, keys []string, byNode map[int32][]int, timeout time.Duration) readOutcome {
	nodes := make(map[int32]*kgo.Broker, len(byNode))
	for id := range byNode {
		nodes[id] = handles[id]
	}
	var mu sync.Mutex
	return askBrokers(nodes, timeout, func(ctx context.Context, id int32, broker *kgo.Broker) (func(), bool, error) {
		parts := byNode[id]
		states, ok, err := askCoordinator(ctx, kind, broker, keys, parts)
		if err != nil || !ok {
			// A coordinator that did not answer fails its clients too;
			// one too old for the question tells nothing.
			state, reason := CoordinatorUnavailable, ""
			if err != nil {
				reason = err.Error()
			} else {
				state, reason = CoordinatorUnknown, fmt.Sprintf("coordinator broker %d does not offer %s's question (Kafka %s+)", id, kind, coordinatorKindInfo[kind].since)
			}
			mu.Lock()
			for _, i := range parts {
				read.Partitions[i].State, read.Partitions[i].Reason = state, reason
			}
			mu.Unlock()
			if err != nil {
				return nil, false, fmt.Errorf("%s coordinator %d: %w", kind, id, err)
			}
			return nil, false, nil
		}
		return func() {
			for _, i := range parts {
				read.Partitions[i].State, read.Partitions[i].Reason = states[i].State, states[i].Reason
			}
		}, ok, nil
	})
}

// findCoordinators asks broker for the coordinator of every key at once.
func findCoordinators(broker *kgo.Broker, kind CoordinatorKind, keys []string, timeout time.Duration) (*kmsg.FindCoordinatorResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = coordinatorKindInfo[kind].keyType
	req.CoordinatorKeys = keys
	resp, err := broker.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.FindCoordinatorResponse), nil
}

// offsetFetchBatchVersion is the first OffsetFetch version that takes many
// groups (KIP-709, Kafka 3.0).
const offsetFetchBatchVersion = 8

// askCoordinator asks one coordinator the kind's question for the keys of
// parts, and says by partition how it answered; ok is false when its
// answer's version cannot tell.
func askCoordinator(ctx context.Context, kind CoordinatorKind, broker *kgo.Broker, keys []string, parts []int) (map[int]CoordinatorPartition, bool, error) {
	states := make(map[int]CoordinatorPartition, len(parts))
	partitionOf := make(map[string]int, len(parts))
	for _, i := range parts {
		partitionOf[keys[i]] = i
		states[i] = CoordinatorPartition{State: CoordinatorUnknown, Reason: "not in the coordinator's answer"}
	}
	set := func(key string, code int16) {
		if i, ok := partitionOf[key]; ok {
			state, reason := stateOfError(code)
			states[i] = CoordinatorPartition{State: state, Reason: reason}
		}
	}
	switch kind {
	case CoordinatorGroup:
		req := kmsg.NewPtrOffsetFetchRequest()
		for _, i := range parts {
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = keys[i]
			// Topics nil: every topic the group committed, none here.
			req.Groups = append(req.Groups, g)
		}
		kresp, err := broker.Request(ctx, req)
		if err != nil {
			return nil, false, err
		}
		resp := kresp.(*kmsg.OffsetFetchResponse)
		if resp.GetVersion() < offsetFetchBatchVersion {
			return nil, false, nil
		}
		for _, g := range resp.Groups {
			set(g.Group, g.ErrorCode)
		}
	case CoordinatorTransaction:
		req := kmsg.NewPtrDescribeTransactionsRequest()
		for _, i := range parts {
			req.TransactionalIDs = append(req.TransactionalIDs, keys[i])
		}
		kresp, err := broker.Request(ctx, req)
		if err != nil {
			if tooOld(err) {
				return nil, false, nil
			}
			return nil, false, err
		}
		for _, s := range kresp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
			set(s.TransactionalID, s.ErrorCode)
		}
	case CoordinatorShare:
		return askShareCoordinator(ctx, broker, keys, parts, states)
	}
	return states, true, nil
}

// askShareCoordinator asks a share coordinator for the state summary of
// its probe keys (ReadShareGroupStateSummary, Kafka 4.1+): a key nobody
// holds is an answer (UNKNOWN_TOPIC_OR_PARTITION, from the shard that
// holds it, loaded); the coordinator codes say loading or unavailable.
func askShareCoordinator(ctx context.Context, broker *kgo.Broker, keys []string, parts []int, states map[int]CoordinatorPartition) (map[int]CoordinatorPartition, bool, error) {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = shareProbeGroup
	topic := kmsg.NewReadShareGroupStateSummaryRequestTopic() // the zero topic id
	byProbe := make(map[int32]int, len(parts))
	for _, i := range parts {
		n, err := strconv.Atoi(keys[i][strings.LastIndexByte(keys[i], ':')+1:])
		if err != nil {
			return nil, false, fmt.Errorf("share probe key %q: %w", keys[i], err)
		}
		byProbe[int32(n)] = i
		p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		p.Partition = int32(n)
		topic.Partitions = append(topic.Partitions, p)
	}
	req.Topics = append(req.Topics, topic)
	kresp, err := broker.Request(ctx, req)
	if err != nil {
		if tooOld(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	for _, t := range kresp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
		for _, p := range t.Partitions {
			i, ok := byProbe[p.Partition]
			if !ok {
				continue
			}
			code := p.ErrorCode
			if errors.Is(kerr.ErrorForCode(code), kerr.UnknownTopicOrPartition) {
				code = 0
			}
			state, reason := stateOfError(code)
			states[i] = CoordinatorPartition{State: state, Reason: reason}
		}
	}
	return states, true, nil
}

// tooOld reports whether franz-go refused to send a request because the
// broker does not offer it (its error is unexported).
func tooOld(err error) bool { return strings.Contains(err.Error(), "broker is too old") }

// stateOfError is the state an error code of FindCoordinator or of a
// coordinator's answer for one key gives its partition: no error, or the
// key not being known (a group or transactional id nobody used), is an
// answer; the coordinator codes say loading or unavailable; anything else
// (an ACL's refusal above all) says nothing, and is unknown.
func stateOfError(code int16) (CoordinatorState, string) {
	err := kerr.ErrorForCode(code)
	switch {
	case err == nil, errors.Is(err, kerr.GroupIDNotFound), errors.Is(err, kerr.TransactionalIDNotFound):
		return CoordinatorAnswering, ""
	case errors.Is(err, kerr.CoordinatorLoadInProgress):
		return CoordinatorLoading, kerrName(err)
	case errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.NotCoordinator):
		return CoordinatorUnavailable, kerrName(err)
	default:
		return CoordinatorUnknown, kerrName(err)
	}
}

// kerrName is a Kafka error's name (COORDINATOR_LOAD_IN_PROGRESS).
func kerrName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

// Coordinator events: a coordinator partition whose clients began to fail
// (its episode opened; Before: the state the previous read found, After:
// loading or unavailable, with the reason), and one that answers again
// (its episode ended; After: answering at broker N, after how long when
// its start was seen). Subject is the internal topic's partition. Listed
// only between two reads that both saw the partition.
const (
	EventCoordinatorUnavailable events.Kind = "coordinator_unavailable"
	EventCoordinatorAvailable   events.Kind = "coordinator_available"
)

// carryCoordinators times the episodes of next's coordinator partitions
// against prev's, and lists their events, when next has a read of a kind
// prev did not: between two reads they are carried as they are. A
// partition's episode opens when its state is loading or unavailable; it
// begins at the first failed probe of the coordinator the previous read
// named, by the outage clock's rule, or else at the read; it ends at
// the first read in which it answers. An unknown state neither opens nor
// ends one.
func carryCoordinators(prev, next *Snapshot) {
	clock := newOutageClock(prev, next)
	for k := range coordinatorKinds {
		read := next.Coordinators.Reads[k]
		var before *CoordinatorRead
		var open map[int32]episode.Open
		var ended *episode.Histogram
		if prev != nil {
			before, open, ended = prev.Coordinators.Reads[k], prev.Coordinators.Open[k], prev.Coordinators.Ended[k]
		}
		if read == nil {
			// Not read now: what was open stays open, to be ended by
			// the next read that answers.
			next.Coordinators.Open[k], next.Coordinators.Ended[k] = open, ended
			continue
		}
		if read == before {
			next.Coordinators.Open[k], next.Coordinators.Ended[k] = open, ended
			continue
		}
		var active []int32
		for i, p := range read.Partitions {
			id := int32(i)
			if _, wasOpen := open[id]; p.State.failing() || (wasOpen && p.State == CoordinatorUnknown) {
				active = append(active, id)
			}
		}
		seen := before != nil && len(before.Partitions) == len(read.Partitions)
		begin := func(id int32) episode.Open {
			o := episode.Open{Since: read.ReadAt, StartSeen: seen && before.Partitions[id].State == CoordinatorAnswering}
			if !o.StartSeen || clock == nil {
				return o
			}
			if c := before.Partitions[id].Coordinator; c >= 0 {
				if at := clock.brokerFailedAt(c); at.Before(o.Since) {
					o.Since = at
				}
			}
			return o
		}
		nextOpen, closed := episode.Step(open, read.ReadAt, active, begin)
		for _, e := range closed {
			if e.StartSeen {
				ended = ended.ObserveDuration(e.Duration)
			}
		}
		if len(nextOpen) > 0 && ended == nil {
			ended = episode.Empty()
		}
		next.Coordinators.Open[k], next.Coordinators.Ended[k] = nextOpen, ended
		if seen {
			listCoordinatorEvents(&next.Events, k, before, read, open, nextOpen, closed)
		}
	}
}

// listCoordinatorEvents lists the partitions of kind k whose episode
// opened (their clients began to fail) or ended (they answer again) at
// read, which follows before.
func listCoordinatorEvents(list *events.List, k CoordinatorKind, before, read *CoordinatorRead, wasOpen, open map[int32]episode.Open, closed []episode.Ended[int32]) {
	for _, e := range closed {
		after := coordinatorText(read.Partitions[e.Key])
		if e.StartSeen {
			after += fmt.Sprintf(" after %s", e.Duration.Round(100*time.Millisecond))
		}
		list.Add(read.ReadAt, EventCoordinatorAvailable, events.PartitionSubject(k.Topic(), e.Key), coordinatorText(before.Partitions[e.Key]), after)
	}
	for i := range read.Partitions {
		id := int32(i)
		o, ok := open[id]
		if _, was := wasOpen[id]; !ok || was {
			continue
		}
		n := len(list.Events)
		list.Add(read.ReadAt, EventCoordinatorUnavailable, events.PartitionSubject(k.Topic(), id), coordinatorText(before.Partitions[i]), coordinatorText(read.Partitions[i]))
		if len(list.Events) > n && o.Since.Before(read.ReadAt) {
			list.Events[n].FirstFailure = o.Since
		}
	}
}

// coordinatorText is a partition's state as an event shows it.
func coordinatorText(p CoordinatorPartition) string {
	text := p.State.String()
	if p.Coordinator >= 0 {
		text += " at broker " + strconv.FormatInt(int64(p.Coordinator), 10)
	}
	if p.Reason != "" {
		text += " (" + p.Reason + ")"
	}
	return text
}
