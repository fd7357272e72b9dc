package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/status"
)

// TestProbesAnswerOnlyGetAndHead: /-/healthy and /-/ready answer GET and
// HEAD, and 405 with Allow to anything else, as Prometheus's own do; a
// load balancer's PUT or DELETE is not a probe.
func TestProbesAnswerOnlyGetAndHead(t *testing.T) {
	mux, err := newMux(flags{telemetryPath: "/metrics"}, prometheus.NewRegistry(), endpoints{
		metrics: http.NotFoundHandler(),
		ready:   func() bool { return true },
		events:  http.NotFoundHandler(),
		status:  status.Sources{},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/-/healthy", "/-/ready"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			if rec.Code != http.StatusOK {
				t.Errorf("%s %s: %d, want 200", method, path, rec.Code)
			}
		}
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodTrace, http.MethodOptions} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" || !strings.Contains(rec.Body.String(), "probe with GET or HEAD") {
				t.Errorf("%s %s: %d, Allow %q, %q; want 405, Allow: GET, HEAD", method, path, rec.Code, rec.Header().Get("Allow"), rec.Body.String())
			}
		}
	}
}
