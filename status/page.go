// Package status renders the exporter's landing page: a live summary of
// every watched cluster, server-side, from view models each system builds
// from the same published snapshots /metrics serves (status/model), and the
// latest events. It never talks to a cluster or reads a snapshot, so
// it answers at once even when a cluster hangs; it loads nothing from
// elsewhere (no scripts, fonts or styles from other hosts), so it works
// offline and behind the same --web.config.file authentication as the rest
// of the server; and it refreshes itself with a meta refresh.
package status

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/status/model"
)

// Link is one link in the page header (metrics, health, readiness...).
type Link struct {
	Address     string
	Text        string
	Description string
}

// Sources are where the page reads state from; each returns immediately.
type Sources struct {
	// Clusters are the view models of every watched cluster as of now,
	// built by each system from its published snapshots. Parts with the
	// same system and name make one section, in order of first appearance.
	Clusters func(now time.Time) []model.Cluster
	// Events gives each section its system's and cluster's latest events.
	Events *events.Log
}

// Page is the status page handler.
type Page struct {
	Title   string
	Version string
	Links   []Link
	// Refresh is how often the browser reloads the page; 0 means 5 s.
	Refresh time.Duration
	Sources Sources
	// now is time.Now, replaceable in tests.
	now func() time.Time
}

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"inc":    func(i int) int { return i + 1 },
	"color":  cssColor,
	"level":  levelClass,
	"attrs":  rowAttrs,
	"class":  stripClass,
	"column": column,
}).Parse(pageHTML))

// ServeHTTP renders the page. Only "/" is the page; other paths are 404,
// like the mux's catch-all would say.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p.view()); err != nil {
		http.Error(w, fmt.Sprintf("render status page: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// Nothing on the page comes from elsewhere; say so to the browser.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; frame-ancestors 'none'")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

func (p *Page) view() pageView {
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	refresh := p.Refresh
	if refresh <= 0 {
		refresh = 5 * time.Second
	}
	v := pageView{Title: p.Title, Version: p.Version, Now: now.UTC(), RefreshSecs: max(1, int(refresh.Seconds())), Links: p.Links}
	if p.Sources.Clusters != nil {
		v.Clusters = sections(p.Sources.Clusters(now), p.Sources.Events, now)
	}
	return v
}
