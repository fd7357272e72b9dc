package events

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxLimit caps ?limit=, whatever the capacity.
const maxLimit = 100000

// Response is the body of /api/v1/events.
type Response struct {
	Events []Event `json:"events"`
	// HistoryBegins is when this exporter's kept history begins (Log.Begins):
	// its start, or the newest event a full log let go. Events before it
	// are unknown to this exporter, not absent.
	HistoryBegins time.Time `json:"history_begins"`
}

// Handler serves the kept events as JSON, newest first. Query parameters:
// system (kafka, redis; every system when absent), cluster (a cluster name;
// with system, that system's cluster, else the clusters of that name in
// every system: names are unique only within a system), since (an RFC 3339
// time, or a duration such as 15m meaning that long ago) and limit (a
// positive count). A malformed parameter is answered with 400 and a
// message saying which.
//
// known returns the configured cluster names by system. A system or
// cluster that is neither configured nor in the kept events (a cluster
// removed by a reload keeps its events) is answered with 400 naming it and
// the configured ones, rather than with an empty list that reads as "all
// quiet". With a nil known every name is accepted.
func (l *Log) Handler(known func() map[string][]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		since, err := ParseSince(q.Get("since"), time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		limit := 0
		if s := q.Get("limit"); s != "" {
			limit, err = strconv.Atoi(s)
			if err != nil || limit <= 0 || limit > maxLimit {
				http.Error(w, fmt.Sprintf("limit %q: want a whole number from 1 to %d", s, maxLimit), http.StatusBadRequest)
				return
			}
		}
		system, cluster := q.Get("system"), q.Get("cluster")
		if known != nil {
			if err := l.checkNames(system, cluster, known()); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		evs := l.Query(system, cluster, since, limit)
		if evs == nil {
			evs = []Event{}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		_ = enc.Encode(Response{Events: evs, HistoryBegins: l.Begins()})
	})
}

// ParseSince reads a since parameter: empty (no bound), an RFC 3339 time,
// or a positive Go duration counted back from now.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("since %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a positive duration (15m)", s)
}

// checkNames says which of system and cluster (either may be empty) is
// neither in known, the configured clusters by system, nor in the kept
// events.
func (l *Log) checkNames(system, cluster string, known map[string][]string) error {
	systems := make([]string, 0, len(known))
	for s := range known {
		systems = append(systems, s)
	}
	slices.Sort(systems)
	if system != "" {
		if _, ok := known[system]; !ok && !l.holds(system, "") {
			quoted := make([]string, len(systems))
			for i, s := range systems {
				quoted[i] = strconv.Quote(s)
			}
			return fmt.Errorf("unknown system %q; systems with configured clusters: %s", system, listOrNone(quoted))
		}
	}
	if cluster == "" {
		return nil
	}
	configured := false
	for _, s := range systems {
		if (system == "" || s == system) && slices.Contains(known[s], cluster) {
			configured = true
		}
	}
	if configured || l.holds(system, cluster) {
		return nil
	}
	var names []string
	for _, s := range systems {
		clusters := slices.Clone(known[s])
		slices.Sort(clusters)
		for _, c := range clusters {
			names = append(names, s+" "+strconv.Quote(c))
		}
	}
	what := "cluster"
	if system != "" {
		what = system + " cluster"
	}
	return fmt.Errorf("unknown %s %q; configured clusters: %s", what, cluster, listOrNone(names))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
