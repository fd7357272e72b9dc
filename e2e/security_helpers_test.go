package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/certs"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// Helpers shared by the TestSecurity* tests.

// secWriteCerts makes a fresh CA and certificates for the test.
func secWriteCerts(t *testing.T) certs.Files {
	t.Helper()
	files, err := certs.WriteSet(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatalf("certificates: %v", err)
	}
	return files
}

// secWriteSecretFile writes a secret as a deployment would mount it: mode
// 0600, with a trailing newline that the exporter must trim.
func secWriteSecretFile(t *testing.T, dir, name, secret string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func secWriteFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// secHTTPGet returns the body of a plain-HTTP GET.
func secHTTPGet(t *testing.T, url string) string {
	t.Helper()
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(body)
}

// secAssertNoLeaks checks that none of the secrets appears where an
// operator or an attacker with read access to the monitoring could see it:
// the exporter's log (run with --log.level=debug), /metrics, the landing
// page and the process's command line.
func secAssertNoLeaks(t *testing.T, e *exportertest.Exporter, secrets ...string) {
	t.Helper()
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.PID()))
	if err != nil {
		t.Fatalf("read the exporter's command line: %v", err)
	}
	places := map[string]string{
		"the log":           e.Logs(),
		"/metrics":          secHTTPGet(t, e.URL+"/metrics"),
		"the landing page":  secHTTPGet(t, e.URL+"/"),
		"/proc/PID/cmdline": strings.ReplaceAll(string(cmdline), "\x00", " "),
	}
	if places["the log"] == "" || !strings.Contains(places["/metrics"], "_up") || !strings.Contains(places["the landing page"], "Metrics") {
		t.Fatalf("nothing to search: log %d bytes, /metrics %d bytes, landing page %d bytes",
			len(places["the log"]), len(places["/metrics"]), len(places["the landing page"]))
	}
	for _, secret := range secrets {
		for where, text := range places {
			if strings.Contains(text, secret) {
				t.Errorf("a password (%d characters) appears in %s", len(secret), where)
			}
		}
	}
}

// secClusterLog returns the log lines about the cluster named name (logged
// with cluster=NAME by the watcher).
func secClusterLog(logs, name string) string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, " cluster="+name+" ") || strings.HasSuffix(line, " cluster="+name) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// secWaitFailures waits until the cluster's refresh failure counter reaches n,
// so that a failing cluster has been retried (and logged) several times
// without the process going down.
func secWaitFailures(t *testing.T, e *exportertest.Exporter, metric, label, name string, n float64) exportertest.Metrics {
	t.Helper()
	m, _ := waitMetrics(t, e, 30*time.Second, fmt.Sprintf("%d failed refreshes of %s", int(n), name), func(m exportertest.Metrics) (bool, string) {
		v, ok := m.Value(metric, map[string]string{label: name})
		return ok && v >= n, m.Describe(metric, map[string]string{label: name})
	})
	return m
}
