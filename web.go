package main

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"

	"github.com/failover-exporter/failover_exporter/collector"
	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/exposition"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/status"
)

// endpoints are what the HTTP server needs from the rest of the exporter.
type endpoints struct {
	metrics http.Handler
	// probe serves one cluster's series: /probe?target=NAME[&system=S].
	probe http.Handler
	ready func() bool
	// reload is nil when there is no config file to read again.
	reload func() error
	// events serves the event log as JSON.
	events http.Handler
	// budget answers the failure budget's questions (safe-to-stop,
	// recovered).
	budget budget.Asker
	// status is what the status page on / reads.
	status status.Sources
	// maintenance serves the maintenance windows.
	maintenance http.Handler
}

// newMux routes the exporter's endpoints.
func newMux(f flags, reg *prometheus.Registry, e endpoints) (*http.ServeMux, error) {
	mux := http.NewServeMux()
	// InstrumentMetricHandler adds promhttp_metric_handler_requests_total
	// and _requests_in_flight, as every exporter built on promhttp has.
	mux.Handle(f.telemetryPath, onlyGet("scrape with GET", promhttp.InstrumentMetricHandler(reg, e.metrics)))
	mux.Handle(probePath, onlyGet("scrape with GET", e.probe))
	mux.Handle("/api/v1/events", e.events)
	mux.Handle(budget.SafeToStopPath, budget.Handler(e.budget, false))
	mux.Handle(budget.RecoveredPath, budget.Handler(e.budget, true))
	if e.maintenance != nil {
		mux.Handle(maintenance.Path, e.maintenance)
	}
	// As Prometheus's own, the probes answer GET and HEAD only.
	mux.Handle("/-/healthy", onlyGet("probe with GET or HEAD", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy")
	})))
	mux.Handle("/-/ready", onlyGet("probe with GET or HEAD", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !e.ready() {
			http.Error(w, "Not ready: waiting for the first refresh of every cluster", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready")
	})))
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "Use POST or PUT to reload the configuration", http.StatusMethodNotAllowed)
			return
		}
		if e.reload == nil {
			http.Error(w, errNothingToReload.Error(), http.StatusBadRequest)
			return
		}
		if err := e.reload(); err != nil {
			http.Error(w, "Reload failed: "+err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "Reloaded")
	})
	if f.enablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if f.telemetryPath != "/" {
		links := []status.Link{
			{Address: f.telemetryPath, Text: "Metrics"},
			{Address: probePath, Text: "Probe", Description: "one cluster's series, one Prometheus target each: ?target=NAME (&system=SYSTEM when the name is used by several systems); a cluster the config does not list: ?system=SYSTEM&module=M&target=HOST:PORT"},
			{Address: "/-/healthy", Text: "Health"},
			{Address: "/-/ready", Text: "Readiness", Description: "ready once every cluster was read once"},
			{Address: "/api/v1/events", Text: "Events", Description: "the latest cluster events as JSON, newest first; ?system=SYSTEM&cluster=NAME&since=15m"},
			{Address: budget.SafeToStopPath, Text: "Safe to stop?", Description: "what stopping a member now would do: ?cluster=NAME&broker=ID (rack=, node=, zone=); 200 safe, 409 not, 503 stale"},
			{Address: budget.RecoveredPath, Text: "Recovered?", Description: "after a restart: back and caught up? Same parameters"},
			{Address: maintenance.Path, Text: "Maintenance windows", Description: "the announced stops (GET); POST (with the maintenance token) opens one for a safe stop: same parameters and ttl=30m; DELETE ?system=&cluster= withdraws it"},
		}
		// The profile links work only when the profiles are served.
		if f.enablePprof {
			links = append(links,
				status.Link{Address: "/debug/pprof/", Text: "Profiles", Description: "Go runtime profiles (--web.enable-pprof)"},
				status.Link{Address: "/debug/pprof/heap", Text: "Heap"},
				status.Link{Address: "/debug/pprof/goroutine?debug=1", Text: "Goroutines"},
			)
		}
		mux.Handle("/", &status.Page{Title: "Failover Exporter", Version: version.Info(), Links: links, Sources: e.status})
	}
	return mux, nil
}

// onlyGet answers 405 to anything but GET and HEAD, saying what to do
// instead (hint): a POST to /metrics is a mistake worth telling the client
// about, not a scrape.
func onlyGet(hint string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method not allowed: "+hint, http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// probePath serves one configured cluster's series, in the multi-target
// exporter pattern (blackbox_exporter's /probe).
const probePath = "/probe"

// prober finds a cluster's series: one of the config by the system its
// events are recorded under and its name (collector.Manager.Probe), or one
// found by service discovery, by its address and module
// (collector.Manager.ProbeModule).
type prober interface {
	Probe(system, target string) ([]exposition.TextWriter, error)
	ProbeModule(system, module, addr string, wait time.Duration) ([]exposition.TextWriter, error)
}

// probeTarget reads a /probe request: target= names a cluster of the
// config, with system= (kafka, redis, mirror) needed only when several
// systems have a cluster of that name; with module=, target= is the
// address of a cluster the config does not list (one host:port or several,
// comma separated), and system= is needed only when several systems have a
// module of that name. The first probe of such a
// target waits for its first refresh at most the scrape's timeout (the
// header Prometheus sends) less a margin.
func probeTarget(p prober) exposition.TargetResolver {
	return func(r *http.Request) ([]exposition.TextWriter, error) {
		q := r.URL.Query()
		// The Prometheus Operator's Probe sends module= empty when it has
		// none: that is a probe of a cluster of the config.
		if q.Get("module") == "" {
			return p.Probe(q.Get("system"), q.Get("target"))
		}
		writers, err := p.ProbeModule(q.Get("system"), q.Get("module"), q.Get("target"), firstProbeWait(r))
		switch {
		case errors.Is(err, collector.ErrTooManyTargets):
			return nil, withStatus{err, http.StatusTooManyRequests}
		case errors.Is(err, collector.ErrAlias):
			return nil, withStatus{err, http.StatusConflict}
		case errors.Is(err, collector.ErrTargetNotAllowed):
			return nil, withStatus{err, http.StatusForbidden}
		}
		return writers, err
	}
}

// withStatus answers a refused probe with its own status: 403 for a target
// its module does not allow, 429 past --probe.max-targets (with a
// Retry-After), 409 for a cluster watched already under another name.
type withStatus struct {
	error
	status int
}

func (e withStatus) StatusCode() int { return e.status }
func (e withStatus) Unwrap() error   { return e.error }

// Waiting for a new target's first refresh: the scrape's timeout less
// probeWaitMargin, so that the answer beats it; probeWaitDefault without
// the header (curl).
const (
	probeWaitMargin  = 500 * time.Millisecond
	probeWaitDefault = 10 * time.Second
)

func firstProbeWait(r *http.Request) time.Duration {
	secs, err := strconv.ParseFloat(r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"), 64)
	if err != nil || secs <= 0 || math.IsInf(secs, 0) || math.IsNaN(secs) {
		return probeWaitDefault - probeWaitMargin
	}
	return max(time.Duration(secs*float64(time.Second))-probeWaitMargin, 0)
}
