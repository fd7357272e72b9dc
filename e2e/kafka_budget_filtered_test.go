package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaBudgetFilteredRoll: a roll gated by an exporter whose topic
// filter watches orders.* only (issue 42, 4). legacy-roll, outside the
// filter, has its one partition on brokers 1 and 2 with min ISR 2. With
// the default failure_budget.unwatched_topics (judge), broker 1's stop is
// refused, naming legacy-roll/0; with unwatched_topics: name it is
// answered safe, naming legacy-roll among the topics it did not judge.
// The stop is then done: kafka-topics.sh lists legacy-roll/0 under min
// ISR and an acks=all write to it is refused, so the judging exporter was
// right. After the restart, the judging exporter says broker 1 recovered
// only once the cluster shows it back in legacy-roll/0's ISR.
func TestKafkaBudgetFilteredRoll(t *testing.T) {
	const watched, legacy = "orders.roll", "legacy-roll"
	c := lab.SharedKafka(t, lab.KafkaOptions{})
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	for topic, bt := range map[string]struct {
		replicas []int32
		minISR   string
	}{watched: {[]int32{1, 2, 3}, "1"}, legacy: {[]int32{1, 2}, "2"}} {
		err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: map[int32][]int32{0: bt.replicas},
			ConfigEntries:     map[string]*string{"min.insync.replicas": &bt.minISR}}, false)
		if err != nil {
			admin.Close()
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	admin.Close()
	start := func(mode string) *exportertest.Exporter {
		e := exportertest.Start(t, "--config.file="+faultConfig(t, fmt.Sprintf(`kafka:
  - name: lab
    bootstrap_servers: [%s]
    refresh_interval: 1s
    topics: {include: 'orders\..*'}
    failure_budget: {unwatched_topics: %s}
`, strings.Join(c.Bootstrap(), ", "), mode)))
		e.WaitReady(t, 60*time.Second)
		return e
	}
	judging, naming := start("judge"), start("name")

	// The prediction, from both.
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		status, a := askBudget(t, judging, budget.SafeToStopPath, "broker", "1")
		return status == http.StatusConflict && slices.Contains(a.AtRisk, legacy+"/0") && hasReason(a, "partitions_under_min_isr"),
			fmt.Sprintf("judge: %d %+v", status, a)
	})
	lab.WaitFor(t, 60*time.Second, 500*time.Millisecond, func() (bool, string) {
		status, a := askBudget(t, naming, budget.SafeToStopPath, "broker", "1")
		named := len(a.NotJudged) == 1 && strings.Contains(a.NotJudged[0], legacy)
		return status == http.StatusOK && a.Safe && named, fmt.Sprintf("name: %d %+v", status, a)
	})

	// The outcome.
	c.Stop(t, 1)
	runs := c.DescribeTopicsBatch(t, []string{"--topic", watched + "|" + legacy, "--under-min-isr-partitions"})
	var under []string
	for _, p := range runs[0] {
		under = append(under, p.Key())
	}
	if !slices.Equal(under, []string{legacy + "/0"}) {
		t.Errorf("with broker 1 stopped, kafka-topics.sh --under-min-isr-partitions lists %v, want %s/0 alone", under, legacy)
	}
	if err := produceAcksAll(c.Bootstrap(), legacy); !errors.Is(err, sarama.ErrNotEnoughReplicas) {
		t.Errorf("an acks=all write to %s with broker 1 stopped: %v, want NOT_ENOUGH_REPLICAS", legacy, err)
	}
	if err := produceAcksAll(c.Bootstrap(), watched); err != nil {
		t.Errorf("an acks=all write to %s with broker 1 stopped: %v, want it accepted", watched, err)
	}

	// The roll's next question: is broker 1 back?
	c.Restart(t, 1)
	restarted := time.Now()
	var yesAfter time.Duration
	lab.WaitFor(t, 90*time.Second, 250*time.Millisecond, func() (bool, string) {
		status, a := askBudget(t, judging, budget.RecoveredPath, "broker", "1")
		if status != http.StatusOK {
			return false, fmt.Sprintf("recovered: %d %v", status, reasonsOf(a))
		}
		yesAfter = time.Since(restarted)
		return true, ""
	})
	isr := partitionISR(t, c.Bootstrap(), legacy)
	t.Logf("FIGURE kafka budget, filtered roll: broker 1 recovered per the judging exporter %s after its restart returned; %s/0 ISR then %v",
		yesAfter.Round(10*time.Millisecond), legacy, isr)
	if !slices.Contains(isr, 1) {
		t.Errorf("the judging exporter said broker 1 recovered while %s/0's ISR is %v", legacy, isr)
	}
}

// produceAcksAll writes one record to partition 0 of topic with
// acks=all and no retry, and returns the broker's answer.
func produceAcksAll(bootstrap []string, topic string) error {
	conf := lab.ClientConfig()
	conf.Producer.RequiredAcks = sarama.WaitForAll
	conf.Producer.Return.Successes = true
	conf.Producer.Retry.Max = 0
	conf.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(bootstrap, conf)
	if err != nil {
		return err
	}
	defer p.Close()
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder("roll")})
	return err
}

// partitionISR reads partition 0 of topic's ISR from the cluster.
func partitionISR(t *testing.T, bootstrap []string, topic string) []int32 {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(bootstrap, lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	topics, err := admin.DescribeTopics([]string{topic})
	if err != nil || len(topics) != 1 || len(topics[0].Partitions) != 1 {
		t.Fatalf("describe %s: %v %+v", topic, err, topics)
	}
	return topics[0].Partitions[0].Isr
}
