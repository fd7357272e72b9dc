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

// TestFaultBadConfigExitsNamingTheProblem covers the config faults that
// e2e/exporter_test.go does not: secrets and TLS files that are missing or
// unusable. Each must stop the exporter with a non-zero exit and a message
// naming the file or variable, both at start and with --config.check.
func TestFaultBadConfigExitsNamingTheProblem(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing-secret")
	kafka := func(extra string) string {
		return "kafka:\n  - name: k\n    bootstrap_servers: [127.0.0.1:1]\n" + extra
	}
	cases := []struct {
		name, yaml, want string
	}{
		{"missing sasl password file", kafka("    sasl:\n      mechanism: SCRAM-SHA-512\n      username: u\n      password: {file: " + missing + "}\n"), missing},
		// Tests run as root, so a chmod 000 file would still be readable: a
		// directory is the unreadable secret file here.
		{"secret file is a directory", kafka("    sasl:\n      mechanism: PLAIN\n      username: u\n      password: {file: " + dir + "}\n"), "is not a regular file but a directory"},
		{"unset secret variable", "redis:\n  - addrs: [127.0.0.1:1]\n    password: {env: FAULT_TEST_UNSET_PASSWORD}\n", "FAULT_TEST_UNSET_PASSWORD is not set"},
		{"inline secret", kafka("    sasl:\n      mechanism: PLAIN\n      username: u\n      password: hunter2\n"), "not accepted inline"},
		{"missing tls ca_file", kafka("    tls:\n      enabled: true\n      ca_file: " + filepath.Join(dir, "no-ca.pem") + "\n"), "no-ca.pem"},
		{"tls cert without key", "redis:\n  - addrs: [127.0.0.1:1]\n    tls:\n      enabled: true\n      cert_file: " + notPEM + "\n", "tls.cert_file and tls.key_file must be set together"},
		{"tls ca_file not PEM", kafka("    tls:\n      enabled: true\n      ca_file: " + notPEM + "\n"), "tls.ca_file holds no PEM certificate"},
		{"refresh_timeout above interval", kafka("    refresh_interval: 1s\n    refresh_timeout: 2s\n"), "refresh_timeout 2s must be positive and at most refresh_interval 1s"},
		{"two documents", kafka("---\nkafka: []\n"), "more than one YAML document"},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "config.yml")
		if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"--config.file=" + path, "--config.check"},
			{"--config.file=" + path, "--web.listen-address=127.0.0.1:0"},
		} {
			code, out := runExporter(t, args...)
			if code == 0 || !strings.Contains(out, c.want) {
				t.Errorf("%s, %v: exit %d, output %q; want non-zero and %q", c.name, args[1:], code, out, c.want)
			}
			if strings.Contains(out, "hunter2") {
				t.Errorf("%s: the inline secret is echoed: %q", c.name, out)
			}
			if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
				t.Errorf("%s crashed:\n%s", c.name, out)
			}
		}
	}
}

// TestFaultReloadKeepsRunningConfig complements TestReloadKeepsOldConfigOnError:
// a reload that fails, by HTTP or SIGHUP, for a reason found only when the
// clusters are set up (a TLS CA file that is not PEM) or when the file is
// gone, leaves the running cluster refreshing with its counters, and says why.
func TestFaultReloadKeepsRunningConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yml")
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := fmt.Sprintf("kafka:\n  - name: first\n    bootstrap_servers: [%s]\n    refresh_interval: 200ms\n", deadAddr(t))
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	e := exportertest.Start(t, "--config.file="+path)
	e.WaitReady(t, 10*time.Second)

	refreshes := func(m exportertest.Metrics) float64 {
		return faultGauge(m, "kafka_exporter_refreshes_total", map[string]string{"kafka_cluster": "first"})
	}
	bad := []struct {
		name, content, want string
		sighup              bool
	}{
		{"CA file not PEM, by POST", "kafka:\n  - name: second\n    bootstrap_servers: [127.0.0.1:1]\n    tls: {enabled: true, ca_file: " + notPEM + "}\n", "holds no PEM certificate", false},
		{"file deleted, by SIGHUP", "", "no such file or directory", true},
	}
	for _, b := range bad {
		before, _ := faultScrape(t, e)
		if b.content == "" {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, []byte(b.content), 0o600); err != nil {
			t.Fatal(err)
		}
		logsBefore := len(e.Logs())
		if b.sighup {
			if err := e.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
		} else {
			resp, err := http.Post(e.URL+"/-/reload", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, b.want) {
				t.Errorf("%s: reload answered %d %q, want 500 naming %q", b.name, resp.StatusCode, body, b.want)
			}
		}
		after, _ := waitMetrics(t, e, 5*time.Second, b.name+": failed reload reported", func(m exportertest.Metrics) (bool, string) {
			v := faultGauge(m, "failover_exporter_config_last_reload_successful", nil)
			return v == 0, fmt.Sprintf("config_last_reload_successful %v", v)
		})
		// The old cluster keeps refreshing: its counter continues, no reset.
		after = faultNextRefresh(t, e, "kafka_exporter_refreshes_total", after, 2, 5*time.Second)
		if got := after.Series("kafka_up", nil); len(got) != 1 || got[0].Labels["kafka_cluster"] != "first" {
			t.Errorf("%s: clusters after the failed reload: %s", b.name, after.Describe("kafka_up", nil))
		}
		if r0, r1 := refreshes(before), refreshes(after); r1 < r0+2 {
			t.Errorf("%s: the running cluster's refreshes_total %v -> %v", b.name, r0, r1)
		}
		if logs := e.Logs()[logsBefore:]; !strings.Contains(logs, "reload failed") || !strings.Contains(logs, b.want) {
			t.Errorf("%s: log does not say why the reload failed:\n%s", b.name, logs)
		}
	}
}
