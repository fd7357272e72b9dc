package e2e

import (
	"fmt"
	"html"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/contract"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/promtest"
	"github.com/failover-exporter/failover_exporter/systems/mirror"
)

// TestMirrorConnect runs MirrorMaker 2's three connectors on a real Kafka
// Connect distributed worker, as Strimzi and managed Connect services do,
// and gives the flow that worker's REST API. What the exporter reports is
// checked against the worker's own GET /connectors/<name>/status:
//   - running: every connector RUNNING, and the heartbeats (written into
//     the source by the reverse heartbeat connector) replicated;
//   - the source connector paused through the REST API: PAUSED, an event,
//     and the flow stalls;
//   - a source task failed for real (a transform that throws on MM2's
//     records): FAILED with the worker's trace, the event,
//     KafkaMirrorConnectorFailed firing in Prometheus, the status page's
//     note and the dashboard's panel; then repaired;
//   - the worker killed (kill -9): the REST API unread, while the
//     replication figures, which come from the clusters, are still served.
func TestMirrorConnect(t *testing.T) {
	src := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
	dst := lab.StartKafka(t, lab.KafkaOptions{Nodes: 1})
	src.CreateTopic(t, "orders", 1)
	mm := lab.StartMirror(t, lab.MirrorOptions{Source: src, Target: dst, SourceAlias: "east", TargetAlias: "west", Topics: "orders", Connect: true})
	names := mm.Connectors()
	if len(names) != 3 || mm.ConnectURL() == "" {
		t.Fatalf("lab: Connect mode gave connectors %v at %q", names, mm.ConnectURL())
	}
	source := names[0]
	kinds := map[string]string{names[0]: "source", names[1]: "checkpoint", names[2]: "heartbeat"}

	const name = "east-west-connect"
	cfg := mirrorConfig(src, dst, "  - name: "+name+"\n    source: east\n    target: west\n    topics: orders\n"+
		"    refresh_interval: 1s\n    stall_after: 8s\n    connect:\n      url: "+mm.ConnectURL()+"\n")
	e := exportertest.Start(t, "--config.file="+faultConfig(t, cfg))
	e.WaitReady(t, 30*time.Second)
	live := startMirrorPrometheus(t, e)
	flow := map[string]string{"mirror": name, "source_cluster": "east", "target_cluster": "west"}
	with := func(kv ...string) map[string]string { return labelsWith(flow, kv...) }
	connector := func(c, state string) map[string]string { return with("connector", c, "kind", kinds[c], "state", state) }
	startSteadyProducer(t, src.Bootstrap(), "orders", 1, 100*time.Millisecond)

	// Running: the three connectors as the worker says, and the flow alive.
	waitMetrics(t, e, 90*time.Second, "every connector RUNNING and heartbeats replicated", func(m exportertest.Metrics) (bool, string) {
		up, _ := m.Value("kafka_mirror_connect_up", flow)
		missing, okMissing := m.Value("kafka_mirror_connectors_missing", flow)
		age, okAge := m.Value("kafka_mirror_heartbeat_age_seconds", flow)
		ok := up == 1 && okMissing && missing == 0 && okAge && age < 5
		desc := m.Describe("kafka_mirror_connect_up", flow) + m.Describe("kafka_mirror_heartbeat_age_seconds", flow)
		for _, c := range names {
			running, _ := m.Value("kafka_mirror_connector_state", connector(c, "RUNNING"))
			ok = ok && running == 1
			desc += m.Describe("kafka_mirror_connector_state", connector(c, "RUNNING"))
		}
		tasks, _ := m.Value("kafka_mirror_connector_tasks", connector(source, "RUNNING"))
		return ok && tasks >= 1, desc + m.Describe("kafka_mirror_connector_tasks", connector(source, "RUNNING"))
	})
	for _, c := range names {
		if status := mm.ConnectorStatus(t, c); status.Connector.State != lab.ConnectRunning {
			t.Errorf("the worker says %s is %s, the exporter RUNNING", c, status.Connector.State)
		}
	}

	// Paused through the REST API: replication and heartbeats stop.
	pausedAt := time.Now()
	mm.PauseConnector(t, source)
	waitMetrics(t, e, 30*time.Second, "the source connector PAUSED and the flow stalled", func(m exportertest.Metrics) (bool, string) {
		paused, _ := m.Value("kafka_mirror_connector_state", connector(source, "PAUSED"))
		tasks, _ := m.Value("kafka_mirror_connector_tasks", connector(source, "PAUSED"))
		stalled, _ := m.Value("kafka_mirror_stalled", flow)
		return paused == 1 && tasks >= 1 && stalled == 1, m.Describe("kafka_mirror_connector_state", connector(source, "PAUSED")) +
			m.Describe("kafka_mirror_connector_tasks", connector(source, "PAUSED")) + m.Describe("kafka_mirror_stalled", flow)
	})
	t.Logf("FIGURE mirror connect: PUT .../pause to the exporter's PAUSED and stalled (stall_after 8s) %s", time.Since(pausedAt).Round(100*time.Millisecond))
	mm.ResumeConnector(t, source)
	waitMetrics(t, e, 60*time.Second, "the source connector RUNNING again and the flow caught up", func(m exportertest.Metrics) (bool, string) {
		running, _ := m.Value("kafka_mirror_connector_state", connector(source, "RUNNING"))
		stalled, _ := m.Value("kafka_mirror_stalled", flow)
		return running == 1 && stalled == 0, m.Describe("kafka_mirror_connector_state", connector(source, "RUNNING")) + m.Describe("kafka_mirror_stalled", flow)
	})
	evs := fetchEvents(t, e, "?system=mirror")
	if !hasConnectorEvent(evs, source, nil, "RUNNING", "PAUSED") || !hasConnectorEvent(evs, source, nil, "PAUSED", "RUNNING") {
		t.Errorf("no mirror_connector_state events RUNNING → PAUSED → RUNNING for %s:\n%s", source, describeEvents(evs))
	}

	// A task failed for real: the worker's trace is what the exporter says.
	failedAt := time.Now()
	status := mm.FailTasks(t, source)
	var failed lab.TaskState
	for _, task := range status.Tasks {
		if task.State == lab.ConnectFailed {
			failed = task
		}
	}
	trace, _, _ := strings.Cut(strings.TrimSpace(failed.Trace), "\n")
	trace = strings.TrimSpace(trace)
	if trace == "" {
		t.Fatalf("the worker gives no trace for the failed task: %s", status)
	}
	t.Logf("the worker: task %d of %s FAILED on %s: %s", failed.ID, source, failed.WorkerID, trace)
	waitMetrics(t, e, 30*time.Second, "a source task FAILED", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("kafka_mirror_connector_tasks", connector(source, "FAILED"))
		return n >= 1, m.Describe("kafka_mirror_connector_tasks", connector(source, "FAILED"))
	})
	t.Logf("FIGURE mirror connect: a task FAILED in the worker's status to the exporter's series %s", time.Since(failedAt).Round(100*time.Millisecond))
	live.waitQuery(t, 30*time.Second, "KafkaMirrorConnectorFailed firing in Prometheus", func(q func(string) []promtest.Series) (bool, string) {
		res := q(`ALERTS{alertname="KafkaMirrorConnectorFailed", alertstate="firing", mirror="` + name + `", kind="source"}`)
		return len(res) == 1 && res[0].Labels["connector"] == source, describeSeries(res)
	})
	id := int32(failed.ID)
	evs = fetchEvents(t, e, "?system=mirror")
	if !hasConnectorEvent(evs, source, &id, "RUNNING", "FAILED: "+trace) {
		t.Errorf("no mirror_connector_state event for task %d of %s RUNNING → FAILED: %s:\n%s", id, source, trace, describeEvents(evs))
	}
	page := statusPage(t, e)
	if want := fmt.Sprintf("Task %d of %s FAILED on %s: %s", failed.ID, source, failed.WorkerID, trace); !strings.Contains(page, want) {
		t.Errorf("the status page lacks %q", want)
	}
	checkConnectorPanel(t, live, name, source)
	mm.RepairTasks(t, source)
	waitMetrics(t, e, 30*time.Second, "no task FAILED after the repair", func(m exportertest.Metrics) (bool, string) {
		n, ok := m.Value("kafka_mirror_connector_tasks", connector(source, "FAILED"))
		return ok && n == 0, m.Describe("kafka_mirror_connector_tasks", connector(source, "FAILED"))
	})

	// The worker killed: its REST API is gone, the clusters are not.
	pid := mm.PID()
	if pid == 0 {
		t.Fatal("lab: no PID for the Connect worker")
	}
	before := e.Scrape(t)
	errorsBefore, _ := before.Value("kafka_mirror_read_errors_total", with("read", "connect"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	waitMetrics(t, e, 30*time.Second, "the REST API unread, the clusters still read", func(m exportertest.Metrics) (bool, string) {
		up, okUp := m.Value("kafka_mirror_connect_up", flow)
		flowUp, _ := m.Value("kafka_mirror_up", flow)
		errs, _ := m.Value("kafka_mirror_read_errors_total", with("read", "connect"))
		_, stillServed := m.Value("kafka_mirror_connector_state", connector(source, "RUNNING"))
		_, lag := m.Value("kafka_mirror_topic_records_not_replicated", with("topic", "orders"))
		return okUp && up == 0 && flowUp == 1 && errs > errorsBefore && !stillServed && lag,
			m.Describe("kafka_mirror_connect_up", flow) + m.Describe("kafka_mirror_up", flow) +
				m.Describe("kafka_mirror_read_errors_total", with("read", "connect")) + m.Describe("kafka_mirror_topic_records_not_replicated", with("topic", "orders"))
	})
	if logs := e.Logs(); !strings.Contains(logs, "read=connect") {
		t.Errorf("the exporter's log does not name the failed connect read:\n%s", logs)
	}
}

// hasConnectorEvent reports whether evs hold a mirror_connector_state
// event of the connector (or its task) from before to after.
func hasConnectorEvent(evs []events.Event, connector string, task *int32, before, after string) bool {
	for _, e := range mirrorEvents(evs, mirror.EventConnectorState, "") {
		sameTask := (task == nil && e.Subject.Task == nil) || (task != nil && e.Subject.Task != nil && *task == *e.Subject.Task)
		if e.Subject.Connector == connector && sameTask && e.Before == before && e.After == after {
			return true
		}
	}
	return false
}

// statusPage is the exporter's status page as text, HTML entities decoded.
func statusPage(t *testing.T, e *exportertest.Exporter) string {
	t.Helper()
	resp, err := e.Get("/")
	if err != nil {
		t.Fatalf("status page: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("status page: %v", err)
	}
	return html.UnescapeString(string(body))
}

// checkConnectorPanel runs the mirror dashboard's connector panel in
// Prometheus: it must show the failed task.
func checkConnectorPanel(t *testing.T, live *liveLab, mirror, source string) {
	t.Helper()
	panels, err := contract.LoadDashboardQueries(filepath.Join(live.root, "grafana", "dashboards", "kafka-mirror.json"))
	if err != nil {
		t.Fatal(err)
	}
	vars := contract.BuiltinVariables()
	vars["mirror"] = mirror
	for _, p := range panels {
		if p.Title != "Connectors and tasks by state (Kafka Connect)" {
			continue
		}
		for _, q := range p.Queries {
			expr := contract.SubstituteVariables(q.Expr, vars)
			live.waitQuery(t, 15*time.Second, "panel query "+q.RefID+" with data", func(query func(string) []promtest.Series) (bool, string) {
				res := query(expr)
				if q.RefID != "A" {
					return len(res) > 0, describeSeries(res)
				}
				for _, s := range res {
					if s.Labels["connector"] == source && s.Labels["state"] == "FAILED" {
						return true, ""
					}
				}
				return false, describeSeries(res)
			})
		}
		return
	}
	t.Error("kafka-mirror.json has no panel \"Connectors and tasks by state (Kafka Connect)\"")
}
