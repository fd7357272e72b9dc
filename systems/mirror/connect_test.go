package mirror

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/systems/mirror/settings"
)

// connectReply is GET /connectors?expand=status&expand=info as Kafka
// Connect 4.1 answers it, for the flow eu -> us, the reverse heartbeat
// connector, another flow's connector and a connector that is no mirror.
const connectReply = `{
  "eu->us.MirrorSourceConnector": {
    "info": {"name": "eu->us.MirrorSourceConnector", "config": {"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "source.cluster.alias": "eu", "target.cluster.alias": "us"}, "tasks": [{"connector": "eu->us.MirrorSourceConnector", "task": 0}], "type": "source"},
    "status": {"name": "eu->us.MirrorSourceConnector", "connector": {"state": "RUNNING", "worker_id": "10.0.0.1:8083"},
      "tasks": [{"id": 1, "state": "RUNNING", "worker_id": "10.0.0.2:8083"},
                {"id": 0, "state": "FAILED", "worker_id": "10.0.0.1:8083", "trace": "org.apache.kafka.connect.errors.ConnectException: Tolerance exceeded in error handler\n\tat org.apache.kafka.connect.runtime..."}],
      "type": "source"}
  },
  "eu->us.MirrorCheckpointConnector": {
    "info": {"config": {"connector.class": "MirrorCheckpointConnector", "source.cluster.alias": "eu", "target.cluster.alias": "us"}},
    "status": {"connector": {"state": "PAUSED", "worker_id": "10.0.0.1:8083"}, "tasks": [{"id": 0, "state": "PAUSED", "worker_id": "10.0.0.1:8083"}]}
  },
  "us->eu.MirrorHeartbeatConnector": {
    "info": {"config": {"connector.class": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector", "source.cluster.alias": "us", "target.cluster.alias": "eu"}},
    "status": {"connector": {"state": "RUNNING", "worker_id": "10.0.0.2:8083"}, "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "10.0.0.2:8083"}]}
  },
  "eu->ap.MirrorSourceConnector": {
    "info": {"config": {"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "source.cluster.alias": "eu", "target.cluster.alias": "ap"}},
    "status": {"connector": {"state": "FAILED", "worker_id": "10.0.0.3:8083"}, "tasks": []}
  },
  "jdbc-sink": {
    "info": {"config": {"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector"}},
    "status": {"connector": {"state": "RUNNING", "worker_id": "10.0.0.3:8083"}, "tasks": []}
  }
}`

func connectServer(t *testing.T, status int, body string) (*httptest.Server, *[]*http.Request) {
	t.Helper()
	var requests []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests = append(requests, r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

func testConnectReader(t *testing.T, c settings.Connect) *connectReader {
	t.Helper()
	r, err := newConnectReader(settings.Flow{SourceAlias: "eu", TargetAlias: "us", Connect: &c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return r
}

func TestConnectFindsTheFlowsConnectors(t *testing.T) {
	srv, requests := connectServer(t, http.StatusOK, connectReply)
	t.Setenv("CONNECT_PASSWORD", "s3cret")
	r := testConnectReader(t, settings.Connect{URL: srv.URL + "/", Username: "exporter", Password: config.Secret{Env: "CONNECT_PASSWORD"}})
	state, err := r.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := (*requests)[0]
	if req.URL.RequestURI() != "/connectors?expand=status&expand=info" {
		t.Errorf("asked for %s", req.URL.RequestURI())
	}
	if user, password, ok := req.BasicAuth(); !ok || user != "exporter" || password != "s3cret" {
		t.Errorf("basic auth %q %q %v", user, password, ok)
	}
	if !state.Read || len(state.Missing) != 0 {
		t.Fatalf("state %+v", state)
	}
	var got []string
	for _, c := range state.Connectors {
		got = append(got, c.Name+"/"+c.Kind+"/"+c.State)
	}
	want := "eu->us.MirrorCheckpointConnector/checkpoint/PAUSED eu->us.MirrorSourceConnector/source/RUNNING us->eu.MirrorHeartbeatConnector/heartbeat/RUNNING"
	if strings.Join(got, " ") != want {
		t.Errorf("connectors %v, want %s", got, want)
	}
	src := state.Connectors[1]
	if len(src.Tasks) != 2 || src.Tasks[0].ID != 0 || src.Tasks[0].State != "FAILED" || src.Tasks[0].Worker != "10.0.0.1:8083" ||
		src.Tasks[0].Trace != "org.apache.kafka.connect.errors.ConnectException: Tolerance exceeded in error handler" {
		t.Errorf("source tasks %+v", src.Tasks)
	}
}

func TestConnectNamedConnectors(t *testing.T) {
	srv, _ := connectServer(t, http.StatusOK, connectReply)
	r := testConnectReader(t, settings.Connect{URL: srv.URL, Connectors: []string{"eu->ap.MirrorSourceConnector", "jdbc-sink", "gone"}})
	state, err := r.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Connectors) != 2 || state.Connectors[0].Kind != kindSource || state.Connectors[0].State != "FAILED" ||
		state.Connectors[1].Kind != kindOther || strings.Join(state.Missing, ",") != "gone" {
		t.Errorf("state %+v", state)
	}
	// Without names, a flow whose aliases no MirrorSourceConnector has
	// misses its source connector.
	r, err = newConnectReader(settings.Flow{SourceAlias: "ap", TargetAlias: "us", Connect: &settings.Connect{URL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if state, err := r.read(context.Background()); err != nil || len(state.Connectors) != 0 || strings.Join(state.Missing, ",") != "source" {
		t.Errorf("ap -> us: %+v %v", state, err)
	}
}

// TestConnectRefusesBadReplies: what is not the REST API's answer is an
// error that says what came back, never a panic or an empty flow, and no
// error shows the password.
func TestConnectRefusesBadReplies(t *testing.T) {
	t.Setenv("CONNECT_PASSWORD", "s3cret")
	for _, tc := range []struct {
		status    int
		body      string
		wantError string
	}{
		{http.StatusUnauthorized, `{"error_code":401,"message":"Unauthorized"}`, "401 Unauthorized"},
		{http.StatusOK, `<html>login</html>`, "not the Connect REST API's reply"},
		{http.StatusOK, `["eu->us.MirrorSourceConnector"]`, "not the Connect REST API's reply"},
		{http.StatusOK, `{"eu->us.MirrorSourceConnector": {"info": {"config": {"connector.class": "MirrorSourceConnector", "source.cluster.alias": "eu", "target.cluster.alias": "us"}}}}`, "has no status"},
		{http.StatusOK, `{"c": {"info": {"config": {"connector.class": "MirrorSourceConnector", "source.cluster.alias": "eu", "target.cluster.alias": "us"}}, "status": {"connector": {"state": "RUNNING"}, "tasks": [{"state": "RUNNING"}]}}}`, "a task of \"c\" has no id"},
		{http.StatusOK, `{"c": `, "not the Connect REST API's reply"},
	} {
		srv, _ := connectServer(t, tc.status, tc.body)
		r := testConnectReader(t, settings.Connect{URL: srv.URL, Username: "u", Password: config.Secret{Env: "CONNECT_PASSWORD"}})
		_, err := r.read(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.wantError) {
			t.Errorf("%d %s: error %v, want %q", tc.status, tc.body, err, tc.wantError)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	// Nothing listens: the error names the request.
	srv, _ := connectServer(t, http.StatusOK, "{}")
	srv.Close()
	r := testConnectReader(t, settings.Connect{URL: srv.URL})
	if _, err := r.read(context.Background()); err == nil || !strings.Contains(err.Error(), "connect GET /connectors") {
		t.Errorf("closed server: %v", err)
	}
	// A reply past the bound is refused, not read whole.
	big := `{"c": {"info": {"config": {"x": "` + strings.Repeat("a", maxConnectReply) + `"}}}}`
	srv, _ = connectServer(t, http.StatusOK, big)
	r = testConnectReader(t, settings.Connect{URL: srv.URL})
	if _, err := r.read(context.Background()); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("large reply: %v", err)
	}
}

func TestConnectExpositionAndEvents(t *testing.T) {
	srv, _ := connectServer(t, http.StatusOK, connectReply)
	r := testConnectReader(t, settings.Connect{URL: srv.URL})
	state, err := r.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	snap := testSnapshot()
	snap.Connect = state
	snap.Errors[readConnect] = 1
	text := flowText(t, snap)
	src := `connector="eu->us.MirrorSourceConnector",kind="source",mirror="eu-us",source_cluster="eu"`
	for _, line := range []string{
		`kafka_mirror_connect_up{mirror="eu-us",source_cluster="eu",target_cluster="us"} 1`,
		`kafka_mirror_connectors_missing{mirror="eu-us",source_cluster="eu",target_cluster="us"} 0`,
		`kafka_mirror_read_errors_total{mirror="eu-us",read="connect",source_cluster="eu",target_cluster="us"} 1`,
		`kafka_mirror_connector_state{` + src + `,state="RUNNING",target_cluster="us"} 1`,
		`kafka_mirror_connector_state{` + src + `,state="FAILED",target_cluster="us"} 0`,
		`kafka_mirror_connector_tasks{` + src + `,state="FAILED",target_cluster="us"} 1`,
		`kafka_mirror_connector_tasks{` + src + `,state="RUNNING",target_cluster="us"} 1`,
		`kafka_mirror_connector_tasks{connector="eu->us.MirrorCheckpointConnector",kind="checkpoint",mirror="eu-us",source_cluster="eu",state="PAUSED",target_cluster="us"} 1`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("text lacks %s", line)
		}
	}
	// A flow without connect serves none of it.
	if text := flowText(t, testSnapshot()); strings.Contains(text, "connect") {
		t.Errorf("a flow without connect serves connect series:\n%s", text)
	}

	// The task recovers, the checkpoint connector is resumed, the
	// heartbeat connector is deleted: one event each.
	next := testSnapshot()
	next.ReadAt = snap.ReadAt.Add(time.Second)
	next.Connect = ConnectState{Configured: true, Read: true, Connectors: []Connector{
		{Name: "eu->us.MirrorCheckpointConnector", Kind: kindCheckpoint, State: "RUNNING", Tasks: []Task{{ID: 0, State: "RUNNING"}}},
		{Name: "eu->us.MirrorSourceConnector", Kind: kindSource, State: "RUNNING", Tasks: []Task{{ID: 0, State: "RUNNING"}, {ID: 1, State: "RUNNING"}}},
	}}
	findTransitions(snap, next)
	var got []string
	for _, e := range next.Events.All() {
		if e.Kind != EventConnectorState {
			continue
		}
		subject := e.Subject.Connector
		if e.Subject.Task != nil {
			subject += "#" + string(rune('0'+*e.Subject.Task))
		}
		got = append(got, subject+": "+e.Before+" -> "+e.After)
	}
	want := []string{
		"eu->us.MirrorCheckpointConnector: PAUSED -> RUNNING",
		"eu->us.MirrorCheckpointConnector#0: PAUSED -> RUNNING",
		"eu->us.MirrorSourceConnector#0: FAILED -> RUNNING",
		"us->eu.MirrorHeartbeatConnector: RUNNING -> gone",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestConnectViews(t *testing.T) {
	srv, _ := connectServer(t, http.StatusOK, connectReply)
	r := testConnectReader(t, settings.Connect{URL: srv.URL})
	state, err := r.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := laggingFlow()
	s.Connect = state
	c := flowView(s, true)
	var stat string
	for _, st := range c.Stats {
		if st.Name == "connectors" {
			stat = st.Value + " / " + st.Detail + " / " + st.Level
		}
	}
	if stat != "1 failed / 3 connectors, 4 tasks / bad" {
		t.Errorf("connectors stat %q", stat)
	}
	var failedNote bool
	for _, n := range c.Notes {
		if n.Level == "error" && strings.HasPrefix(n.Text, "Task 0 of eu->us.MirrorSourceConnector FAILED on 10.0.0.1:8083: org.apache.kafka.connect.errors.ConnectException: Tolerance exceeded") {
			failedNote = true
		}
	}
	if !failedNote {
		t.Errorf("no note for the failed task: %+v", c.Notes)
	}
	table := c.Tables[len(c.Tables)-1]
	if table.Name != "mirror-connectors" || len(table.Rows) != 3 || table.Rows[1].Level != "bad" ||
		strings.Join(table.Rows[1].Cells, "|") != "eu->us.MirrorSourceConnector|source|RUNNING|1 FAILED, 1 RUNNING|10.0.0.1:8083" {
		t.Errorf("table %+v", table)
	}
	s.Connect = ConnectState{Configured: true}
	c = flowView(s, true)
	if table := c.Tables[len(c.Tables)-1]; len(table.Rows) != 0 || !strings.HasPrefix(table.Empty, "Not read") {
		t.Errorf("unread: %+v", table)
	}
}
