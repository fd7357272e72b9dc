package budget

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// askerOf answers from a table of answers by "system/cluster/scope/id".
type askerOf struct {
	systems []System
	answers map[string]Answer
	err     error
	asked   []string
}

func (a *askerOf) BudgetSystems() []System { return a.systems }

func (a *askerOf) Budget(system, cluster string, q Question, _ time.Time) (Answer, error) {
	key := fmt.Sprintf("%s/%s/%s/%s", system, cluster, q.Scope, q.ID)
	if q.Recovered {
		key += "/recovered"
	}
	a.asked = append(a.asked, key)
	if a.err != nil {
		return Answer{}, a.err
	}
	answer, ok := a.answers[key]
	if !ok {
		return Answer{}, fmt.Errorf("%s %s: %w", q.Scope, q.ID, ErrUnknown)
	}
	return answer, nil
}

func TestHandlerPlacesAndAnswers(t *testing.T) {
	systems := []System{
		{Name: "kafka", Scopes: []ScopeSpec{broker, rack}, Clusters: []string{"orders", "shared"}},
		{Name: "redis", Scopes: []ScopeSpec{node, zone}, Clusters: []string{"sessions", "shared"}},
		{Name: "kafka_canary"}, // no budget: never a candidate
	}
	unsafe := Answer{Safe: false, Findings: []Finding{{Reason: "partitions_under_min_isr", Count: 3, Message: "3 partitions would go under min ISR"}}}
	asker := &askerOf{systems: systems, answers: map[string]Answer{
		"kafka/orders/broker/1":              {Safe: true},
		"kafka/orders/broker/2":              unsafe,
		"kafka/orders/broker/2/recovered":    {Safe: true},
		"redis/sessions/node/127.0.0.1:7000": {Safe: false, Advice: "fail over to replica b first"},
		"kafka/shared/rack/a":                {Safe: true},
		"redis/shared/zone/a":                {Safe: true},
	}}
	for _, tc := range []struct {
		path      string
		status    int
		asked     string // the question that reached the systems
		errorPart string // in the error body of a non-verdict
	}{
		{"/api/v1/safe-to-stop?cluster=orders&broker=1", 200, "kafka/orders/broker/1", ""},
		{"/api/v1/safe-to-stop?system=kafka&cluster=orders&broker=2", 409, "kafka/orders/broker/2", ""},
		{"/api/v1/recovered?cluster=orders&broker=2", 200, "kafka/orders/broker/2/recovered", ""},
		{"/api/v1/safe-to-stop?cluster=sessions&node=127.0.0.1:7000", 409, "redis/sessions/node/127.0.0.1:7000", ""},
		// The scope tells kafka's "shared" from redis's.
		{"/api/v1/safe-to-stop?cluster=shared&rack=a", 200, "kafka/shared/rack/a", ""},
		{"/api/v1/safe-to-stop?cluster=shared&zone=a", 200, "redis/shared/zone/a", ""},
		{"/api/v1/safe-to-stop?broker=1", 400, "", "2 clusters fit (kafka/orders, kafka/shared)"},
		{"/api/v1/safe-to-stop?cluster=nope&broker=1", 400, "", `cluster "nope": no cluster of that name answers broker questions; served: kafka: orders, shared`},
		{"/api/v1/safe-to-stop?system=mysql&broker=1", 400, "", `system "mysql" has no failure budget here`},
		{"/api/v1/safe-to-stop?system=redis&cluster=sessions&broker=1", 400, "", `no cluster of that name answers broker questions`},
		{"/api/v1/safe-to-stop?cluster=orders&broker=9", 400, "kafka/orders/broker/9", "broker 9: unknown"},
		{"/api/v1/safe-to-stop?cluster=orders", 400, "", "name what to stop: broker=ID or rack=NAME (kafka), node=ID|ADDR or zone=NAME (redis)"},
		{"/api/v1/safe-to-stop?cluster=orders&broker=1&rack=a", 400, "", "parameters broker and rack both given"},
		{"/api/v1/safe-to-stop?cluster=orders&brokers=1", 400, "", "unknown parameter brokers"},
		{"/api/v1/safe-to-stop?cluster=orders&broker=", 400, "", "parameter broker is empty"},
		{"/api/v1/safe-to-stop?cluster=orders&broker=1&broker=2", 400, "", "parameter broker given 2 times"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			asker.asked = nil
			recovered := strings.HasPrefix(tc.path, RecoveredPath)
			rec := httptest.NewRecorder()
			Handler(asker, recovered).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			if got := strings.Join(asker.asked, ","); got != tc.asked {
				t.Errorf("asked %q, want %q", got, tc.asked)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.errorPart != "" {
				var body ErrorResponse
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || !strings.Contains(body.Error, tc.errorPart) {
					t.Errorf("error body %s (%v), want it to say %q", rec.Body, err, tc.errorPart)
				}
				return
			}
			var answer Answer
			if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
				t.Fatalf("body is not an answer: %v: %s", err, rec.Body)
			}
			if answer.Safe != (tc.status == 200) {
				t.Errorf("answer safe=%v with status %d", answer.Safe, tc.status)
			}
		})
	}
}

func TestHandlerNeverAnswersFromStaleData(t *testing.T) {
	systems := []System{{Name: "kafka", Scopes: []ScopeSpec{broker}, Clusters: []string{"orders"}}}
	for _, err := range []error{
		Fresh(true, true, nil, time.Now().Add(-21*time.Second), 10*time.Second, time.Now()),
		Fresh(true, false, fmt.Errorf("dial tcp 127.0.0.1:9092: connection refused"), time.Now(), 10*time.Second, time.Now()),
		Fresh(false, false, nil, time.Time{}, 10*time.Second, time.Now()),
	} {
		asker := &askerOf{systems: systems, err: fmt.Errorf("kafka cluster %q: %w", "orders", err)}
		rec := httptest.NewRecorder()
		Handler(asker, false).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/safe-to-stop?broker=1", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%v: status %d, want 503", err, rec.Code)
		}
	}
	if err := Fresh(true, true, nil, time.Now().Add(-19*time.Second), 10*time.Second, time.Now()); err != nil {
		t.Errorf("a snapshot younger than two refreshes is fresh: %v", err)
	}
}

func TestHandlerMethods(t *testing.T) {
	asker := &askerOf{}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, "TRACE"} {
		rec := httptest.NewRecorder()
		Handler(asker, false).ServeHTTP(rec, httptest.NewRequest(method, "/api/v1/safe-to-stop?broker=1", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d, Allow %q", method, rec.Code, rec.Header().Get("Allow"))
		}
	}
}

func TestAddAtRiskIsBounded(t *testing.T) {
	var a Answer
	for i := 0; i < MaxAtRisk+50; i++ {
		a.AddAtRisk(fmt.Sprintf("t/%d", i))
	}
	if len(a.AtRisk) != MaxAtRisk || a.AtRiskTotal != MaxAtRisk+50 || a.AtRisk[0] != "t/0" {
		t.Errorf("%d listed, %d counted", len(a.AtRisk), a.AtRiskTotal)
	}
}

// The scopes of the tests' systems, declared as Kafka and Redis declare
// theirs.
var (
	broker = ScopeSpec{Scope: "broker", Member: "ID", Help: "A Kafka broker id."}
	rack   = ScopeSpec{Scope: "rack", Member: "NAME", Help: "A Kafka broker.rack: every broker in it."}
	node   = ScopeSpec{Scope: "node", Member: "ID|ADDR", Help: "A Redis node id or ip:port."}
	zone   = ScopeSpec{Scope: "zone", Member: "NAME", Help: "A Redis availability zone: every node in it."}
)
