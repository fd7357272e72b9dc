package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Kafka Connect REST API of a Mirror started with MirrorOptions.Connect:
// what a test does to the flow's connectors, as an operator would with
// curl. Every call goes to the worker on 127.0.0.1 only.

// Connect states of a connector or task, as its REST API spells them.
const (
	ConnectRunning = "RUNNING"
	ConnectPaused  = "PAUSED"
	ConnectFailed  = "FAILED"
)

// ConnectorStatus is Kafka Connect's GET /connectors/<name>/status.
type ConnectorStatus struct {
	Name      string         `json:"name"`
	Connector ConnectorState `json:"connector"`
	Tasks     []TaskState    `json:"tasks"`
	Type      string         `json:"type"`
}

// ConnectorState is the state of a connector instance.
type ConnectorState struct {
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// TaskState is the state of one of a connector's tasks; Trace is the
// stack trace of a FAILED one.
type TaskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
}

// In reports whether the connector and every one of its tasks, at least
// minTasks of them, are in state.
func (s ConnectorStatus) In(state string, minTasks int) bool {
	if s.Connector.State != state || len(s.Tasks) < minTasks {
		return false
	}
	for _, task := range s.Tasks {
		if task.State != state {
			return false
		}
	}
	return true
}

// String is the states in one line, for test messages: "RUNNING, tasks
// [0 FAILED]".
func (s ConnectorStatus) String() string {
	tasks := make([]string, len(s.Tasks))
	for i, task := range s.Tasks {
		tasks[i] = strconv.Itoa(task.ID) + " " + task.State
	}
	return fmt.Sprintf("%s %s, tasks [%s]", s.Name, s.Connector.State, strings.Join(tasks, ", "))
}

// The flow's connector kinds, in the order Connectors names them.
var mirrorConnectorKinds = []string{"MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector"}

// ConnectURL is the Connect worker's REST API, "http://127.0.0.1:<port>",
// or "" in dedicated mode.
func (m *Mirror) ConnectURL() string { return m.connectURL }

// Connectors names the flow's three connectors as Strimzi does,
// "<source alias>-><target alias>.<class>", in this order: the
// MirrorSourceConnector (replication, offset syncs), the
// MirrorCheckpointConnector (checkpoints) and the MirrorHeartbeatConnector
// (the source's heartbeats). Nil in dedicated mode.
func (m *Mirror) Connectors() []string {
	if m.connectURL == "" {
		return nil
	}
	names := make([]string, len(mirrorConnectorKinds))
	for i, kind := range mirrorConnectorKinds {
		names[i] = m.sourceAlias + "->" + m.targetAlias + "." + kind
	}
	return names
}

// ConnectorStatus returns the connector's GET /connectors/<name>/status.
func (m *Mirror) ConnectorStatus(t testing.TB, name string) ConnectorStatus {
	t.Helper()
	m.requireConnect(t)
	status, err := m.connectorStatus(name)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	return status
}

// PauseConnector pauses the connector (PUT .../pause) and waits until it
// and its tasks say PAUSED: a paused MirrorSourceConnector replicates
// nothing, a paused MirrorHeartbeatConnector emits no heartbeat.
func (m *Mirror) PauseConnector(t testing.TB, name string) {
	t.Helper()
	m.connectorRequest(t, http.MethodPut, connectorPath(name, "pause"), nil, nil)
	m.waitConnector(t, name, "paused", func(s ConnectorStatus) bool { return s.In(ConnectPaused, 0) })
}

// ResumeConnector resumes a paused connector (PUT .../resume) and waits
// until it and its tasks say RUNNING.
func (m *Mirror) ResumeConnector(t testing.TB, name string) {
	t.Helper()
	m.connectorRequest(t, http.MethodPut, connectorPath(name, "resume"), nil, nil)
	m.waitConnector(t, name, "resumed", func(s ConnectorStatus) bool { return s.In(ConnectRunning, 0) })
}

// SetConnectorConfig changes the connector's configuration: its current one
// (GET .../config) with extra's keys set, or removed where extra's value
// is "", PUT back. It does not wait: Connect then restarts the connector
// and, when their configs change with it (the Mirror connectors copy their
// whole configuration into their tasks'), its tasks.
func (m *Mirror) SetConnectorConfig(t testing.TB, name string, extra map[string]string) {
	t.Helper()
	config := map[string]string{}
	m.connectorRequest(t, http.MethodGet, connectorPath(name, "config"), nil, &config)
	for key, value := range extra {
		if value == "" {
			delete(config, key)
		} else {
			config[key] = value
		}
	}
	m.connectorRequest(t, http.MethodPut, connectorPath(name, "config"), config, nil)
}

// RestartTask restarts one task of the connector (POST
// .../tasks/<id>/restart) and waits until it says RUNNING.
func (m *Mirror) RestartTask(t testing.TB, name string, id int) {
	t.Helper()
	m.connectorRequest(t, http.MethodPost, connectorPath(name, "tasks", strconv.Itoa(id), "restart"), nil, nil)
	m.waitConnector(t, name, fmt.Sprintf("task %d restarted", id), func(s ConnectorStatus) bool {
		for _, task := range s.Tasks {
			if task.ID == id {
				return task.State == ConnectRunning
			}
		}
		return false
	})
}

// FailingTransform is the connector configuration FailTasks adds: a Cast
// of the whole record value to int8. Every Mirror connector's records are
// raw bytes (BYTES values), which Cast cannot turn into a number, so the
// first record through a task throws; with Connect's default
// errors.tolerance=none the task stops in state FAILED (the connector stays
// RUNNING), its trace "org.apache.kafka.connect.errors.ConnectException:
// Tolerance exceeded in error handler", caused by "DataException:
// Unexpected type in Cast transformation: class [B". Checked on Connect
// 4.1.2 (TestMirrorConnect). It fails as soon as a record flows: within a
// second for the source connector (the replicated heartbeats) and the
// heartbeat connector, once it has a group to checkpoint for the checkpoint
// connector. Pass the same keys with "" values to SetConnectorConfig to
// remove it.
func FailingTransform() map[string]string {
	return map[string]string{
		"transforms":           "fail",
		"transforms.fail.type": "org.apache.kafka.connect.transforms.Cast$Value",
		"transforms.fail.spec": "int8",
	}
}

// FailTasks makes the connector's tasks fail for real: it adds
// FailingTransform to the connector's configuration and waits until a task
// says FAILED, and returns that status. The connector itself stays
// RUNNING, as it does when a task fails in production. RepairTasks undoes
// it.
func (m *Mirror) FailTasks(t testing.TB, name string) ConnectorStatus {
	t.Helper()
	m.SetConnectorConfig(t, name, FailingTransform())
	return m.waitConnector(t, name, "a task failed", func(s ConnectorStatus) bool {
		return slices.ContainsFunc(s.Tasks, func(task TaskState) bool { return task.State == ConnectFailed })
	})
}

// RepairTasks undoes FailTasks: it removes FailingTransform from the
// connector's configuration, waits until its tasks' configurations (GET
// .../tasks) no longer have it, restarts any task still FAILED, and waits
// until the connector and every task are RUNNING. Connect itself restarts a
// connector's tasks, FAILED ones included, when their configurations
// change, as they do here (the Mirror connectors copy theirs into their
// tasks'): seen on 4.1.2, the task RUNNING again within a second of the
// PUT, so the restart is a safeguard. A task failed for another reason
// stays FAILED until RestartTask.
func (m *Mirror) RepairTasks(t testing.TB, name string) {
	t.Helper()
	without := map[string]string{}
	for key := range FailingTransform() {
		without[key] = ""
	}
	m.SetConnectorConfig(t, name, without)
	WaitFor(t, mirrorReplicateTimeout, 250*time.Millisecond, func() (bool, string) {
		var tasks []struct {
			Config map[string]string `json:"config"`
		}
		if err := m.connectJSON(http.MethodGet, connectorPath(name, "tasks"), nil, &tasks); err != nil {
			return false, err.Error()
		}
		for _, task := range tasks {
			if _, ok := task.Config["transforms"]; ok {
				return false, fmt.Sprintf("a task of %s still has the failing transform in its config", name)
			}
		}
		return true, ""
	})
	for _, task := range m.ConnectorStatus(t, name).Tasks {
		if task.State == ConnectFailed {
			m.RestartTask(t, name, task.ID)
		}
	}
	m.waitConnector(t, name, "repaired", func(s ConnectorStatus) bool { return s.In(ConnectRunning, 1) })
}

// waitConnectorsRunning waits until the REST API says all three connectors
// and their tasks run, and returns how long that took. The checkpoint
// connector may have no task yet: MirrorMaker gives it one once the source
// has a consumer group with offsets on a replicated topic.
func (m *Mirror) waitConnectorsRunning(t testing.TB) time.Duration {
	t.Helper()
	return WaitFor(t, mirrorReplicateTimeout, 250*time.Millisecond, func() (bool, string) {
		if m.PID() == 0 {
			t.Fatalf("lab: the Connect worker exited; last lines of %s:\n%s", m.logPath(), m.LogTail(40))
		}
		for _, name := range m.Connectors() {
			status, err := m.connectorStatus(name)
			if err != nil {
				return false, err.Error()
			}
			minTasks := 1
			if strings.HasSuffix(name, ".MirrorCheckpointConnector") {
				minTasks = 0
			}
			if !status.In(ConnectRunning, minTasks) {
				return false, status.String()
			}
		}
		return true, ""
	})
}

// waitConnector waits until the connector's status satisfies done, and
// returns that status; what names the wait in the failure message.
func (m *Mirror) waitConnector(t testing.TB, name, what string, done func(ConnectorStatus) bool) ConnectorStatus {
	t.Helper()
	var status ConnectorStatus
	WaitFor(t, mirrorReplicateTimeout, 250*time.Millisecond, func() (bool, string) {
		var err error
		if status, err = m.connectorStatus(name); err != nil {
			return false, err.Error()
		}
		return done(status), fmt.Sprintf("%s not %s: %s", name, what, status)
	})
	return status
}

func (m *Mirror) connectorStatus(name string) (ConnectorStatus, error) {
	var status ConnectorStatus
	err := m.connectJSON(http.MethodGet, connectorPath(name, "status"), nil, &status)
	return status, err
}

func (m *Mirror) requireConnect(t testing.TB) {
	t.Helper()
	if m.connectURL == "" {
		t.Fatalf("lab: the Connect REST API needs a Mirror started with MirrorOptions.Connect")
	}
}

// connectorRequest makes a request the worker may refuse for a moment: a
// 409 while its group rebalances (after every connector config change), so
// it tries again for a while before it fails the test.
func (m *Mirror) connectorRequest(t testing.TB, method, path string, body, out any) {
	t.Helper()
	m.requireConnect(t)
	WaitFor(t, mirrorCommandTimeout, 500*time.Millisecond, func() (bool, string) {
		err := m.connectJSON(method, path, body, out)
		if err == nil {
			return true, ""
		}
		var refused *connectError
		if errors.As(err, &refused) && refused.code != http.StatusConflict {
			t.Fatalf("lab: %v", err)
		}
		return false, err.Error()
	})
}

// connectorPath is /connectors/<name>/<parts...>, the name escaped: the
// Mirror connectors' names have a '>'.
func connectorPath(name string, parts ...string) string {
	return "/connectors/" + url.PathEscape(name) + "/" + strings.Join(parts, "/")
}

// connectError is an answer of the REST API other than 2xx.
type connectError struct {
	request string
	code    int
	body    string
}

func (e *connectError) Error() string {
	return fmt.Sprintf("Connect REST API: %s: HTTP %d: %s", e.request, e.code, e.body)
}

// connectClient talks to the lab's one worker, its own group leader, which
// answers at once or after a rebalance (its own limit, for requests it
// forwards to a leader, is 90 s). No idle connections: they would be
// goroutines left running after the tests (goleak, leak_test.go). No proxy:
// the worker is on 127.0.0.1.
var connectClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true},
}

// connectJSON sends body (if any) as JSON and decodes a 2xx answer into out
// (if any).
func (m *Mirror) connectJSON(method, path string, body, out any) error {
	request := method + " " + path
	var payload io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s: %w", request, err)
		}
		payload = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, m.connectURL+path, payload)
	if err != nil {
		return fmt.Errorf("%s: %w", request, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := connectClient.Do(req)
	if err != nil {
		return fmt.Errorf("Connect REST API: %s: %w", request, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("Connect REST API: %s: reading the answer: %w", request, err)
	}
	if resp.StatusCode/100 != 2 {
		return &connectError{request: request, code: resp.StatusCode, body: strings.TrimSpace(string(data))}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("Connect REST API: %s: %w", request, err)
	}
	return nil
}
