package kafka

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// budgetPart is one partition of a hand-built budget snapshot.
type budgetPart struct {
	topic         string
	minISR        int
	leader        int32
	replicas, isr []int32
	elr           []int32
}

// budgetSnapshot builds a snapshot of brokers 1..n (those in down not
// available), racks by rackOf (nil: none), and parts.
func budgetSnapshot(n int32, down []int32, rackOf map[int32]string, parts ...budgetPart) *Snapshot {
	s := &Snapshot{ReadAt: time.Unix(1000, 0), ELRKnown: true}
	for id := int32(1); id <= n; id++ {
		up := !slices.Contains(down, id)
		s.Brokers = append(s.Brokers, Broker{ID: id, Address: "127.0.0.1:909" + brokerLabel(id), Rack: rackOf[id], Up: up, Reachable: up})
	}
	byTopic := map[string]int{}
	for _, bp := range parts {
		i, ok := byTopic[bp.topic]
		if !ok {
			i = len(s.Topics)
			byTopic[bp.topic] = i
			s.Topics = append(s.Topics, Topic{Name: bp.topic, MinISR: bp.minISR})
		}
		t := &s.Topics[i]
		p := Partition{ID: int32(len(t.Partitions)), Leader: bp.leader, Replicas: bp.replicas, ISR: bp.isr}
		p.setELR(bp.elr, nil, false)
		t.Partitions = append(t.Partitions, p)
	}
	s.countRacks()
	return s
}

// effects summarises a budget: per scope, its counts and reasons.
func effects(list []StopEffect) map[string]string {
	out := map[string]string{}
	for i := range list {
		e := &list[i]
		var reasons []string
		for _, r := range StopReasons {
			if e.Unsafe(r) {
				reasons = append(reasons, string(r))
			}
		}
		verdict := "safe"
		if !e.Safe() {
			verdict = "unsafe " + strings.Join(reasons, ",")
		}
		out[e.ID] = verdict + " " + strings.Join([]string{
			"offline=" + brokerLabel(int32(e.Offline)), "under=" + brokerLabel(int32(e.UnderMinISR)),
			"headroom=" + brokerLabel(int32(e.BelowHeadroom)), "degraded=" + brokerLabel(int32(e.Degraded)),
		}, " ")
	}
	return out
}

func TestComputeBudget(t *testing.T) {
	all := []int32{1, 2, 3}
	cases := []struct {
		name     string
		snap     *Snapshot
		headroom int
		brokers  map[string]string
		racks    map[string]string
		// losses until under min ISR and until offline.
		underLosses, offlineLosses int
	}{
		{
			name: "healthy RF 3, min ISR 2: any one broker may stop",
			snap: budgetSnapshot(3, nil, nil, budgetPart{"t", 2, 1, all, all, nil}, budgetPart{"t", 2, 2, all, all, nil}),
			brokers: map[string]string{
				"1": "safe offline=0 under=0 headroom=0 degraded=0",
				"2": "safe offline=0 under=0 headroom=0 degraded=0",
				"3": "safe offline=0 under=0 headroom=0 degraded=0",
			},
			underLosses: 1, offlineLosses: 2,
		},
		{
			name:     "headroom 1 makes RF 3, min ISR 2 unsafe to touch",
			snap:     budgetSnapshot(3, nil, nil, budgetPart{"t", 2, 1, all, all, nil}),
			headroom: 1,
			brokers: map[string]string{
				"1": "unsafe min_isr_headroom offline=0 under=0 headroom=1 degraded=0",
				"2": "unsafe min_isr_headroom offline=0 under=0 headroom=1 degraded=0",
				"3": "unsafe min_isr_headroom offline=0 under=0 headroom=1 degraded=0",
			},
			underLosses: 1, offlineLosses: 2,
		},
		{
			name: "broker 3 down: the others would take its partitions under min ISR; stopping 3 again changes nothing",
			snap: budgetSnapshot(3, []int32{3}, nil,
				budgetPart{"t", 2, 1, all, []int32{1, 2}, nil},
				// Not touched by 3: only 1 and 2 hold it.
				budgetPart{"u", 2, 1, []int32{1, 2}, []int32{1, 2}, nil}),
			brokers: map[string]string{
				"1": "unsafe partitions_under_min_isr,cluster_degraded offline=0 under=2 headroom=0 degraded=1",
				"2": "unsafe partitions_under_min_isr,cluster_degraded offline=0 under=2 headroom=0 degraded=1",
				"3": "safe offline=0 under=0 headroom=0 degraded=0",
			},
			underLosses: 0, offlineLosses: 1,
		},
		{
			name: "a broker down elsewhere is no reason on its own",
			snap: budgetSnapshot(4, []int32{4}, nil, budgetPart{"t", 1, 1, all, all, nil}, budgetPart{"t", 1, 4, []int32{4}, []int32{4}, nil}),
			brokers: map[string]string{
				"1": "safe offline=0 under=0 headroom=0 degraded=0",
				"2": "safe offline=0 under=0 headroom=0 degraded=0",
				"3": "safe offline=0 under=0 headroom=0 degraded=0",
				"4": "safe offline=0 under=0 headroom=0 degraded=0",
			},
			// The RF 1 partition on broker 4 has a leader in the snapshot
			// but no available ISR member: nothing left to lose.
			underLosses: 0, offlineLosses: 0,
		},
		{
			name: "RF 1: its broker's stop takes it offline, counted once at its worst",
			snap: budgetSnapshot(3, nil, nil, budgetPart{"one", 1, 2, []int32{2}, []int32{2}, nil}),
			brokers: map[string]string{
				"1": "safe offline=0 under=0 headroom=0 degraded=0",
				"2": "unsafe partitions_offline offline=1 under=0 headroom=0 degraded=0",
				"3": "safe offline=0 under=0 headroom=0 degraded=0",
			},
			underLosses: 0, offlineLosses: 0,
		},
		{
			name: "min ISR = RF: any replica's stop refuses acks=all writes",
			snap: budgetSnapshot(3, nil, nil, budgetPart{"all", 3, 1, all, all, nil}),
			brokers: map[string]string{
				"1": "unsafe partitions_under_min_isr offline=0 under=1 headroom=0 degraded=0",
				"2": "unsafe partitions_under_min_isr offline=0 under=1 headroom=0 degraded=0",
				"3": "unsafe partitions_under_min_isr offline=0 under=1 headroom=0 degraded=0",
			},
			underLosses: 0, offlineLosses: 2,
		},
		{
			// Whether the stop of an ISR member refuses acks=all writes is
			// unknown: never safe (issue 42, 3). A broker out of its ISR is.
			name: "min ISR unknown: the stop of an in-sync replica is not judged",
			snap: budgetSnapshot(3, nil, nil, budgetPart{"t", 0, 1, []int32{1, 2}, []int32{1, 2}, nil}),
			brokers: map[string]string{
				"1": "unsafe not_judged offline=0 under=0 headroom=0 degraded=0",
				"2": "unsafe not_judged offline=0 under=0 headroom=0 degraded=0",
				"3": "safe offline=0 under=0 headroom=0 degraded=0",
			},
			underLosses: -1, offlineLosses: 1,
		},
		{
			name: "ELR: an eligible leader replica keeps the last ISR member's stop from taking it offline",
			snap: budgetSnapshot(3, nil, nil, budgetPart{"t", 2, 1, all, []int32{1}, []int32{2}}),
			brokers: map[string]string{
				"1": "unsafe cluster_degraded offline=0 under=0 headroom=0 degraded=1",
				"2": "unsafe cluster_degraded offline=0 under=0 headroom=0 degraded=1",
				"3": "safe offline=0 under=0 headroom=0 degraded=0",
			},
			underLosses: 0, offlineLosses: 1,
		},
		{
			name: "already offline partition: no new effect, and no broker touches it",
			snap: budgetSnapshot(3, []int32{3}, nil, budgetPart{"t", 1, NoLeader, []int32{3}, []int32{3}, nil}),
			brokers: map[string]string{
				"1": "safe offline=0 under=0 headroom=0 degraded=0",
				"2": "safe offline=0 under=0 headroom=0 degraded=0",
				"3": "safe offline=0 under=0 headroom=0 degraded=0",
			},
			underLosses: 0, offlineLosses: 0,
		},
		{
			name: "racks: losing a rack with two of three replicas",
			snap: budgetSnapshot(3, nil, map[int32]string{1: "a", 2: "a", 3: "b"}, budgetPart{"t", 2, 1, all, all, nil}),
			brokers: map[string]string{
				"1": "safe offline=0 under=0 headroom=0 degraded=0",
				"2": "safe offline=0 under=0 headroom=0 degraded=0",
				"3": "safe offline=0 under=0 headroom=0 degraded=0",
			},
			racks: map[string]string{
				"a": "unsafe partitions_under_min_isr offline=0 under=1 headroom=0 degraded=0",
				"b": "safe offline=0 under=0 headroom=0 degraded=0",
			},
			underLosses: 1, offlineLosses: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.snap.computeBudget(c.headroom)
			b := c.snap.Budget
			if got := effects(b.Brokers); !reflect.DeepEqual(got, c.brokers) {
				t.Errorf("brokers:\n got %v\nwant %v", got, c.brokers)
			}
			if got := effects(b.Racks); len(c.racks) > 0 && !reflect.DeepEqual(got, c.racks) {
				t.Errorf("racks:\n got %v\nwant %v", got, c.racks)
			} else if len(c.racks) == 0 && b.Racks != nil {
				t.Errorf("racks = %v without broker.rack, want none", got)
			}
			if b.LossesUntilUnderMinISR != c.underLosses || b.LossesUntilOffline != c.offlineLosses {
				t.Errorf("losses until under min ISR, offline = %d, %d; want %d, %d",
					b.LossesUntilUnderMinISR, b.LossesUntilOffline, c.underLosses, c.offlineLosses)
			}
			if b.QuorumLossesTolerated != -1 {
				t.Errorf("quorum losses = %d without a quorum, want -1", b.QuorumLossesTolerated)
			}
		})
	}
}

func TestComputeBudgetWithoutELR(t *testing.T) {
	// The same partition as the ELR case, on a cluster whose ELR is unknown:
	// broker 1 is its only candidate.
	s := budgetSnapshot(3, nil, nil, budgetPart{"t", 2, 1, []int32{1, 2, 3}, []int32{1}, []int32{2}})
	s.ELRKnown = false
	s.computeBudget(0)
	if got := effects(s.Budget.Brokers)["1"]; got != "unsafe partitions_offline,cluster_degraded offline=1 under=0 headroom=0 degraded=1" {
		t.Errorf("broker 1: %s", got)
	}
}

func TestComputeBudgetQuorum(t *testing.T) {
	voters := func(ages ...time.Duration) *Quorum {
		q := &Quorum{LeaderID: 1}
		for i, age := range ages {
			q.Voters = append(q.Voters, QuorumVoter{ID: int32(i + 1), CaughtUpAge: age})
		}
		return q
	}
	cases := []struct {
		name      string
		quorum    *Quorum
		down      []int32
		tolerated int
		brokers   map[string]bool // broker: quorum_majority
		degraded  map[string]bool // broker: cluster_degraded
	}{
		{"three caught up", voters(0, time.Second, 0), nil, 1,
			map[string]bool{"1": false, "2": false, "3": false}, map[string]bool{"1": false, "2": false, "3": false}},
		{"voter 3 lagging", voters(0, 0, time.Minute), nil, 0,
			map[string]bool{"1": true, "2": true, "3": false}, map[string]bool{"1": true, "2": true, "3": false}},
		{"voter 3's broker down, its age not yet grown", voters(0, 0, 0), []int32{3}, 0,
			map[string]bool{"1": true, "2": true, "3": false}, map[string]bool{"1": true, "2": true, "3": false}},
		{"five voters, one lagging", voters(0, 0, 0, 0, time.Minute), nil, 1,
			map[string]bool{"1": false, "5": false}, map[string]bool{"1": true, "5": false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := budgetSnapshot(int32(len(c.quorum.Voters)), c.down, nil)
			s.Quorum = c.quorum
			s.computeBudget(0)
			if s.Budget.QuorumLossesTolerated != c.tolerated {
				t.Errorf("voter losses tolerated = %d, want %d", s.Budget.QuorumLossesTolerated, c.tolerated)
			}
			for _, e := range s.Budget.Brokers {
				if want, ok := c.brokers[e.ID]; ok && e.Unsafe(ReasonQuorumMajority) != want {
					t.Errorf("broker %s quorum_majority = %v, want %v", e.ID, !want, want)
				}
				if want, ok := c.degraded[e.ID]; ok && e.Unsafe(ReasonClusterDegraded) != want {
					t.Errorf("broker %s cluster_degraded = %v, want %v", e.ID, !want, want)
				}
			}
		})
	}
}

func TestAnswerBudget(t *testing.T) {
	all := []int32{1, 2, 3}
	s := budgetSnapshot(3, nil, nil, budgetPart{"t", 2, 1, all, []int32{1, 2}, nil}, budgetPart{"t", 2, 1, all, all, nil})
	s.computeBudget(0)

	a, err := answerBudget(s, budget.Question{Scope: ScopeBroker, ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Safe || len(a.Findings) != 2 || a.Findings[0].Reason != ReasonPartitionsUnderMinISR || a.Findings[0].Count != 1 ||
		a.Findings[1].Reason != ReasonClusterDegraded {
		t.Errorf("broker 1: %+v", a)
	}
	if !reflect.DeepEqual(a.AtRisk, []string{"t/0"}) || a.AtRiskTotal != 1 {
		t.Errorf("at risk %v (%d), want [t/0]", a.AtRisk, a.AtRiskTotal)
	}
	if a.Facts["losses_until_under_min_isr"] != 0 || a.Facts["losses_until_offline"] != 1 {
		t.Errorf("facts %v", a.Facts)
	}
	if a, err := answerBudget(s, budget.Question{Scope: ScopeBroker, ID: "3"}); err != nil || !a.Safe || len(a.Findings) != 0 {
		t.Errorf("broker 3: %+v, %v; want safe", a, err)
	}

	// Broker 3 is out of the ISR of partition 0: not recovered.
	a, err = answerBudget(s, budget.Question{Scope: ScopeBroker, ID: "3", Recovered: true})
	if err != nil {
		t.Fatal(err)
	}
	if a.Safe || len(a.Findings) != 1 || a.Findings[0].Reason != ReasonOutOfSync || a.Findings[0].Count != 1 || !reflect.DeepEqual(a.AtRisk, []string{"t/0"}) {
		t.Errorf("broker 3 recovered: %+v", a)
	}
	if a, err := answerBudget(s, budget.Question{Scope: ScopeBroker, ID: "2", Recovered: true}); err != nil || !a.Safe {
		t.Errorf("broker 2 recovered: %+v, %v; want safe", a, err)
	}

	_, err = answerBudget(s, budget.Question{Scope: ScopeBroker, ID: "7"})
	if !errors.Is(err, budget.ErrUnknown) || !strings.Contains(err.Error(), `"7"`) || !strings.Contains(err.Error(), "1, 2, 3") {
		t.Errorf("unknown broker: %v", err)
	}
	if _, err := answerBudget(s, budget.Question{Scope: ScopeRack, ID: "a"}); !errors.Is(err, budget.ErrUnsupported) {
		t.Errorf("rack without racks: %v", err)
	}
	if _, err := answerBudget(s, budget.Question{Scope: budget.Scope("node"), ID: "a"}); !errors.Is(err, budget.ErrUnsupported) {
		t.Errorf("node scope: %v", err)
	}

	down := budgetSnapshot(3, []int32{2}, map[int32]string{1: "a", 2: "a", 3: "b"}, budgetPart{"t", 2, 1, all, []int32{1, 3}, nil})
	down.computeBudget(0)
	a, err = answerBudget(down, budget.Question{Scope: ScopeBroker, ID: "2", Recovered: true})
	if err != nil || a.Safe || len(a.Findings) != 3 || a.Findings[0].Reason != ReasonNotRegistered || a.Findings[1].Reason != ReasonNotReachable {
		t.Errorf("broker 2 down, recovered: %+v, %v", a, err)
	}
	a, err = answerBudget(down, budget.Question{Scope: ScopeRack, ID: "b"})
	if err != nil || a.Safe || !reflect.DeepEqual(a.Members, []string{"3"}) {
		t.Errorf("rack b: %+v, %v", a, err)
	}
	if _, err := answerBudget(down, budget.Question{Scope: ScopeRack, ID: "c"}); !errors.Is(err, budget.ErrUnknown) || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("unknown rack: %v", err)
	}
}

func TestAtRiskIsBounded(t *testing.T) {
	var parts []budgetPart
	for range budget.MaxAtRisk + 20 {
		parts = append(parts, budgetPart{"one", 1, 1, []int32{1}, []int32{1}, nil})
	}
	s := budgetSnapshot(1, nil, nil, parts...)
	s.computeBudget(0)
	e := s.Budget.Brokers[0]
	if len(e.AtRisk) != budget.MaxAtRisk || e.AtRiskTotal != budget.MaxAtRisk+20 || e.Offline != budget.MaxAtRisk+20 || e.AtRisk[0] != "one/0" {
		t.Errorf("at risk %d listed, %d total, %d offline, first %q", len(e.AtRisk), e.AtRiskTotal, e.Offline, e.AtRisk[0])
	}
}

// budgetBenchSnapshot builds the refresh's snapshot from md as refresh
// does after the Metadata request: racks set (one per broker, so both
// broker and rack what-ifs run), every broker reachable, the ELR known.
func budgetBenchSnapshot(md *sarama.MetadataResponse) *Snapshot {
	minISR := map[string]int{}
	for _, t := range md.Topics {
		minISR[t.Name] = 2
	}
	s := buildSnapshot(ownTopics(md), all, TopicConfigCache{MinISR: minISR}, nil, time.Now())
	for i := range s.Brokers {
		s.Brokers[i].Reachable = true
		s.Brokers[i].Rack = "rack-" + brokerLabel(s.Brokers[i].ID)
	}
	s.ELRKnown = true
	return s
}

// benchmarkRefreshBudget times a refresh's snapshot work (build, diff,
// counts) without the failure budget (headroom -1) and with it, for the
// ratio: BENCHMARKS.md. With headroom 1 every healthy partition of the
// synthetic cluster (RF 3, min ISR 2) is at risk: the slow path for all.
func benchmarkRefreshBudget(b *testing.B, partitions, headroom int) {
	md := syntheticMetadata(partitions)
	prev := budgetBenchSnapshot(md)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := budgetBenchSnapshot(md)
		carryTransitions(prev, next)
		next.countNoCleanLeader()
		next.countRacks()
		if headroom >= 0 {
			next.computeBudget(headroom)
		}
	}
}

func BenchmarkRefreshWithoutBudget100kPartitions(b *testing.B) {
	benchmarkRefreshBudget(b, 100_000, -1)
}
func BenchmarkRefreshWithBudget100kPartitions(b *testing.B) { benchmarkRefreshBudget(b, 100_000, 0) }
func BenchmarkRefreshWithBudgetHeadroom100kPartitions(b *testing.B) {
	benchmarkRefreshBudget(b, 100_000, 1)
}

// benchmarkBudget times the what-if alone.
func benchmarkBudget(b *testing.B, headroom int) {
	s := budgetBenchSnapshot(syntheticMetadata(100_000))
	s.countRacks()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.computeBudget(headroom)
	}
}

func BenchmarkBudget100kPartitions(b *testing.B)         { benchmarkBudget(b, 0) }
func BenchmarkBudgetHeadroom100kPartitions(b *testing.B) { benchmarkBudget(b, 1) }

// The budget's series, in every partition mode, with below_headroom only
// when the headroom is set.
func TestBudgetSeries(t *testing.T) {
	all := []int32{1, 2, 3}
	for _, mode := range settings.PartitionMetricsModes {
		for _, headroom := range []int{0, 1} {
			s := budgetSnapshot(3, nil, map[int32]string{1: "a", 2: "a", 3: "b"},
				budgetPart{"t", 2, 1, all, all, nil}, budgetPart{"one", 1, 3, []int32{3}, []int32{3}, nil})
			s.Quorum = &Quorum{LeaderID: 1, Voters: []QuorumVoter{{ID: 1}, {ID: 2}, {ID: 3}}}
			s.computeBudget(headroom)
			c := NewCollector()
			w := watcherServing(t, s)
			c.SetEmit("main", w, EmitState(mode))
			w.RefreshOnce(context.Background())
			headroomLines := ""
			if headroom > 0 {
				headroomLines = `
kafka_broker_stop_affected_partitions{broker="1",effect="below_headroom",kafka_cluster="main"} 1
kafka_broker_stop_affected_partitions{broker="2",effect="below_headroom",kafka_cluster="main"} 1
kafka_broker_stop_affected_partitions{broker="3",effect="below_headroom",kafka_cluster="main"} 1`
			}
			safe12 := map[int]string{0: "1", 1: "0"}[headroom]
			want := `
# HELP kafka_broker_safe_to_stop ` + metrics.brokerSafeToStop.Help + `
# TYPE kafka_broker_safe_to_stop gauge
kafka_broker_safe_to_stop{broker="1",kafka_cluster="main"} ` + safe12 + `
kafka_broker_safe_to_stop{broker="2",kafka_cluster="main"} ` + safe12 + `
kafka_broker_safe_to_stop{broker="3",kafka_cluster="main"} 0
# HELP kafka_broker_stop_affected_partitions ` + metrics.brokerStopAffected.Help + `
# TYPE kafka_broker_stop_affected_partitions gauge` + headroomLines + `
kafka_broker_stop_affected_partitions{broker="1",effect="offline",kafka_cluster="main"} 0
kafka_broker_stop_affected_partitions{broker="1",effect="under_min_isr",kafka_cluster="main"} 0
kafka_broker_stop_affected_partitions{broker="2",effect="offline",kafka_cluster="main"} 0
kafka_broker_stop_affected_partitions{broker="2",effect="under_min_isr",kafka_cluster="main"} 0
kafka_broker_stop_affected_partitions{broker="3",effect="offline",kafka_cluster="main"} 1
kafka_broker_stop_affected_partitions{broker="3",effect="under_min_isr",kafka_cluster="main"} 0
# HELP kafka_rack_safe_to_stop ` + metrics.rackSafeToStop.Help + `
# TYPE kafka_rack_safe_to_stop gauge
kafka_rack_safe_to_stop{kafka_cluster="main",rack="a"} 0
kafka_rack_safe_to_stop{kafka_cluster="main",rack="b"} 0
# HELP kafka_broker_losses_tolerated ` + metrics.brokerLossesTolerated.Help + `
# TYPE kafka_broker_losses_tolerated gauge
kafka_broker_losses_tolerated{kafka_cluster="main",until="offline"} 0
kafka_broker_losses_tolerated{kafka_cluster="main",until="under_min_isr"} 0
# HELP kafka_quorum_voter_losses_tolerated ` + metrics.quorumVoterLossesTolerated.Help + `
# TYPE kafka_quorum_voter_losses_tolerated gauge
kafka_quorum_voter_losses_tolerated{kafka_cluster="main"} 1
`
			if err := testutil.CollectAndCompare(c, strings.NewReader(want), "kafka_broker_safe_to_stop", "kafka_broker_stop_affected_partitions",
				"kafka_rack_safe_to_stop", "kafka_broker_losses_tolerated", "kafka_quorum_voter_losses_tolerated"); err != nil {
				t.Errorf("%s, headroom %d: %v", mode, headroom, err)
			}
			// Every reason, for every broker and rack: 0 means checked.
			if n := testutil.CollectAndCount(c, "kafka_broker_stop_unsafe", "kafka_rack_stop_unsafe"); n != 5*len(StopReasons) {
				t.Errorf("%s: %d stop_unsafe series, want %d", mode, n, 5*len(StopReasons))
			}
			if problems, err := testutil.CollectAndLint(c, "kafka_broker_safe_to_stop", "kafka_broker_stop_affected_partitions", "kafka_broker_stop_unsafe",
				"kafka_rack_safe_to_stop", "kafka_rack_stop_affected_partitions", "kafka_rack_stop_unsafe",
				"kafka_broker_losses_tolerated", "kafka_quorum_voter_losses_tolerated"); err != nil || len(problems) > 0 {
				t.Errorf("lint: %v %v", problems, err)
			}
		}
	}
}

// referenceEffect is the budget's rules applied the slow way, to one stop
// of the set stopped: the fast path and the shared walk must agree with it.
func referenceEffect(s *Snapshot, headroom int, stopped []int32) (offline, under, below, degraded int) {
	available := map[int32]bool{}
	for _, b := range s.Brokers {
		available[b.ID] = b.Up && b.Reachable
	}
	for _, t := range s.Topics {
		for _, p := range t.Partitions {
			var isr, elr, isrAfter, elrAfter []int32
			for _, id := range p.ISR {
				if available[id] {
					isr = append(isr, id)
					if !slices.Contains(stopped, id) {
						isrAfter = append(isrAfter, id)
					}
				}
			}
			if s.ELRKnown && !p.ELRStale() {
				for _, id := range p.ELR() {
					if available[id] && !slices.Contains(isr, id) {
						elr = append(elr, id)
						if !slices.Contains(stopped, id) {
							elrAfter = append(elrAfter, id)
						}
					}
				}
			}
			touches := len(isrAfter) < len(isr) || len(elrAfter) < len(elr)
			if !touches {
				continue
			}
			m := t.MinISR
			underNow := m > 0 && (p.UnderMinISR(m) || len(isr) < m)
			switch {
			case !p.Offline() && len(isrAfter)+len(elrAfter) == 0:
				offline++
			case m > 0 && !underNow && len(isrAfter) < m:
				under++
			case headroom > 0 && m > 0 && len(isrAfter) < len(isr) && len(isrAfter) >= m && len(isrAfter) < m+headroom:
				below++
			}
			if p.Offline() || underNow || len(isr) < p.ReplicationFactor() {
				degraded++
			}
		}
	}
	return
}

func TestComputeBudgetAgreesWithTheRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	pick := func(from []int32, n int) []int32 {
		c := slices.Clone(from)
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		return c[:n]
	}
	brokers := []int32{1, 2, 3, 4, 5}
	for round := range 300 {
		var down []int32
		for _, id := range brokers {
			if rng.IntN(6) == 0 {
				down = append(down, id)
			}
		}
		racks := map[int32]string{}
		if round%3 != 0 {
			for _, id := range brokers {
				racks[id] = "rack-" + brokerLabel(int32(rng.IntN(3)))
			}
		}
		var parts []budgetPart
		for range 40 {
			replicas := pick(brokers, 1+rng.IntN(3))
			isr := pick(replicas, rng.IntN(len(replicas)+1))
			leader := NoLeader
			if len(isr) > 0 && rng.IntN(8) != 0 {
				leader = isr[0]
			}
			var elr []int32
			if rng.IntN(3) == 0 {
				for _, id := range replicas {
					if !slices.Contains(isr, id) && rng.IntN(2) == 0 {
						elr = append(elr, id)
					}
				}
			}
			parts = append(parts, budgetPart{"t" + brokerLabel(int32(rng.IntN(3))), rng.IntN(4), leader, replicas, isr, elr})
		}
		s := budgetSnapshot(5, down, racks, parts...)
		// Topics get one min ISR each: the first partition's.
		headroom := rng.IntN(3)
		s.computeBudget(headroom)
		check := func(e StopEffect) {
			o, u, bl, d := referenceEffect(s, headroom, e.Members)
			if e.Offline != o || e.UnderMinISR != u || e.BelowHeadroom != bl || e.Degraded != d {
				t.Fatalf("round %d, stop of %s %v (headroom %d): offline %d under %d below %d degraded %d; the rules say %d %d %d %d",
					round, e.ID, e.Members, headroom, e.Offline, e.UnderMinISR, e.BelowHeadroom, e.Degraded, o, u, bl, d)
			}
		}
		for _, e := range s.Budget.Brokers {
			check(e)
		}
		for _, e := range s.Budget.Racks {
			check(e)
		}
	}
}

// TestBudgetNeverJudgesWhatItCannotRead: a broker the cluster lists as
// live that the exporter cannot reach, and a quorum that could not be read,
// make a stop not_judged, never safe (issue 42, 2 and 3): broker 2 leads
// every partition and is in every ISR; the exporter's dial to it fails.
func TestBudgetNeverJudgesWhatItCannotRead(t *testing.T) {
	all := []int32{1, 2, 3}
	cut := budgetSnapshot(3, nil, nil, budgetPart{"t", 2, 2, all, all, nil}, budgetPart{"t", 2, 2, all, all, nil})
	cut.Brokers[1].Reachable = false
	cut.computeBudget(0)
	a, err := answerBudget(cut, budget.Question{Scope: ScopeBroker, ID: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Safe || len(a.Findings) == 0 || a.Findings[0].Reason != ReasonNotJudged || !strings.Contains(a.Findings[0].Message, "could not reach it") {
		t.Errorf("stop of broker 2, live to the cluster and cut from the exporter: %+v, want not_judged", a)
	}
	if !strings.Contains(a.Advice, "cannot judge") {
		t.Errorf("advice %q does not say the stop cannot be judged", a.Advice)
	}
	// The others' stops are judged with broker 2 counted out: the ISR left
	// is 1 of min ISR 2.
	if got := effects(cut.Budget.Brokers)["1"]; !strings.Contains(got, "partitions_under_min_isr") || strings.Contains(got, "not_judged") {
		t.Errorf("stop of broker 1 with broker 2 unreachable: %s, want under min ISR, judged", got)
	}

	unread := budgetSnapshot(3, nil, nil, budgetPart{"t", 1, 1, all, all, nil})
	unread.QuorumUnread = "describe quorum: CLUSTER_AUTHORIZATION_FAILED"
	unread.computeBudget(0)
	for id, got := range effects(unread.Budget.Brokers) {
		if !strings.Contains(got, "not_judged") || strings.HasPrefix(got, "safe") {
			t.Errorf("stop of broker %s with the quorum unread: %s, want not_judged", id, got)
		}
	}
	a, err = answerBudget(unread, budget.Question{Scope: ScopeBroker, ID: "3"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Safe || !strings.Contains(a.Findings[len(a.Findings)-1].Message, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Errorf("answer with the quorum unread: %+v, want not safe, naming why", a)
	}
	// Read again: judged again.
	unread.QuorumUnread = ""
	unread.computeBudget(0)
	if got := effects(unread.Budget.Brokers)["3"]; !strings.HasPrefix(got, "safe") {
		t.Errorf("stop of broker 3 with the quorum read: %s, want safe", got)
	}
}

// TestRecoveredSaysWhatIsMissing: a registered but fenced broker is
// "fenced", not "not registered"; a broker the snapshot does not list (it
// holds no replica and has not registered yet) is not back rather than
// unknown, so that --after-restart --wait waits for it (issue 42, 7).
func TestRecoveredSaysWhatIsMissing(t *testing.T) {
	all := []int32{1, 2, 3}
	snap := budgetSnapshot(3, []int32{3}, nil, budgetPart{"t", 2, 1, all, []int32{1, 2}, nil})
	snap.FencedKnown = true
	snap.registered = map[int32]bool{1: false, 2: false, 3: true}
	snap.Brokers[2].Fenced = true
	snap.computeBudget(0)
	reasons := func(a budget.Answer) string {
		var r []string
		for _, f := range a.Findings {
			r = append(r, string(f.Reason))
		}
		return strings.Join(r, " ")
	}
	for _, c := range []struct{ id, want string }{
		{"3", "fenced not_reachable out_of_sync"},
		{"7", "not_registered not_reachable"},
		{"1", ""},
	} {
		a, err := answerBudget(snap, budget.Question{Scope: ScopeBroker, ID: c.id, Recovered: true})
		if err != nil {
			t.Errorf("recovered broker %s: %v", c.id, err)
			continue
		}
		if got := reasons(a); got != c.want || a.Safe != (c.want == "") {
			t.Errorf("recovered broker %s: reasons %q safe %v, want %q", c.id, got, a.Safe, c.want)
		}
	}
	if _, err := answerBudget(snap, budget.Question{Scope: ScopeBroker, ID: "seven", Recovered: true}); !errors.Is(err, budget.ErrUnknown) {
		t.Errorf("recovered broker \"seven\": err = %v, want ErrUnknown", err)
	}
	if _, err := answerBudget(snap, budget.Question{Scope: ScopeBroker, ID: "7"}); !errors.Is(err, budget.ErrUnknown) {
		t.Errorf("stop of unknown broker 7: err = %v, want ErrUnknown", err)
	}
}

// TestOfflineWithUncleanElectionSaysDataLoss: the stop of a partition's
// last in-sync replica, on a topic with unclean election on, says Kafka
// would elect an out-of-sync replica and lose writes, not only "no
// leader" (issue 42, 7).
func TestOfflineWithUncleanElectionSaysDataLoss(t *testing.T) {
	snap := budgetSnapshot(3, nil, nil, budgetPart{"t", 2, 1, []int32{1, 2, 3}, []int32{1}, nil})
	snap.Topics[0].UncleanElectionKnown, snap.Topics[0].UncleanElectionEnabled = true, true
	snap.computeBudget(0)
	a, err := answerBudget(snap, budget.Question{Scope: ScopeBroker, ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Safe || a.Findings[0].Reason != ReasonPartitionsOffline || !strings.Contains(a.Findings[0].Message, "lose the acknowledged writes") {
		t.Errorf("stop of the last ISR member with unclean election on: %+v", a.Findings)
	}
}

// TestBudgetJudgesInternalTopicsWhateverTheFilter: a roll gated with a
// topic filter that leaves __consumer_offsets out still waits for the
// restarted broker to rejoin its ISR, and a stop that would take its last
// in-sync replica is not safe; the answers name the other topics the
// filter left out, which they did not judge (issue 42, 4).
func TestBudgetJudgesInternalTopicsWhateverTheFilter(t *testing.T) {
	md := &sarama.MetadataResponse{}
	for id := int32(1); id <= 3; id++ {
		md.AddBroker(fmt.Sprintf("127.0.0.1:909%d", id), id)
	}
	md.AddTopicPartition("orders.new", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil, sarama.ErrNoError)
	md.AddTopicPartition("__consumer_offsets", 0, 1, []int32{1, 3}, []int32{1}, nil, sarama.ErrNoError)
	md.AddTopicPartition("legacy", 0, 2, []int32{2, 3}, []int32{2}, nil, sarama.ErrNoError)
	configs := TopicConfigCache{MinISR: map[string]int{"orders.new": 2, "__consumer_offsets": 1, "legacy": 1}}
	snap := buildSnapshot(md, func(topic string) bool { return strings.HasPrefix(topic, "orders.") }, configs, nil, time.Unix(1000, 0))
	for i := range snap.Brokers {
		snap.Brokers[i].Reachable = true
	}
	snap.computeBudget(0)

	back, err := answerBudget(snap, budget.Question{Scope: ScopeBroker, ID: "3", Recovered: true})
	if err != nil {
		t.Fatal(err)
	}
	if back.Safe || !slices.Contains(back.AtRisk, "__consumer_offsets/0") {
		t.Errorf("broker 3, out of the ISR of __consumer_offsets/0 (filtered out): %+v, want not back", back)
	}
	stop, err := answerBudget(snap, budget.Question{Scope: ScopeBroker, ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if stop.Safe || !slices.Contains(stop.AtRisk, "__consumer_offsets/0") {
		t.Errorf("stop of broker 1, the last ISR member of __consumer_offsets/0: %+v, want not safe", stop)
	}
	if len(stop.NotJudged) != 1 || !strings.Contains(stop.NotJudged[0], "1 topic(s) outside the exporter's topic filter: legacy") {
		t.Errorf("the answer's not_judged = %q, want it to name legacy", stop.NotJudged)
	}
	if len(snap.Topics) != 1 {
		t.Errorf("the snapshot's watched topics = %d, want orders.new only: internal topics are judged, not served", len(snap.Topics))
	}
}

// TestBudgetJudgesTopicsOutsideTheFilter: with failure_budget's default
// unwatched_topics (judge), a topic the filter leaves out is judged as a
// watched one, with no series: the stop of the last in-sync replica of
// legacy/0 is not safe, and the restarted broker out of its ISR is not
// back. The answer then names nothing as not judged.
func TestBudgetJudgesTopicsOutsideTheFilter(t *testing.T) {
	md := &sarama.MetadataResponse{}
	for id := int32(1); id <= 3; id++ {
		md.AddBroker(fmt.Sprintf("127.0.0.1:909%d", id), id)
	}
	md.AddTopicPartition("orders.new", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil, sarama.ErrNoError)
	md.AddTopicPartition("legacy", 0, 2, []int32{2, 3}, []int32{2}, nil, sarama.ErrNoError)
	configs := TopicConfigCache{MinISR: map[string]int{"orders.new": 2, "legacy": 1}}
	include, err := config.NewRegexp(`orders\..*`)
	if err != nil {
		t.Fatal(err)
	}
	cfg := settings.Cluster{Topics: settings.TopicFilter{Include: include},
		FailureBudget: settings.Budget{UnwatchedTopics: settings.JudgeUnwatched}}
	snap := buildSnapshotJudging(md, cfg.Topics.Match, cfg.Judged, configs, nil, time.Unix(1000, 0))
	for i := range snap.Brokers {
		snap.Brokers[i].Reachable = true
	}
	snap.computeBudget(0)

	stop, err := answerBudget(snap, budget.Question{Scope: ScopeBroker, ID: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if stop.Safe || !slices.Contains(stop.AtRisk, "legacy/0") || len(stop.NotJudged) != 0 {
		t.Errorf("stop of broker 2, the last ISR member of legacy/0 (filtered out, judged): %+v, want not safe, legacy/0 at risk, nothing unjudged", stop)
	}
	back, err := answerBudget(snap, budget.Question{Scope: ScopeBroker, ID: "3", Recovered: true})
	if err != nil {
		t.Fatal(err)
	}
	if back.Safe || !slices.Contains(back.AtRisk, "legacy/0") {
		t.Errorf("broker 3, out of the ISR of legacy/0 (filtered out, judged): %+v, want not back", back)
	}
	if len(snap.Topics) != 1 || len(snap.UnwatchedJudged) != 1 || snap.UnwatchedTopics != 0 {
		t.Errorf("watched %d, judged only %d, named %d; want orders.new served, legacy judged, none named",
			len(snap.Topics), len(snap.UnwatchedJudged), snap.UnwatchedTopics)
	}
}
