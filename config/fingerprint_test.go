package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fingerprint is how the collector manager tells whether a cluster
// changed on reload: it must change when a setting, a secret or a TLS file
// changes, stay the same otherwise, and never contain the secret.
func TestFingerprintFollowsSecretAndTLSFiles(t *testing.T) {
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
	fingerprint := func(c interface{ Fingerprint() (string, error) }) string {
		t.Helper()
		fp, err := c.Fingerprint()
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}

	first := fingerprint(cluster)
	if fingerprint(cluster) != first {
		t.Fatal("fingerprint is not stable")
	}
	if strings.Contains(first, "first-Secret") {
		t.Fatalf("the secret is in the fingerprint: %s", first)
	}
	write(password, "second-Secret\n")
	second := fingerprint(cluster)
	if second == first {
		t.Error("fingerprint unchanged after the secret file changed")
	}
	write(ca, "ca two")
	third := fingerprint(cluster)
	if third == second {
		t.Error("fingerprint unchanged after the CA file changed")
	}
	if err := os.Remove(ca); err != nil {
		t.Fatal(err)
	}
	if fingerprint(cluster) == third {
		t.Error("fingerprint unchanged after the CA file went away")
	}
	write(ca, "ca two")
	if fingerprint(cluster) != third {
		t.Error("fingerprint differs with the same settings and files")
	}
	changed := cluster
	changed.Addrs = []string{"127.0.0.1:7001"}
	if fingerprint(changed) == third {
		t.Error("fingerprint unchanged after the addresses changed")
	}

	t.Setenv("FAILOVER_TEST_SECRET", "env-Secret")
	kafka := KafkaCluster{BootstrapServers: []string{"127.0.0.1:9092"},
		SASL: SASL{Mechanism: "PLAIN", Username: "u", Password: Secret{Env: "FAILOVER_TEST_SECRET"}}}
	before := fingerprint(kafka)
	if strings.Contains(before, "env-Secret") {
		t.Errorf("the secret is in the fingerprint: %s", before)
	}
	t.Setenv("FAILOVER_TEST_SECRET", "env-Secret-2")
	if fingerprint(kafka) == before {
		t.Error("fingerprint unchanged after the SASL password variable changed")
	}
}
