package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

func TestUnreachableClusterAnswersAtOnce(t *testing.T) {
	e := exportertest.Start(t, "--kafka.server="+deadAddr(t), "--kafka.server="+deadAddr(t), "--refresh.interval=1s")
	e.WaitReady(t, 10*time.Second)
	start := time.Now()
	m := e.Scrape(t)
	if took := time.Since(start); took > time.Second {
		t.Errorf("scrape of an unreachable cluster took %s, want well under a second", took)
	}
	if v, ok := m.Value("kafka_up", nil); !ok || v != 0 {
		t.Errorf("kafka_up = %v (present %v), want 0", v, ok)
	}
	if n := len(m.Series("kafka_cluster_brokers", nil)); n != 0 {
		t.Errorf("cluster series served for an unreachable cluster: %d", n)
	}
	if v, _ := m.Value("kafka_exporter_refresh_failures_total", nil); v < 1 {
		t.Errorf("refresh_failures_total = %v, want at least 1", v)
	}
	if !strings.Contains(e.Logs(), "no broker answered a metadata request") {
		t.Errorf("log does not say why the refresh failed:\n%s", e.Logs())
	}
}

func TestBadFlagsAndConfigExitWithAMessage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("kafka:\n  - bootstrap_servers: [127.0.0.1:9092]\n    refresh_intervall: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.yml")
	if err := os.WriteFile(good, []byte("kafka:\n  - name: a\n    bootstrap_servers: [127.0.0.1:9092]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--no-such-flag"}, 2, "unknown long flag '--no-such-flag'"},
		{[]string{"--kafka.server=127.0.0.1:1", "--kafka.partition-metrics=sparse"}, 2, "enum value must be one of lean,unhealthy,full,none, got 'sparse'"},
		{[]string{"--refresh.interval=soon", "--kafka.server=127.0.0.1:1"}, 2, "soon"},
		{[]string{"--log.level=loud"}, 2, "loud"},
		{[]string{}, 1, "nothing to watch"},
		{[]string{"--kafka.server=localhost"}, 1, `bootstrap server "localhost": want HOST:PORT`},
		{[]string{"--kafka.server=127.0.0.1:1", "--kafka.topic-filter=("}, 1, "--kafka.topic-filter"},
		{[]string{"--config.file=" + bad, "--config.check"}, 1, "line 3: field refresh_intervall not found"},
		{[]string{"--config.file=" + filepath.Join(dir, "missing.yml")}, 1, "missing.yml"},
		{[]string{"--config.file=" + good, "--config.check"}, 0, "configuration is valid"},
	}
	for _, c := range cases {
		code, out := runExporter(t, c.args...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", c.args, code, out, c.code, c.want)
		}
		if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
			t.Errorf("%v crashed:\n%s", c.args, out)
		}
	}
}

func TestReloadKeepsOldConfigOnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	one := deadAddr(t)
	write(fmt.Sprintf("kafka:\n  - name: first\n    bootstrap_servers: [%s]\n    refresh_interval: 1s\n", one))
	e := exportertest.Start(t, "--config.file="+path)
	e.WaitReady(t, 10*time.Second)
	clusters := func() []string {
		var names []string
		for _, s := range e.Scrape(t).Series("kafka_up", nil) {
			names = append(names, s.Labels["kafka_cluster"])
		}
		return names
	}
	if got := clusters(); len(got) != 1 || got[0] != "first" {
		t.Fatalf("clusters = %v, want [first]", got)
	}
	reloadOK := func() float64 {
		v, _ := e.Scrape(t).Value("failover_exporter_config_last_reload_successful", nil)
		return v
	}

	// A broken file is refused; the running config stays.
	write("kafka:\n  - name: second\n    bootstrap_servers: []\n")
	resp, err := http.Post(e.URL+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("reload of a bad file: status %d, want 500", resp.StatusCode)
	}
	if got := clusters(); len(got) != 1 || got[0] != "first" {
		t.Errorf("after a failed reload clusters = %v, want [first]", got)
	}
	if v := reloadOK(); v != 0 {
		t.Errorf("config_last_reload_successful = %v after a bad reload, want 0", v)
	}
	if !strings.Contains(e.Logs(), "bootstrap_servers is empty") {
		t.Errorf("log does not say why the reload failed:\n%s", e.Logs())
	}

	// SIGHUP with a good file swaps the clusters.
	write(fmt.Sprintf("kafka:\n  - name: second\n    bootstrap_servers: [%s]\n    refresh_interval: 1s\n", one))
	if err := e.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := clusters()
		if len(got) == 1 && got[0] == "second" && reloadOK() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGHUP clusters = %v, reload ok %v; want [second], 1", got, reloadOK())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestLandingPageHealthAndBuildInfo(t *testing.T) {
	e := exportertest.Start(t, "--kafka.server="+deadAddr(t))
	for path, want := range map[string]string{"/": "Failover Exporter", "/-/healthy": "Healthy"} {
		resp, err := http.Get(e.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		_, _ = fmt.Fprint(&body, readAll(t, resp))
		if resp.StatusCode != 200 || !strings.Contains(body.String(), want) {
			t.Errorf("GET %s: %d %q, want 200 and %q", path, resp.StatusCode, body.String(), want)
		}
	}
	m := e.Scrape(t)
	if s := m.Series("failover_exporter_build_info", nil); len(s) != 1 || s[0].Labels["goversion"] == "" {
		t.Errorf("build info = %v", s)
	}
}
