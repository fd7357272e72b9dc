package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The JSON encoding is how the collector manager tells whether a cluster
// changed on reload: it must change when a secret or TLS file changes, and
// must never contain the secret.
func TestJSONFollowsSecretAndTLSFiles(t *testing.T) {
	dir := t.TempDir()
	password := filepath.Join(dir, "password")
	ca := filepath.Join(dir, "ca.pem")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(password, "first-Secret\n")
	write(ca, "ca one")
	cluster := RedisCluster{Addrs: []string{"127.0.0.1:7000"}, Password: Secret{File: password}, TLS: TLS{Enabled: true, CAFile: ca}}
	encode := func() string {
		t.Helper()
		b, err := json.Marshal(cluster)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	first := encode()
	if encode() != first {
		t.Fatal("encoding is not stable")
	}
	if strings.Contains(first, "first-Secret") {
		t.Fatalf("the secret is in the encoding: %s", first)
	}
	if !strings.Contains(first, password) || !strings.Contains(first, ca) {
		t.Errorf("the encoding does not name the files: %s", first)
	}
	write(password, "second-Secret\n")
	second := encode()
	if second == first {
		t.Error("encoding unchanged after the secret file changed")
	}
	write(ca, "ca two")
	if encode() == second {
		t.Error("encoding unchanged after the CA file changed")
	}

	t.Setenv("FAILOVER_TEST_SECRET", "env-Secret")
	env, err := json.Marshal(Secret{Env: "FAILOVER_TEST_SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "env-Secret") || !strings.Contains(string(env), "digest") {
		t.Errorf("env secret encoding: %s", env)
	}
}
