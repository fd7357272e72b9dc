package kafka

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/collector/budget"

	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// Kafka maps a key to Utils.abs(key.hashCode()) % partitions. The hashes
// are Java's: "hello".hashCode() is 99162322, and
// "polygenelubricants".hashCode() is Integer.MIN_VALUE, which Utils.abs
// maps to 0 (Math.abs would leave it negative).
func TestCoordinatorPartitionIsKafkas(t *testing.T) {
	if h := javaStringHash("hello"); h != 99162322 {
		t.Errorf(`hash of "hello" = %d, want 99162322`, h)
	}
	if h := javaStringHash("polygenelubricants"); h != -1<<31 {
		t.Errorf(`hash of "polygenelubricants" = %d, want %d`, h, int32(-1<<31))
	}
	if p := CoordinatorPartitionOf("polygenelubricants", 50); p != 0 {
		t.Errorf("partition of a MIN_VALUE hash = %d, want 0", p)
	}
	if p := CoordinatorPartitionOf("hello", 50); p != 99162322%50 {
		t.Errorf(`partition of "hello" = %d, want %d`, p, 99162322%50)
	}
	// Every key the read asks about maps to its partition (the real
	// cluster's FindCoordinator checks the mapping: coordinators_integration_test.go).
	for kind := range coordinatorKinds {
		for _, n := range []int{1, 6, 50, 1000} {
			keys := coordinatorProbeKeys(kind, n)
			for p, key := range keys {
				if !strings.HasPrefix(key, coordinatorProbePrefix) || CoordinatorPartitionOf(key, n) != int32(p) {
					t.Fatalf("%s, %d partitions: key %q for partition %d maps to %d", kind, n, key, p, CoordinatorPartitionOf(key, n))
				}
			}
		}
	}
	// A share key is groupId:topicId:partition, as FindCoordinator takes it.
	if key := coordinatorProbeKeys(CoordinatorShare, 1)[0]; key != "failover_exporter.coordinator-probe.share:AAAAAAAAAAAAAAAAAAAAAA:0" {
		t.Errorf("share probe key %q", key)
	}
}

func TestCoordinatorStateOfError(t *testing.T) {
	for _, tc := range []struct {
		err  *kerr.Error
		want CoordinatorState
	}{
		{nil, CoordinatorAnswering},
		{kerr.GroupIDNotFound, CoordinatorAnswering},
		{kerr.TransactionalIDNotFound, CoordinatorAnswering},
		{kerr.CoordinatorLoadInProgress, CoordinatorLoading},
		{kerr.CoordinatorNotAvailable, CoordinatorUnavailable},
		{kerr.NotCoordinator, CoordinatorUnavailable},
		// An ACL's refusal says nothing of the coordinator.
		{kerr.GroupAuthorizationFailed, CoordinatorUnknown},
		{kerr.TransactionalIDAuthorizationFailed, CoordinatorUnknown},
		{kerr.UnknownServerError, CoordinatorUnknown},
	} {
		var code int16
		if tc.err != nil {
			code = tc.err.Code
		}
		if got, _ := stateOfError(code); got != tc.want {
			t.Errorf("code %d (%v): %v, want %v", code, tc.err, got, tc.want)
		}
	}
}

// coordinatorsAt gives s a group coordinator read at t0 plus seconds: one
// state and coordinator per partition.
func coordinatorsAt(s *Snapshot, seconds float64, parts ...CoordinatorPartition) *Snapshot {
	s.Coordinators.Reads[CoordinatorGroup] = &CoordinatorRead{ReadAt: episodeT0.Add(time.Duration(seconds * float64(time.Second))), Partitions: parts}
	return s
}

func answering(broker int32) CoordinatorPartition {
	return CoordinatorPartition{State: CoordinatorAnswering, Coordinator: broker}
}

// A coordinator partition's episode begins at the first failed probe of
// the coordinator it had, counts loading as failing, ends at the first
// read that answers, and is listed as two events.
func TestCoordinatorEpisodes(t *testing.T) {
	rs := []int32{1, 2, 3}
	healthy := func(s float64) *Snapshot { return probed(snapshotAt(s, rs, part{1, rs, rs})) }
	dead := func(s float64) *Snapshot { return probed(snapshotAt(s, rs, part{2, rs, []int32{2, 3}}), 1) }
	loading := CoordinatorPartition{State: CoordinatorLoading, Coordinator: 2, Reason: "COORDINATOR_LOAD_IN_PROGRESS"}
	gone := CoordinatorPartition{State: CoordinatorUnavailable, Coordinator: 1, Reason: "connection refused"}
	unknown := CoordinatorPartition{State: CoordinatorUnknown, Coordinator: -1, Reason: errNoFinder.Error()}

	// Broker 1, coordinator of partition 0, dies between 0 and 1 s; the
	// read at 1.5 s finds it not answering, at 4.5 s the new one loading,
	// at 6.5 s nobody can tell, at 8.5 s it answers.
	s0 := coordinatorsAt(healthy(0), 0.5, answering(1), answering(2))
	s1 := coordinatorsAt(dead(1), 1.5, gone, answering(2))
	s2 := coordinatorsAt(dead(5), 4.5, loading, answering(2))
	s3 := coordinatorsAt(dead(7), 6.5, unknown, answering(2))
	s4 := coordinatorsAt(dead(9), 8.5, answering(2), answering(2))
	// A refresh whose read has not ended carries the last one.
	s5 := dead(10)
	s5.Coordinators.Reads = s4.Coordinators.Reads
	last := chainSnapshots(s0, s1, s2, s3)
	if o, ok := last.Coordinators.Open[CoordinatorGroup][0]; !ok || !o.StartSeen || !o.Since.Equal(episodeT0.Add(time.Second)) {
		t.Fatalf("episode of partition 0 %+v (open %v), want begun at the failed probe of broker 1 at 1 s and kept open while unknown", o, ok)
	}
	if h := last.Coordinators.Ended[CoordinatorGroup]; h == nil || h.Count != 0 {
		t.Errorf("histogram %+v, want served empty while the episode is open", h)
	}
	for _, next := range []*Snapshot{s4, s5} {
		rememberDownBrokers(last, next)
		carryTransitions(last, next)
		last = next
	}
	if n := len(last.Coordinators.Open[CoordinatorGroup]); n != 0 {
		t.Errorf("%d episodes open after partition 0 answered", n)
	}
	if h := last.Coordinators.Ended[CoordinatorGroup]; h == nil || h.Count != 1 || h.Sum != 7.5 {
		t.Errorf("histogram %+v, want one episode of 7.5 s (failed probe at 1 s to the answer at 8.5 s)", h)
	}
	var evs []string
	for _, s := range []*Snapshot{s1, s2, s3, s4, s5} {
		for _, ev := range s.Events.Events {
			if ev.Kind == EventCoordinatorUnavailable || ev.Kind == EventCoordinatorAvailable {
				evs = append(evs, string(ev.Kind)+": "+ev.Before+" -> "+ev.After+" first "+ev.FirstFailure.Sub(episodeT0).String())
			}
		}
	}
	want := []string{
		"coordinator_unavailable: answering at broker 1 -> unavailable at broker 1 (connection refused) first 1s",
		"coordinator_available: unknown (no broker answered FindCoordinator) -> answering at broker 2 after 7.5s first " + (time.Time{}).Sub(episodeT0).String(),
	}
	if strings.Join(evs, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(evs, "\n"), strings.Join(want, "\n"))
	}
}

// An exporter that starts while a coordinator is unavailable times no
// episode it did not see begin; the change it saw is an event all the same,
// without a duration.
func TestCoordinatorEpisodeOfUnknownStart(t *testing.T) {
	rs := []int32{1, 2, 3}
	snap := func(s float64) *Snapshot { return probed(snapshotAt(s, rs, part{1, rs, rs})) }
	gone := CoordinatorPartition{State: CoordinatorUnavailable, Coordinator: -1, Reason: "COORDINATOR_NOT_AVAILABLE"}
	last := chainSnapshots(coordinatorsAt(snap(0), 0.5, gone), coordinatorsAt(snap(2), 2.5, answering(1)))
	if h := last.Coordinators.Ended[CoordinatorGroup]; h == nil || h.Count != 0 {
		t.Errorf("histogram %+v, want served and empty: the episode's start was not seen", h)
	}
	if evs := last.Events.Events; len(evs) != 1 || evs[0].Kind != EventCoordinatorAvailable || evs[0].After != "answering at broker 1" {
		t.Errorf("events %+v, want one coordinator_available answering at broker 1, without a duration", evs)
	}
}

// The per-partition series follow partition_metrics: sparse where the
// coordinator answers, every partition in full, none in none; the counts
// are served in every mode.
func TestCoordinatorSeriesByMode(t *testing.T) {
	rs := []int32{1, 2, 3}
	s := coordinatorsAt(probed(snapshotAt(0, rs, part{1, rs, rs})), 0.5,
		answering(1), CoordinatorPartition{State: CoordinatorLoading, Coordinator: 2, Reason: "COORDINATOR_LOAD_IN_PROGRESS"}, answering(3))
	carryTransitions(nil, s)
	for _, tc := range []struct {
		mode      settings.PartitionMetrics
		partition int
	}{{settings.PartitionMetricsLean, 1}, {settings.PartitionMetricsUnhealthy, 1}, {settings.PartitionMetricsFull, 3}, {settings.PartitionMetricsNone, 0}} {
		sink := seriesSink{}
		emitCoordinators(sink, "main", s, tc.mode)
		count := func(name string) int {
			n := 0
			for key := range sink {
				if strings.HasPrefix(key, name+"{") {
					n++
				}
			}
			return n
		}
		if got := count("kafka_coordinator_partition_state"); got != tc.partition {
			t.Errorf("%s: %d kafka_coordinator_partition_state series, want %d", tc.mode, got, tc.partition)
		}
		if got := count("kafka_coordinator_partitions"); got != int(coordinatorStates) {
			t.Errorf("%s: %d kafka_coordinator_partitions series, want one per state", tc.mode, got)
		}
		if got := sink[`kafka_coordinator_partitions{kafka_cluster="main",kind="group",state="loading"}`]; got != 1 {
			t.Errorf("%s: loading partitions %v, want 1", tc.mode, got)
		}
	}
}

// Group protocol types are named by clients: only the known ones become
// label values. States fold Kafka's into what an operator asks.
func TestGroupLabels(t *testing.T) {
	for in, want := range map[string]string{"consumer": "consumer", "connect": "connect", "": "none", "evil\"label\n": "other", "sr": "other"} {
		if got := groupProtocol(in); got != want {
			t.Errorf("protocol %q: %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"Stable": "stable", "PreparingRebalance": "rebalancing", "CompletingRebalance": "rebalancing",
		"Assigning": "rebalancing", "Reconciling": "reconciling", "Empty": "empty", "Dead": "dead", "NotReady": "unknown", "": "unknown"} {
		if got := groupState(in); got != want {
			t.Errorf("state %q: %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"Ongoing": "ongoing", "PrepareCommit": "completing", "PrepareAbort": "completing",
		"PrepareEpochFence": "completing", "Empty": "idle", "CompleteCommit": "idle", "CompleteAbort": "idle", "Dead": "dead", "Evil\n": "unknown"} {
		if got := transactionState(in); got != want {
			t.Errorf("transaction state %q: %q, want %q", in, got, want)
		}
	}
}

// A stop's answer says what it moves to other coordinators, and leaves out
// what the read could not tell rather than say 0.
func TestCoordinatorMovesInTheAnswer(t *testing.T) {
	rs := []int32{1, 2, 3}
	s := coordinatorsAt(probed(snapshotAt(0, rs, part{1, rs, rs})), 0.5, answering(1), answering(2), answering(1))
	s.computeBudget(0)
	s.Coordinators.Groups = map[int32]*BrokerGroups{1: {Total: 3, ByProtocol: map[string]int{"consumer": 2, "none": 1}}, 3: {Total: 0, ByProtocol: map[string]int{}}}
	s.Coordinators.Transactions = map[int32]*BrokerTransactions{1: {Total: 4, ByState: map[string]int{"ongoing": 1, "completing": 1, "idle": 2}}, 2: {Total: 0, ByState: map[string]int{}}}
	for _, tc := range []struct {
		broker string
		want   map[string]float64
		absent []string
	}{
		{"1", map[string]float64{"group_coordinator_partitions_moved": 2, "groups_moved": 3, "groups_moved_consumer": 2, "groups_moved_none": 1, "groups_moved_connect": 0,
			"transactional_ids_moved": 4, "transactions_in_flight_moved": 2}, []string{"transaction_coordinator_partitions_moved"}},
		// Broker 3 did not answer ListTransactions: no transactional id figure.
		{"3", map[string]float64{"group_coordinator_partitions_moved": 0, "groups_moved": 0}, []string{"transactional_ids_moved", "transactions_in_flight_moved"}},
		// Broker 2 did not answer ListGroups: no group figure.
		{"2", map[string]float64{"group_coordinator_partitions_moved": 1, "transactional_ids_moved": 0, "transactions_in_flight_moved": 0}, []string{"groups_moved", "groups_moved_consumer"}},
	} {
		a, err := answerBudget(s, budget.Question{Scope: ScopeBroker, ID: tc.broker})
		if err != nil {
			t.Fatal(err)
		}
		for fact, want := range tc.want {
			if got, ok := a.Facts[fact]; !ok || got != want {
				t.Errorf("broker %s: fact %s = %v (served %v), want %v", tc.broker, fact, got, ok, want)
			}
		}
		for _, fact := range tc.absent {
			if got, ok := a.Facts[fact]; ok {
				t.Errorf("broker %s: fact %s = %v, want it left out", tc.broker, fact, got)
			}
		}
	}
}

// FindCoordinator naming a coordinator is not the coordinator answering:
// a partition stays unknown until its coordinator answers (a coordinator
// too old for the question, in a cluster being upgraded, never says
// answering).
func TestNamedCoordinatorIsNotAnswering(t *testing.T) {
	keys := coordinatorProbeKeys(CoordinatorGroup, 3)
	found := kmsg.NewPtrFindCoordinatorResponse()
	found.Version = findCoordinatorBatchVersion
	for i, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID = key, int32(i+1)
		found.Coordinators = append(found.Coordinators, c)
	}
	found.Coordinators[2].NodeID, found.Coordinators[2].ErrorCode = -1, kerr.CoordinatorNotAvailable.Code
	read := &CoordinatorRead{Partitions: make([]CoordinatorPartition, len(keys))}
	// Broker 2 is not among the live brokers.
	byNode := read.named(found, keys, map[int32]*kgo.Broker{1: nil})
	want := []CoordinatorState{CoordinatorUnknown, CoordinatorUnknown, CoordinatorUnavailable}
	for i, p := range read.Partitions {
		if p.State != want[i] {
			t.Errorf("partition %d: %v (%s), want %v", i, p.State, p.Reason, want[i])
		}
	}
	if len(byNode) != 1 || len(byNode[1]) != 1 || byNode[1][0] != 0 {
		t.Errorf("to ask: %v, want partition 0 of broker 1", byNode)
	}
}

// The share coordinators' question is an inter-broker request: a cluster
// with an authorizer refuses it unless the exporter has ClusterAction.
// Refused, the kind is neither served nor asked for an hour (each refusal
// is an authorizer log entry), logged once; answered again, it is served.
func TestShareCoordinatorsRefused(t *testing.T) {
	var logged bytes.Buffer
	now := time.Date(2026, 12, 7, 13, 0, 0, 0, time.UTC)
	s := &source{logger: log.NewLogfmtLogger(&logged), now: func() time.Time { return now }}
	r := &coordinatorReader{}
	refusedRead := &CoordinatorRead{ReadAt: now, Partitions: []CoordinatorPartition{
		{State: CoordinatorUnknown, Coordinator: -1, Reason: kerrName(kerr.ClusterAuthorizationFailed)},
		{State: CoordinatorUnknown, Coordinator: -1, Reason: kerrName(kerr.ClusterAuthorizationFailed)},
	}}
	r.last = &coordinatorRead{}
	r.last.reads[CoordinatorShare] = refusedRead
	for _, step := range []struct {
		after time.Duration
		want  bool
	}{{0, true}, {time.Minute, true}, {shareRefusedPause - time.Second, true}, {shareRefusedPause, false}} {
		now = refusedRead.ReadAt.Add(step.after)
		if got := r.shareRefused(s); got != step.want {
			t.Errorf("%s after the refusal: refused %v, want %v", step.after, got, step.want)
		}
	}
	if n := strings.Count(logged.String(), "level=warn"); n != 1 || !strings.Contains(logged.String(), "ClusterAction") {
		t.Errorf("want one warning naming ClusterAction, got:\n%s", logged.String())
	}
	// Asked again after the pause, and answered: served, the pause over.
	answered := &CoordinatorRead{ReadAt: now, Partitions: []CoordinatorPartition{{State: CoordinatorAnswering, Coordinator: 1}, {State: CoordinatorLoading, Coordinator: 2}}}
	r.last.reads[CoordinatorShare] = answered
	if r.shareRefused(s) || !r.shareRefusedAt.IsZero() {
		t.Errorf("an answered read after the pause: still refused (since %s)", r.shareRefusedAt)
	}
	// Another refusal (a group ACL, not ClusterAction) is unknown, not refused.
	r.last.reads[CoordinatorShare] = &CoordinatorRead{ReadAt: now.Add(time.Minute), Partitions: []CoordinatorPartition{{State: CoordinatorUnknown, Reason: kerrName(kerr.GroupAuthorizationFailed)}}}
	if r.shareRefused(s) {
		t.Error("GROUP_AUTHORIZATION_FAILED counted as the share question refused")
	}
}
