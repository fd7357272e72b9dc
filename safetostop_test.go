package main

import (
	"bytes"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/budget"
)

// oneBroker answers every question about broker 1 of kafka/orders: safe.
type oneBroker struct{}

func (oneBroker) BudgetSystems() []budget.System {
	return []budget.System{{Name: "kafka", Scopes: []budget.ScopeSpec{{Scope: "broker", Member: "ID"}}, Clusters: []string{"orders"}}}
}

func (oneBroker) Budget(system, cluster string, q budget.Question, _ time.Time) (budget.Answer, error) {
	return budget.Answer{System: system, Cluster: cluster, Scope: q.Scope, ID: q.ID, Recovered: q.Recovered, Safe: true}, nil
}

// TestSafeToStopCommandOverTLSWithBasicAuth runs the command as a preStop
// hook would against an https exporter with basic auth: the CA from
// --tls.ca-file, the password from a file, never on the command line.
func TestSafeToStopCommandOverTLSWithBasicAuth(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle(budget.SafeToStopPath, budget.Handler(oneBroker{}, false))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "sre" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	password := filepath.Join(dir, "password")
	if err := os.WriteFile(password, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(dir, "wrong")
	if err := os.WriteFile(wrong, []byte("nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ok", []string{"--tls.ca-file", ca, "--web.username", "sre", "--web.password-file", password, "--broker", "1"}, 0, "yes: broker 1 of kafka/orders can be stopped now"},
		{"json", []string{"--tls.ca-file", ca, "--web.username", "sre", "--web.password-file", password, "--broker", "1", "--output", "json"}, 0, `"safe": true`},
		{"no CA", []string{"--web.username", "sre", "--web.password-file", password, "--broker", "1"}, 1, "certificate"},
		{"wrong password", []string{"--tls.ca-file", ca, "--web.username", "sre", "--web.password-file", wrong, "--broker", "1", "--wait", "1m"}, 2, "401 Unauthorized"},
		{"CA not PEM", []string{"--tls.ca-file", password, "--broker", "1"}, 2, "--tls.ca-file, --tls.cert-file or --tls.key-file: tls.ca_file holds no PEM certificate"},
		{"CA a device", []string{"--tls.ca-file", "/dev/zero", "--broker", "1"}, 2, "/dev/zero is not a regular file but a device"},
		{"password without user", []string{"--tls.ca-file", ca, "--web.password-file", password, "--broker", "1"}, 2, "--web.password-file without --web.username"},
		{"user without password", []string{"--tls.ca-file", ca, "--web.username", "sre", "--broker", "1"}, 2, "$FAILOVER_EXPORTER_WEB_PASSWORD"},
		{"cert without key", []string{"--tls.cert-file", ca, "--broker", "1"}, 2, "--tls.cert-file and --tls.key-file go together"},
		{"negative wait", []string{"--broker", "1", "--wait=-1s"}, 2, "--wait=-1s: want 0 (ask once)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(passwordEnv, "")
			os.Unsetenv(passwordEnv)
			stdout, stderr := tempFile(t), tempFile(t)
			code := run(append([]string{"safe-to-stop", "--url", srv.URL, "--poll", "10ms"}, tc.args...), stdout, stderr)
			out := readBack(t, stdout) + readBack(t, stderr)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d and %q in:\n%s", code, tc.code, tc.want, out)
			}
			if strings.Contains(out, "s3cret") {
				t.Errorf("the password is in the output:\n%s", out)
			}
		})
	}
}

func tempFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readBack(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(b))
}
