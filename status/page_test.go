package status

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector/canary"
	"github.com/failover-exporter/failover_exporter/collector/episode"
	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/status/model"
	"github.com/failover-exporter/failover_exporter/systems/kafka"
	"github.com/failover-exporter/failover_exporter/systems/mirror"
	"github.com/failover-exporter/failover_exporter/systems/redis"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// kafkaWithDeadBroker is a cluster of topics*partitions RF 3 partitions on
// brokers 1-3 where broker 3 died 40 s ago: every partition is
// under-replicated, and partition 0 of topic t0 (RF 1 on broker 3) is
// offline.
func kafkaWithDeadBroker(topics, partitions int) *kafka.Snapshot {
	s := &kafka.Snapshot{ReadAt: t0.Add(40 * time.Second), Brokers: []kafka.Broker{
		{ID: 1, Address: "127.0.0.1:9091", Up: true, Reachable: true},
		{ID: 2, Address: "127.0.0.1:9092", Up: true, Reachable: true},
		{ID: 3, Address: "127.0.0.1:9093"},
	}}
	for c := range s.Episodes.Open {
		s.Episodes.Open[c] = map[kafka.PartitionKey]episode.Open{}
	}
	for ti := range topics {
		t := kafka.Topic{Name: fmt.Sprintf("t%d", ti), ReplicationFactor: 3, MinISR: 2}
		for pi := range partitions {
			p := kafka.Partition{ID: int32(pi), Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}
			key := kafka.PartitionKey{Topic: t.Name, Partition: p.ID}
			if ti == 0 && pi == 0 {
				p = kafka.Partition{ID: 0, Leader: kafka.NoLeader, Replicas: []int32{3}, ISR: []int32{3}}
				s.Episodes.Open[kafka.ConditionOffline][key] = episode.Open{Since: t0.Add(-5 * time.Second), StartSeen: true}
				s.Episodes.Open[kafka.ConditionUnderMinISR][key] = episode.Open{Since: t0, StartSeen: true}
				t.Offline++
				t.UnderMinISR++
			} else {
				s.Episodes.Open[kafka.ConditionUnderReplicated][key] = episode.Open{Since: t0, StartSeen: true}
				t.UnderReplicated++
			}
			t.Partitions = append(t.Partitions, p)
		}
		s.Topics = append(s.Topics, t)
	}
	return s
}

const (
	idA = "aaaaaaaa11111111111111111111111111111111"
	idB = "bbbbbbbb22222222222222222222222222222222"
	idD = "dddddddd44444444444444444444444444444444"
)

// redisFailingOver: master A (slots 0-8191) is FAIL since 3 s ago and its
// replica D not yet promoted; B owns the rest.
func redisFailingOver() *redis.Snapshot {
	s := &redis.Snapshot{ReadAt: t0.Add(40 * time.Second), SlotsOK: 8192, SlotsFail: 8192, Masters: 2, KnownNodes: 3, ViewsConsistent: true,
		Nodes: []redis.Node{
			{ID: idA, Addr: "127.0.0.1:7000", Role: redis.RoleMaster, State: redis.NodeStateFail, Slots: 8192},
			{ID: idB, Addr: "127.0.0.1:7001", Role: redis.RoleMaster, State: redis.NodeStateOK, Slots: 8192, Reachable: true},
			{ID: idD, Addr: "127.0.0.1:7003", Role: redis.RoleReplica, MasterID: idA, State: redis.NodeStateOK, Reachable: true,
				HasReplicationLag: true, ReplicationLagBytes: 12},
		},
		SlotRanges: []redis.SlotRange{{First: 0, Last: 8191, Owner: idA}, {First: 8192, Last: 16383, Owner: idB}},
	}
	s.Foreign = []redis.ForeignNode{{ID: "ffffffff55555555555555555555555555555555", Addr: "127.0.0.1:7009", Reason: redis.ForeignNotListed}}
	s.Episodes.Failovers = map[string]redis.FailoverEpisode{idA: {Open: episode.Open{Since: t0.Add(37 * time.Second), StartSeen: true}}}
	s.Episodes.SlotsUnserved = &episode.Open{Since: t0.Add(37 * time.Second), StartSeen: true}
	return s
}

// testPage renders Kafka cluster main and Redis cluster cache through
// their systems' builders, as main.go wires them.
func testPage(k *kafka.Snapshot, r *redis.Snapshot, log *events.Log) *Page {
	return &Page{
		Title: "Failover Exporter", Version: "test",
		Links: []Link{{Address: "/metrics", Text: "Metrics"}, {Address: "/-/healthy", Text: "Health"}},
		Sources: Sources{
			Clusters: func(now time.Time) []model.Cluster {
				return append(
					kafka.Views([]watch.Named[kafka.Snapshot]{{Name: "main", State: &watch.State[kafka.Snapshot]{Snapshot: k, Up: true, LastSuccess: k.ReadAt}}}, now),
					redis.Views([]watch.Named[redis.Snapshot]{{Name: "cache", State: &watch.State[redis.Snapshot]{Snapshot: r, Up: true, LastSuccess: r.ReadAt}}}, now)...)
			},
			Events: log,
		},
		now: func() time.Time { return t0.Add(41 * time.Second) },
	}
}

func render(t *testing.T, p *Page, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	body, _ := io.ReadAll(rec.Body)
	dumpPage(t, string(body))
	return rec.Code, string(body)
}

func TestPageShowsTheTrouble(t *testing.T) {
	elog := events.NewLog(10, log.NewNopLogger())
	var l events.List
	l.Add(t0, kafka.EventBrokerDown, events.BrokerSubject(3, "127.0.0.1:9093"), "", "")
	l.Add(t0, kafka.EventPartitionOffline, events.PartitionSubject("t0", 0), "3", "none")
	// The exporter's probe of broker 3 failed before the metadata said so.
	l.Events[len(l.Events)-1].FirstFailure = t0.Add(-3500 * time.Millisecond)
	// The write canary's events are the cluster's, with the leader it wrote to.
	canaryPartition := events.PartitionSubject("__failover_exporter_canary", 2)
	canaryPartition.NodeID = "3"
	l.Add(t0, canary.EventWriteFailing, canaryPartition, "", "NOT_ENOUGH_REPLICAS")
	// Subjects of the mirror flows' events: a topic, a connector's task.
	l.Add(t0, mirror.EventTopicMissing, events.Subject{Topic: "orders"}, "", "eu.orders")
	task := int32(0)
	l.Add(t0, mirror.EventConnectorState, events.ConnectorSubject("eu->us.MirrorSourceConnector", &task), "RUNNING", "FAILED")
	elog.Record("kafka", "main", l.All())
	var rl events.List
	rl.Add(t0.Add(37*time.Second), redis.EventNodeFail, events.NodeSubject(idA, "127.0.0.1:7000"), "pfail", "fail")
	rl.Add(t0.Add(37*time.Second), canary.EventAcknowledgedWritesLost, events.NodeSubject(idA, "127.0.0.1:7000"), "", "14")
	elog.Record("redis", "cache", rl.All())

	code, body := render(t, testPage(kafkaWithDeadBroker(2, 3), redisFailingOver(), elog), "/")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	for _, want := range []string{
		`<a href="/metrics"`, `<a href="/-/healthy"`, // the landing page's links stay
		`http-equiv="refresh" content="5"`,
		`data-stat="brokers">brokers live<b>2 / 3</b>`,
		`data-stat="offline">offline<b>1</b>oldest 45s`,
		`data-stat="under-replicated">under-replicated<b>5</b>oldest 40s`,
		`<tr data-topic="t0" data-partition="0"><td>t0</td><td class="num">0</td><td>none</td><td>[3]</td><td>[3]</td><td>offline, under min ISR</td><td>45s</td>`,
		`<tr data-broker="3" class="bad"><td>3</td><td>127.0.0.1:9093</td><td></td><td>down</td>`,
		`<tr data-kind="partition_offline">`, `t0/0`, `3 → none · first failed probe ` + t0.Add(-3500*time.Millisecond).UTC().Format("15:04:05") + ` (3.5s before)`,
		`data-stat="failover">failover under way<b>3s</b>`,
		`data-first="0" data-last="8191" data-owner="127.0.0.1:7000" data-state="fail"`,
		`data-first="8192" data-last="16383" data-owner="127.0.0.1:7001" data-state="ok"`,
		`<tr data-node="` + idD + `" data-role="replica"`, `lag 12 B`,
		`<tr data-kind="node_fail">`,
		`<tr data-kind="write_failing">`, `<td>__failover_exporter_canary/2 (broker 3)</td><td> → NOT_ENOUGH_REPLICAS</td>`,
		`<tr data-kind="acknowledged_writes_lost">`, `<td> → 14</td>`,
		`<td>orders</td><td> → eu.orders</td>`, `<td>eu-&gt;us.MirrorSourceConnector task 0</td><td>RUNNING → FAILED</td>`,
		`<tr class="warn"><td><code>ffffffff</code></td><td>127.0.0.1:7009</td><td>not_listed</td></tr>`,
		`api/v1/events?cluster=main`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// The unhealthy table is oldest first: the offline partition, then the others.
	if i, j := strings.Index(body, `data-topic="t0" data-partition="0"`), strings.Index(body, `data-topic="t0" data-partition="1"`); i < 0 || j < i {
		t.Errorf("unhealthy partitions not oldest first")
	}
	for _, banned := range []string{"<script", "http://", "https://", "src="} {
		if strings.Contains(body, banned) {
			t.Errorf("page contains %q: it must load nothing from elsewhere", banned)
		}
	}
	if code, _ := render(t, testPage(kafkaWithDeadBroker(1, 1), redisFailingOver(), nil), "/other"); code != 404 {
		t.Errorf("/other: %d, want 404", code)
	}
}

func TestPageEscapesClusterData(t *testing.T) {
	k := kafkaWithDeadBroker(1, 1)
	k.Topics[0].Name = `<img src=x onerror=alert(1)>`
	for c := range k.Episodes.Open {
		for key, o := range k.Episodes.Open[c] {
			delete(k.Episodes.Open[c], key)
			key.Topic = k.Topics[0].Name
			k.Episodes.Open[c][key] = o
		}
	}
	_, body := render(t, testPage(k, redisFailingOver(), nil), "/")
	if strings.Contains(body, "<img") || !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Errorf("a topic name was not escaped")
	}
}

func TestPageBoundedAt100kPartitions(t *testing.T) {
	// 1,000 topics of 100 partitions, all under-replicated after a broker
	// died: the page lists 50 and counts the rest.
	p := testPage(kafkaWithDeadBroker(1000, 100), redisFailingOver(), nil)
	start := time.Now()
	_, body := render(t, p, "/")
	took := time.Since(start)
	rows := strings.Count(body, "<tr data-topic=")
	t.Logf("FIGURE status page at 100,000 partitions, all unhealthy: %s to render, %d KiB, %d partition rows", took.Round(time.Millisecond), len(body)/1024, rows)
	if rows != 50 {
		t.Errorf("%d partition rows, want 50", rows)
	}
	if !strings.Contains(body, "and 99950 more") {
		t.Errorf("the page does not count the partitions it leaves out")
	}
	if len(body) > 200<<10 {
		t.Errorf("page is %d KiB at 100,000 partitions, want it bounded (under 200 KiB)", len(body)>>10)
	}
	// 10x the ~0.2 s it takes on a loaded 2-core machine.
	if took > 2*time.Second {
		t.Errorf("rendering took %s", took)
	}
}

// Each cluster's events say when this exporter's history begins, so that
// a replica started mid-incident is not read as the whole incident.
func TestPageSaysWhenTheHistoryBegins(t *testing.T) {
	elog := events.NewLog(0, log.NewNopLogger())
	_, body := render(t, testPage(kafkaWithDeadBroker(2, 3), redisFailingOver(), elog), "/")
	want := "This exporter's history begins " + elog.Begins().UTC().Format("2006-01-02 15:04:05 UTC")
	if n := strings.Count(body, want); n != 2 {
		t.Errorf("the page says %q %d times, want once per cluster (2):\n%s", want, n, body)
	}
	if strings.Contains(body, "None since the exporter started") {
		t.Error("with a history that says when it begins, the page still says 'since the exporter started'")
	}
}
