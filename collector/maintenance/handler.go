package maintenance

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/failover-exporter/failover_exporter/collector/budget"
)

// Path is the endpoint of the windows.
const Path = "/api/v1/maintenance"

// Response is the body of a window's opening or closing, and of the list.
type Response struct {
	Windows []Window       `json:"windows,omitempty"`
	Window  *Window        `json:"window,omitempty"`
	Answer  *budget.Answer `json:"answer,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// Handler serves the windows:
//
//	GET                          the open windows
//	POST ?cluster=C&broker=2&ttl=30m   (as safe-to-stop's question, and ttl)
//	DELETE ?system=S&cluster=C   withdraw the cluster's window
//
// POST and DELETE change what the alert rules page for, so they need the
// token of token, in TokenHeader (the contents of --web.maintenance-token-file),
// which read access to the other endpoints does not give; with no token
// they are refused (403). A POST opens a window only for a stop the
// failure budget calls safe now (else 409 with the answer).
func Handler(r *Registry, token []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			budget.WriteJSON(w, http.StatusOK, Response{Windows: r.Windows()})
			return
		case http.MethodPost, http.MethodDelete:
		default:
			w.Header().Set("Allow", "GET, HEAD, POST, DELETE")
			budget.WriteJSON(w, http.StatusMethodNotAllowed, Response{Error: "method not allowed: GET lists the windows, POST opens one, DELETE withdraws one"})
			return
		}
		if status, msg := authorize(req, token); status != 0 {
			budget.WriteJSON(w, status, Response{Error: msg})
			return
		}
		if req.Method == http.MethodDelete {
			r.serveClose(w, req)
			return
		}
		r.serveOpen(w, req)
	})
}

// TokenHeader carries the maintenance token: its own header, as
// Authorization carries the web config's basic auth.
const TokenHeader = "X-Maintenance-Token"

// authorize checks the request's token against token: 0 when it
// matches, else the status and why.
func authorize(req *http.Request, token []byte) (int, string) {
	if len(token) == 0 {
		return http.StatusForbidden, "maintenance windows are off: start the exporter with --web.maintenance-token-file"
	}
	given := req.Header.Get(TokenHeader)
	if given == "" {
		return http.StatusUnauthorized, "send the maintenance token in the " + TokenHeader + " header (safe-to-stop --maintenance-token-file)"
	}
	// Compared as digests, in constant time, so that neither the
	// comparison's time nor the lengths tell anything of the token.
	want, got := sha256.Sum256(token), sha256.Sum256([]byte(given))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return http.StatusForbidden, "wrong maintenance token"
	}
	return 0, ""
}

func (r *Registry) serveOpen(w http.ResponseWriter, req *http.Request) {
	values := req.URL.Query()
	ttl, err := time.ParseDuration(values.Get("ttl"))
	if err != nil {
		budget.WriteJSON(w, http.StatusBadRequest, Response{Error: "ttl: give how long the window may stay open, as 30m or 2h"})
		return
	}
	system, cluster, q, err := budget.ParseQuestion(values, r.asker.BudgetSystems(), "ttl")
	if err != nil {
		budget.WriteJSON(w, http.StatusBadRequest, Response{Error: err.Error()})
		return
	}
	win, a, err := r.Open(system, cluster, q, ttl, time.Now())
	switch {
	case errors.Is(err, ErrNotSafe), errors.Is(err, ErrBusy):
		budget.WriteJSON(w, http.StatusConflict, Response{Error: err.Error(), Answer: &a})
	case errors.Is(err, budget.ErrStale), errors.Is(err, budget.ErrUnreadable):
		budget.WriteJSON(w, http.StatusServiceUnavailable, Response{Error: err.Error()})
	case err != nil:
		budget.WriteJSON(w, http.StatusBadRequest, Response{Error: err.Error()})
	default:
		budget.WriteJSON(w, http.StatusOK, Response{Window: &win, Answer: &a})
	}
}

func (r *Registry) serveClose(w http.ResponseWriter, req *http.Request) {
	values := req.URL.Query()
	system, cluster := values.Get("system"), values.Get("cluster")
	if system == "" || cluster == "" || len(values) != 2 {
		budget.WriteJSON(w, http.StatusBadRequest, Response{Error: "withdraw with ?system=SYSTEM&cluster=NAME, and nothing else"})
		return
	}
	win, ok := r.Close(system, cluster, time.Now())
	if !ok {
		budget.WriteJSON(w, http.StatusNotFound, Response{Error: "no maintenance window of " + system + "/" + cluster + " is open"})
		return
	}
	budget.WriteJSON(w, http.StatusOK, Response{Window: &win})
}

// Collector serves failover_exporter_maintenance_active: 1 per open
// window, and its end.
type Collector struct {
	r            *Registry
	active, ends *prometheus.Desc
}

// NewCollector serves r's windows, named with prefix (the exporter's).
func NewCollector(r *Registry, prefix string) *Collector {
	labels := []string{"system", "cluster", "scope", "member"}
	return &Collector{r: r,
		active: prometheus.NewDesc(prefix+"_maintenance_active",
			"1 for each member of each open maintenance window (member: as the system's own series label it; scope: how the stop was announced): a stop announced (safe-to-stop --announce, POST /api/v1/maintenance) while the failure budget called it safe; "+
				"it closes when the member is back and caught up after it was seen stopped, at its TTL, or when withdrawn (docs/maintenance.md).", labels, nil),
		ends: prometheus.NewDesc(prefix+"_maintenance_end_timestamp_seconds",
			"When each open maintenance window's TTL runs out, as a Unix time.", labels, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.active; ch <- c.ends }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range c.r.Windows() {
		for _, m := range w.Members {
			labels := []string{w.System, w.Cluster, string(w.Scope), m}
			ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, 1, labels...)
			ch <- prometheus.MustNewConstMetric(c.ends, prometheus.GaugeValue, float64(w.Until.UnixMilli())/1000, labels...)
		}
	}
}
