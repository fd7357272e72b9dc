package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/collector/budget"
	"github.com/failover-exporter/failover_exporter/lib/readfile"
	"github.com/failover-exporter/failover_exporter/lib/safetostop"
)

// passwordEnv holds the password of --web.username when no file is named.
const passwordEnv = "FAILOVER_EXPORTER_WEB_PASSWORD"

// safeToStopFlags are the safe-to-stop command's settings.
type safeToStopFlags struct {
	url, system, cluster string
	// scopes are the registry's budget scopes, in order, and ids what each
	// scope's flag was given.
	scopes                 []budget.Scope
	ids                    map[budget.Scope]*string
	wait, poll             time.Duration
	afterRestart           bool
	output                 string
	username, passwordFile string
	caFile, certFile       string
	keyFile, serverName    string
	// announce opens a maintenance window once the answer is yes, for
	// ttl, on --url and every announceURLs, with the token of tokenFile.
	announce     bool
	ttl          time.Duration
	tokenFile    string
	announceURLs []string
	// token is tokenFile's contents, read by options before any question
	// is asked: a file that cannot be read fails at once, not after the
	// wait.
	token string
}

// defineSafeToStop declares the command and its flags: one per budget
// scope of the given systems (the registry's), built from the scopes'
// data, so that the command names no system.
func defineSafeToStop(app *kingpin.Application, systems []budget.System) (*kingpin.CmdClause, *safeToStopFlags) {
	f := &safeToStopFlags{scopes: budget.Scopes(systems), ids: map[budget.Scope]*string{}}
	var names []string
	for _, s := range systems {
		names = append(names, s.Name)
	}
	cmd := app.Command("safe-to-stop", "Ask a running exporter whether one "+orList(f.scopes, "")+" can be stopped now "+
		"(exit 0 yes, 1 no, 2 a question it refused); with --wait, ask until yes or the wait runs out; "+
		"with --after-restart, whether it is back and caught up.")
	cmd.Flag("url", "The exporter's address.").Default("http://127.0.0.1:9877").StringVar(&f.url)
	cmd.Flag("system", strings.Join(names, " or ")+"; needed only when a cluster name is in several.").StringVar(&f.system)
	cmd.Flag("cluster", "The cluster's name in the exporter's config; needed when it watches several.").StringVar(&f.cluster)
	for _, s := range systems {
		for _, spec := range s.Scopes {
			if _, done := f.ids[spec.Scope]; !done {
				f.ids[spec.Scope] = cmd.Flag(string(spec.Scope), spec.Help).String()
			}
		}
	}
	cmd.Flag("wait", "How long to keep asking until the answer is yes (0: ask once), e.g. 15m.").Default("0s").DurationVar(&f.wait)
	cmd.Flag("poll", "Time between two questions while waiting.").Default("5s").DurationVar(&f.poll)
	cmd.Flag("after-restart", "Ask whether the member is back and caught up (as its system judges it: back in every ISR, a replica linked and synced) instead.").BoolVar(&f.afterRestart)
	cmd.Flag("announce", "Once the answer is yes, open a maintenance window for the stop on the exporter (docs/maintenance.md), until the member is back and caught up, or --ttl.").BoolVar(&f.announce)
	cmd.Flag("ttl", "How long the window may stay open at most, if the member is not back and caught up before.").Default("30m").DurationVar(&f.ttl)
	cmd.Flag("maintenance-token-file", "File holding the token of the exporter's --web.maintenance-token-file: for --announce, and for --after-restart to end the window once the answer is yes.").StringVar(&f.tokenFile)
	cmd.Flag("announce-url", "Another exporter watching the same cluster, to announce the stop to (and end its window) as well (repeat for each): exporters do not tell each other.").StringsVar(&f.announceURLs)
	cmd.Flag("output", "text (a line per answer) or json (the final answer).").Default("text").EnumVar(&f.output, "text", "json")
	cmd.Flag("web.username", "Basic auth user of the exporter's web config; the password is read from --web.password-file or $"+passwordEnv+".").StringVar(&f.username)
	cmd.Flag("web.password-file", "File holding the basic auth password (never the password on the command line).").StringVar(&f.passwordFile)
	cmd.Flag("tls.ca-file", "CA bundle to verify an https exporter by.").StringVar(&f.caFile)
	cmd.Flag("tls.cert-file", "Client certificate, for an exporter that asks for one.").StringVar(&f.certFile)
	cmd.Flag("tls.key-file", "Key of --tls.cert-file.").StringVar(&f.keyFile)
	cmd.Flag("tls.server-name", "Name to verify the exporter's certificate by, when not the --url host.").StringVar(&f.serverName)
	return cmd, f
}

// options turns the flags into a question, refusing what cannot be asked.
func (f *safeToStopFlags) options() (safetostop.Options, error) {
	o := safetostop.Options{URL: f.url, System: f.system, Cluster: f.cluster, AfterRestart: f.afterRestart, Wait: f.wait, Poll: f.poll}
	var named []string
	for _, scope := range f.scopes {
		if id := *f.ids[scope]; id != "" {
			named = append(named, "--"+string(scope))
			o.Scope, o.ID = scope, id
		}
	}
	switch {
	case len(named) == 0:
		return o, errors.New("name what to stop: " + orList(f.scopes, "--"))
	case len(named) > 1:
		return o, fmt.Errorf("%s: name one member or domain at a time", strings.Join(named, " and "))
	case f.wait < 0:
		return o, fmt.Errorf("--wait=%s: want 0 (ask once) or a positive duration such as 15m", f.wait)
	case f.poll <= 0:
		return o, fmt.Errorf("--poll=%s: want a positive duration such as 5s", f.poll)
	case f.passwordFile != "" && f.username == "":
		return o, errors.New("--web.password-file without --web.username: name the user too")
	case (f.certFile == "") != (f.keyFile == ""):
		return o, errors.New("--tls.cert-file and --tls.key-file go together")
	case f.announce && f.afterRestart:
		return o, errors.New("--announce and --after-restart: announce before the stop, ask --after-restart after it")
	case f.announce && f.tokenFile == "":
		return o, errors.New("--announce needs --maintenance-token-file: the exporter opens windows only for its token")
	case !f.announce && !f.afterRestart && (f.tokenFile != "" || len(f.announceURLs) > 0):
		return o, errors.New("--maintenance-token-file and --announce-url are for --announce, and for --after-restart to end the window")
	}
	if f.username != "" {
		o.Username = f.username
		if f.passwordFile != "" {
			b, err := readfile.Bounded("--web.password-file", f.passwordFile, readfile.SecretLimit)
			if err != nil {
				return o, err
			}
			o.Password = strings.TrimRight(string(b), "\r\n")
		} else if pw, ok := os.LookupEnv(passwordEnv); ok {
			o.Password = pw
		} else {
			return o, fmt.Errorf("--web.username %s: give its password in --web.password-file or $%s", f.username, passwordEnv)
		}
	}
	if f.tokenFile != "" {
		b, err := readfile.Bounded("--maintenance-token-file", f.tokenFile, readfile.SecretLimit)
		if err != nil {
			return o, err
		}
		f.token = strings.TrimSpace(string(b))
	}
	client, err := safetostop.Client(f.caFile, f.certFile, f.keyFile, f.serverName)
	if err != nil {
		return o, fmt.Errorf("--tls.ca-file, --tls.cert-file or --tls.key-file: %w", err)
	}
	o.Client = client
	return o, nil
}

// runSafeToStop asks, prints and returns the command's exit code.
func runSafeToStop(f *safeToStopFlags, stdout, stderr io.Writer) int {
	o, err := f.options()
	if err != nil {
		fmt.Fprintf(stderr, "%s safe-to-stop: %v\n", exporterName, err)
		return safetostop.ExitBadInput
	}
	if f.output == "text" {
		o.Log = stdout
	}
	// A preStop hook or Ansible may cancel the wait: stop asking at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	answer, err := safetostop.Run(ctx, o)
	var qe *safetostop.QuestionError
	var ns *safetostop.NotSafeError
	switch {
	case errors.As(err, &qe):
		fmt.Fprintf(stderr, "%s safe-to-stop: %v\n", exporterName, err)
		return safetostop.ExitBadInput
	case errors.As(err, &ns):
		if f.output == "json" && ns.Answer != nil {
			safetostop.PrintJSON(stdout, ns.Answer)
		}
		fmt.Fprintf(stderr, "%s safe-to-stop: %v\n", exporterName, err)
		return safetostop.ExitNotSafe
	case err != nil:
		fmt.Fprintf(stderr, "%s safe-to-stop: %v\n", exporterName, err)
		return safetostop.ExitNotSafe
	}
	if f.announce {
		if code := f.announceStop(ctx, o, stdout, stderr); code != safetostop.ExitSafe {
			return code
		}
	}
	if f.afterRestart && f.tokenFile != "" {
		if code := f.endWindows(ctx, o, stdout, stderr); code != safetostop.ExitSafe {
			return code
		}
	}
	if f.output == "json" {
		safetostop.PrintJSON(stdout, answer)
	}
	return safetostop.ExitSafe
}

// announceStop opens the stop's maintenance window on every exporter, and
// returns the command's exit code.
func (f *safeToStopFlags) announceStop(ctx context.Context, o safetostop.Options, stdout, stderr io.Writer) int {
	err := safetostop.Announce(ctx, o, f.ttl, f.token, f.announceURLs)
	var qe *safetostop.QuestionError
	switch {
	case errors.As(err, &qe):
		fmt.Fprintf(stderr, "%s safe-to-stop: %v\n", exporterName, err)
		return safetostop.ExitBadInput
	case err != nil:
		fmt.Fprintf(stderr, "%s safe-to-stop: the announcement was refused: %v\n", exporterName, err)
		return safetostop.ExitNotSafe
	}
	if f.output == "text" {
		fmt.Fprintf(stdout, "announced: a maintenance window is open for %s %s on %d exporter(s), until it is back and caught up or %s\n", o.Scope, o.ID, 1+len(f.announceURLs), f.ttl)
	}
	return safetostop.ExitSafe
}

// endWindows closes the member's maintenance windows once it is back and
// caught up, and returns the command's exit code: the member is back, so
// a window that could not be closed is a warning, not a failure.
func (f *safeToStopFlags) endWindows(ctx context.Context, o safetostop.Options, stdout, stderr io.Writer) int {
	closed, err := safetostop.EndWindows(ctx, o, f.token, f.announceURLs)
	if err != nil {
		fmt.Fprintf(stderr, "%s safe-to-stop: %s %s is back, but ending its maintenance window failed (it ends at its TTL): %v\n", exporterName, o.Scope, o.ID, err)
	}
	if f.output == "text" {
		fmt.Fprintf(stdout, "maintenance window of %s %s ended on %d exporter(s)\n", o.Scope, o.ID, closed)
	}
	return safetostop.ExitSafe
}

// orList writes scopes as "--broker, --rack, --node or --zone" (with
// prefix "--") or "broker, rack, node or zone".
func orList(scopes []budget.Scope, prefix string) string {
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = prefix + string(s)
	}
	return joinWords(names, "or")
}

// budgetSystems are the registry's systems with a failure budget, their
// scopes the command's flags.
func budgetSystems() []budget.System {
	var out []budget.System
	for _, s := range registry {
		if scopes := s.BudgetScopes(); len(scopes) > 0 {
			out = append(out, budget.System{Name: s.Name(), Scopes: scopes})
		}
	}
	return out
}
