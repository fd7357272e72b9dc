// Package budget is the failure budget's common language: what stopping one
// member of a cluster (a Kafka broker, a Redis node) or one failure domain
// (a rack, an availability zone) now would do, as each system computes it
// once per refresh from its snapshot, and as /api/v1/safe-to-stop and the
// safe-to-stop command answer it.
//
// It is pure: no Prometheus types, no clients. A system package decides
// what "safe" means for its members and says why not with Findings; this
// package only gives them one shape.
package budget

import (
	"errors"
	"fmt"
	"time"
)

// Scope is what a question is about: a kind of member ("broker") or of
// failure domain ("rack") of one system, which declares it (ScopeSpec).
// It is the endpoint's parameter and the command's flag.
type Scope string

// ScopeSpec is one scope as its system declares it: the data from which
// /api/v1/safe-to-stop's parameters and 400 messages and the safe-to-stop
// command's flags are built, so that neither names a system.
type ScopeSpec struct {
	Scope Scope
	// Member says how one is named in a question: "ID", "NAME", "ID|ADDR".
	Member string
	// Help is the command flag's help: "A Kafka broker id."
	Help string
}

// Question is what a caller asks of one cluster's latest snapshot.
type Question struct {
	Scope Scope
	// ID names the member or domain, as the scope's Member says: a broker
	// id, a rack, a node id or ip:port, a zone.
	ID string
	// Recovered asks, after a restart, whether the member is back and
	// caught up (in every ISR it belongs to; a replica's link up and
	// synced), rather than whether it may be stopped now.
	Recovered bool
}

// Reason is why a stop is not safe, or a member not recovered. Each system
// declares its own small fixed set (they label series, so they must stay
// few); the endpoint and the command print them as they are.
type Reason string

// Finding is one reason with how much of the cluster it concerns.
type Finding struct {
	Reason Reason `json:"reason"`
	// Count is how many partitions, slots or voters the reason is about;
	// 0 where it is about the cluster as a whole.
	Count int `json:"count"`
	// Message says it in a sentence, for a person reading a log or a
	// preStop hook's output.
	Message string `json:"message"`
}

// MaxAtRisk bounds the partitions or slot ranges an Answer lists: enough
// to act on, bounded however large the cluster.
const MaxAtRisk = 100

// Answer is what stopping (or, for a Recovered question, having restarted)
// the member or domain means now.
type Answer struct {
	System  string `json:"system"`
	Cluster string `json:"cluster"`
	Scope   Scope  `json:"scope"`
	ID      string `json:"id"`
	// Recovered is true for the answer to a Recovered question.
	Recovered bool `json:"recovered_question,omitempty"`
	// Safe is the verdict: for a stop, nothing in Findings; for a
	// recovered question, the member is back and caught up.
	Safe     bool      `json:"safe"`
	Findings []Finding `json:"findings"`
	// AtRisk names the partitions ("topic/3") or slot ranges ("0-5460")
	// the findings are about, at most MaxAtRisk of them, in a stable
	// order; AtRiskTotal is how many there are in all.
	AtRisk      []string `json:"at_risk"`
	AtRiskTotal int      `json:"at_risk_total"`
	// Advice is what to do first, when there is something to do: "fail
	// over to replica ID (ADDR) first: CLUSTER FAILOVER on it".
	Advice string `json:"advice,omitempty"`
	// FailoverTo is the address of the member to hand over to before the
	// stop (a Redis master's healthy, caught-up replica), when there is one.
	FailoverTo string `json:"failover_to,omitempty"`
	// Members are the members the question covers, as the system's series
	// label them: a rack's brokers, a zone's nodes' addresses, a Redis
	// node's address; empty for a member its ID names already (a broker).
	Members []string `json:"members,omitempty"`
	// Facts are figures behind the verdict that a script may want (the
	// bytes a failover now would lose, seconds slots would be unserved).
	Facts map[string]float64 `json:"facts,omitempty"`
	// ReadAt is when the snapshot the answer comes from was read.
	ReadAt time.Time `json:"read_at"`
	// NotJudged says what the answer left out of its verdict, by name
	// (Kafka topics outside the exporter's topic filter): a "safe" is
	// safe for what was judged only.
	NotJudged []string `json:"not_judged,omitempty"`
	// Notes are what the answer knows beside its verdict that an operator
	// deciding what to do next needs (a Kafka partition without a clean
	// leader, and what an unclean election of each live replica would
	// lose).
	Notes []string `json:"notes,omitempty"`
}

// AddAtRisk appends names to AtRisk while it has room, and counts them all.
func (a *Answer) AddAtRisk(names ...string) {
	for _, n := range names {
		a.AtRiskTotal++
		if len(a.AtRisk) < MaxAtRisk {
			a.AtRisk = append(a.AtRisk, n)
		}
	}
}

// Add records a finding and makes the answer unsafe.
func (a *Answer) Add(reason Reason, count int, format string, args ...any) {
	a.Findings = append(a.Findings, Finding{Reason: reason, Count: count, Message: fmt.Sprintf(format, args...)})
	a.Safe = false
}

// ErrUnknown is wrapped by a system's answer to a question about a member
// or domain its snapshot does not have: the caller named it wrong (a 400),
// or it is gone.
var ErrUnknown = errors.New("unknown")

// ErrUnsupported is wrapped for a scope the system does not answer (a rack
// question to Redis), or a domain the cluster has no data for (racks when
// no broker sets broker.rack).
var ErrUnsupported = errors.New("not answered")

// ErrStale is wrapped when the cluster's latest snapshot is older than two
// refreshes: a verdict from it could say "safe" of a cluster that has
// changed since, so none is given.
var ErrStale = errors.New("snapshot too old to answer from")

// ErrUnreadable is wrapped when the cluster's latest refresh failed or
// none has succeeded yet.
var ErrUnreadable = errors.New("cluster unreadable")

// ErrWrongScope is wrapped by a system asked a question of a scope it does
// not have (a broker of a Redis Cluster).
var ErrWrongScope = errors.New("no such member kind")

// Fresh says whether a snapshot read at lastSuccess, by a watcher that
// refreshes every interval and whose latest refresh ended with lastErr
// (nil when it succeeded), may be answered from at now.
func Fresh(have bool, up bool, lastErr error, lastSuccess time.Time, interval time.Duration, now time.Time) error {
	switch {
	case !have:
		return fmt.Errorf("%w: no refresh has succeeded yet", ErrUnreadable)
	case !up:
		if lastErr != nil {
			return fmt.Errorf("%w: the latest refresh failed: %v", ErrUnreadable, lastErr)
		}
		return fmt.Errorf("%w: the latest refresh failed", ErrUnreadable)
	}
	if age := now.Sub(lastSuccess); age > 2*interval {
		return fmt.Errorf("%w: read %s ago, and the cluster is refreshed every %s", ErrStale, age.Round(time.Millisecond), interval)
	}
	return nil
}
