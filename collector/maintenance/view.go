package maintenance

import (
	"fmt"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/status/model"
)

// WithViews adds, to the status page's sections that views returns, a note
// for each open window of their clusters: what was announced, until when,
// and whether the stop was seen. A window of a cluster the page does not
// show (a discovered one) adds no section.
func (r *Registry) WithViews(views func(now time.Time) []model.Cluster) func(now time.Time) []model.Cluster {
	return func(now time.Time) []model.Cluster {
		parts := views(now)
		shown := map[[2]string]bool{}
		for _, p := range parts {
			shown[[2]string{p.System, p.Name}] = true
		}
		for _, w := range r.Windows() {
			if shown[[2]string{w.System, w.Cluster}] {
				parts = append(parts, model.Cluster{System: w.System, Name: w.Cluster, Notes: []model.Note{windowNote(w, now)}})
			}
		}
		return parts
	}
}

// windowNote is a window as the page says it.
func windowNote(w Window, now time.Time) model.Note {
	seen := "the stop is not seen yet"
	if w.SeenStopped {
		seen = "the stop was seen; it ends when the " + string(w.Scope) + " is back and caught up"
	}
	covers := ""
	if len(w.Members) > 1 || (len(w.Members) == 1 && w.Members[0] != w.Member) {
		covers = " (" + strings.Join(w.Members, ", ") + ")"
	}
	return model.Note{
		Level: "warn",
		Attrs: []model.Attr{{Name: "data-maintenance", Value: string(w.Scope) + "/" + w.Member}},
		Text: fmt.Sprintf("Maintenance window: %s %s%s announced %s, until %s (in %s); %s. What the stop explains is a ticket, not a page.",
			w.Scope, w.Member, covers, model.Ago(now.Sub(w.OpenedAt)), w.Until.UTC().Format("15:04:05 MST"), model.Age(w.Until.Sub(now)), seen),
	}
}
