package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// TestBadInputHTTP: methods, reloads and links a user may try get a clear
// answer; /metrics is instrumented like every promhttp exporter's; idle
// keep-alive connections are closed.
func TestBadInputHTTP(t *testing.T) {
	e := exportertest.Start(t, "--kafka.server="+deadAddr(t), "--web.idle-timeout=1s")
	do := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, e.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, readAll(t, resp)
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		resp, body := do(method, "/metrics")
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" || !strings.Contains(body, "scrape with GET") {
			t.Errorf("%s /metrics: %d, Allow %q, %q; want 405 saying to scrape with GET", method, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	}
	resp, body := do(http.MethodPost, "/-/reload")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "nothing to reload: the exporter was started without --config.file") {
		t.Errorf("POST /-/reload without a config file: %d %q", resp.StatusCode, body)
	}
	resp, _ = do(http.MethodGet, "/metrics")
	if v := resp.Header.Values("Vary"); len(v) != 1 || v[0] != "Accept-Encoding" {
		t.Errorf("GET /metrics: Vary %q, want exactly Accept-Encoding", v)
	}
	m := e.Scrape(t)
	if v, ok := m.Value("promhttp_metric_handler_requests_total", map[string]string{"code": "200"}); !ok || v < 1 {
		t.Errorf("promhttp_metric_handler_requests_total{code=200} = %v (present %v), want at least 1", v, ok)
	}
	if _, ok := m.Value("promhttp_metric_handler_requests_in_flight", nil); !ok {
		t.Error("promhttp_metric_handler_requests_in_flight is missing")
	}

	// Without --web.enable-pprof the landing page links no profiles, and
	// there are none.
	_, landing := do(http.MethodGet, "/")
	if strings.Contains(landing, "debug/pprof") {
		t.Errorf("landing page links /debug/pprof without --web.enable-pprof:\n%s", landing)
	}
	if resp, _ := do(http.MethodGet, "/debug/pprof/heap"); resp.StatusCode == http.StatusOK {
		t.Error("/debug/pprof/heap served without --web.enable-pprof")
	}

	// An idle keep-alive connection is closed by the server after the idle
	// timeout: reading from it ends.
	conn, err := net.Dial("tcp", e.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
	r := bufio.NewReader(conn)
	if status, err := r.ReadString('\n'); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("healthy over a raw connection: %q %v", status, err)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		if _, err := r.ReadByte(); err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Fatalf("idle connection still open after %s", time.Since(start))
			}
			break
		}
	}
	// 1s idle timeout; 10x margin for a loaded machine.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("idle connection closed after %s, want about 1s", took)
	}
}

func TestPprofBehindAFlag(t *testing.T) {
	e := exportertest.Start(t, "--kafka.server="+deadAddr(t), "--web.enable-pprof")
	for path, want := range map[string]string{"/": "debug/pprof/heap", "/debug/pprof/": "goroutine"} {
		resp, err := http.Get(e.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want 200 and %q", path, resp.StatusCode, want)
		}
	}
}

// TestBadInputLogLines: every line has one ts and one caller key, also the
// lines exporter-toolkit writes; every line about a cluster names it with
// cluster=; an error joined from several brokers stays on one line.
func TestBadInputLogLines(t *testing.T) {
	e := exportertest.Start(t, "--kafka.server="+deadAddr(t)+","+deadAddr(t), "--kafka.cluster-name=orders",
		"--redis.addr="+deadAddr(t)+","+deadAddr(t), "--redis.cluster-name=sessions", "--refresh.interval=200ms", "--log.level=debug")
	e.WaitReady(t, 10*time.Second)
	var logs string
	deadline := time.Now().Add(10 * time.Second)
	for {
		logs = e.Logs()
		if strings.Contains(logs, "collector=kafka cluster=orders") && strings.Contains(logs, "collector=redis cluster=sessions") &&
			strings.Contains(logs, "Listening on") && strings.Count(logs, "refresh failed") >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log lines missing:\n%s", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Lines end with a newline; a value with a newline in it would be
	// escaped as \n by logfmt.
	keyRE := regexp.MustCompile(`(?:^| )([a-z_]+)=`)
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		counts := map[string]int{}
		for _, m := range keyRE.FindAllStringSubmatch(line, -1) {
			counts[m[1]]++
		}
		if counts["ts"] != 1 || counts["caller"] != 1 || counts["time"] != 0 {
			t.Errorf("want one ts, one caller and no time key:\n%s", line)
		}
		if strings.Contains(line, `\n`) {
			t.Errorf("a value holds a newline:\n%s", line)
		}
		for _, old := range []string{"kafka_cluster=", "redis_cluster="} {
			if strings.Contains(line, old) {
				t.Errorf("cluster named with %s instead of cluster=:\n%s", old, line)
			}
		}
		if strings.Contains(line, "refresh failed") && !regexp.MustCompile(` collector=(kafka|redis) cluster=(orders|sessions) `).MatchString(line) {
			t.Errorf("refresh failure without collector= and cluster=:\n%s", line)
		}
	}
	// The two dead brokers are both named, on one line, separated by "; ".
	if !regexp.MustCompile(`cluster=orders .*no broker answered a metadata request: 127\.0\.0\.1:\d+: [^;"]*; 127\.0\.0\.1:\d+`).MatchString(logs) {
		t.Errorf("no one-line error naming both brokers:\n%s", logs)
	}
}
