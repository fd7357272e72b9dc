package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// TestSecurityWeb serves the exporter behind exporter-toolkit's web config
// (--web.config.file): HTTPS with a certificate from a test CA, and basic
// auth with a bcrypt hash. It needs no cluster: the one it watches is a
// dead address.
func TestSecurityWeb(t *testing.T) {
	const user, password = "prometheus", "Web-scrape-pw-1123"
	tlsFiles := secWriteCerts(t)
	dir := t.TempDir()
	// The lowest cost keeps the test fast; exporter-toolkit accepts any
	// bcrypt hash.
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := secWriteFile(t, filepath.Join(dir, "web.yml"), fmt.Sprintf(`tls_server_config:
  cert_file: %s
  key_file: %s
basic_auth_users:
  %s: %s
`, tlsFiles.ServerCert, tlsFiles.ServerKey, user, hash))

	addr := fmt.Sprintf("127.0.0.1:%d", exportertest.FreePort(t))
	cmd := exec.Command(exportertest.Binary(t),
		"--web.listen-address="+addr, "--web.config.file="+webConfig,
		"--kafka.server="+deadAddr(t), "--refresh.interval=1s", "--log.level=debug")
	// Written by the process's output copier while the test reads it.
	logs := &secLockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("exporter log:\n%s", logs.String())
		}
	})

	caPEM, err := os.ReadFile(tlsFiles.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}
	get := func(scheme, user, password string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		c := client
		if scheme == "http" {
			c = &http.Client{Timeout: 5 * time.Second}
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}

	// Wait until it serves.
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, _, err := get("https", user, password)
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter does not serve HTTPS with basic auth: %d %v\n%s", code, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("right credentials", func(t *testing.T) {
		code, body, err := get("https", user, password)
		if err != nil || code != http.StatusOK {
			t.Fatalf("got %d %v, want 200", code, err)
		}
		if !strings.Contains(body, "kafka_up") {
			t.Errorf("no kafka_up in the metrics:\n%s", body)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		if code, _, err := get("https", "", ""); err != nil || code != http.StatusUnauthorized {
			t.Errorf("got %d %v, want 401", code, err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		if code, _, err := get("https", user, "not-"+password); err != nil || code != http.StatusUnauthorized {
			t.Errorf("got %d %v, want 401", code, err)
		}
	})
	t.Run("unknown user", func(t *testing.T) {
		if code, _, err := get("https", "admin", password); err != nil || code != http.StatusUnauthorized {
			t.Errorf("got %d %v, want 401", code, err)
		}
	})
	t.Run("plain HTTP", func(t *testing.T) {
		// Go's TLS server answers a plain HTTP request with a 400 and no
		// metrics; anything but a 200 is a failure to connect.
		code, body, err := get("http", user, password)
		if err == nil && (code == http.StatusOK || strings.Contains(body, "kafka_up")) {
			t.Errorf("plain HTTP to the TLS listener got %d with metrics", code)
		}
		t.Logf("plain HTTP: status %d, error %v", code, err)
	})
	t.Run("untrusted server certificate", func(t *testing.T) {
		c := &http.Client{Timeout: 5 * time.Second}
		_, err := c.Get("https://" + addr + "/metrics")
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Errorf("a client without the CA got %v, want x509.UnknownAuthorityError", err)
		}
	})
	t.Run("no password in the log", func(t *testing.T) {
		if strings.Contains(logs.String(), password) || strings.Contains(logs.String(), string(hash)) {
			t.Errorf("the password or its hash appears in the log:\n%s", logs.String())
		}
	})
}

// secLockedBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type secLockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *secLockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *secLockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
