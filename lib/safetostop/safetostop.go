// Package safetostop is the `failover_exporter safe-to-stop` command: it
// asks a running exporter's /api/v1/safe-to-stop (or, after a restart,
// /api/v1/recovered) about one broker, rack, node or zone, and with a wait
// asks again until the answer is yes or the deadline passes. It is meant
// for rolling restarts: an Ansible task, a Kubernetes preStop hook, a
// shell loop over brokers.
package safetostop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/config"
)

// Exit codes of the command.
const (
	ExitSafe     = 0 // safe to stop (recovered)
	ExitNotSafe  = 1 // not safe, or no answer, when the wait ran out
	ExitBadInput = 2 // the exporter refused the question, or the flags are wrong
)

// Options are one question and how long to wait for a yes.
type Options struct {
	// URL is the exporter's base address, e.g. http://127.0.0.1:9877.
	URL             string
	System, Cluster string
	Scope           budget.Scope
	ID              string
	// AfterRestart asks /api/v1/recovered instead: is the member back
	// and caught up.
	AfterRestart bool
	// Wait is how long to keep asking; 0 asks once.
	Wait time.Duration
	// Poll is the time between two questions.
	Poll time.Duration
	// Client sends the requests (TLS, timeouts); Username and Password,
	// when set, are sent as basic auth.
	Client             *http.Client
	Username, Password string
	// Log receives a line per answer, for the person or the hook's log.
	Log io.Writer
}

// QuestionError is the exporter's 400: the question names no cluster,
// member or domain it has. Asking again will not help.
type QuestionError struct{ Message string }

func (e *QuestionError) Error() string { return "the exporter refused the question: " + e.Message }

// NotSafeError is the last answer when the wait ran out without a yes.
type NotSafeError struct {
	// Answer is the last verdict, nil when the last ask got no verdict
	// (the exporter unreachable, or its snapshot stale).
	Answer *budget.Answer
	// Last is why the last ask got no verdict.
	Last error
	Wait time.Duration
}

func (e *NotSafeError) Error() string {
	what := "not safe to stop"
	if e.Answer != nil && e.Answer.Recovered {
		what = "not recovered"
	}
	if e.Answer == nil {
		return fmt.Sprintf("no answer after %s: %v", e.Wait, e.Last)
	}
	return fmt.Sprintf("%s after %s: %s", what, e.Wait, Describe(*e.Answer))
}

// Run asks until the answer is yes or o.Wait has passed, and returns the
// final answer: nil error when safe (recovered), a *NotSafeError when the
// wait ran out, a *QuestionError for a question the exporter refused.
func Run(ctx context.Context, o Options) (budget.Answer, error) {
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	started := time.Now()
	deadline := started.Add(o.Wait)
	for {
		answer, err := Ask(ctx, o)
		var qe *QuestionError
		switch {
		case errors.As(err, &qe):
			return budget.Answer{}, err
		case err == nil && answer.Safe:
			fmt.Fprintf(o.Log, "yes: %s\n", Describe(answer))
			return answer, nil
		}
		waited := time.Since(started).Round(time.Second)
		if time.Now().Add(o.Poll).After(deadline) {
			if err != nil {
				return budget.Answer{}, &NotSafeError{Last: err, Wait: waited}
			}
			return answer, &NotSafeError{Answer: &answer, Wait: waited}
		}
		if err != nil {
			fmt.Fprintf(o.Log, "no answer (%v); asking again in %s (waited %s of %s)\n", err, o.Poll, waited, o.Wait)
		} else {
			fmt.Fprintf(o.Log, "not yet: %s; asking again in %s (waited %s of %s)\n", Describe(answer), o.Poll, waited, o.Wait)
		}
		select {
		case <-ctx.Done():
			return budget.Answer{}, ctx.Err()
		case <-time.After(o.Poll):
		}
	}
}

// Ask asks once. A verdict, yes or no, is an Answer and a nil error; an
// error is no verdict (the exporter unreachable, its snapshot stale, or a
// *QuestionError).
func Ask(ctx context.Context, o Options) (budget.Answer, error) {
	path := budget.SafeToStopPath
	if o.AfterRestart {
		path = budget.RecoveredPath
	}
	u, err := questionURL(o, path, nil)
	if err != nil {
		return budget.Answer{}, &QuestionError{err.Error()}
	}
	status, body, err := do(ctx, o, http.MethodGet, u, nil)
	if err != nil {
		return budget.Answer{}, err
	}
	switch status.code {
	case http.StatusOK, http.StatusConflict:
		var answer budget.Answer
		if err := json.Unmarshal(body, &answer); err != nil {
			return budget.Answer{}, fmt.Errorf("%s answered %s with no verdict: %w", redact(u), status.text, err)
		}
		// The status is the verdict; the body must agree with it.
		if answer.Safe != (status.code == http.StatusOK) {
			return budget.Answer{}, fmt.Errorf("%s answered %s with safe=%v", redact(u), status.text, answer.Safe)
		}
		return answer, nil
	case http.StatusBadRequest, http.StatusNotFound:
		return budget.Answer{}, &QuestionError{errorMessage(status.text, body)}
	case http.StatusUnauthorized, http.StatusForbidden:
		return budget.Answer{}, &QuestionError{fmt.Sprintf("%s: check --web.username and the password file or environment variable", status.text)}
	}
	return budget.Answer{}, fmt.Errorf("%s: %s", status.text, errorMessage(status.text, body))
}

type httpStatus struct {
	code int
	text string
}

// do sends one request to the exporter (basic auth when o has a user,
// extra headers, a 30 s bound) and returns its status and body (at most
// 1 MiB). An error is no answer: the exporter unreachable, or the body
// unread.
func do(ctx context.Context, o Options, method, u string, header http.Header) (httpStatus, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return httpStatus{}, nil, &QuestionError{err.Error()}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if o.Username != "" {
		req.SetBasicAuth(o.Username, o.Password)
	}
	client := o.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return httpStatus{}, nil, fmt.Errorf("%s %s: %w", method, redact(u), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return httpStatus{}, nil, fmt.Errorf("read the answer of %s: %w", redact(u), err)
	}
	return httpStatus{resp.StatusCode, resp.Status}, body, nil
}

func errorMessage(status string, body []byte) string {
	var e budget.ErrorResponse
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(status + " " + string(body))
}

// questionURL is o's question (system, cluster, scope=id) and extra, at
// path of the exporter at o.URL.
func questionURL(o Options, path string, extra url.Values) (string, error) {
	base, err := baseURL(o)
	if err != nil {
		return "", err
	}
	q := url.Values{}
	for k, v := range extra {
		q[k] = v
	}
	if o.System != "" {
		q.Set("system", o.System)
	}
	if o.Cluster != "" {
		q.Set("cluster", o.Cluster)
	}
	q.Set(string(o.Scope), o.ID)
	return base + path + "?" + q.Encode(), nil
}

// baseURL is o.URL checked: scheme, host and port only.
func baseURL(o Options) (string, error) {
	base, err := url.Parse(o.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return "", fmt.Errorf("--url %q: want the exporter's address, such as http://127.0.0.1:9877", o.URL)
	}
	if base.User != nil || base.RawQuery != "" || base.Fragment != "" {
		return "", fmt.Errorf("--url %s: give only scheme, host and port (credentials with --web.username and a password file)", redact(o.URL))
	}
	return strings.TrimSuffix(base.String(), "/"), nil
}

// redact drops any user:password from a URL before it is printed.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the exporter"
	}
	u.User = nil
	return u.String()
}

// Describe says an answer in one line.
func Describe(a budget.Answer) string {
	subject := fmt.Sprintf("%s %s of %s/%s", a.Scope, a.ID, a.System, a.Cluster)
	if a.Safe {
		line := subject + " can be stopped now"
		if a.Recovered {
			line = subject + " is back and caught up"
		}
		if len(a.NotJudged) > 0 {
			line += " (not judged: " + strings.Join(a.NotJudged, "; ") + ")"
		}
		return line + notes(a)
	}
	var reasons []string
	for _, f := range a.Findings {
		reasons = append(reasons, f.Message)
	}
	line := subject + ": " + strings.Join(reasons, "; ")
	if len(a.AtRisk) > 0 {
		shown := a.AtRisk
		if len(shown) > 5 {
			shown = shown[:5]
		}
		line += fmt.Sprintf(" (at risk: %s", strings.Join(shown, ", "))
		if a.AtRiskTotal > len(shown) {
			line += fmt.Sprintf(" and %d more", a.AtRiskTotal-len(shown))
		}
		line += ")"
	}
	if a.Advice != "" {
		line += "; " + a.Advice
	}
	if len(a.NotJudged) > 0 {
		line += " (not judged: " + strings.Join(a.NotJudged, "; ") + ")"
	}
	return line + notes(a)
}

// notes are the answer's notes, each on a line of its own after the
// verdict's.
func notes(a budget.Answer) string {
	var out string
	for _, n := range a.Notes {
		out += "\n  note: " + n
	}
	return out
}

// Client is the HTTP client that asks the exporter: verified by caFile
// (the system's roots without), with the client certificate of certFile
// and keyFile when given, the certificate checked against serverName when
// set. The files are read as the config file's TLS settings are (bounded);
// their messages name the config keys.
func Client(caFile, certFile, keyFile, serverName string) (*http.Client, error) {
	cfg, err := config.TLS{Enabled: true, CAFile: caFile, CertFile: certFile, KeyFile: keyFile, ServerName: serverName}.ClientConfig()
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = cfg
	return &http.Client{Transport: transport, Timeout: 30 * time.Second}, nil
}

// PrintJSON writes an answer as the command's --output json does.
func PrintJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Announce opens a maintenance window for o's stop on the exporter at
// each of urls (o.URL first): POST /api/v1/maintenance with the question,
// ttl and the token. Every exporter watching the cluster must know
// of the stop for its alert rules to treat it as planned, and exporters
// do not tell each other: the command posts to each. Each exporter judges
// the stop again; one that refuses it (409: not safe now, or another
// window open) fails the announcement, and the windows already opened are
// withdrawn, by the system and cluster each exporter named in its window
// (the question may have left them for the exporter to resolve). A
// withdrawal that fails is part of the error: that window stays open
// until its TTL unless withdrawn by hand.
func Announce(ctx context.Context, o Options, ttl time.Duration, token string, urls []string) error {
	type opened struct{ url, system, cluster string }
	var done []opened
	for _, base := range append([]string{o.URL}, urls...) {
		o.URL = base
		u, err := questionURL(o, maintenance.Path, url.Values{"ttl": {ttl.String()}})
		if err != nil {
			return &QuestionError{err.Error()}
		}
		r, err := send(ctx, o, http.MethodPost, u, token)
		if err != nil {
			var failed []string
			for _, d := range done {
				o.URL, o.System, o.Cluster = d.url, d.system, d.cluster
				if werr := Withdraw(ctx, o, token); werr != nil {
					failed = append(failed, werr.Error())
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("%w; and withdrawing the windows already opened failed, withdraw them by hand (DELETE %s?system=&cluster=): %s",
					err, maintenance.Path, strings.Join(failed, "; "))
			}
			return err
		}
		if r.Window == nil {
			return fmt.Errorf("POST %s: the exporter opened no window it named", redact(u))
		}
		done = append(done, opened{base, r.Window.System, r.Window.Cluster})
	}
	return nil
}

// Withdraw closes the maintenance window of o's cluster on the exporter
// at o.URL (o.System and o.Cluster must be set).
func Withdraw(ctx context.Context, o Options, token string) error {
	if o.System == "" || o.Cluster == "" {
		return &QuestionError{"withdrawing a window needs its system and cluster"}
	}
	base, err := baseURL(o)
	if err != nil {
		return &QuestionError{err.Error()}
	}
	q := url.Values{"system": {o.System}, "cluster": {o.Cluster}}
	_, err = send(ctx, o, http.MethodDelete, base+maintenance.Path+"?"+q.Encode(), token)
	return err
}

// EndWindows closes, on the exporter at o.URL and each of urls, the open
// maintenance window of o's member (its scope and id, in o's system and
// cluster when given): what `safe-to-stop --after-restart` does once the
// member is back and caught up, so that a window ends when the operator's
// own question says so, even when the exporter never saw the member down
// (a restart quicker than a refresh), which its sweep waits for. It
// returns how many windows it closed; an exporter without such a window
// is not an error.
func EndWindows(ctx context.Context, o Options, token string, urls []string) (int, error) {
	closed := 0
	var failed []string
	for _, base := range append([]string{o.URL}, urls...) {
		o.URL = base
		b, err := baseURL(o)
		if err != nil {
			return closed, &QuestionError{err.Error()}
		}
		r, err := send(ctx, o, http.MethodGet, b+maintenance.Path, "")
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		for _, w := range r.Windows {
			if w.Scope != o.Scope || w.Member != o.ID || (o.System != "" && w.System != o.System) || (o.Cluster != "" && w.Cluster != o.Cluster) {
				continue
			}
			wo := o
			wo.System, wo.Cluster = w.System, w.Cluster
			if err := Withdraw(ctx, wo, token); err != nil {
				failed = append(failed, err.Error())
				continue
			}
			closed++
		}
	}
	if len(failed) > 0 {
		return closed, errors.New(strings.Join(failed, "; "))
	}
	return closed, nil
}

// send sends one request of the windows, with the token unless it is
// empty (a GET needs none), and returns the exporter's answer, or what it
// refused.
func send(ctx context.Context, o Options, method, u, token string) (*maintenance.Response, error) {
	header := http.Header{}
	if token != "" {
		header.Set(maintenance.TokenHeader, token)
	}
	status, body, err := do(ctx, o, method, u, header)
	if err != nil {
		return nil, err
	}
	if status.code != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s", method, redact(u), errorMessage(status.text, body))
	}
	var r maintenance.Response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s %s answered %s: %w", method, redact(u), status.text, err)
	}
	return &r, nil
}
