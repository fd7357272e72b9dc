package e2e

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// hangingMaxTimeout is the lab brokers' transaction.max.timeout.ms in
// TestKafkaHangingTransaction: a minute, find-hanging's smallest
// --max-transaction-timeout but 0.
const hangingMaxTimeout = time.Minute

// TestKafkaHangingTransaction makes a hanging transaction as apache/kafka
// PR #22937 describes it, on a real 3-broker cluster whose brokers set
// transaction.max.timeout.ms to a minute: a transactional producer writes
// to a partition of two replicas, leader L and follower F; F is SIGSTOPped
// and leaves the ISR; the producer commits (the commit marker is on L
// alone); L is killed with kill -9, F resumed and elected leader
// uncleanly. F holds the transaction's record and no marker, while its
// coordinator (the third broker) has completed the transaction: nothing
// will ever end it, and read_committed consumers stop there.
//
// Kafka's own tool is the oracle: kafka-transactions.sh find-hanging
// --max-transaction-timeout 0 lists it at once (so the state is hanging),
// with 1 (the brokers' timeout) not before the producer's last write is a
// minute old. The exporter counts it hanging exactly then: no read that
// began within the minute counts it, every read that began after it does,
// and its event names the producer and offset find-hanging names. Aborted
// by hand (kafka-transactions.sh abort, the runbook's fix), the consumer
// reads on and the exporter says it ended.
func TestKafkaHangingTransaction(t *testing.T) {
	c := lab.StartKafka(t, lab.KafkaOptions{Env: []string{fmt.Sprintf("KAFKA_LAB_TRANSACTION_MAX_TIMEOUT_MS=%d", hangingMaxTimeout.Milliseconds())}})
	const topic, txID = "hanging-transaction", "hanging-transaction-tx"
	coordinator := transactionCoordinator(t, c, txID)
	var replicas []int32 // leader L, then follower F
	for id := int32(1); id <= int32(c.Nodes()); id++ {
		if id != coordinator {
			replicas = append(replicas, id)
		}
	}
	leader, follower := replicas[0], replicas[1]
	createTopicOn(t, c, topic, replicas, map[string]string{"min.insync.replicas": "1", "unclean.leader.election.enable": "true"})
	const refresh = time.Second
	e := startLabExporter(t, c, refresh)

	c.Produce(t, topic, 0, records(2)...)
	tx, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DialTimeout(time.Second),
		kgo.TransactionalID(txID), kgo.TransactionTimeout(30*time.Second),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	// acks=all with F in the ISR: F has the record when this returns.
	if err := tx.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("in-the-transaction")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resume := faultHang(t, "kafka", c.PID(follower))
	lab.WaitFor(t, time.Minute, 200*time.Millisecond, func() (bool, string) {
		_, isr, err := partitionState(c.BrokerAddr(leader), topic)
		return err == nil && slices.Equal(isr, []int32{leader}), fmt.Sprintf("ISR %v (%v), want [%d] once the stopped follower %d is fenced", isr, err, leader, follower)
	})
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit with the follower stopped: %v", err)
	}
	// The commit returns once the coordinator has prepared it; it writes
	// the marker to L after. Killed before that, L leaves the marker to
	// F, the coordinator writes it there, and nothing hangs.
	waitTransactionState(t, tx, txID, "CompleteCommit")
	c.Kill(t, leader)
	resume()
	electUnclean(t, c, coordinator, topic, follower)
	c.Produce(t, topic, 0, records(1)...) // after the stuck transaction: read_committed consumers never see it
	reader := startCommittedReader(t, c, topic)

	at0 := c.FindHanging(t, topic, 0)
	if len(at0) != 1 || at0[0].Partition != 0 {
		t.Fatalf("find-hanging --max-transaction-timeout 0 lists %+v after the unclean election, want the one transaction on partition 0", at0)
	}
	h := at0[0]
	due := h.LastTimestamp.Add(hangingMaxTimeout)
	t.Logf("find-hanging --max-transaction-timeout 0: producer %d, open since offset %d, last write %s; hanging by the brokers' timeout from %s (coordinator %d, leader %d killed, follower %d elected)",
		h.ProducerID, h.StartOffset, clock(h.LastTimestamp), clock(due), coordinator, leader, follower)
	if time.Until(due) > 10*time.Second {
		if got := c.FindHanging(t, topic, 1); len(got) != 0 {
			t.Errorf("find-hanging --max-transaction-timeout 1 lists %+v %s before the transaction is a minute old", got, time.Until(due).Round(time.Second))
		}
	}
	seen := watchHanging(t, e, due, 2*hangingMaxTimeout)
	listedAt, listed := time.Time{}, []lab.HangingTransaction(nil)
	lab.WaitFor(t, time.Minute, time.Second, func() (bool, string) {
		listed, listedAt = c.FindHanging(t, topic, 1), time.Now()
		return len(listed) == 1, fmt.Sprintf("find-hanging --max-transaction-timeout 1 lists %+v", listed)
	})
	if listed[0] != h {
		t.Errorf("find-hanging lists %+v with the brokers' timeout, %+v with none", listed[0], h)
	}
	t.Logf("FIGURE kafka hanging transaction: find-hanging (timeout 1 min) listed it %s after its last write; the exporter's first read counting it began %s after (refresh %s)",
		listedAt.Sub(h.LastTimestamp).Round(10*time.Millisecond), seen.Sub(h.LastTimestamp).Round(10*time.Millisecond), refresh)
	checkHangingEvent(t, e, h)
	checkTransactionalIDsMoved(t, c, e, []int32{coordinator, follower})
	if offsets, _ := reader.got(); !slices.Equal(offsets, []int64{0, 1}) {
		t.Errorf("the read_committed consumer read offsets %v, want [0 1]: it stops at the hanging transaction at offset %d", offsets, h.StartOffset)
	}

	// The runbook's fix: abort it at its start offset. The consumer reads
	// on, and the exporter says the transaction no longer hangs.
	c.Transactions(t, "abort", "--topic", topic, "--partition", "0", "--start-offset", fmt.Sprint(h.StartOffset))
	lab.WaitFor(t, time.Minute, 100*time.Millisecond, func() (bool, string) {
		offsets, _ := reader.got()
		return len(offsets) > 2, fmt.Sprintf("the read_committed consumer read offsets %v", offsets)
	})
	waitMetrics(t, e, time.Minute, "no hanging transaction", func(m exportertest.Metrics) (bool, string) {
		n, ok := m.Value("kafka_hanging_transactions", nil)
		return ok && n == 0, m.Describe("kafka_hanging_transactions", nil)
	})
	waitEvents(t, e, time.Minute, "transaction_hanging_ended", func(evs []events.Event) bool {
		return eventIndex(evs, "transaction_hanging_ended", topic, 0) >= 0
	})
	if got := c.FindHanging(t, topic, 0); len(got) != 0 {
		t.Errorf("find-hanging still lists %+v after the abort", got)
	}
}

// watchHanging scrapes e until a read that began past due counts one
// hanging transaction, and fails the test for any read that counts one
// before due. It returns when that read began.
func watchHanging(t *testing.T, e *exportertest.Exporter, due time.Time, timeout time.Duration) time.Time {
	t.Helper()
	var seen time.Time
	waitMetrics(t, e, timeout, "a read counting the transaction hanging", func(m exportertest.Metrics) (bool, string) {
		n, ok := m.Value("kafka_hanging_transactions", nil)
		at, _ := m.Value("kafka_transactions_last_read_timestamp_seconds", nil)
		readAt := time.UnixMilli(int64(at*1000 + 0.5))
		switch {
		case ok && n > 0 && readAt.Before(due):
			t.Errorf("kafka_hanging_transactions = %v from a read begun at %s, before the transaction was idle for the brokers' timeout (%s)", n, clock(readAt), clock(due))
		case ok && n == 0 && readAt.After(due.Add(time.Second)):
			t.Errorf("kafka_hanging_transactions = 0 from a read begun at %s, after the transaction was idle for the brokers' timeout (%s)", clock(readAt), clock(due))
		}
		if ok && n == 1 && !readAt.Before(due) {
			seen = readAt
			return true, ""
		}
		return false, fmt.Sprintf("%s (read begun at %s, hanging from %s)", m.Describe("kafka_hanging_transactions", nil), clock(readAt), clock(due))
	})
	return seen
}

// checkHangingEvent wants the event log's transaction_hanging event to
// name what find-hanging names: the partition, producer and start offset.
func checkHangingEvent(t *testing.T, e *exportertest.Exporter, h lab.HangingTransaction) {
	t.Helper()
	evs := waitEvents(t, e, 30*time.Second, "transaction_hanging", func(evs []events.Event) bool {
		return eventIndex(evs, "transaction_hanging", h.Topic, int(h.Partition)) >= 0
	})
	ev := evs[eventIndex(evs, "transaction_hanging", h.Topic, int(h.Partition))]
	if want := fmt.Sprintf("open since offset %d", h.StartOffset); !strings.Contains(ev.Before, want) {
		t.Errorf("transaction_hanging event says %q, want %q", ev.Before, want)
	}
	if want := fmt.Sprintf("producer %d ", h.ProducerID); !strings.Contains(ev.After, want) {
		t.Errorf("transaction_hanging event says %q, want %q", ev.After, want)
	}
}

// transactionCoordinator is the broker that coordinates transactional id
// id (FindCoordinator, which creates __transaction_state on first use).
func transactionCoordinator(t *testing.T, c *lab.KafkaCluster, id string) int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var node int32
	lab.WaitFor(t, time.Minute, 200*time.Millisecond, func() (bool, string) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 1, []string{id}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Coordinators) == 1 {
			err = kerr.ErrorForCode(resp.Coordinators[0].ErrorCode)
			node = resp.Coordinators[0].NodeID
		}
		return err == nil, fmt.Sprintf("find the coordinator of %q: %v", id, err)
	})
	return node
}

// waitTransactionState waits until transactional id id's coordinator
// (DescribeTransactions, which cl routes to it) says state.
func waitTransactionState(t *testing.T, cl *kgo.Client, id, state string) {
	t.Helper()
	lab.WaitFor(t, time.Minute, 100*time.Millisecond, func() (bool, string) {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.TransactionStates) == 1 {
			if err = kerr.ErrorForCode(resp.TransactionStates[0].ErrorCode); err == nil && resp.TransactionStates[0].State == state {
				return true, ""
			}
			return false, fmt.Sprintf("transaction %q is %s (%v), want %s", id, resp.TransactionStates[0].State, err, state)
		}
		return false, fmt.Sprintf("describe transaction %q: %v", id, err)
	})
}

// createTopicOn creates topic with one partition on replicas (the first
// leads it) and configs, and waits until it has that leader.
func createTopicOn(t *testing.T, c *lab.KafkaCluster, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(c.Bootstrap(), lab.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	entries := map[string]*string{}
	for k, v := range configs {
		entries[k] = &v
	}
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: map[int32][]int32{0: replicas}, ConfigEntries: entries}, false); err != nil {
		t.Fatalf("create %s on %v: %v", topic, replicas, err)
	}
	lab.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		l, _, err := partitionState(c.BrokerAddr(replicas[0]), topic)
		return err == nil && l == replicas[0], fmt.Sprintf("leader %d (%v), want %d", l, err, replicas[0])
	})
}

// partitionState is partition 0 of topic's leader and ISR, from a
// metadata request to the broker at addr alone (a client of the whole
// cluster may ask the stopped one).
func partitionState(addr, topic string) (leader int32, isr []int32, err error) {
	b := sarama.NewBroker(addr)
	if err := b.Open(lab.ClientConfig()); err != nil {
		return -1, nil, err
	}
	defer b.Close()
	resp, err := b.GetMetadata(&sarama.MetadataRequest{Version: 5, Topics: []string{topic}})
	if err != nil {
		return -1, nil, err
	}
	for _, tm := range resp.Topics {
		for _, pm := range tm.Partitions {
			if tm.Name == topic && pm.ID == 0 {
				if pm.Err != sarama.ErrNoError && pm.Err != sarama.ErrLeaderNotAvailable && pm.Err != sarama.ErrReplicaNotAvailable {
					return -1, nil, pm.Err
				}
				return pm.Leader, pm.Isr, nil
			}
		}
	}
	return -1, nil, fmt.Errorf("%s has no partition 0 in %s's metadata", topic, addr)
}

// electUnclean elects replica leader of topic's partition 0 out of sync
// (ElectLeaders, election type unclean, as kafka-leader-election.sh
// --election-type unclean does), asking broker via, and waits until
// metadata names it.
func electUnclean(t *testing.T, c *lab.KafkaCluster, via int32, topic string, leader int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BrokerAddr(via)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	lab.WaitFor(t, time.Minute, 500*time.Millisecond, func() (bool, string) {
		if l, _, err := partitionState(c.BrokerAddr(via), topic); err == nil && l == leader {
			return true, ""
		}
		req := kmsg.NewPtrElectLeadersRequest()
		req.ElectionType, req.TimeoutMillis = 1, 10_000
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if perr := kerr.ErrorForCode(rp.ErrorCode); perr != nil && err == nil {
						err = perr
					}
				}
			}
		}
		return false, fmt.Sprintf("unclean election of %d for %s/0: %v", leader, topic, err)
	})
}

// checkTransactionalIDsMoved wants, for the stop of each of brokers, the
// transactional ids kafka-transactions.sh list gives that broker as
// coordinator, in the exporter's series and in its safe-to-stop answer.
func checkTransactionalIDsMoved(t *testing.T, c *lab.KafkaCluster, e *exportertest.Exporter, brokers []int32) {
	t.Helper()
	listed := c.ListTransactions(t)
	for _, b := range brokers {
		want, inFlight := 0, 0
		for _, l := range listed {
			if l.Coordinator == b {
				want++
				if l.State == "Ongoing" || strings.HasPrefix(l.State, "Prepare") {
					inFlight++
				}
			}
		}
		series := map[string]string{"broker": fmt.Sprint(b)}
		m := e.Scrape(t)
		got := 0.0
		for _, x := range m.Series("kafka_broker_coordinated_transactional_ids", series) {
			got += x.Value
		}
		if got != float64(want) {
			t.Errorf("broker %d coordinates %v transactional ids by the exporter, %d by kafka-transactions.sh list %+v:\n%s",
				b, got, want, listed, m.Describe("kafka_broker_coordinated_transactional_ids", nil))
		}
		query := budget.SafeToStopPath + "?" + url.Values{"system": {"kafka"}, "cluster": {"lab"}, "broker": {fmt.Sprint(b)}}.Encode()
		a, ok := getAnswer(e, query)
		if got, served := a.Facts["transactional_ids_moved"]; !ok || !served || got != float64(want) {
			t.Errorf("broker %d's stop: transactional_ids_moved = %v (served %v), want %d as kafka-transactions.sh list says", b, got, served, want)
		}
		if got := a.Facts["transactions_in_flight_moved"]; got != float64(inFlight) {
			t.Errorf("broker %d's stop: transactions_in_flight_moved = %v, want %d", b, got, inFlight)
		}
	}
	t.Logf("kafka-transactions.sh list: %+v", listed)
}
