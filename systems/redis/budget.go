package redis

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
	"github.com/failover-exporter/failover_exporter/systems/redis/settings"
)

// The failure budget: what stopping one node, or every node of one zone,
// would do now. assessBudget computes it once per refresh from the
// snapshot; the redis_cluster_*_stop_* series and answerBudget (the
// safe-to-stop endpoint and command) both read what it stored.
//
// The rules, for a stop of a set S of nodes (one node, or a zone's):
//
//   - Voters are the masters that serve slots and are not flagged pfail or
//     fail; the majority is Masters/2+1 of all masters that serve slots
//     (Redis Cluster's failover authorisation: a replica needs the votes
//     of a majority of them). Losses tolerated = voters - majority.
//   - cluster_degraded: the cluster already is (cluster_state not ok, some
//     slot pfail, fail or unassigned, or the voters short of a majority);
//     every stop is unsafe until it recovers.
//   - serves_slots: S holds a master that serves slots; its slots move only
//     by a failover, so the stop is not safe, whatever else holds. Its
//     slots count as unserved until=failover (for about
//     cluster-node-timeout plus the replica's election delay, ~1 s) when
//     it has a read healthy replica (Node.IsReadHealthyReplica) outside S
//     and the majority survives the stop, else until=never (until it comes
//     back).
//   - no_healthy_replica: such a master has no read healthy replica outside
//     S: its slots are unserved for good, or, when it has replicas the
//     exporter did not read this refresh, the budget cannot tell they would
//     take over (not judged, so not safe).
//   - masters_majority: S holds voters, and without them the voters left
//     are fewer than the majority: no failover can be authorised, for S's
//     masters or any later one.
//   - last_healthy_replica (only with failure_budget.healthy_replica_headroom):
//     some master that serves slots outside S has read healthy replicas
//     and all of them are in S: it would serve on with none (that it knows).
//   - master_not_read: S holds the last read healthy replicas of a master
//     that serves slots, is not in S, and that the exporter did not read
//     this refresh. Such a master may be gone without the cluster knowing
//     yet (paused, cut off, within cluster-node-timeout); those replicas
//     may be what is about to take over its slots. Not judged, so not safe.
//   - slot_migration: S holds the source or the target of a slot migration
//     in progress: a classic reshard (CLUSTER SETSLOT MIGRATING on the
//     source, IMPORTING on the target, read from either end's own CLUSTER
//     NODES) or a running atomic slot migration job (Valkey 9, Redis 8.4).
//     Keys MIGRATE has moved live only on the target, reached by ASK
//     through the source, until CLUSTER SETSLOT NODE ends the move:
//     stopping the target takes them away (and a restart does not bring
//     back what was never persisted), stopping the source strands them
//     (its replica, promoted, knows nothing of the move). An atomic job
//     fails. The slots at risk are the slots in flight.
//   - Safe: no finding. A replica's stop is safe unless the cluster is
//     degraded, its master was not read, or (headroom) it is its master's
//     last healthy replica; replicas do not vote, so a replica's stop never
//     breaks the majority. A master that serves no slot is safe unless the
//     cluster is degraded or it is an end of a slot migration.
//
// Read: a replica counts as healthy for the budget only when the exporter
// read it this refresh (Node.IsReadHealthyReplica). One the exporter could
// not read (unreachable, timed out, paused) may still be flagged ok by the
// cluster for up to cluster-node-timeout; counting it would let the
// budget say "safe" on the strength of a node that may be gone.
//
// Caught up (Node.IsCaughtUpReplica) is a read healthy replica whose master
// lists it in INFO replication within failure_budget.caught_up_bytes of
// its own offset: the replica the advice names for CLUSTER FAILOVER, and
// what a restarted replica must be to count as recovered. A healthy replica
// that lags further would still be promoted by the cluster (it counts for
// until=failover), losing what it lags: failover_data_loss_bytes is the
// master's offset minus the best healthy replica's.

// The scopes Redis's failure budget answers (system.go declares them): one
// node by its id or its address, and every node of one availability zone.
const ScopeNode, ScopeZone budget.Scope = "node", "zone"

// Reasons a Redis stop is not safe, labelling redis_cluster_node_stop_unsafe
// and redis_cluster_zone_stop_unsafe.
const (
	ReasonServesSlots        budget.Reason = "serves_slots"
	ReasonNoHealthyReplica   budget.Reason = "no_healthy_replica"
	ReasonMastersMajority    budget.Reason = "masters_majority"
	ReasonLastHealthyReplica budget.Reason = "last_healthy_replica"
	ReasonMasterNotRead      budget.Reason = "master_not_read"
	ReasonSlotMigration      budget.Reason = "slot_migration"
	ReasonClusterDegraded    budget.Reason = "cluster_degraded"
	ReasonShardSyncing       budget.Reason = "shard_syncing"
	ReasonFullSyncOnReturn   budget.Reason = "full_sync_on_return"
)

// Reasons a restarted node is not yet recovered (answers only, no series).
const (
	ReasonNotReachable   budget.Reason = "not_reachable"
	ReasonNodeFailing    budget.Reason = "node_failing"
	ReasonLinkDown       budget.Reason = "link_down"
	ReasonMasterLinkDown budget.Reason = "master_link_down"
	ReasonNotCaughtUp    budget.Reason = "not_caught_up"
)

// stopReasons are every stop reason, in the order their series are sent.
var stopReasons = []budget.Reason{ReasonServesSlots, ReasonNoHealthyReplica, ReasonMastersMajority, ReasonLastHealthyReplica, ReasonMasterNotRead, ReasonSlotMigration, ReasonClusterDegraded,
	ReasonShardSyncing, ReasonFullSyncOnReturn}

// Until a stop's slots are unserved: until a replica is promoted, or for
// good (until the stopped master comes back).
const (
	untilFailover = "failover"
	untilNever    = "never"
)

// DefaultClusterNodeTimeout is Redis's cluster-node-timeout default, used
// for the unserved-seconds estimate when no node answered CONFIG GET.
const DefaultClusterNodeTimeout = 15 * time.Second

// electionDelay is what a replica waits after its master is marked FAIL
// before it asks for votes: 500 ms plus up to 500 ms at random (plus a
// second per rank, for replicas less up to date than another).
const electionDelay = time.Second

// FailureBudget is what stopping each node and zone would do, as of the
// refresh that built the snapshot.
type FailureBudget struct {
	// NodeTimeout is the cluster-node-timeout the nodes report (the
	// largest), or DefaultClusterNodeTimeout when NodeTimeoutRead is false.
	NodeTimeout     time.Duration
	NodeTimeoutRead bool
	// CaughtUpBytes and Headroom are the cluster's failure_budget settings.
	CaughtUpBytes int64
	Headroom      bool
	// AllowResyncStops is failure_budget.allow_resync_stops.
	AllowResyncStops bool
	// Voters are the masters serving slots that are not failing; Majority
	// is how many votes a failover needs.
	Voters, Majority int
	// Degraded says why the cluster already is degraded; empty when not.
	Degraded string
	// Nodes are the outcomes of stopping each node, by node id.
	Nodes map[string]*StopOutcome
	// Zones are the outcomes of stopping each zone, by zone; nil when no
	// node has one. zoneOf is each node's zone (configured, else its
	// availability_zone).
	Zones  map[string]*StopOutcome
	zoneOf map[string]string
	// Moves are the slot migrations in progress, from either end's report.
	Moves []SlotMove
}

// SlotMove is one slot migration in progress: slots First to Last moving
// from the node Source to the node Target (ids), by a classic reshard
// (Job empty) or an atomic slot migration job (Job its name).
type SlotMove struct {
	First, Last    int
	Source, Target string
	Job            string
}

// LossesTolerated is how many more voting masters could fail with the
// majority still authorising a failover; negative when it already cannot.
func (b *FailureBudget) LossesTolerated() int { return b.Voters - b.Majority }

// StopOutcome is what one stop would do.
type StopOutcome struct {
	Findings []budget.Finding
	// UnservedFailover and UnservedNever are the slots the stop leaves
	// unserved until a replica is promoted, and for good.
	UnservedFailover, UnservedNever int
	// AtRisk are the slot ranges the findings are about, in slot order.
	AtRisk []SlotRange
	// Advice says what to do first.
	Advice string
	// FailoverTo is the address of the caught-up replica to fail over to
	// first, when the stop takes exactly one master that serves slots and
	// it has one.
	FailoverTo string
	// DataLossBytes is what a failover of the stopped masters now would
	// lose, when HasDataLoss (some stopped master has a healthy replica
	// whose lag is known).
	DataLossBytes int64
	HasDataLoss   bool
	// Members are the stopped nodes' addresses (for a zone), sorted.
	Members []string
}

// Safe reports whether the stop has no finding.
func (o *StopOutcome) Safe() bool { return len(o.Findings) == 0 }

// Unsafe reports whether the stop has a finding with reason r.
func (o *StopOutcome) Unsafe(r budget.Reason) bool {
	return slices.ContainsFunc(o.Findings, func(f budget.Finding) bool { return f.Reason == r })
}

// IsReadHealthyReplica is IsHealthyReplica for a replica the exporter read
// this refresh: the only replica the budget counts on (see the top of the
// file). IsHealthyReplica alone, which the replica counts of the series
// use, also counts a replica the exporter could not read while the cluster
// still calls it ok.
func (n *Node) IsReadHealthyReplica() bool {
	return n.IsHealthyReplica() && n.Reachable
}

// IsCaughtUpReplica is IsReadHealthyReplica with the replication lag known
// (its master lists it) and within bound bytes: the replica to fail over to.
func (n *Node) IsCaughtUpReplica(bound int64) bool {
	return n.IsReadHealthyReplica() && n.HasReplicationLag && n.ReplicationLagBytes <= bound
}

// assessBudget computes the failure budget of snap (a step of the refresh,
// after buildSnapshot): every node's stop, and every zone's.
func assessBudget(snap *Snapshot, cfg settings.Budget, nodeTimeout time.Duration) *FailureBudget {
	b := &FailureBudget{
		NodeTimeout:      nodeTimeout,
		NodeTimeoutRead:  nodeTimeout > 0,
		CaughtUpBytes:    cfg.CaughtUpBound(),
		Headroom:         cfg.HealthyReplicaHeadroom,
		AllowResyncStops: cfg.AllowResyncStops,
		Majority:         snap.Masters/2 + 1,
		Nodes:            make(map[string]*StopOutcome, len(snap.Nodes)),
		zoneOf:           map[string]string{},
	}
	if !b.NodeTimeoutRead {
		b.NodeTimeout = DefaultClusterNodeTimeout
	}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if isVoter(n) {
			b.Voters++
		}
		zone := n.Zone
		if z, ok := cfg.Zones[n.Addr]; ok {
			zone = z
		}
		if zone != "" {
			b.zoneOf[n.ID] = zone
		}
	}
	b.Degraded = degradedBecause(snap, b)
	b.Moves = slotMovesInProgress(snap)
	a := newStopAssessor(snap, b)
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		b.Nodes[n.ID] = a.assess(map[string]bool{n.ID: true})
	}
	if len(b.zoneOf) > 0 {
		members := map[string]map[string]bool{}
		for id, zone := range b.zoneOf {
			if members[zone] == nil {
				members[zone] = map[string]bool{}
			}
			members[zone][id] = true
		}
		b.Zones = make(map[string]*StopOutcome, len(members))
		for zone, ids := range members {
			o := a.assess(ids)
			for i := range snap.Nodes {
				if ids[snap.Nodes[i].ID] {
					o.Members = append(o.Members, nodeName(&snap.Nodes[i]))
				}
			}
			slices.Sort(o.Members)
			b.Zones[zone] = o
		}
	}
	return b
}

// isVoter reports whether the node votes in failover elections now: a
// master that serves slots and is not flagged failing.
func isVoter(n *Node) bool {
	return n.Role == RoleMaster && n.Slots > 0 && n.State != NodeStatePFail && n.State != NodeStateFail
}

// degradedBecause says why the cluster is degraded already, "" if it is not.
func degradedBecause(snap *Snapshot, b *FailureBudget) string {
	var why []string
	if !snap.StateOK {
		why = append(why, "cluster_state is fail")
	}
	if unserved := snap.SlotsPFail + snap.SlotsFail + snap.SlotsUnassigned; unserved > 0 {
		why = append(why, fmt.Sprintf("%d slots are pfail, fail or unassigned", unserved))
	}
	if b.Voters < b.Majority {
		why = append(why, fmt.Sprintf("%d of %d slot-serving masters can vote, fewer than the majority of %d", b.Voters, snap.Masters, b.Majority))
	}
	return strings.Join(why, "; ")
}

// stopAssessor holds the indexes assess needs.
type stopAssessor struct {
	snap     *Snapshot
	b        *FailureBudget
	index    map[string]int         // snap.Nodes by id
	replicas map[string][]*Node     // read healthy replicas, by master id
	all      map[string][]*Node     // every replica, healthy or not, by master id
	unread   map[string][]*Node     // replicas the cluster calls healthy that the exporter did not read, by master id
	ranges   map[string][]SlotRange // by owner id
}

func newStopAssessor(snap *Snapshot, b *FailureBudget) *stopAssessor {
	a := &stopAssessor{snap: snap, b: b, index: make(map[string]int, len(snap.Nodes)),
		replicas: map[string][]*Node{}, all: map[string][]*Node{}, unread: map[string][]*Node{}, ranges: map[string][]SlotRange{}}
	for i := range snap.Nodes {
		a.index[snap.Nodes[i].ID] = i
		if r := &snap.Nodes[i]; r.Role == RoleReplica {
			a.all[r.MasterID] = append(a.all[r.MasterID], r)
		}
		switch r := &snap.Nodes[i]; {
		case r.IsReadHealthyReplica():
			a.replicas[r.MasterID] = append(a.replicas[r.MasterID], r)
		case r.IsHealthyReplica():
			a.unread[r.MasterID] = append(a.unread[r.MasterID], r)
		}
	}
	for _, r := range snap.SlotRanges {
		if r.Owner != "" {
			a.ranges[r.Owner] = append(a.ranges[r.Owner], r)
		}
	}
	return a
}

// maxAdvised bounds the masters a zone's advice names one by one.
const maxAdvised = 5

// assess applies the rules (see the top of the file) to a stop of the
// nodes in stopped.
func (a *stopAssessor) assess(stopped map[string]bool) *StopOutcome {
	o := &StopOutcome{}
	b := a.b
	if b.Degraded != "" {
		o.add(ReasonClusterDegraded, 0, "the cluster is degraded already (%s): recover it before stopping anything", b.Degraded)
	}
	votersLost := a.votersLost(stopped)
	majorityHolds := b.Voters-votersLost >= b.Majority
	if votersLost > 0 && !majorityHolds {
		o.add(ReasonMastersMajority, b.Voters-votersLost,
			"the stop leaves %d of %d slot-serving masters able to vote, fewer than the majority of %d a failover needs: no failover could be authorised",
			b.Voters-votersLost, a.snap.Masters, b.Majority)
	}
	var tally stopTally
	for _, i := range a.affectedShards(stopped) {
		if m := &a.snap.Nodes[i]; m.Role == RoleMaster && m.Slots > 0 {
			a.assessShard(m, stopped, majorityHolds, o, &tally)
		}
	}
	a.assessMoves(stopped, o, &tally)
	tally.report(o)
	return o
}

// votersLost counts the voting masters in stopped.
func (a *stopAssessor) votersLost(stopped map[string]bool) int {
	lost := 0
	for id := range stopped {
		if n := a.node(id); n != nil && isVoter(n) {
			lost++
		}
	}
	return lost
}

// affectedShards are the indexes in snap.Nodes of the masters whose shards
// the stop can change, in snapshot order, for stable text: the stopped
// masters and the masters of stopped replicas.
func (a *stopAssessor) affectedShards(stopped map[string]bool) []int {
	shards := map[int]bool{}
	for id := range stopped {
		n := a.node(id)
		switch {
		case n == nil:
		case n.Role == RoleMaster:
			shards[a.index[n.ID]] = true
		default:
			if mi, ok := a.index[n.MasterID]; ok {
				shards[mi] = true
			}
		}
	}
	order := make([]int, 0, len(shards))
	for i := range shards {
		order = append(order, i)
	}
	slices.Sort(order)
	return order
}

// stopTally adds up, over the shards a stop changes, what assess reports.
type stopTally struct {
	servesSlots, noReplica, lastReplica int
	serving, without, last              []string
	// unread are the replicas the findings did not count because the
	// exporter did not read them.
	unread []string
	// masterNotRead are the unread masters whose replicas S holds.
	masterNotReadSlots int
	mastersNotRead     []string
	advice, failoverTo []string
	// moving are the slot migrations the stop interrupts; migrationAdvice
	// comes before any failover advice.
	movingSlots                    int
	moving                         []string
	migrationRisk, migrationAdvice string
	// syncing are the shards with a replica in a full sync, and
	// fullSyncOnReturn the stopped replicas that would come back to one.
	syncingSlots, fullSyncSlots int
	syncing, fullSync           []string
	// resyncUnknown are the stopped healthy replicas whose resume from
	// the backlog is not judged: their master's backlog was not read.
	resyncUnknownSlots int
	resyncUnknown      []string
}

// assessShard adds to o and tally what the stop does to the shard of m, a
// master that serves slots.
func (a *stopAssessor) assessShard(m *Node, stopped map[string]bool, majorityHolds bool, o *StopOutcome, tally *stopTally) {
	var outside, inside []*Node
	for _, r := range a.replicas[m.ID] {
		if stopped[r.ID] {
			inside = append(inside, r)
		} else {
			outside = append(outside, r)
		}
	}
	unread := func() {
		for _, r := range a.unread[m.ID] {
			if !stopped[r.ID] {
				tally.unread = append(tally.unread, nodeName(r))
			}
		}
	}
	if !stopped[m.ID] {
		masterNotRead := !m.Reachable && len(inside) > 0 && len(outside) == 0
		a.assessResync(m, stopped, masterNotRead, tally)
		if masterNotRead {
			tally.masterNotReadSlots += m.Slots
			tally.mastersNotRead = append(tally.mastersNotRead, nodeName(m))
			o.AtRisk = append(o.AtRisk, a.ranges[m.ID]...)
		}
		if a.b.Headroom && len(inside) > 0 && len(outside) == 0 {
			tally.lastReplica += m.Slots
			tally.last = append(tally.last, nodeName(m))
			o.AtRisk = append(o.AtRisk, a.ranges[m.ID]...)
			unread()
		}
		return
	}
	tally.servesSlots += m.Slots
	tally.serving = append(tally.serving, nodeName(m))
	o.AtRisk = append(o.AtRisk, a.ranges[m.ID]...)
	switch {
	case len(outside) == 0:
		tally.noReplica += m.Slots
		tally.without = append(tally.without, nodeName(m))
		o.UnservedNever += m.Slots
		unread()
	case !majorityHolds:
		o.UnservedNever += m.Slots
	default:
		o.UnservedFailover += m.Slots
	}
	if loss, ok := failoverLoss(outside); ok {
		o.DataLossBytes += loss
		o.HasDataLoss = true
	}
	text, to := a.advise(m, outside)
	tally.advice = append(tally.advice, text)
	tally.failoverTo = append(tally.failoverTo, to)
}

// assessResync adds to tally what a stop of replicas of m, a master that
// serves slots and is not stopped, does to the shard's resyncs: with a
// replica of m in a full sync any stop in the shard waits for it (the sync
// is thrown away, or the shard's other copy goes while it has no usable
// one), and a stopped replica whose acknowledged offset is no longer in
// m's backlog comes back to a full sync of the whole data set. One whose
// offset there was not read is not judged, unless masterNotRead already
// says m was not read.
func (a *stopAssessor) assessResync(m *Node, stopped map[string]bool, masterNotRead bool, tally *stopTally) {
	if a.b.AllowResyncStops {
		return
	}
	stopsInShard, full, unknown := false, 0, 0
	for _, r := range a.all[m.ID] {
		if !stopped[r.ID] {
			continue
		}
		stopsInShard = true
		switch {
		case r.HasPartialResync && !r.PartialResync:
			full++
			tally.fullSync = append(tally.fullSync, nodeName(r))
		case !r.HasPartialResync && r.IsHealthyReplica() && !masterNotRead:
			// Its master's backlog (or its offset there) was not read:
			// a full sync on its return cannot be ruled out.
			unknown++
			tally.resyncUnknown = append(tally.resyncUnknown, fmt.Sprintf("%s (master %s)", nodeName(r), nodeName(m)))
		}
	}
	// The shard's slots count once, however many of its replicas stop.
	if full > 0 {
		tally.fullSyncSlots += m.Slots
	}
	if unknown > 0 && full == 0 {
		tally.resyncUnknownSlots += m.Slots
	}
	if syncing := a.syncingReplica(m); stopsInShard && syncing != "" {
		tally.syncingSlots += m.Slots
		tally.syncing = append(tally.syncing, fmt.Sprintf("master %s: %s", nodeName(m), syncing))
	}
}

// reportResync writes the tally's resync reasons into o.
func (tally *stopTally) reportResync(o *StopOutcome) {
	if tally.syncingSlots > 0 {
		o.add(ReasonShardSyncing, tally.syncingSlots, "the shard is resyncing (%s): wait until the replica's master_link_status is up; a stop now throws the sync away or leaves %d slots longer without a usable replica (failure_budget.allow_resync_stops)",
			strings.Join(bounded(tally.syncing), "; "), tally.syncingSlots)
	}
	var full []string
	if tally.fullSyncSlots > 0 {
		full = append(full, fmt.Sprintf("%s could not resume from the master's backlog when back: what it acknowledged is no longer in it, so it would take a full sync of the whole data set, %d slots without a usable replica meanwhile; raise repl-backlog-size, or wait until it is caught up",
			strings.Join(bounded(tally.fullSync), ", "), tally.fullSyncSlots))
	}
	if tally.resyncUnknownSlots > 0 {
		full = append(full, fmt.Sprintf("not judged: the exporter did not read the master's backlog this refresh, so it cannot tell whether %s could resume from it when back or would take a full sync",
			strings.Join(bounded(tally.resyncUnknown), ", ")))
	}
	if len(full) > 0 {
		o.add(ReasonFullSyncOnReturn, tally.fullSyncSlots+tally.resyncUnknownSlots, "%s (failure_budget.allow_resync_stops)", strings.Join(full, "; "))
	}
}

// report writes the tally's reasons, slots at risk and advice into o.
func (tally *stopTally) report(o *StopOutcome) {
	// A failover in the middle of a migration strands it (the promoted
	// replica knows nothing of the move): the migration comes first.
	if len(tally.failoverTo) == 1 && tally.movingSlots == 0 {
		o.FailoverTo = tally.failoverTo[0]
	}
	unread := ""
	if len(tally.unread) > 0 {
		unread = fmt.Sprintf(" (not judged: the exporter did not read %s this refresh, so %s not counted as healthy)",
			strings.Join(bounded(tally.unread), ", "), pluralIs(len(tally.unread)))
	}
	if tally.servesSlots > 0 {
		o.add(ReasonServesSlots, tally.servesSlots, "%s %d slots: fail over first, or they are unserved while a replica is promoted", pluralServe(tally.serving), tally.servesSlots)
	}
	if tally.noReplica > 0 {
		o.add(ReasonNoHealthyReplica, tally.noReplica, "%s no healthy replica to take over: %d slots would be unserved until it is back%s", pluralHave(tally.without), tally.noReplica, unread)
	}
	if tally.lastReplica > 0 {
		o.add(ReasonLastHealthyReplica, tally.lastReplica, "the stop takes the last healthy replica of %s (%d slots), which would serve on with none (healthy_replica_headroom)%s", strings.Join(bounded(tally.last), ", "), tally.lastReplica, unread)
	}
	if tally.masterNotReadSlots > 0 {
		o.add(ReasonMasterNotRead, tally.masterNotReadSlots, "not judged: the exporter did not read %s this refresh, so it cannot tell whether %s serving %d slots; the stop takes a replica that may be about to take over",
			strings.Join(bounded(tally.mastersNotRead), ", "), pluralIsStill(len(tally.mastersNotRead)), tally.masterNotReadSlots)
	}
	tally.reportResync(o)
	if tally.movingSlots > 0 {
		o.add(ReasonSlotMigration, tally.movingSlots, "the stop interrupts a slot migration in progress: %s; %s",
			strings.Join(bounded(tally.moving), ", "), tally.migrationRisk)
	}
	o.AtRisk = mergeRanges(o.AtRisk)
	advice := tally.advice
	if len(advice) > maxAdvised {
		advice = append(advice[:maxAdvised], fmt.Sprintf("and %d more masters", len(advice)-maxAdvised))
	}
	if tally.migrationAdvice != "" {
		advice = append([]string{tally.migrationAdvice}, advice...)
	}
	o.Advice = strings.Join(advice, "; ")
}

// mergeRanges sorts ranges by their first slot and drops those inside an
// earlier one (a migrating slot within the stopped master's own range).
func mergeRanges(ranges []SlotRange) []SlotRange {
	slices.SortFunc(ranges, func(x, y SlotRange) int {
		if c := cmp.Compare(x.First, y.First); c != 0 {
			return c
		}
		return cmp.Compare(y.Last, x.Last)
	})
	out := ranges[:0]
	for _, r := range ranges {
		if n := len(out); n > 0 && r.Last <= out[n-1].Last {
			continue
		}
		out = append(out, r)
	}
	return out
}

// syncingReplica describes a replica of m in a full sync or loading its
// data set, empty when there is none.
func (a *stopAssessor) syncingReplica(m *Node) string {
	for _, r := range a.all[m.ID] {
		switch {
		case r.Loading && r.Load.Read:
			return fmt.Sprintf("its replica %s is loading its data set, %s", nodeName(r), r.Load.text())
		case r.Sync.InProgress && r.Loading && r.Sync.TotalBytes <= 0:
			return fmt.Sprintf("its replica %s is in a full sync, loading (%d bytes read)", nodeName(r), r.Sync.ReadBytes)
		case r.Sync.InProgress:
			return fmt.Sprintf("its replica %s is %s", nodeName(r), r.Sync.progress())
		case r.Loading:
			return fmt.Sprintf("its replica %s is loading its data set (LOADING)", nodeName(r))
		}
	}
	return ""
}

func (a *stopAssessor) node(id string) *Node {
	if i, ok := a.index[id]; ok {
		return &a.snap.Nodes[i]
	}
	return nil
}

// advise names the caught-up replica of m to fail over to, or says why
// there is none.
// advise says what to do before stopping master m, and the address of the
// caught-up replica to fail over to, empty when there is none.
func (a *stopAssessor) advise(m *Node, replicas []*Node) (string, string) {
	if len(replicas) == 0 {
		if syncing := a.syncingReplica(m); syncing != "" {
			return fmt.Sprintf("master %s has no healthy replica to fail over to: %s; wait until its master_link_status is up", nodeName(m), syncing), ""
		}
		return fmt.Sprintf("master %s has no healthy replica to fail over to: add one (CLUSTER REPLICATE %s on a new node) or move its slots first", nodeName(m), m.ID), ""
	}
	best := bestReplica(replicas)
	if !best.IsCaughtUpReplica(a.b.CaughtUpBytes) {
		behind := "its lag is unknown"
		if best.HasReplicationLag {
			behind = fmt.Sprintf("it is %d bytes behind", best.ReplicationLagBytes)
		}
		return fmt.Sprintf("no replica of %s is caught up (within %d bytes): the best, %s (%s), %s; wait for it, then fail over to it first: %s",
			nodeName(m), a.b.CaughtUpBytes, best.ID, best.Addr, behind, failoverCommand(best)), ""
	}
	return fmt.Sprintf("fail over to replica %s (%s) first: %s", best.ID, best.Addr, failoverCommand(best)), best.Addr
}

// bestReplica is the replica with the smallest known lag (unknown lags
// last), then by address.
func bestReplica(replicas []*Node) *Node {
	return slices.MinFunc(replicas, func(x, y *Node) int {
		if c := redisproto.CompareBool(!x.HasReplicationLag, !y.HasReplicationLag); c != 0 {
			return c
		}
		if c := cmp.Compare(x.ReplicationLagBytes, y.ReplicationLagBytes); c != 0 {
			return c
		}
		return cmp.Compare(x.Addr, y.Addr)
	})
}

// failoverLoss is what a failover now would lose: the master's offset
// minus the best healthy replica's, when some replica's lag is known.
func failoverLoss(replicas []*Node) (int64, bool) {
	if len(replicas) == 0 {
		return 0, false
	}
	best := bestReplica(replicas)
	return best.ReplicationLagBytes, best.HasReplicationLag
}

func failoverCommand(r *Node) string {
	host, port, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return "CLUSTER FAILOVER on it"
	}
	return fmt.Sprintf("redis-cli -h %s -p %s CLUSTER FAILOVER", host, port)
}

// nodeName is a node's address, else its id.
func nodeName(n *Node) string {
	if n.Addr != "" {
		return n.Addr
	}
	return n.ID
}

func (o *StopOutcome) add(reason budget.Reason, count int, format string, args ...any) {
	o.Findings = append(o.Findings, budget.Finding{Reason: reason, Count: count, Message: fmt.Sprintf(format, args...)})
}

func bounded(names []string) []string {
	if len(names) > maxAdvised {
		return append(slices.Clone(names[:maxAdvised]), fmt.Sprintf("%d more", len(names)-maxAdvised))
	}
	return names
}

func pluralServe(masters []string) string {
	if len(masters) == 1 {
		return "master " + masters[0] + " serves"
	}
	return "masters " + strings.Join(bounded(masters), ", ") + " serve"
}

func pluralIsStill(n int) string {
	if n == 1 {
		return "it is still"
	}
	return "they are still"
}

func pluralIs(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}

func pluralHave(masters []string) string {
	if len(masters) == 1 {
		return "master " + masters[0] + " has"
	}
	return "masters " + strings.Join(bounded(masters), ", ") + " have"
}

// slotRangeName is a range as AtRisk lists it: "0-5460".
func slotRangeName(r SlotRange) string {
	return strconv.Itoa(r.First) + "-" + strconv.Itoa(r.Last)
}

// answerBudget answers a failure budget question from what assessBudget
// stored in the snapshot: Scope Node (ID a node id or ip:port) or Zone.
func answerBudget(snap *Snapshot, q budget.Question) (budget.Answer, error) {
	b := snap.FailureBudget
	if b == nil {
		return budget.Answer{}, fmt.Errorf("the snapshot has no failure budget: %w", budget.ErrUnsupported)
	}
	a := budget.Answer{System: "redis", Scope: q.Scope, ID: q.ID, Recovered: q.Recovered, Safe: true, ReadAt: snap.ReadAt}
	switch q.Scope {
	case ScopeNode:
		n := snap.findNode(q.ID)
		if n == nil {
			return budget.Answer{}, fmt.Errorf("redis node %q: %w node (give a node id or ip:port of a member)", q.ID, budget.ErrUnknown)
		}
		// The node as the series label it: its address (a question may
		// name it by id).
		a.Members = []string{nodeName(n)}
		if q.Recovered {
			recoveredNode(&a, n, b.CaughtUpBytes)
			return a, nil
		}
		b.answerStop(&a, b.Nodes[n.ID])
		return a, nil
	case ScopeZone:
		if len(b.Zones) == 0 {
			return budget.Answer{}, fmt.Errorf("no node reports an availability_zone and failure_budget.zones is empty: %w", budget.ErrUnsupported)
		}
		o, ok := b.Zones[q.ID]
		if !ok {
			zones := make([]string, 0, len(b.Zones))
			for z := range b.Zones {
				zones = append(zones, z)
			}
			slices.Sort(zones)
			return budget.Answer{}, fmt.Errorf("redis zone %q: %w zone (known: %s)", q.ID, budget.ErrUnknown, strings.Join(bounded(zones), ", "))
		}
		a.Members = slices.Clone(o.Members)
		if q.Recovered {
			for i := range snap.Nodes {
				if n := &snap.Nodes[i]; b.zoneOf[n.ID] == q.ID {
					recoveredNode(&a, n, b.CaughtUpBytes)
				}
			}
			return a, nil
		}
		b.answerStop(&a, o)
		return a, nil
	}
	return budget.Answer{}, fmt.Errorf("redis answers node and zone questions, not %q: %w", q.Scope, budget.ErrUnsupported)
}

func (s *Snapshot) findNode(id string) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].ID == id || s.Nodes[i].Addr == id && id != "" {
			return &s.Nodes[i]
		}
	}
	return nil
}

// answerStop fills a from a stop's stored outcome.
func (b *FailureBudget) answerStop(a *budget.Answer, o *StopOutcome) {
	for _, f := range o.Findings {
		a.Add(f.Reason, f.Count, "%s", f.Message)
	}
	for _, r := range o.AtRisk {
		a.AddAtRisk(slotRangeName(r))
	}
	a.Advice, a.FailoverTo = o.Advice, o.FailoverTo
	a.Facts = map[string]float64{
		"unserved_slots_failover":      float64(o.UnservedFailover),
		"unserved_slots_never":         float64(o.UnservedNever),
		"cluster_node_timeout_seconds": b.NodeTimeout.Seconds(),
		"master_losses_tolerated":      float64(b.LossesTolerated()),
	}
	// Slots unserved until a failover are so for about the node timeout
	// and the election delay; those unserved for good have no estimate
	// (unserved_slots_never says how many).
	a.Facts["unserved_seconds_estimate"] = 0
	if o.UnservedFailover > 0 {
		a.Facts["unserved_seconds_estimate"] = (b.NodeTimeout + electionDelay).Seconds()
	}
	if o.HasDataLoss {
		a.Facts["failover_data_loss_bytes"] = float64(o.DataLossBytes)
	}
}

// recoveredNode adds what n still lacks to be back: reachable, not
// failing, its bus link up, and for a replica its master link up and its
// lag known and within the caught-up bound.
func recoveredNode(a *budget.Answer, n *Node, caughtUp int64) {
	name := nodeName(n)
	switch {
	case n.Loading && n.Load.Read:
		a.Add(ReasonNotReachable, 1, "node %s is loading its data set (it answers LOADING): %s", name, n.Load.text())
	case n.Loading:
		a.Add(ReasonNotReachable, 1, "node %s is loading its data set (it answers LOADING)", name)
	case !n.Reachable:
		a.Add(ReasonNotReachable, 1, "node %s does not answer the exporter", name)
	}
	if n.State != NodeStateOK {
		a.Add(ReasonNodeFailing, 1, "node %s is in state %s in the cluster's view", name, n.State)
	}
	if !n.LinkConnected {
		a.Add(ReasonLinkDown, 1, "the cluster bus link to node %s is down", name)
	}
	if n.Role != RoleReplica {
		return
	}
	if n.Reachable && !n.MasterLinkUp {
		if n.Sync.InProgress {
			a.Add(ReasonMasterLinkDown, 1, "replica %s has master_link_status down: %s", name, n.Sync.progress())
		} else {
			a.Add(ReasonMasterLinkDown, 1, "replica %s has master_link_status down", name)
		}
	}
	switch {
	case !n.HasReplicationLag:
		a.Add(ReasonNotCaughtUp, 1, "replica %s is not listed by its master %s in INFO replication: not synced", name, n.MasterID)
	case n.ReplicationLagBytes > caughtUp:
		a.Add(ReasonNotCaughtUp, 1, "replica %s is %d bytes behind its master, more than caught_up_bytes %d", name, n.ReplicationLagBytes, caughtUp)
	}
}

// emitBudget emits the failure budget's series; none for a snapshot built
// without one.
func emitBudget(ch exposition.Sink, cluster string, s *Snapshot) {
	b := s.FailureBudget
	if b == nil {
		return
	}
	ch.Add(metrics.masterLossesTolerated, float64(b.LossesTolerated()), cluster)
	// The node's or zone's labels, and one more that emit fills in.
	nodeLabels := []string{cluster, "", "", ""}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		o := b.Nodes[n.ID]
		if o == nil {
			continue
		}
		nodeLabels[1], nodeLabels[2] = n.ID, n.Addr
		o.emit(ch, metrics.nodeSafeToStop, metrics.nodeStopUnsafe, metrics.nodeStopUnserved, nodeLabels)
		if n.Role == RoleMaster && o.HasDataLoss {
			ch.Add(metrics.nodeFailoverDataLoss, float64(o.DataLossBytes), nodeLabels[:3]...)
		}
	}
	zones := make([]string, 0, len(b.Zones))
	for z := range b.Zones {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	zoneLabels := []string{cluster, "", ""}
	for _, z := range zones {
		zoneLabels[1] = z
		b.Zones[z].emit(ch, metrics.zoneSafeToStop, metrics.zoneStopUnsafe, metrics.zoneStopUnserved, zoneLabels)
	}
}

// emit emits the outcome of stopping one node or zone: safe to stop, by
// the cluster's labels and the node's or zone's, and unsafe by reason and
// the slots left unserved by until, by those and the last of labels, which
// emit fills in.
func (o *StopOutcome) emit(ch exposition.Sink, safe, unsafe, unserved *exposition.Desc, labels []string) {
	last := len(labels) - 1
	ch.Add(safe, bool01(o.Safe()), labels[:last]...)
	for _, r := range stopReasons {
		labels[last] = string(r)
		ch.Add(unsafe, bool01(o.Unsafe(r)), labels...)
	}
	labels[last] = untilFailover
	ch.Add(unserved, float64(o.UnservedFailover), labels...)
	labels[last] = untilNever
	ch.Add(unserved, float64(o.UnservedNever), labels...)
}
