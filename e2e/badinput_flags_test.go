package e2e

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/systems"
)

// runExporterWithin runs the binary and kills it after limit: a bad flag
// must end the process, not hang it.
func runExporterWithin(t *testing.T, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, exportertest.Binary(t), args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%v: still running after %s; output so far:\n%s", args, limit, out)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestBadInputFlagsOfIssue33: the reproductions of issue 33 run against the
// built binary. Each is refused, by --config.check and by a start alike,
// with an exit code and a message naming the flag and the form it wants;
// none hangs, and none starts and then serves nothing.
func TestBadInputFlagsOfIssue33(t *testing.T) {
	dir := t.TempDir()
	redisConfig := filepath.Join(dir, "redis.yml")
	if err := os.WriteFile(redisConfig, []byte("redis:\n  - addrs: ["+deadAddr(t)+"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kafka := "--kafka.server=" + deadAddr(t)
	redis := "--redis.addr=" + deadAddr(t)
	cases := []struct {
		args []string
		code int
		want string
	}{
		// 6: ServeMux redirected these and nothing served the metrics.
		{[]string{kafka, "--web.telemetry-path=/.."}, 1, `--web.telemetry-path "/.." is not a clean path`},
		{[]string{kafka, "--web.telemetry-path=/."}, 1, `--web.telemetry-path "/." is not a clean path`},
		{[]string{kafka, "--web.telemetry-path=//metrics"}, 1, `--web.telemetry-path "//metrics" is not a clean path (no //, /./, /../ or trailing /): requests for it are redirected to "/metrics"`},
		{[]string{kafka, "--web.telemetry-path=/api/v1/events"}, 1, `--web.telemetry-path "/api/v1/events" collides with the exporter's API under /api/v1/`},
		// 7: the check passed what the start could not bind.
		{[]string{kafka, "--web.listen-address=256.1.1.1:9877"}, 1, `--web.listen-address "256.1.1.1:9877": "256.1.1.1" is not an IP address`},
		{[]string{kafka, "--web.listen-address=nosuch.invalid:9877"}, 1, `--web.listen-address "nosuch.invalid:9877": host "nosuch.invalid" does not resolve`},
		{[]string{kafka, "--web.listen-address=192.0.2.1:9877"}, 1, `--web.listen-address "192.0.2.1:9877": no interface of this machine has that address`},
		{[]string{kafka, "--web.listen-address=127.0.0.1:9877", "--web.listen-address=127.0.0.1:9877"}, 1, `--web.listen-address "127.0.0.1:9877" is given twice`},
		// 8: the check hung while memory grew.
		{[]string{kafka, "--web.config.file=/dev/zero"}, 1, "--web.config.file: /dev/zero is not a regular file"},
		// 9: flag-only settings that were silently ignored.
		{[]string{redis, "--kafka.topic-filter=(["}, 1, `--kafka.topic-filter "([" is not a regular expression: missing closing ] in "["`},
		{[]string{redis, "--kafka.cluster-name=orders"}, 1, "--kafka.cluster-name names the --kafka.server cluster and does nothing without --kafka.server"},
		{[]string{kafka, "--redis.cluster-name=sessions"}, 1, "--redis.cluster-name names the --redis.addr cluster and does nothing without --redis.addr"},
		{[]string{kafka, "--kafka.partition-metrics=full", "--no-kafka.partition-metrics"}, 1, "--no-kafka.partition-metrics (none) contradicts --kafka.partition-metrics=full"},
		{[]string{"--config.file=" + redisConfig, "--refresh.interval=1s"}, 1, "--refresh.interval is for the clusters given by --kafka.server, --redis.addr and --sentinel.addr, and there are none"},
		// 12: values kingpin refused without naming the flag, or misread.
		{[]string{kafka, "--events.capacity=abc"}, 2, `--events.capacity "abc" is not a whole number; give one from 1 to 100000`},
		{[]string{kafka, "--events.capacity=1.5"}, 2, `--events.capacity "1.5" is not a whole number`},
		{[]string{kafka, "--events.capacity=99999999999999999999"}, 2, "--events.capacity 99999999999999999999 is out of range; give a whole number from 1 to 100000"},
		{[]string{kafka, "--refresh.interval=5"}, 2, `--refresh.interval "5" has no unit; write a duration such as 5s or 5ms`},
	}
	for _, c := range cases {
		for _, mode := range []string{"--config.check", "--log.level=info"} {
			args := append(append([]string{}, c.args...), mode)
			// A start that passed every check would serve: give it a
			// free port, unless the case is about the listen address.
			if mode != "--config.check" && !strings.Contains(strings.Join(c.args, " "), "--web.listen-address") {
				args = append(args, "--web.listen-address="+deadAddr(t))
			}
			code, out := runExporterWithin(t, 30*time.Second, args...)
			if code != c.code || strings.Count(out, c.want) != 1 {
				t.Errorf("%v: exit %d, output %q; want exit %d and %q", args, code, out, c.code, c.want)
			}
			if strings.Contains(out, "panic") || strings.Contains(out, "strconv.") || strings.Contains(out, "time: missing unit") {
				t.Errorf("%v: output %q", args, out)
			}
		}
	}
}

// TestBadInputListenAddressTaken: a port another process holds stops the
// start with a message naming the flag; the check warns and passes, as it
// runs beside the exporter it checks.
func TestBadInputListenAddressTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	listen := "--web.listen-address=" + held.Addr().String()
	want := `--web.listen-address "` + held.Addr().String() + `": address already in use: another process listens there`
	code, out := runExporterWithin(t, 30*time.Second, "--kafka.server="+deadAddr(t), listen)
	if code != 1 || !strings.Contains(out, want) || strings.Contains(out, "watching cluster") {
		t.Errorf("start: exit %d, output %q; want exit 1, %q, and no cluster watched", code, out, want)
	}
	code, out = runExporterWithin(t, 30*time.Second, "--kafka.server="+deadAddr(t), listen, "--config.check")
	// The warning is a logfmt line, its quotes escaped.
	if code != 0 || !strings.Contains(out, "level=warn") || !strings.Contains(out, held.Addr().String()+`\": address already in use`) || !strings.Contains(out, "configuration is valid") {
		t.Errorf("check: exit %d, output %q; want exit 0 with a warning that %s is in use", code, out, held.Addr())
	}
}

// TestBadInputProbeMethods: /-/healthy and /-/ready answer GET and HEAD;
// anything else gets 405 and Allow: GET, HEAD, as Prometheus's do. A clean
// custom telemetry path serves the metrics.
func TestBadInputProbeMethods(t *testing.T) {
	e := exportertest.Start(t, "--kafka.server="+deadAddr(t), "--web.telemetry-path=/custom/metrics")
	e.WaitReady(t, 10*time.Second)
	do := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, e.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, readAll(t, resp)
	}
	for _, path := range []string{"/-/healthy", "/-/ready"} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			if resp, _ := do(method, path); resp.StatusCode != http.StatusOK {
				t.Errorf("%s %s: %d, want 200", method, path, resp.StatusCode)
			}
		}
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodTrace} {
			resp, body := do(method, path)
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" || !strings.Contains(body, "probe with GET or HEAD") {
				t.Errorf("%s %s: %d, Allow %q, %q; want 405 with Allow: GET, HEAD", method, path, resp.StatusCode, resp.Header.Get("Allow"), body)
			}
		}
	}
	if resp, body := do(http.MethodGet, "/custom/metrics"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "kafka_up") {
		t.Errorf("GET /custom/metrics: %d, want 200 with kafka_up", resp.StatusCode)
	}
}

// budgetScopes is how many failure-budget scopes the registry's systems
// declare: safe-to-stop has a flag for each.
func budgetScopes() int {
	n := 0
	for _, s := range systems.All {
		n += len(s.BudgetScopes())
	}
	return n
}

// TestBadInputFlagsOfCommands: each command of the built binary takes its
// own flags (issue 43, 6). The server's work with no command, as every
// deployment gives them, and with serve; safe-to-stop's help lists none
// of them, and refuses one given to it by naming the server.
func TestBadInputFlagsOfCommands(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	serverFlags := []string{"--config.file", "--kafka.server", "--redis.cluster-name", "--refresh.interval", "--web.listen-address", "--web.config.file", "--web.telemetry-path", "--log.level", "--log.format", "--events.capacity", "--probe.max-targets"}
	for _, c := range []struct {
		command  string
		maxLines int
	}{{"safe-to-stop", 54 + 2*budgetScopes()}, {"slot", 24}} { // a scope's flag takes one or two lines; --announce and its three, 12
		code, out := runExporterWithin(t, 30*time.Second, c.command, "--help")
		if lines := strings.Count(out, "\n"); code != 0 || lines > c.maxLines {
			t.Errorf("%s --help: exit %d, %d lines, want exit 0 and at most %d:\n%s", c.command, code, lines, c.maxLines, out)
		}
		for _, flag := range serverFlags {
			if strings.Contains(out, flag) {
				t.Errorf("%s --help shows the server's %s", c.command, flag)
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}} {
		code, out := runExporterWithin(t, 30*time.Second, args...)
		for _, flag := range serverFlags {
			if code != 0 || !strings.Contains(out, flag+"=") {
				t.Errorf("%v: exit %d, no %s:\n%s", args, code, flag, out)
			}
		}
	}
	start := []string{"--kafka.server=" + deadAddr(t), "--web.listen-address=127.0.0.1:0", "--log.level=debug", "--config.check"}
	for _, args := range [][]string{start, append([]string{"serve"}, start...)} {
		if code, out := runExporterWithin(t, 30*time.Second, args...); code != 0 || !strings.Contains(out, "configuration is valid") {
			t.Errorf("%v: exit %d, output %q; want exit 0, valid", args, code, out)
		}
	}
	want := "failover_exporter: unknown long flag '--kafka.server': it is a flag of the server (failover_exporter, or failover_exporter serve), not of safe-to-stop"
	if code, out := runExporterWithin(t, 30*time.Second, "safe-to-stop", "--kafka.server=x", "--broker", "1"); code != 2 || !strings.Contains(out, want) {
		t.Errorf("safe-to-stop with a server flag: exit %d, output %q; want exit 2 and %q", code, out, want)
	}
	// A token file that cannot be read is refused before any question is
	// asked, not after a wait of ten minutes against an exporter that is
	// not there.
	missing := filepath.Join(t.TempDir(), "no-such-token")
	code, out := runExporterWithin(t, 30*time.Second, "safe-to-stop", "--url", "http://"+deadAddr(t), "--broker", "1", "--wait", "10m",
		"--announce", "--maintenance-token-file", missing)
	if code != 2 || !strings.Contains(out, "--maintenance-token-file") {
		t.Errorf("safe-to-stop --announce with a missing token file: exit %d, output %q; want exit 2 naming the flag", code, out)
	}
}
