package safetostop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
)

// turning answers "not safe" until it has been asked safeAfter times, and
// a stale snapshot on the asks listed in stale.
type turning struct {
	mu        sync.Mutex
	asks      int
	safeAfter int
	stale     map[int]bool
}

func (t *turning) BudgetSystems() []budget.System {
	return []budget.System{{Name: "kafka", Scopes: []budget.ScopeSpec{{Scope: "broker", Member: "ID"}}, Clusters: []string{"orders"}}}
}

func (t *turning) Budget(system, cluster string, q budget.Question, _ time.Time) (budget.Answer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.asks++
	if q.ID != "2" {
		return budget.Answer{}, fmt.Errorf("broker %s: %w (known: 1, 2, 3)", q.ID, budget.ErrUnknown)
	}
	if t.stale[t.asks] {
		return budget.Answer{}, fmt.Errorf("kafka cluster %q: %w: read 31s ago", cluster, budget.ErrStale)
	}
	a := budget.Answer{System: system, Cluster: cluster, Scope: q.Scope, ID: q.ID, Recovered: q.Recovered, Safe: t.asks > t.safeAfter}
	if !a.Safe {
		a.Add("partitions_under_min_isr", 2, "2 partitions would go under min ISR")
		a.AddAtRisk("orders/0", "orders/1")
	}
	return a, nil
}

func serve(t *testing.T, a budget.Asker) string {
	mux := http.NewServeMux()
	mux.Handle(budget.SafeToStopPath, budget.Handler(a, false))
	mux.Handle(budget.RecoveredPath, budget.Handler(a, true))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestWaitsUntilSafe(t *testing.T) {
	asker := &turning{safeAfter: 3, stale: map[int]bool{2: true}}
	var log bytes.Buffer
	answer, err := Run(context.Background(), Options{URL: serve(t, asker), Scope: budget.Scope("broker"), ID: "2",
		Wait: 10 * time.Second, Poll: 10 * time.Millisecond, Log: &log})
	if err != nil || !answer.Safe {
		t.Fatalf("answer %+v, %v; log:\n%s", answer, err, &log)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a line per ask (2 not yet, 1 stale, 1 yes), got:\n%s", &log)
	}
	for i, want := range []string{
		"not yet: broker 2 of kafka/orders: 2 partitions would go under min ISR (at risk: orders/0, orders/1)",
		"no answer (503 Service Unavailable: kafka cluster \"orders\": snapshot too old to answer from: read 31s ago)",
		"not yet: ",
		"yes: broker 2 of kafka/orders can be stopped now",
	} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: %q, want it to start %q", i, lines[i], want)
		}
	}
}

func TestGivesUpAtTheDeadline(t *testing.T) {
	asker := &turning{safeAfter: 1 << 30}
	started := time.Now()
	_, err := Run(context.Background(), Options{URL: serve(t, asker), Scope: budget.Scope("broker"), ID: "2",
		Wait: 200 * time.Millisecond, Poll: 20 * time.Millisecond})
	var ns *NotSafeError
	if !errors.As(err, &ns) || ns.Answer == nil || !strings.Contains(err.Error(), "2 partitions would go under min ISR") {
		t.Fatalf("err %v, want the last verdict", err)
	}
	if elapsed := time.Since(started); elapsed > 5*time.Second {
		t.Errorf("took %s for a 200ms wait", elapsed)
	}
}

func TestRefusedQuestionsStopAtOnce(t *testing.T) {
	asker := &turning{}
	base := serve(t, asker)
	for _, o := range []Options{
		{URL: base, Scope: budget.Scope("broker"), ID: "7"},
		{URL: base, Cluster: "nope", Scope: budget.Scope("broker"), ID: "2"},
		{URL: "127.0.0.1:9877", Scope: budget.Scope("broker"), ID: "2"},
		{URL: "http://user:hunter2@127.0.0.1:9877", Scope: budget.Scope("broker"), ID: "2"},
	} {
		o.Wait, o.Poll = time.Minute, time.Millisecond
		_, err := Run(context.Background(), o)
		var qe *QuestionError
		if !errors.As(err, &qe) {
			t.Errorf("%+v: %v, want a refused question at once", o, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the password is in the error: %v", err)
		}
	}
}

func TestAfterRestartAsksRecovered(t *testing.T) {
	asker := &turning{}
	answer, err := Ask(context.Background(), Options{URL: serve(t, asker), Scope: budget.Scope("broker"), ID: "2", AfterRestart: true})
	if err != nil || !answer.Recovered {
		t.Fatalf("%+v, %v: want the recovered question asked", answer, err)
	}
}

// windowExporter is an exporter's maintenance endpoint over the real
// registry, answering as turning does (safe once asked safeAfter times).
func windowExporter(t *testing.T, a budget.Asker, token string) (string, *maintenance.Registry) {
	r := maintenance.NewRegistry(a, nil)
	mux := http.NewServeMux()
	mux.Handle(maintenance.Path, maintenance.Handler(r, []byte(token)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, r
}

// An announcement one exporter refuses withdraws the window the first
// opened, although the question left the system and cluster for the
// exporters to resolve.
func TestAnnounceWithdrawsWhenOneRefuses(t *testing.T) {
	const token = "a-token-of-24-characters"
	first, firstWindows := windowExporter(t, &turning{safeAfter: 0}, token)
	second, _ := windowExporter(t, &turning{safeAfter: 100}, token)
	o := Options{URL: first, Scope: "broker", ID: "2"}
	err := Announce(context.Background(), o, 30*time.Minute, token, []string{second})
	if err == nil || !strings.Contains(err.Error(), "not safe") {
		t.Fatalf("the second exporter's 409: %v", err)
	}
	if ws := firstWindows.Windows(); len(ws) != 0 {
		t.Fatalf("the first exporter kept its window after the announcement failed: %+v", ws)
	}

	// Both agree: a window on each, named by the cluster each resolved.
	third, thirdWindows := windowExporter(t, &turning{safeAfter: 0}, token)
	if err := Announce(context.Background(), o, 30*time.Minute, token, []string{third}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*maintenance.Registry{firstWindows, thirdWindows} {
		if ws := r.Windows(); len(ws) != 1 || ws[0].System != "kafka" || ws[0].Cluster != "orders" || ws[0].Member != "2" {
			t.Fatalf("windows: %+v", ws)
		}
	}
}

// A withdrawal that fails is reported, not dropped: the window would stay
// open until its TTL.
func TestAnnounceReportsAFailedWithdrawal(t *testing.T) {
	const token = "a-token-of-24-characters"
	var deletes atomic.Int32
	first, _ := windowExporter(t, &turning{safeAfter: 0}, token)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			deletes.Add(1)
			http.Error(w, `{"error":"the exporter is shutting down"}`, http.StatusServiceUnavailable)
			return
		}
		req, err := http.NewRequest(r.Method, first+r.URL.RequestURI(), nil)
		if err != nil {
			t.Error(err)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(proxy.Close)
	second, _ := windowExporter(t, &turning{safeAfter: 100}, token)
	err := Announce(context.Background(), Options{URL: proxy.URL, Scope: "broker", ID: "2"}, 30*time.Minute, token, []string{second})
	if deletes.Load() != 1 || err == nil || !strings.Contains(err.Error(), "withdraw them by hand") || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("%d withdrawals, error %v", deletes.Load(), err)
	}
}

// --after-restart with the token ends the member's window on each
// exporter, and leaves another member's alone.
func TestEndWindows(t *testing.T) {
	const token = "a-token-of-24-characters"
	first, firstWindows := windowExporter(t, &turning{safeAfter: 0}, token)
	second, secondWindows := windowExporter(t, &turning{safeAfter: 0}, token)
	o := Options{URL: first, Scope: "broker", ID: "2"}
	if err := Announce(context.Background(), o, 30*time.Minute, token, []string{second}); err != nil {
		t.Fatal(err)
	}
	other := o
	other.ID = "3"
	if n, err := EndWindows(context.Background(), other, token, []string{second}); n != 0 || err != nil {
		t.Fatalf("ending broker 3's windows: %d closed, %v; want none and no error", n, err)
	}
	if n, err := EndWindows(context.Background(), o, token, []string{second}); n != 2 || err != nil {
		t.Fatalf("ending broker 2's windows: %d closed, %v; want 2", n, err)
	}
	for _, r := range []*maintenance.Registry{firstWindows, secondWindows} {
		if ws := r.Windows(); len(ws) != 0 {
			t.Errorf("still open: %+v", ws)
		}
	}
	if _, err := EndWindows(context.Background(), o, "wrong-token-0123456789", nil); err != nil {
		t.Errorf("no window left to end: %v", err)
	}
	if err := Announce(context.Background(), o, 30*time.Minute, token, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := EndWindows(context.Background(), o, "wrong-token-0123456789", nil); n != 0 || err == nil || !strings.Contains(err.Error(), "wrong maintenance token") {
		t.Errorf("a wrong token: %d closed, %v; want the exporter's refusal", n, err)
	}
}
