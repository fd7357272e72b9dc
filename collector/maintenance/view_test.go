package maintenance

import (
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// The status page's section of a cluster with an open window says what was
// announced and until when; a window of a cluster the page does not show
// adds no section.
func TestWindowOnTheStatusPage(t *testing.T) {
	a := &asker{safe: map[string]bool{"1": true}, down: map[string]bool{}}
	r := NewRegistry(a, nil)
	t0 := time.Date(2026, 12, 7, 13, 0, 0, 0, time.UTC)
	if _, _, err := r.Open("kafka", "lab", budget.Question{Scope: "broker", ID: "1"}, 30*time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	other := func(time.Time) []model.Cluster { return []model.Cluster{{System: "kafka", Name: "other"}} }
	if parts := r.WithViews(other)(t0); len(parts) != 1 {
		t.Errorf("a window of a cluster the page does not show added a section: %+v", parts)
	}
	shown := func(time.Time) []model.Cluster { return []model.Cluster{{System: "kafka", Name: "lab"}} }
	parts := r.WithViews(shown)(t0.Add(5 * time.Minute))
	if len(parts) != 2 || parts[1].System != "kafka" || parts[1].Name != "lab" || len(parts[1].Notes) != 1 {
		t.Fatalf("parts %+v, want lab's and its window's note", parts)
	}
	note := parts[1].Notes[0].Text
	for _, want := range []string{"broker 1", "announced 5m00s ago", "until 13:30:00 UTC (in 25m00s)", "not seen yet"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note %q does not say %q", note, want)
		}
	}
}
