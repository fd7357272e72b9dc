package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/kafka"
)

// budgetTopics are the failure budget test's topics on the 5-node lab
// (racks: 1, 3, 5 in rack-1; 2, 4 in rack-2), each with its min ISR and
// its partitions' replicas (the first leads). Broker 1 and broker 5 hold
// only "safe" (RF 3, min ISR 2) and "loose" (min ISR 1) partitions: safe
// to stop. Broker 2 holds two "strict" partitions (min ISR = RF = 2);
// broker 4 the RF 1 "single" one.
var budgetTopics = []struct {
	name     string
	minISR   int
	replicas [][]int32
}{
	{"safe", 2, [][]int32{{1, 2, 3}, {2, 3, 4}, {3, 4, 5}, {4, 5, 1}, {5, 1, 2}}},
	{"strict", 2, [][]int32{{2, 3}, {3, 4}, {4, 2}}},
	{"single", 1, [][]int32{{4}}},
	{"loose", 1, [][]int32{{1, 2, 3}}},
}

// stopPrediction is what the exporter says stopping one broker or rack
// would do.
type stopPrediction struct {
	safe                 float64
	offline, underMinISR float64
	unsafe               []string
}

func (p stopPrediction) String() string {
	return fmt.Sprintf("safe=%v offline=%v under_min_isr=%v unsafe=%v", p.safe, p.offline, p.underMinISR, p.unsafe)
}

// predictionOf reads the budget series of one broker (scope "broker") or
// rack ("rack"); ok is false while any of them is missing.
func predictionOf(m exportertest.Metrics, scope, id string) (stopPrediction, bool) {
	labels := map[string]string{"kafka_cluster": "lab", scope: id}
	var p stopPrediction
	var ok1, ok2, ok3 bool
	p.safe, ok1 = m.Value("kafka_"+scope+"_safe_to_stop", labels)
	p.offline, ok2 = m.Value("kafka_"+scope+"_stop_affected_partitions", map[string]string{scope: id, "effect": "offline"})
	p.underMinISR, ok3 = m.Value("kafka_"+scope+"_stop_affected_partitions", map[string]string{scope: id, "effect": "under_min_isr"})
	reasons := m.Series("kafka_"+scope+"_stop_unsafe", labels)
	for _, s := range reasons {
		if s.Value == 1 {
			p.unsafe = append(p.unsafe, s.Labels["reason"])
		}
	}
	sort.Strings(p.unsafe)
	return p, ok1 && ok2 && ok3 && len(reasons) == len(kafka.StopReasons)
}

// clusterView reads partitions' leaders and ISRs with an admin client of
// its own (a Metadata request per read): the cluster's view, independent
// of the exporter.
type clusterView struct {
	bootstrap []string
	mu        sync.Mutex
	admin     sarama.ClusterAdmin
	minISR    map[string]int
	topics    []string
}

func newClusterView(t *testing.T, bootstrap []string) *clusterView {
	t.Helper()
	v := &clusterView{bootstrap: bootstrap, minISR: map[string]int{}}
	t.Cleanup(func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.admin != nil {
			v.admin.Close()
		}
	})
	for _, topic := range budgetTopics {
		v.minISR[topic.name] = topic.minISR
		v.topics = append(v.topics, topic.name)
	}
	return v
}

// partitions reads the watched topics' partitions.
func (v *clusterView) partitions() (map[string][]*sarama.PartitionMetadata, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.admin == nil {
		conf := lab.ClientConfig()
		conf.Metadata.Retry.Max = 0
		admin, err := sarama.NewClusterAdmin(v.bootstrap, conf)
		if err != nil {
			return nil, err
		}
		v.admin = admin
	}
	topics, err := v.admin.DescribeTopics(v.topics)
	if err != nil {
		// The admin client sends to the broker the metadata named
		// controller (in KRaft, any broker), which may be the one just
		// stopped: the next read starts afresh.
		v.admin.Close()
		v.admin = nil
		return nil, err
	}
	out := map[string][]*sarama.PartitionMetadata{}
	for _, tm := range topics {
		if tm.Err != sarama.ErrNoError && len(tm.Partitions) == 0 {
			return nil, fmt.Errorf("topic %s: %w", tm.Name, tm.Err)
		}
		out[tm.Name] = tm.Partitions
	}
	if len(out) != len(v.topics) {
		return nil, fmt.Errorf("described %d of %d topics", len(out), len(v.topics))
	}
	return out, nil
}

// refused returns the watched partitions the cluster shows without a
// leader ("offline") or with fewer in-sync replicas than min ISR
// ("under_min_isr"), as "topic/partition what".
func (v *clusterView) refused() ([]string, error) {
	parts, err := v.partitions()
	if err != nil {
		return nil, err
	}
	var out []string
	for topic, ps := range parts {
		for _, p := range ps {
			switch {
			case p.Leader < 0:
				out = append(out, fmt.Sprintf("%s/%d offline", topic, p.ID))
			case len(p.Isr) < v.minISR[topic]:
				out = append(out, fmt.Sprintf("%s/%d under_min_isr", topic, p.ID))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// watchWhileDown reads the cluster's view every 200 ms and writes with
// acks=all to every partition of the topics named until stop is closed,
// and returns what went wrong: partitions the cluster showed offline or
// under min ISR at any read, and writes that failed after the producer's
// retries, with how many writes succeeded.
func watchWhileDown(t *testing.T, bootstrap []string, view *clusterView, writeTo []string, stop <-chan struct{}) func() (refused []string, failed []string, written, reads int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{}
	var failed []string
	written, reads := 0, 0
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			bad, err := view.refused()
			if err != nil {
				continue // a read at a broker that just went away; the next one counts
			}
			mu.Lock()
			reads++
			for _, b := range bad {
				seen[b] = true
			}
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		conf := lab.ClientConfig()
		conf.Producer.Partitioner = sarama.NewManualPartitioner
		// A user's producer retries for minutes (delivery.timeout.ms); a
		// killed leader is fenced after broker.session.timeout.ms (3 s).
		conf.Producer.Retry.Max = 40
		producer, err := sarama.NewSyncProducer(bootstrap, conf)
		if err != nil {
			mu.Lock()
			failed = append(failed, "producer: "+err.Error())
			mu.Unlock()
			return
		}
		defer producer.Close()
		for i := 0; ; i++ {
			for _, topic := range writeTo {
				for p := range budgetPartitions(topic) {
					select {
					case <-stop:
						return
					default:
					}
					_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: int32(p), Value: sarama.StringEncoder(fmt.Sprint("budget ", i))})
					mu.Lock()
					if err != nil {
						failed = append(failed, fmt.Sprintf("%s/%d: %v", topic, p, err))
					} else {
						written++
					}
					mu.Unlock()
				}
			}
		}
	}()
	return func() ([]string, []string, int, int) {
		wg.Wait()
		var refused []string
		for b := range seen {
			refused = append(refused, b)
		}
		sort.Strings(refused)
		return refused, failed, written, reads
	}
}

func budgetPartitions(topic string) int {
	for _, bt := range budgetTopics {
		if bt.name == topic {
			return len(bt.replicas)
		}
	}
	return 0
}

// refusedByKafkaTopics is kafka-topics.sh's own answer: the partitions of
// the budget topics it lists with --under-min-isr-partitions (which counts
// a partition without a leader too) and with --unavailable-partitions.
func refusedByKafkaTopics(t *testing.T, cluster *lab.KafkaCluster) (underMinISR, unavailable []string) {
	t.Helper()
	const topics = "safe|strict|single|loose"
	runs := cluster.DescribeTopicsBatch(t, []string{"--topic", topics, "--under-min-isr-partitions"}, []string{"--topic", topics, "--unavailable-partitions"})
	for _, p := range runs[0] {
		underMinISR = append(underMinISR, p.Key())
	}
	for _, p := range runs[1] {
		unavailable = append(unavailable, p.Key())
	}
	return underMinISR, unavailable
}

// askBudget asks the exporter's failure budget endpoint (path is
// budget.SafeToStopPath or budget.RecoveredPath) about one broker or rack
// of cluster "lab", and returns the HTTP status and the answer.
func askBudget(t *testing.T, exporter *exportertest.Exporter, path, scope, id string) (int, budget.Answer) {
	t.Helper()
	status, a, msg := queryBudget(t, exporter, path, url.Values{"system": {"kafka"}, "cluster": {"lab"}, scope: {id}})
	if msg != "" {
		t.Logf("GET %s %s=%s: %d %s", path, scope, id, status, msg)
	}
	return status, a
}

// samePartitions reports whether the answer lists exactly the partitions
// kafka-topics.sh listed.
func samePartitions(a budget.Answer, listed []string) bool {
	got, want := slices.Clone(a.AtRisk), slices.Clone(listed)
	sort.Strings(got)
	sort.Strings(want)
	return a.AtRiskTotal == len(listed) && slices.Equal(got, want)
}

// settled waits until the cluster's view lists none of the brokers gone in
// any ISR (Kafka fences a dead broker after broker.session.timeout.ms and
// takes it out of every ISR, the last member of one included under ELR)
// nor as a leader.
func settled(t *testing.T, view *clusterView, gone ...int32) {
	t.Helper()
	lab.WaitFor(t, 60*time.Second, 250*time.Millisecond, func() (bool, string) {
		parts, err := view.partitions()
		if err != nil {
			return false, err.Error()
		}
		for topic, ps := range parts {
			for _, p := range ps {
				if slices.Contains(gone, p.Leader) {
					return false, fmt.Sprintf("%s/%d led by %d", topic, p.ID, p.Leader)
				}
				for _, id := range p.Isr {
					if slices.Contains(gone, id) && len(p.Isr) > 1 {
						return false, fmt.Sprintf("%s/%d ISR %v", topic, p.ID, p.Isr)
					}
				}
			}
		}
		return true, ""
	})
}

// TestKafkaBudgetPredictsTheStop checks the failure budget, prediction
// against outcome, on a real 5-node KRaft lab (combined broker/controller
// nodes, so every broker is a voter). For brokers the exporter calls safe,
// a SIGTERM (broker 1) and a kill -9 (broker 5): while each is down, the
// cluster's own metadata never shows a watched partition offline or under
// min ISR, and acks=all writes to every partition of "safe" and "loose"
// keep succeeding; /api/v1/recovered says not_registered while broker 1 is
// down and yes once the cluster shows it back in every ISR. For a rack
// (rack-2: brokers 2 and 4) and for a second broker while broker 5 is down
// (broker 2), the exporter's counts of partitions the stop would take
// offline or under min ISR are what kafka-topics.sh
// --under-min-isr-partitions and --unavailable-partitions list afterwards,
// and /api/v1/safe-to-stop named exactly those partitions beforehand. Last,
// with two of five voters down, the exporter says every survivor's stop
// breaks the quorum majority and tolerates no more voter losses; stopping
// one leaves the cluster unable to change metadata (a CreateTopics sent to
// a surviving broker times out), which is what a lost quorum means.
func TestKafkaBudgetPredictsTheStop(t *testing.T) {
	cluster := lab.SharedKafka(t, lab.KafkaOptions{Nodes: 5})
	bootstrap := cluster.Bootstrap()
	admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	for _, bt := range budgetTopics {
		assignment := map[int32][]int32{}
		for p, replicas := range bt.replicas {
			assignment[int32(p)] = replicas
		}
		minISR := fmt.Sprint(bt.minISR)
		err := admin.CreateTopic(bt.name, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: assignment,
			ConfigEntries: map[string]*string{"min.insync.replicas": &minISR}}, false)
		if err != nil {
			t.Fatalf("create topic %s: %v", bt.name, err)
		}
	}
	admin.Close()
	view := newClusterView(t, bootstrap)
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(bootstrap, ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")

	expect := func(what string, want map[string]string) exportertest.Metrics {
		t.Helper()
		m, _ := waitMetrics(t, exporter, 60*time.Second, what, func(m exportertest.Metrics) (bool, string) {
			var diffs []string
			for key, w := range want {
				scope, id, _ := strings.Cut(key, " ")
				p, ok := predictionOf(m, scope, id)
				if got := p.String(); !ok || got != w {
					diffs = append(diffs, fmt.Sprintf("%s: %s (complete %v), want %s", key, got, ok, w))
				}
			}
			sort.Strings(diffs)
			return len(diffs) == 0, strings.Join(diffs, "\n")
		})
		return m
	}
	healthy := map[string]string{
		"broker 1":    "safe=1 offline=0 under_min_isr=0 unsafe=[]",
		"broker 2":    "safe=0 offline=0 under_min_isr=2 unsafe=[partitions_under_min_isr]",
		"broker 3":    "safe=0 offline=0 under_min_isr=2 unsafe=[partitions_under_min_isr]",
		"broker 4":    "safe=0 offline=1 under_min_isr=2 unsafe=[partitions_offline partitions_under_min_isr]",
		"broker 5":    "safe=1 offline=0 under_min_isr=0 unsafe=[]",
		"rack rack-1": "safe=0 offline=0 under_min_isr=6 unsafe=[partitions_under_min_isr quorum_majority]", // three of the five voters
		"rack rack-2": "safe=0 offline=2 under_min_isr=3 unsafe=[partitions_offline partitions_under_min_isr]",
	}
	m := expect("the healthy cluster's budget", healthy)
	for until, want := range map[string]float64{"under_min_isr": 0, "offline": 0} {
		if v := value(t, m, "kafka_broker_losses_tolerated", map[string]string{"until": until}); v != want {
			t.Errorf("losses tolerated until %s = %v, want %v (strict is at min ISR, single has one replica)", until, v, want)
		}
	}
	if v := value(t, m, "kafka_quorum_voter_losses_tolerated", nil); v != 2 {
		t.Errorf("voter losses tolerated = %v, want 2 of 5 voters", v)
	}
	if refused, _ := refusedByKafkaTopics(t, cluster); len(refused) != 0 {
		t.Fatalf("kafka-topics.sh lists partitions under min ISR before any stop: %v", refused)
	}

	// Safe, SIGTERM: nothing refused while it is down.
	stopSafely := func(id int32, kill bool) {
		t.Helper()
		stop := make(chan struct{})
		results := watchWhileDown(t, bootstrap, view, []string{"safe", "loose"}, stop)
		time.Sleep(time.Second)
		if kill {
			cluster.Kill(t, id)
		} else {
			cluster.Stop(t, id)
		}
		settled(t, view, id)
		// Several of the exporter's refreshes with the broker gone.
		time.Sleep(5 * time.Second)
		close(stop)
		refused, failed, written, reads := results()
		how := map[bool]string{true: "kill -9", false: "SIGTERM"}[kill]
		t.Logf("FIGURE kafka budget: %s of broker %d, called safe: %d acks=all writes succeeded, %d failed; %d reads of the cluster's metadata, partitions refused: %v",
			how, id, written, len(failed), reads, refused)
		if reads < 10 {
			t.Errorf("%s of broker %d: only %d reads of the cluster's metadata while it was down; nothing was checked", how, id, reads)
		}
		if len(refused) > 0 {
			t.Errorf("%s of broker %d, called safe: the cluster showed %v", how, id, refused)
		}
		if len(failed) > 0 || written == 0 {
			t.Errorf("%s of broker %d, called safe: %d acks=all writes failed (%d succeeded): %v", how, id, len(failed), written, failed[:min(len(failed), 5)])
		}
	}
	stopSafely(1, false)
	// A broker stopped cleanly stays registered, fenced (Kafka 4.0+ lists
	// fenced brokers: DescribeCluster v2); the answer says so.
	if code, a := askBudget(t, exporter, budget.RecoveredPath, "broker", "1"); code != http.StatusConflict || len(a.Findings) == 0 || a.Findings[0].Reason != "fenced" {
		t.Errorf("recovered broker 1 while it is stopped: %d %+v, want 409 fenced", code, a)
	}
	cluster.Restart(t, 1)
	m = expect("broker 1 back in every ISR", healthy)
	// The cluster's view says broker 1 is back in every ISR it belongs to:
	// the recovered question agrees.
	lab.WaitFor(t, 60*time.Second, 250*time.Millisecond, func() (bool, string) {
		parts, err := view.partitions()
		if err != nil {
			return false, err.Error()
		}
		for topic, ps := range parts {
			for _, p := range ps {
				if slices.Contains(p.Replicas, 1) && !slices.Contains(p.Isr, 1) {
					return false, fmt.Sprintf("%s/%d ISR %v", topic, p.ID, p.Isr)
				}
			}
		}
		return true, ""
	})
	lab.WaitFor(t, 10*time.Second, 250*time.Millisecond, func() (bool, string) {
		code, a := askBudget(t, exporter, budget.RecoveredPath, "broker", "1")
		return code == http.StatusOK && a.Safe, fmt.Sprintf("%d %+v", code, a)
	})

	// The rack: rack-2's loss, as predicted.
	predicted, _ := predictionOf(m, "rack", "rack-2")
	code, rackAnswer := askBudget(t, exporter, budget.SafeToStopPath, "rack", "rack-2")
	if code != http.StatusConflict || rackAnswer.Safe || !slices.Equal(rackAnswer.Members, []string{"2", "4"}) {
		t.Errorf("safe-to-stop rack-2: %d %+v, want 409, unsafe, members 2 and 4", code, rackAnswer)
	}
	cluster.Kill(t, 2)
	cluster.Kill(t, 4)
	settled(t, view, 2, 4)
	under, unavailable := refusedByKafkaTopics(t, cluster)
	if !samePartitions(rackAnswer, under) {
		t.Errorf("rack-2 lost: the exporter named %v (%d) at risk; kafka-topics.sh lists %v under min ISR", rackAnswer.AtRisk, rackAnswer.AtRiskTotal, under)
	}
	t.Logf("rack-2 lost: predicted %s; kafka-topics.sh under min ISR %v, unavailable %v", predicted, under, unavailable)
	if float64(len(under)) != predicted.offline+predicted.underMinISR || float64(len(unavailable)) != predicted.offline {
		t.Errorf("rack-2 lost: predicted %v offline and %v more under min ISR; kafka-topics.sh lists %d under min ISR %v, %d unavailable %v",
			predicted.offline, predicted.underMinISR, len(under), under, len(unavailable), unavailable)
	}
	cluster.Restart(t, 2)
	cluster.Restart(t, 4)
	expect("brokers 2 and 4 back in every ISR", healthy)

	// Safe, kill -9; broker 5 then stays down.
	stopSafely(5, true)

	// A second broker while one is down: broker 2's stop now also takes
	// safe/4 (on 5, 1, 2) under min ISR, and deepens damage already there.
	m = expect("the budget with broker 5 down", map[string]string{
		"broker 1": "safe=0 offline=0 under_min_isr=2 unsafe=[cluster_degraded partitions_under_min_isr]",
		"broker 2": "safe=0 offline=0 under_min_isr=3 unsafe=[cluster_degraded partitions_under_min_isr]",
	})
	if v := value(t, m, "kafka_quorum_voter_losses_tolerated", nil); v != 1 {
		t.Errorf("voter losses tolerated with voter 5 down = %v, want 1", v)
	}
	predicted, _ = predictionOf(m, "broker", "2")
	_, brokerAnswer := askBudget(t, exporter, budget.SafeToStopPath, "broker", "2")
	cluster.Kill(t, 2)
	settled(t, view, 2, 5)
	under, unavailable = refusedByKafkaTopics(t, cluster)
	if !samePartitions(brokerAnswer, under) {
		t.Errorf("broker 2 killed with 5 down: the exporter named %v (%d) at risk; kafka-topics.sh lists %v under min ISR", brokerAnswer.AtRisk, brokerAnswer.AtRiskTotal, under)
	}
	t.Logf("broker 2 killed with 5 down: predicted %s; kafka-topics.sh under min ISR %v, unavailable %v", predicted, under, unavailable)
	if float64(len(under)) != predicted.offline+predicted.underMinISR || float64(len(unavailable)) != predicted.offline {
		t.Errorf("broker 2 killed with 5 down: predicted %v offline and %v more under min ISR; kafka-topics.sh lists %d under min ISR %v, %d unavailable %v",
			predicted.offline, predicted.underMinISR, len(under), under, len(unavailable), unavailable)
	}

	// A voter while two are down: three of five left, a bare majority.
	m, _ = waitMetrics(t, exporter, 60*time.Second, "no voter loss tolerated with 2 and 5 down", func(m exportertest.Metrics) (bool, string) {
		v, _ := m.Value("kafka_quorum_voter_losses_tolerated", nil)
		return v == 0, m.Describe("kafka_quorum_voter_losses_tolerated", nil) + m.Describe("kafka_quorum_voter_caught_up_age_seconds", nil)
	})
	for _, id := range []string{"1", "3", "4"} {
		if v := value(t, m, "kafka_broker_stop_unsafe", map[string]string{"broker": id, "reason": "quorum_majority"}); v != 1 {
			t.Errorf("broker %s: quorum_majority = %v with voters 2 and 5 down, want 1", id, v)
		}
	}
	// A metadata change sent to broker 1, which stays up: a KRaft broker
	// forwards it to the active controller, so it succeeds only while the
	// quorum has one.
	probe := func(name string) error {
		conf := lab.ClientConfig()
		conf.Net.ReadTimeout = 15 * time.Second
		broker := sarama.NewBroker(cluster.BrokerAddr(1))
		if err := broker.Open(conf); err != nil {
			return err
		}
		defer broker.Close()
		resp, err := broker.CreateTopics(&sarama.CreateTopicsRequest{Version: 3, Timeout: 5 * time.Second,
			TopicDetails: map[string]*sarama.TopicDetail{name: {NumPartitions: 1, ReplicationFactor: 1}}})
		if err != nil {
			return err
		}
		if e := resp.TopicErrors[name]; e != nil && e.Err != sarama.ErrNoError {
			return e
		}
		return nil
	}
	if err := probe("quorum-probe-before"); err != nil {
		t.Fatalf("metadata change with three of five voters: %v", err)
	}
	cluster.Kill(t, 3)
	if err := probe("quorum-probe-after"); err == nil {
		t.Errorf("a metadata change succeeded after the stop the exporter said breaks the quorum majority")
	} else {
		t.Logf("voter 3 killed with 2 and 5 down, as predicted the quorum is lost: CreateTopic: %v", err)
	}
}
