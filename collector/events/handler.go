package events

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// maxLimit caps ?limit=, whatever the capacity.
const maxLimit = 100000

// Response is the body of /api/v1/events.
type Response struct {
	Events []Event `json:"events"`
}

// Handler serves the kept events as JSON, newest first. Query parameters:
// cluster (a cluster name; all when absent), since (an RFC 3339 time, or a
// duration such as 15m meaning that long ago) and limit (a positive count).
// A malformed parameter is answered with 400 and a message saying which.
func (l *Log) Handler() http.Handler {
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
		evs := l.Query(q.Get("cluster"), since, limit)
		if evs == nil {
			evs = []Event{}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		_ = enc.Encode(Response{Events: evs})
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
