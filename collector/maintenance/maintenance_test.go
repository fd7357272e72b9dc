package maintenance

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
)

// asker answers as a cluster of three brokers would: a stop is safe when
// safe says so; a member is recovered unless it is in down.
type asker struct {
	safe map[string]bool
	down map[string]bool
	err  error
}

func (a *asker) Budget(system, cluster string, q budget.Question, now time.Time) (budget.Answer, error) {
	if a.err != nil {
		return budget.Answer{}, a.err
	}
	ans := budget.Answer{System: system, Cluster: cluster, Scope: q.Scope, ID: q.ID, Recovered: q.Recovered}
	if q.Recovered {
		ans.Safe = !a.down[q.ID]
	} else {
		ans.Safe = a.safe[q.ID]
	}
	return ans, nil
}

func (a *asker) BudgetSystems() []budget.System {
	return []budget.System{{Name: "kafka", Scopes: []budget.ScopeSpec{{Scope: "broker", Member: "ID"}}, Clusters: []string{"lab"}}}
}

// A window opens only for a safe stop and one per cluster; it stays open
// while the member is up (the stop has not begun) and while it is down,
// and closes at the first recovered answer after it was seen down.
func TestWindowLifecycle(t *testing.T) {
	a := &asker{safe: map[string]bool{"1": true, "2": true}, down: map[string]bool{}}
	r := NewRegistry(a, nil)
	t0 := time.Date(2026, 12, 7, 13, 0, 0, 0, time.UTC)
	q := func(id string) budget.Question { return budget.Question{Scope: "broker", ID: id} }
	if _, _, err := r.Open("kafka", "lab", q("3"), time.Hour, t0); !errors.Is(err, ErrNotSafe) {
		t.Fatalf("an unsafe stop: %v, want ErrNotSafe", err)
	}
	if _, _, err := r.Open("kafka", "lab", q("1"), time.Hour, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Open("kafka", "lab", q("2"), time.Hour, t0); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second member of the same cluster: %v, want ErrBusy", err)
	}
	// Announced again while stopped (the budget says no now): renewed.
	a.safe["1"], a.down["1"] = false, true
	if w, _, err := r.Open("kafka", "lab", q("1"), 2*time.Hour, t0.Add(time.Minute)); err != nil || !w.Until.Equal(t0.Add(time.Minute+2*time.Hour)) {
		t.Fatalf("renewed: %+v, %v", w, err)
	}
	a.down["1"] = false
	r.Sweep(t0.Add(2 * time.Minute)) // up: never seen stopped by a sweep, so not "back"
	if len(r.Windows()) != 1 {
		t.Fatalf("closed before the member was seen stopped: %+v", r.Windows())
	}
	a.down["1"] = true
	r.Sweep(t0.Add(3 * time.Minute))
	if ws := r.Windows(); len(ws) != 1 || !ws[0].SeenStopped {
		t.Fatalf("stopped: %+v, want the window open and the stop seen", ws)
	}
	a.down["1"] = false
	r.Sweep(t0.Add(4 * time.Minute))
	if ws := r.Windows(); len(ws) != 0 {
		t.Fatalf("back and caught up: %+v, want the window closed", ws)
	}
}

// A window whose member never comes back closes at its TTL; an answer
// that cannot be had (a stale snapshot) changes nothing.
func TestWindowTTL(t *testing.T) {
	a := &asker{safe: map[string]bool{"1": true}, down: map[string]bool{"1": true}}
	r := NewRegistry(a, nil)
	t0 := time.Date(2026, 12, 7, 13, 0, 0, 0, time.UTC)
	if _, _, err := r.Open("kafka", "lab", budget.Question{Scope: "broker", ID: "1"}, 10*time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	a.err = budget.ErrStale
	r.Sweep(t0.Add(5 * time.Minute))
	if len(r.Windows()) != 1 {
		t.Fatal("closed on a stale answer")
	}
	r.Sweep(t0.Add(10 * time.Minute))
	if len(r.Windows()) != 0 {
		t.Fatal("open past its TTL")
	}
	for _, ttl := range []time.Duration{0, -time.Minute, MaxTTL + time.Second} {
		if _, _, err := r.Open("kafka", "lab", budget.Question{Scope: "broker", ID: "1"}, ttl, t0); !errors.Is(err, ErrTTL) {
			t.Errorf("ttl %s: %v, want ErrTTL", ttl, err)
		}
	}
}

// Opening and withdrawing need the maintenance token, which nothing else
// gives; without one configured they are off. Listing is open to all.
func TestHandlerNeedsTheToken(t *testing.T) {
	a := &asker{safe: map[string]bool{"1": true, "2": false}}
	r := NewRegistry(a, nil)
	do := func(h http.Handler, method, query, token string) (int, Response) {
		req := httptest.NewRequest(method, Path+"?"+query, nil)
		if token != "" {
			req.Header.Set(TokenHeader, token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var resp Response
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil && method != http.MethodHead {
			t.Fatalf("%s %s: %v: %s", method, query, err, rec.Body.String())
		}
		return rec.Code, resp
	}
	off := Handler(r, nil)
	if code, resp := do(off, http.MethodPost, "broker=1&ttl=1h", "x"); code != http.StatusForbidden || !strings.Contains(resp.Error, "--web.maintenance-token-file") {
		t.Errorf("no token configured: %d %q", code, resp.Error)
	}
	h := Handler(r, []byte("s3cret"))
	for _, tc := range []struct {
		method, query, token string
		want                 int
	}{
		{http.MethodPost, "broker=1&ttl=1h", "", http.StatusUnauthorized},
		{http.MethodPost, "broker=1&ttl=1h", "wrong", http.StatusForbidden},
		{http.MethodPost, "broker=1", "s3cret", http.StatusBadRequest},
		{http.MethodPost, "broker=1&ttl=1h&evil=1", "s3cret", http.StatusBadRequest},
		{http.MethodPost, "broker=2&ttl=1h", "s3cret", http.StatusConflict},
		{http.MethodPost, "broker=1&ttl=1h", "s3cret", http.StatusOK},
		{http.MethodDelete, "system=kafka&cluster=lab", "wrong", http.StatusForbidden},
		{http.MethodPut, "", "s3cret", http.StatusMethodNotAllowed},
	} {
		if code, resp := do(h, tc.method, tc.query, tc.token); code != tc.want {
			t.Errorf("%s ?%s (token %q): %d %q, want %d", tc.method, tc.query, tc.token, code, resp.Error, tc.want)
		}
	}
	if code, resp := do(h, http.MethodGet, "", ""); code != http.StatusOK || len(resp.Windows) != 1 || resp.Windows[0].Member != "1" {
		t.Errorf("list: %d %+v", code, resp)
	}
	if code, _ := do(h, http.MethodDelete, "system=kafka&cluster=lab", "s3cret"); code != http.StatusOK {
		t.Errorf("withdraw: %d", code)
	}
	if code, _ := do(h, http.MethodDelete, "system=kafka&cluster=lab", "s3cret"); code != http.StatusNotFound {
		t.Errorf("withdraw again: %d, want 404", code)
	}
}
