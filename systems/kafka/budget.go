package kafka

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
)

// The failure budget: what stopping one broker, or every broker of one
// rack, would do now, computed once per refresh from the snapshot
// (computeBudget) and served as series and as answers (answerBudget).
//
// The rules, for a stop of the set S (one broker, or a rack's brokers):
//
//   - A broker is available when it is registered (Up) and the exporter
//     reached it this refresh (Reachable). Only available brokers count
//     as in-sync replicas or eligible leader replicas: a dead broker Kafka
//     has not fenced yet, or one listed by frozen metadata, leads nothing.
//   - A partition's leader candidates are its available ISR members and,
//     where the snapshot has the ELR (KIP-966, ELRKnown and not stale),
//     its available eligible leader replicas outside the ISR.
//   - offline: the partition has a leader now and no candidate outside S.
//   - under_min_isr: min.insync.replicas is known, the partition is not
//     under min ISR now (by Kafka's count or by its available ISR), and
//     fewer than min ISR available ISR members remain outside S (and it
//     does not go offline: every partition is counted at its worst effect
//     only, so the effects add up to the partitions affected).
//   - below_headroom: only with failure_budget.min_isr_headroom N > 0,
//     min ISR known, S holds an ISR member, and the ISR left is at least
//     min ISR but below min ISR + N.
//   - quorum_majority: S holds a caught-up KRaft voter and the caught-up
//     voters outside S are fewer than a majority of the voters. A voter is
//     caught up when it leads, or the leader saw it caught up within
//     quorumCaughtUpMaxAge (by its lag when the leader does not say).
//   - cluster_degraded: the stop would deepen damage already there: a
//     partition now offline, under min ISR, or with fewer available ISR
//     members than its replication factor (a replica down or behind) has
//     an available ISR member or eligible leader replica in S; or the
//     quorum already has a voter not caught up (or no leader) and S holds
//     a caught-up voter. A broker down elsewhere whose partitions S does
//     not touch is no reason on its own.
//   - coordinators_unsettled: only with failure_budget.coordinators:
//     settled (budget_coordinators.go): a coordinator partition is loading
//     or unavailable, or a group S coordinates is rebalancing.
//   - not_judged: the budget lacks an input it needs to judge the stop,
//     and never says safe without it: S holds a broker the cluster lists
//     as registered but the exporter could not reach (it may lead, hold
//     ISRs and vote; what the cluster says of a member counts over the
//     exporter's own dial); the KRaft quorum could not be read
//     (QuorumUnread); or S holds an in-sync replica of a partition whose
//     min.insync.replicas is unknown.
//   - safe: none of the seven reasons holds.
//
// The partitions of every topic are judged, the topic filter's or not
// (UnwatchedJudged): a broker out of the ISR of __consumer_offsets matters
// to every consumer group, and one out of a filtered-out topic's to its
// producers. With failure_budget.unwatched_topics: name, the topics the
// filter leaves out are not judged, but for the internal ones; each answer
// names them (NotJudged).

// The scopes Kafka's failure budget answers (system.go declares them): one
// broker by its id, and every broker of one broker.rack.
const ScopeBroker, ScopeRack budget.Scope = "broker", "rack"

// Reasons a stop is not safe: the reason label of the *_stop_unsafe series.
const (
	ReasonPartitionsOffline     budget.Reason = "partitions_offline"
	ReasonPartitionsUnderMinISR budget.Reason = "partitions_under_min_isr"
	ReasonMinISRHeadroom        budget.Reason = "min_isr_headroom"
	ReasonQuorumMajority        budget.Reason = "quorum_majority"
	ReasonClusterDegraded       budget.Reason = "cluster_degraded"
	ReasonCoordinatorsUnsettled budget.Reason = "coordinators_unsettled"
	ReasonNotJudged             budget.Reason = "not_judged"
)

// StopReasons are every reason a stop can be unsafe for, in the order
// series and findings give them.
var StopReasons = []budget.Reason{
	ReasonPartitionsOffline, ReasonPartitionsUnderMinISR, ReasonMinISRHeadroom, ReasonQuorumMajority, ReasonClusterDegraded,
	ReasonCoordinatorsUnsettled, ReasonNotJudged,
}

// Reasons a restarted broker is not yet recovered (a Recovered question).
const (
	ReasonNotRegistered budget.Reason = "not_registered"
	ReasonFenced        budget.Reason = "fenced"
	ReasonNotReachable  budget.Reason = "not_reachable"
	ReasonOutOfSync     budget.Reason = "out_of_sync"
)

// The effect label values of the *_stop_affected_partitions series.
const (
	effectOffline       = "offline"
	effectUnderMinISR   = "under_min_isr"
	effectBelowHeadroom = "below_headroom"
)

// quorumCaughtUpMaxAge is how long ago the quorum leader may last have
// seen a voter caught up for it to count as caught up. A live voter
// fetches continuously and the metadata log gets a record every 500 ms
// (metadata.max.idle.interval.ms), so its age stays around a second.
const quorumCaughtUpMaxAge = 10 * time.Second

// quorumCaughtUpMaxLag stands in for the age when the leader does not know
// it (DescribeQuorum v0): some 50 s of idle metadata records.
const quorumCaughtUpMaxLag = 100

// Budget is the failure budget of one snapshot.
type Budget struct {
	// Headroom is failure_budget.min_isr_headroom as the budget used it.
	Headroom int
	// Brokers is what stopping each broker would do, in snap.Brokers'
	// order.
	Brokers []StopEffect
	// Racks is what losing each rack would do, by rack name; nil when no
	// broker has a rack.
	Racks []StopEffect
	// LossesUntilUnderMinISR and LossesUntilOffline are how many more
	// in-sync replicas the worst judged partition can lose before it is
	// under min ISR, and before it has no leader candidate; -1 when no
	// partition can be judged (no partitions; no min ISR known).
	LossesUntilUnderMinISR, LossesUntilOffline int
	// QuorumLossesTolerated is caught-up voters minus a majority of the
	// voters, floor 0; -1 without KRaft quorum data.
	QuorumLossesTolerated int
	// QuorumCaughtUp holds the voters that count as caught up
	// (voterCaughtUp), by ID; nil without KRaft quorum data.
	QuorumCaughtUp map[int32]bool
}

// StopEffect is what stopping one broker or one rack would do.
type StopEffect struct {
	// ID is the broker's id as a label, or the rack's name.
	ID string
	// Members are the brokers stopped: the broker, or the rack's brokers.
	Members []int32
	// Offline, UnderMinISR and BelowHeadroom count the partitions the stop
	// would put in each state, each partition once at its worst.
	Offline, UnderMinISR, BelowHeadroom int
	// OfflineUnclean counts those of Offline whose topic enables unclean
	// leader election: Kafka would elect an out-of-sync replica for them,
	// losing acknowledged writes, rather than leave them offline.
	OfflineUnclean int
	// Degraded counts the already degraded partitions the stop would
	// degrade further.
	Degraded int
	// QuorumMajority is true when the stop leaves fewer caught-up voters
	// than a majority; QuorumDegraded when it takes a caught-up voter from
	// a quorum that already lacks one.
	QuorumMajority, QuorumDegraded bool
	// AtRisk names the first budget.MaxAtRisk partitions ("topic/3") any
	// of the counts is about, in topic and partition order; AtRiskTotal
	// counts them all.
	AtRisk      []string
	AtRiskTotal int
	// NotJudged says what the budget could not read that the stop's
	// verdict needs (an unreachable registered broker of S, the quorum);
	// MinISRUnknown counts the partitions whose in-sync replica S holds and
	// whose min.insync.replicas is unknown. Either makes it not_judged.
	NotJudged     []string
	MinISRUnknown int
	// Unsettled says, with failure_budget.coordinators: settled, what of
	// the coordinators has not settled (budgetCoordinators); any makes the
	// stop coordinators_unsettled.
	Unsettled []budgetFinding
}

// budgetFinding is one finding of a stop's verdict: how many things it is
// about, and what it says of them.
type budgetFinding struct {
	N   int
	Why string
}

// Unsafe reports whether reason holds for the stop.
func (e *StopEffect) Unsafe(reason budget.Reason) bool {
	switch reason {
	case ReasonPartitionsOffline:
		return e.Offline > 0
	case ReasonPartitionsUnderMinISR:
		return e.UnderMinISR > 0
	case ReasonMinISRHeadroom:
		return e.BelowHeadroom > 0
	case ReasonQuorumMajority:
		return e.QuorumMajority
	case ReasonClusterDegraded:
		return e.Degraded > 0 || e.QuorumDegraded
	case ReasonCoordinatorsUnsettled:
		return len(e.Unsettled) > 0
	case ReasonNotJudged:
		return len(e.NotJudged) > 0 || e.MinISRUnknown > 0
	}
	return false
}

// Safe is the verdict: no reason holds.
func (e *StopEffect) Safe() bool {
	for _, r := range StopReasons {
		if e.Unsafe(r) {
			return false
		}
	}
	return true
}

// addAtRisk records one partition the stop concerns.
func (e *StopEffect) addAtRisk(topic string, partition int32) {
	e.AtRiskTotal++
	if len(e.AtRisk) < budget.MaxAtRisk {
		e.AtRisk = append(e.AtRisk, topic+"/"+strconv.FormatInt(int64(partition), 10))
	}
}

// budgetBroker is what the budget needs of one broker while it walks the
// partitions: whether it is available, and the stop effects it belongs to.
type budgetBroker struct {
	known, available bool
	broker, rack     *StopEffect
}

// maxDenseBrokerID bounds the broker ids looked up in a slice rather than a
// map (ids are usually small; a slice lookup per replica keeps the what-if
// a small part of a refresh).
const maxDenseBrokerID = 4096

// budgetBrokers looks brokers up by id.
type budgetBrokers struct {
	dense  []budgetBroker
	sparse map[int32]*budgetBroker
}

func (bb *budgetBrokers) get(id int32) *budgetBroker {
	if id >= 0 && int(id) < len(bb.dense) {
		return &bb.dense[id]
	}
	if b := bb.sparse[id]; b != nil {
		return b
	}
	return &budgetBroker{}
}

func (bb *budgetBrokers) add(id int32) *budgetBroker {
	if id >= 0 && int(id) < len(bb.dense) {
		bb.dense[id].known = true
		return &bb.dense[id]
	}
	b := &budgetBroker{known: true}
	bb.sparse[id] = b
	return b
}

// computeBudget works out the snapshot's failure budget: one pass over the
// partitions, touching for each only the brokers and racks of its leader
// candidates, the only ones whose stop changes it, and skipping even those
// for a partition no single stop can harm. headroom is
// failure_budget.min_isr_headroom. It runs after countRacks and once the
// quorum is read.
func (s *Snapshot) computeBudget(headroom int) {
	b := &Budget{Headroom: max(0, headroom), LossesUntilUnderMinISR: -1, LossesUntilOffline: -1, QuorumLossesTolerated: -1}
	pass := &budgetPass{budget: b, elrKnown: s.ELRKnown}
	pass.brokers, pass.allAvailable = s.budgetBrokerTable(b)
	if s.Racks > 0 {
		s.budgetRackTable(b, &pass.brokers)
	}
	for _, topics := range [][]Topic{s.Topics, s.UnwatchedJudged} {
		for ti := range topics {
			t := &topics[ti]
			for pi := range t.Partitions {
				pass.partition(t, &t.Partitions[pi])
			}
		}
	}
	s.budgetQuorum(b, &pass.brokers)
	s.budgetUnknowns(b)
	s.Budget = b
}

// budgetUnknowns marks the stops the snapshot cannot judge: those of a
// broker the cluster lists as registered and live but the exporter could
// not reach, and, when the KRaft quorum could not be read, every stop.
func (s *Snapshot) budgetUnknowns(b *Budget) {
	for i := range s.Brokers {
		br := &s.Brokers[i]
		if !br.Up || br.Reachable {
			continue
		}
		why := fmt.Sprintf("broker %d is registered and live to the cluster, but the exporter could not reach it at %q: which partitions it leads and holds in sync, and its quorum vote, are unknown", br.ID, br.Address)
		// b.Brokers is in s.Brokers' order (budgetBrokerTable).
		b.Brokers[i].NotJudged = append(b.Brokers[i].NotJudged, why)
		for j := range b.Racks {
			if slices.Contains(b.Racks[j].Members, br.ID) {
				b.Racks[j].NotJudged = append(b.Racks[j].NotJudged, why)
			}
		}
	}
	if s.QuorumUnread == "" {
		return
	}
	why := "the KRaft quorum could not be read (" + s.QuorumUnread + "): whether the stop keeps a majority of caught-up controllers is unknown"
	for i := range b.Brokers {
		b.Brokers[i].NotJudged = append(b.Brokers[i].NotJudged, why)
	}
	for i := range b.Racks {
		b.Racks[i].NotJudged = append(b.Racks[i].NotJudged, why)
	}
}

// budgetBrokerTable gives every broker its entry in b.Brokers and in the
// returned table; allAvailable is whether every broker is up and reachable.
func (s *Snapshot) budgetBrokerTable(b *Budget) (brokers budgetBrokers, allAvailable bool) {
	var maxID int32
	for _, br := range s.Brokers {
		maxID = max(maxID, br.ID)
	}
	brokers = budgetBrokers{sparse: map[int32]*budgetBroker{}}
	if maxID < maxDenseBrokerID {
		brokers.dense = make([]budgetBroker, maxID+1)
	}
	b.Brokers = make([]StopEffect, len(s.Brokers))
	// While every broker is available (the usual case) an ISR is its own
	// available part, and is not copied.
	allAvailable = true
	for i := range s.Brokers {
		br := &s.Brokers[i]
		b.Brokers[i] = StopEffect{ID: brokerLabel(br.ID), Members: []int32{br.ID}}
		entry := brokers.add(br.ID)
		entry.available, entry.broker = br.Up && br.Reachable, &b.Brokers[i]
		allAvailable = allAvailable && entry.available
	}
	return brokers, allAvailable
}

// budgetRackTable gives every rack its entry in b.Racks, by name, and
// links each racked broker's entry to its rack's.
func (s *Snapshot) budgetRackTable(b *Budget, brokers *budgetBrokers) {
	byRack := map[string][]int32{}
	for _, br := range s.Brokers {
		if br.Rack != "" {
			byRack[br.Rack] = append(byRack[br.Rack], br.ID)
		}
	}
	names := make([]string, 0, len(byRack))
	for name := range byRack {
		names = append(names, name)
	}
	sort.Strings(names)
	b.Racks = make([]StopEffect, len(names))
	for i, name := range names {
		b.Racks[i] = StopEffect{ID: name, Members: byRack[name]}
		for _, id := range byRack[name] {
			brokers.get(id).rack = &b.Racks[i]
		}
	}
}

// budgetPass is computeBudget's one pass over the partitions, with the
// buffers reused for every partition: the available candidates, and,
// where a rack holds more than one of them, how many each rack takes.
type budgetPass struct {
	budget       *Budget
	brokers      budgetBrokers
	allAvailable bool
	elrKnown     bool
	isr, elr     []int32
	racks        []budgetRackTouch
}

type budgetRackTouch struct {
	effect   *StopEffect
	isr, elr int
}

// partition records what stopping each of the partition's leader
// candidates, and each of their racks, does to it.
func (pass *budgetPass) partition(t *Topic, p *Partition) {
	b, brokers := pass.budget, &pass.brokers
	minISR := t.MinISR
	pass.availableCandidates(p)
	isr, elr := pass.isr, pass.elr
	offlineNow := p.Offline()
	underNow := minISR > 0 && (p.UnderMinISR(minISR) || len(isr) < minISR)
	degradedNow := offlineNow || underNow || len(isr) < p.ReplicationFactor()
	// Where unclean election is on, Kafka does not leave a partition
	// without a leader: it elects a replica out of sync, losing writes.
	unclean := t.UncleanElectionKnown && t.UncleanElectionEnabled
	b.lowerTolerance(minISR, len(isr), len(elr), offlineNow, underNow)

	// A stop that takes one in-sync replica, or one eligible
	// leader replica, does the same whoever it takes.
	oneISR := stopOutcome(len(isr), len(elr), 1, 0, minISR, b.Headroom, offlineNow, underNow)
	oneELR := stopOutcome(len(isr), len(elr), 0, 1, minISR, b.Headroom, offlineNow, underNow)
	// Each rack takes at most one when the ISR's members are all
	// available, racked and in distinct racks.
	racksOfOne := b.Racks != nil && len(elr) == 0 && len(isr) == len(p.ISR) && int(p.ISRRacks) == len(isr)
	if minISR <= 0 {
		// Whether a stop refuses acks=all writes to it is unknown.
		for _, id := range isr {
			entry := brokers.get(id)
			for _, e := range []*StopEffect{entry.broker, entry.rack} {
				if e != nil {
					e.MinISRUnknown++
				}
			}
		}
	}
	if !degradedNow && oneISR == outcomeNone && len(elr) == 0 && (b.Racks == nil || racksOfOne) {
		return // no stop of one broker or one rack harms it
	}
	for _, id := range isr {
		entry := brokers.get(id)
		b.record(entry.broker, oneISR, degradedNow, unclean, t.Name, p.ID)
		if racksOfOne {
			b.record(entry.rack, oneISR, degradedNow, unclean, t.Name, p.ID)
		}
	}
	for _, id := range elr {
		b.record(brokers.get(id).broker, oneELR, degradedNow, unclean, t.Name, p.ID)
	}
	if b.Racks == nil || racksOfOne {
		return
	}
	pass.racks = pass.racks[:0]
	for _, id := range isr {
		pass.touchRack(brokers.get(id).rack, true)
	}
	for _, id := range elr {
		pass.touchRack(brokers.get(id).rack, false)
	}
	for _, r := range pass.racks {
		b.record(r.effect, stopOutcome(len(isr), len(elr), r.isr, r.elr, minISR, b.Headroom, offlineNow, underNow), degradedNow, unclean, t.Name, p.ID)
	}
}

// availableCandidates sets pass.isr and pass.elr to the partition's
// available in-sync replicas and its available eligible leader replicas
// outside the ISR.
func (pass *budgetPass) availableCandidates(p *Partition) {
	brokers := &pass.brokers
	isr, elr := pass.isr[:0], pass.elr[:0]
	if pass.allAvailable {
		isr = p.ISR
	} else {
		for _, id := range p.ISR {
			if brokers.get(id).available {
				isr = append(isr, id)
			}
		}
	}
	if pass.elrKnown && !p.ELRStale() && len(p.ELR()) > 0 {
		for _, id := range p.ELR() {
			if brokers.get(id).available && !slices.Contains(isr, id) {
				elr = append(elr, id)
			}
		}
	}
	pass.isr, pass.elr = isr, elr
}

// lowerTolerance lowers the cluster's tolerance to the partition's: the
// cluster's is the worst partition's.
func (b *Budget) lowerTolerance(minISR, isr, elr int, offlineNow, underNow bool) {
	if minISR > 0 {
		left := 0
		if !underNow {
			left = isr - minISR
		}
		if b.LossesUntilUnderMinISR < 0 || left < b.LossesUntilUnderMinISR {
			b.LossesUntilUnderMinISR = left
		}
	}
	left := 0
	if !offlineNow {
		left = max(0, isr+elr-1)
	}
	if b.LossesUntilOffline < 0 || left < b.LossesUntilOffline {
		b.LossesUntilOffline = left
	}
}

// touchRack counts one available candidate, in the ISR or not, for the
// rack e (nil: the broker has no rack).
func (pass *budgetPass) touchRack(e *StopEffect, inISR bool) {
	if e == nil {
		return
	}
	k := 0
	for k < len(pass.racks) && pass.racks[k].effect != e {
		k++
	}
	if k == len(pass.racks) {
		pass.racks = append(pass.racks, budgetRackTouch{effect: e})
	}
	if inISR {
		pass.racks[k].isr++
	} else {
		pass.racks[k].elr++
	}
}

// What a stop does to one partition: each partition counts once, at its
// worst.
const (
	outcomeNone = iota
	outcomeOffline
	outcomeUnderMinISR
	outcomeBelowHeadroom
)

// stopOutcome applies the rules to a partition with isr available in-sync
// replicas and elr available eligible leader replicas outside them, of
// which the stop takes takenISR and takenELR.
func stopOutcome(isr, elr, takenISR, takenELR, minISR, headroom int, offlineNow, underNow bool) int {
	isrAfter := isr - takenISR
	switch {
	case takenISR+takenELR == 0:
		return outcomeNone
	case !offlineNow && isrAfter+elr-takenELR == 0:
		return outcomeOffline
	case minISR > 0 && !underNow && isrAfter < minISR:
		return outcomeUnderMinISR
	case headroom > 0 && minISR > 0 && takenISR > 0 && isrAfter >= minISR && isrAfter < minISR+headroom:
		return outcomeBelowHeadroom
	}
	return outcomeNone
}

// record counts one partition's outcome, and its being degraded already,
// in a stop's effect.
func (b *Budget) record(e *StopEffect, outcome int, degradedNow, unclean bool, topic string, partition int32) {
	if e == nil || (outcome == outcomeNone && !degradedNow) {
		return
	}
	switch outcome {
	case outcomeOffline:
		e.Offline++
		if unclean {
			e.OfflineUnclean++
		}
	case outcomeUnderMinISR:
		e.UnderMinISR++
	case outcomeBelowHeadroom:
		e.BelowHeadroom++
	}
	if degradedNow {
		e.Degraded++
	}
	e.addAtRisk(topic, partition)
}

// budgetQuorum fills in the quorum's part of the budget.
func (s *Snapshot) budgetQuorum(b *Budget, brokers *budgetBrokers) {
	q := s.Quorum
	if q == nil || len(q.Voters) == 0 {
		return
	}
	majority := len(q.Voters)/2 + 1
	caughtUp := map[int32]bool{}
	for _, v := range q.Voters {
		if voterCaughtUp(q, v, brokers) {
			caughtUp[v.ID] = true
		}
	}
	b.QuorumLossesTolerated = max(0, len(caughtUp)-majority)
	b.QuorumCaughtUp = caughtUp
	quorumDegraded := q.LeaderID == NoLeader || len(caughtUp) < len(q.Voters)
	judge := func(e *StopEffect) {
		taken := 0
		for _, id := range e.Members {
			if caughtUp[id] {
				taken++
			}
		}
		if taken == 0 {
			return
		}
		e.QuorumMajority = len(caughtUp)-taken < majority
		e.QuorumDegraded = quorumDegraded
	}
	for i := range b.Brokers {
		judge(&b.Brokers[i])
	}
	for i := range b.Racks {
		judge(&b.Racks[i])
	}
}

// voterCaughtUp reports whether a voter counts toward a caught-up majority.
// A voter that is also a broker of the snapshot (combined mode) must be
// available as a broker too.
func voterCaughtUp(q *Quorum, v QuorumVoter, brokers *budgetBrokers) bool {
	if b := brokers.get(v.ID); b.known && !b.available {
		return false
	}
	switch {
	case v.ID == q.LeaderID:
		return true
	case v.CaughtUpAge >= 0:
		return v.CaughtUpAge <= quorumCaughtUpMaxAge
	default:
		return v.Lag <= quorumCaughtUpMaxLag
	}
}

// answerBudget answers a failure budget question from the budget the
// snapshot's refresh computed (Spec.Budget).
func answerBudget(snap *Snapshot, q budget.Question) (budget.Answer, error) {
	a := budget.Answer{System: "kafka", Scope: q.Scope, ID: q.ID, Recovered: q.Recovered, Safe: true, ReadAt: snap.ReadAt}
	b := snap.Budget
	if b == nil {
		return a, fmt.Errorf("no failure budget in this snapshot: %w", budget.ErrUnsupported)
	}
	var effect *StopEffect
	switch q.Scope {
	case ScopeBroker:
		for i := range b.Brokers {
			if b.Brokers[i].ID == q.ID {
				effect = &b.Brokers[i]
			}
		}
		if id, err := strconv.ParseInt(q.ID, 10, 32); effect == nil && q.Recovered && err == nil && id >= 0 {
			// A restarted broker that holds no replica is listed by no
			// partition until it registers: not back yet, rather than
			// unknown, so that --after-restart --wait waits for it.
			answerRecovered(snap, int32(id), &a)
			notJudged(snap, &a)
			describeUnclean(snap, &a)
			return a, nil
		}
		if effect == nil {
			return a, fmt.Errorf("broker %q: %w broker; known: %s", q.ID, budget.ErrUnknown, knownIDs(b.Brokers))
		}
		if q.Recovered {
			answerRecovered(snap, effect.Members[0], &a)
			notJudged(snap, &a)
			describeUnclean(snap, &a)
			return a, nil
		}
	case ScopeRack:
		if q.Recovered {
			return a, fmt.Errorf("recovered question for a rack: %w (ask for each broker)", budget.ErrUnsupported)
		}
		if len(b.Racks) == 0 {
			return a, fmt.Errorf("rack %q: no broker sets broker.rack: %w", q.ID, budget.ErrUnsupported)
		}
		for i := range b.Racks {
			if b.Racks[i].ID == q.ID {
				effect = &b.Racks[i]
			}
		}
		if effect == nil {
			return a, fmt.Errorf("rack %q: %w rack; known: %s", q.ID, budget.ErrUnknown, knownIDs(b.Racks))
		}
		for _, id := range effect.Members {
			a.Members = append(a.Members, brokerLabel(id))
		}
	default:
		return a, fmt.Errorf("scope %q: %w by kafka (broker or rack)", q.Scope, budget.ErrUnsupported)
	}
	describeStop(effect, b, &a)
	describeCoordinatorMoves(snap, effect.Members, &a)
	notJudged(snap, &a)
	describeUnclean(snap, &a)
	return a, nil
}

// describeUnclean adds to an answer the partitions without a clean leader
// and what an unclean election of each live replica would lose, as notes
// (they are the cluster's state, not the stop's effect: the verdict
// already counts them as degraded where the stop touches them), and their
// count as the fact partitions_without_clean_leader.
func describeUnclean(snap *Snapshot, a *budget.Answer) {
	estimates := snap.UncleanEstimates()
	if len(estimates) == 0 {
		return
	}
	a.Notes = append(a.Notes, snap.UncleanNotes(snap.ReadAt)...)
	if a.Facts == nil {
		a.Facts = map[string]float64{}
	}
	a.Facts["partitions_without_clean_leader"] = float64(len(estimates))
}

// describeCoordinatorMoves adds to a stop's facts what it would move to
// other coordinators, from the last coordinator read: the group and
// transaction coordinator partitions the stopped brokers coordinate (each
// a pause for the groups or transactional producers hashed to it, as the
// new leader loads it), the groups they coordinate, in all and by
// protocol, and the transactional ids, in all and with a transaction in
// flight. Facts only: they do not make the stop unsafe. A figure the
// read lacks (a kind not read, a broker that did not answer ListGroups or
// ListTransactions, transactional ids an ACL may hide)
// is left out, never given as 0.
func describeCoordinatorMoves(snap *Snapshot, brokers []int32, a *budget.Answer) {
	c := &snap.Coordinators
	if a.Facts == nil {
		a.Facts = map[string]float64{}
	}
	for k := range coordinatorKinds {
		if n, ok := c.CoordinatedBy(k, brokers); ok {
			a.Facts[k.String()+"_coordinator_partitions_moved"] = float64(n)
		}
	}
	if total, inFlight, ok := c.TransactionsOf(brokers); ok {
		a.Facts["transactional_ids_moved"] = float64(total)
		a.Facts["transactions_in_flight_moved"] = float64(inFlight)
	}
	if total, byProtocol, ok := c.GroupsOf(brokers); ok {
		a.Facts["groups_moved"] = float64(total)
		for _, p := range GroupProtocols {
			a.Facts["groups_moved_"+p] = float64(byProtocol[p])
		}
	}
}

// notJudged names, in the answer, the topics outside the topic filter
// the verdict did not judge (failure_budget.unwatched_topics: name;
// internal topics are judged whatever it says: UnwatchedJudged).
func notJudged(snap *Snapshot, a *budget.Answer) {
	if snap.UnwatchedTopics == 0 {
		return
	}
	names := strings.Join(snap.Unwatched, ", ")
	if more := snap.UnwatchedTopics - len(snap.Unwatched); more > 0 {
		names += fmt.Sprintf(" and %d more", more)
	}
	a.NotJudged = append(a.NotJudged, fmt.Sprintf("%d topic(s) outside the exporter's topic filter: %s", snap.UnwatchedTopics, names))
}

// describeStop turns a stored stop effect into the answer's findings.
func describeStop(e *StopEffect, b *Budget, a *budget.Answer) {
	if e.Offline > 0 {
		msg := fmt.Sprintf("%d partition(s) would have no leader: the stop takes their last in-sync replica (and eligible leader replica)", e.Offline)
		if e.OfflineUnclean > 0 {
			msg += fmt.Sprintf("; %d of them enable unclean.leader.election.enable, so Kafka would instead elect a replica out of sync and lose the acknowledged writes it lacks", e.OfflineUnclean)
		}
		a.Add(ReasonPartitionsOffline, e.Offline, "%s", msg)
	}
	if e.UnderMinISR > 0 {
		a.Add(ReasonPartitionsUnderMinISR, e.UnderMinISR, "%d partition(s) would go under min.insync.replicas: acks=all writes to them would be refused", e.UnderMinISR)
	}
	if e.BelowHeadroom > 0 {
		a.Add(ReasonMinISRHeadroom, e.BelowHeadroom, "%d partition(s) would keep fewer than min.insync.replicas + %d in-sync replicas (failure_budget.min_isr_headroom)", e.BelowHeadroom, b.Headroom)
	}
	if e.QuorumMajority {
		a.Add(ReasonQuorumMajority, 0, "the KRaft quorum would be left without a majority of caught-up voters")
	}
	if e.Degraded > 0 || e.QuorumDegraded {
		msg := fmt.Sprintf("%d already degraded partition(s) (offline, under min ISR or under-replicated) would lose an in-sync replica", e.Degraded)
		if e.QuorumDegraded {
			msg += "; the KRaft quorum already lacks a caught-up voter and would lose another"
		}
		a.Add(ReasonClusterDegraded, e.Degraded, "%s", msg)
	}
	for _, f := range e.Unsettled {
		a.Add(ReasonCoordinatorsUnsettled, f.N, "%s", f.Why)
	}
	for _, why := range e.NotJudged {
		a.Add(ReasonNotJudged, 0, "%s", why)
	}
	if e.MinISRUnknown > 0 {
		a.Add(ReasonNotJudged, e.MinISRUnknown, "min.insync.replicas is unknown for %d partition(s) the stop takes an in-sync replica of (describe-configs refused or not read yet): whether acks=all writes to them would be refused is unknown", e.MinISRUnknown)
	}
	a.AtRisk = append(a.AtRisk, e.AtRisk...)
	a.AtRiskTotal = e.AtRiskTotal
	a.Facts = map[string]float64{
		"partitions_offline":         float64(e.Offline),
		"partitions_under_min_isr":   float64(e.UnderMinISR),
		"partitions_below_headroom":  float64(e.BelowHeadroom),
		"partitions_degraded":        float64(e.Degraded),
		"min_isr_headroom":           float64(b.Headroom),
		"losses_until_under_min_isr": float64(b.LossesUntilUnderMinISR),
		"losses_until_offline":       float64(b.LossesUntilOffline),
		"quorum_losses_tolerated":    float64(b.QuorumLossesTolerated),
	}
	switch {
	case !a.Safe && onlyNotJudged(e):
		a.Advice = "do not stop it now: the exporter cannot judge the stop; restore what it could not read (the findings say what), then ask again"
	case !a.Safe && onlyUnsettled(e):
		a.Advice = "do not stop it now: wait until every coordinator answers and the groups it would move have finished rebalancing (failure_budget.coordinators: settled)"
	case !a.Safe:
		a.Advice = "do not stop it now: wait until the partitions at risk are back in sync, or move them first"
	}
}

// answerRecovered answers whether broker id is back: registered,
// reachable, and in the ISR of every judged partition it is a replica of
// (a replica a reassignment is still adding does not count).
func answerRecovered(snap *Snapshot, id int32, a *budget.Answer) {
	br := findBroker(snap.Brokers, id)
	fenced, registered := snap.registered[id]
	switch {
	case br != nil && br.Up:
	case fenced || (br != nil && br.Fenced):
		a.Add(ReasonFenced, 0, "broker %d is registered but fenced by the controller: it serves nothing until it has caught up with the metadata log", id)
	case registered:
		a.Add(ReasonNotRegistered, 0, "broker %d is registered but not live", id)
	default:
		a.Add(ReasonNotRegistered, 0, "broker %d is not registered: not started yet, or no such broker", id)
	}
	if br == nil || !br.Reachable {
		address := ""
		if br != nil {
			address = br.Address
		}
		a.Add(ReasonNotReachable, 0, "the exporter could not connect to broker %d at %q", id, address)
	}
	outOfSync := 0
	for _, topics := range [][]Topic{snap.Topics, snap.UnwatchedJudged} {
		for ti := range topics {
			t := &topics[ti]
			for pi := range t.Partitions {
				p := &t.Partitions[pi]
				if slices.Contains(p.Replicas, id) && !slices.Contains(p.ISR, id) && !slices.Contains(p.AddingReplicas(), id) {
					outOfSync++
					a.AddAtRisk(t.Name + "/" + strconv.FormatInt(int64(p.ID), 10))
				}
			}
		}
	}
	a.Facts = map[string]float64{"out_of_sync_partitions": float64(outOfSync)}
	if outOfSync > 0 {
		a.Add(ReasonOutOfSync, outOfSync, "broker %d is not in the ISR of %d of its partitions yet%s", id, outOfSync, catchUpProgress(snap, id, br, a.Facts))
	}
	if !a.Safe {
		a.Advice = "wait: it is not caught up yet"
	}
}

// catchUpProgress is how far broker id is from catching up, for the
// recovered answer ("; recovering: N records behind on M partitions, ETA
// 40s"), also set in facts; empty when the catch-up read has not measured
// it. A broker that already leads partitions is said to: leadership came
// back before it caught up.
func catchUpProgress(snap *Snapshot, id int32, br *Broker, facts map[string]float64) string {
	c, ok := snap.CatchUpOf(id)
	if !ok {
		return ""
	}
	facts["records_behind"] = float64(c.Records)
	progress := fmt.Sprintf("; recovering: %d records behind on %d partitions", c.Records, c.Partitions)
	if c.Unread > 0 {
		progress += fmt.Sprintf(" (%d more not measured)", c.Unread)
	}
	if eta, ok := c.ETA(snap.CatchUp.ReadAt); ok {
		facts["catchup_eta_seconds"] = eta.Seconds()
		progress += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
	} else {
		progress += fmt.Sprintf(", no ETA yet (timed once the gap has been shrinking for %s)", minCatchUpTiming)
	}
	if br != nil && br.LeaderPartitions > 0 {
		progress += fmt.Sprintf("; it already leads %d partitions: leadership came back before it caught up", br.LeaderPartitions)
	}
	return progress
}

// knownIDs lists the scopes' ids for an error message, at most ten.
func knownIDs(effects []StopEffect) string {
	ids := make([]string, 0, min(len(effects), 10))
	for i := range effects {
		if i == 10 {
			ids = append(ids, fmt.Sprintf("and %d more", len(effects)-10))
			break
		}
		ids = append(ids, effects[i].ID)
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// onlyUnsettled reports whether coordinators_unsettled is the stop's only
// reason, but for not_judged.
func onlyUnsettled(e *StopEffect) bool {
	for _, r := range StopReasons {
		if r != ReasonNotJudged && e.Unsafe(r) != (r == ReasonCoordinatorsUnsettled) {
			return false
		}
	}
	return true
}

// onlyNotJudged reports whether not_judged is the stop's only reason.
func onlyNotJudged(e *StopEffect) bool {
	for _, r := range StopReasons {
		if e.Unsafe(r) != (r == ReasonNotJudged) {
			return false
		}
	}
	return true
}
