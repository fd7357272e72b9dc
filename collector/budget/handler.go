package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// System is one system with a failure budget, as the handler finds the
// cluster a question is about.
type System struct {
	Name     string
	Scopes   []ScopeSpec
	Clusters []string
}

// Answers reports whether the system's budget answers questions of scope.
func (s System) Answers(scope Scope) bool {
	return slices.ContainsFunc(s.Scopes, func(spec ScopeSpec) bool { return spec.Scope == scope })
}

// Scopes are the scopes of systems, each once, in the systems' order.
func Scopes(systems []System) []Scope {
	var out []Scope
	for _, s := range systems {
		for _, spec := range s.Scopes {
			if !slices.Contains(out, spec.Scope) {
				out = append(out, spec.Scope)
			}
		}
	}
	return out
}

// whatToStop says how each system's members and domains are named in a
// question: "broker=ID or rack=NAME (kafka), node=ID|ADDR or zone=NAME
// (redis)".
func whatToStop(systems []System) string {
	var parts []string
	for _, s := range systems {
		var named []string
		for _, spec := range s.Scopes {
			named = append(named, string(spec.Scope)+"="+spec.Member)
		}
		if len(named) > 0 {
			parts = append(parts, strings.Join(named, " or ")+" ("+s.Name+")")
		}
	}
	if len(parts) == 0 {
		return "no system here has a failure budget"
	}
	return strings.Join(parts, ", ")
}

// Asker answers questions of served clusters (the collector's Manager).
type Asker interface {
	Budget(system, cluster string, q Question, now time.Time) (Answer, error)
	BudgetSystems() []System
}

// ErrorResponse is the body of every answer that is not a verdict.
type ErrorResponse struct {
	Error string `json:"error"`
}

// Paths of the two endpoints.
const (
	SafeToStopPath = "/api/v1/safe-to-stop"
	RecoveredPath  = "/api/v1/recovered"
)

// Handler answers /api/v1/safe-to-stop (recovered false) or
// /api/v1/recovered (true) from the latest snapshots:
//
//	?system=kafka&cluster=orders&broker=2   (or rack=, node=, zone=)
//
// system and cluster may be left out when only one system and cluster
// fit. It answers 200 with the Answer when safe (recovered), 409 with the
// Answer when not, 503 when the snapshot is too old or the cluster
// unreadable (never a verdict from stale data), and 400 naming the
// parameter for a question it cannot place.
func Handler(a Asker, recovered bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			WriteJSON(w, http.StatusMethodNotAllowed, ErrorResponse{"method not allowed: use GET"})
			return
		}
		system, cluster, q, err := ParseQuestion(r.URL.Query(), a.BudgetSystems())
		if err != nil {
			WriteJSON(w, http.StatusBadRequest, ErrorResponse{err.Error()})
			return
		}
		q.Recovered = recovered
		answer, err := a.Budget(system, cluster, q, time.Now())
		switch {
		case errors.Is(err, ErrStale), errors.Is(err, ErrUnreadable):
			WriteJSON(w, http.StatusServiceUnavailable, ErrorResponse{err.Error()})
		case err != nil:
			WriteJSON(w, http.StatusBadRequest, ErrorResponse{err.Error()})
		case answer.Safe:
			WriteJSON(w, http.StatusOK, answer)
		default:
			WriteJSON(w, http.StatusConflict, answer)
		}
	})
}

// ParseQuestion reads a query string strictly: every parameter known (the
// question's, and extra), given once, not empty, and one member or domain
// named.
func ParseQuestion(values url.Values, systems []System, extra ...string) (system, cluster string, q Question, err error) {
	scopes := Scopes(systems)
	known := append([]string{"system", "cluster"}, extra...)
	for _, s := range scopes {
		known = append(known, string(s))
	}
	var unknown []string
	for key, vs := range values {
		if !slices.Contains(known, key) {
			unknown = append(unknown, key)
			continue
		}
		if len(vs) != 1 {
			return "", "", q, fmt.Errorf("parameter %s given %d times: give it once", key, len(vs))
		}
		if strings.TrimSpace(vs[0]) == "" {
			return "", "", q, fmt.Errorf("parameter %s is empty", key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return "", "", q, fmt.Errorf("unknown parameter %s: want system, cluster and one of %s", strings.Join(unknown, ", "), strings.Join(known[2+len(extra):], ", "))
	}
	for _, s := range scopes {
		if id := values.Get(string(s)); id != "" {
			if q.Scope != "" {
				return "", "", q, fmt.Errorf("parameters %s and %s both given: ask about one member or domain at a time", q.Scope, s)
			}
			q.Scope, q.ID = s, id
		}
	}
	if q.Scope == "" {
		return "", "", q, errors.New("name what to stop: " + whatToStop(systems))
	}
	system, cluster, err = place(values.Get("system"), values.Get("cluster"), q.Scope, systems)
	return system, cluster, q, err
}

// place finds the one system and cluster a question fits.
func place(system, cluster string, scope Scope, systems []System) (string, string, error) {
	type candidate struct{ system, cluster string }
	var fits []candidate
	var names []string
	systemKnown := false
	for _, s := range systems {
		names = append(names, s.Name)
		if system != "" && s.Name != system {
			continue
		}
		systemKnown = true
		if !s.Answers(scope) {
			continue
		}
		for _, c := range s.Clusters {
			if cluster == "" || c == cluster {
				fits = append(fits, candidate{s.Name, c})
			}
		}
	}
	switch {
	case system != "" && !systemKnown:
		return "", "", fmt.Errorf("system %q has no failure budget here: want one of %s", system, listOr(names))
	case len(fits) == 1:
		return fits[0].system, fits[0].cluster, nil
	case len(fits) == 0 && cluster != "":
		return "", "", fmt.Errorf("cluster %q: no cluster of that name answers %s questions; served: %s", cluster, scope, served(systems, scope))
	case len(fits) == 0:
		return "", "", fmt.Errorf("no cluster answers %s questions; served: %s", scope, served(systems, scope))
	}
	var which []string
	for _, f := range fits {
		which = append(which, f.system+"/"+f.cluster)
	}
	return "", "", fmt.Errorf("%d clusters fit (%s): say which with cluster= (and system=)", len(fits), strings.Join(which, ", "))
}

func served(systems []System, scope Scope) string {
	var parts []string
	for _, s := range systems {
		if s.Answers(scope) && len(s.Clusters) > 0 {
			parts = append(parts, s.Name+": "+strings.Join(s.Clusters, ", "))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func listOr(names []string) string {
	if len(names) == 0 {
		return "none (no system answers)"
	}
	return strings.Join(names, ", ")
}

// WriteJSON writes body as the endpoints' JSON answer with status.
func WriteJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(body)
}
