package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// The event log (/api/v1/events): read once, polled until a condition
// holds, described for a failure message, and times shown to the
// millisecond as the tests log them.

// fetchEvents reads /api/v1/events with the given query.
func fetchEvents(t *testing.T, e *exportertest.Exporter, query string) []events.Event {
	t.Helper()
	return eventsResponse(t, e, query).Events
}

// eventsResponse is an exporter's whole /api/v1/events answer to query:
// the events and when its kept history begins.
func eventsResponse(t *testing.T, e *exportertest.Exporter, query string) events.Response {
	t.Helper()
	resp, err := e.Get("/api/v1/events" + query)
	if err != nil {
		t.Fatalf("GET /api/v1/events: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/events%s: %s", query, resp.Status)
	}
	var body events.Response
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("decode /api/v1/events: %v", err)
	}
	return body
}

// waitEvents polls /api/v1/events?cluster=lab until cond holds and returns
// the events, newest first.
func waitEvents(t *testing.T, e *exportertest.Exporter, timeout time.Duration, what string, cond func([]events.Event) bool) []events.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		evs := fetchEvents(t, e, "?cluster=lab")
		if cond(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the event log after %s:\n%s", what, timeout, describeEvents(evs))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// eventIndex is the position of the newest event of kind about a topic's
// partition, or (topic "") about broker or node id, -1 when absent.
func eventIndex(evs []events.Event, kind, topic string, id int) int {
	for i, e := range evs {
		if string(e.Kind) != kind {
			continue
		}
		if topic == "" && e.Subject.NodeID == fmt.Sprint(id) {
			return i
		}
		if topic != "" && e.Subject.Topic == topic && e.Subject.Partition != nil && int(*e.Subject.Partition) == id {
			return i
		}
	}
	return -1
}

func describeEvents(evs []events.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s %+v %s -> %s", e.Time.Format("15:04:05.000"), e.Kind, e.Subject, e.Before, e.After)
		if !e.FirstFailure.IsZero() {
			fmt.Fprintf(&b, " (first failure %s)", e.FirstFailure.Format("15:04:05.000"))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func clock(at time.Time) string { return at.Format("15:04:05.000") }
