package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/certs"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// secRedisMinimalACL is the ACL documented in docs/security.md and
// docs/redis.md; the test runs the exporter as a user with exactly these
// rules and checks that the documents still say so.
const secRedisMinimalACL = "-@all +hello +ping +cluster|nodes +cluster|info +info +dbsize"

const (
	secRedisPassword       = "Redis-exporter-pw-2718"
	secRedisNoInfoPassword = "Redis-noinfo-pw-3141"
	secRedisWrongPassword  = "Wrong-redis-pw-1618"
)

// TestSecurityRedis runs the exporter against a Redis Cluster (3 masters, 3
// replicas) that speaks TLS only, on the client port, the cluster bus and
// replication, requires client certificates, and loads its users from an
// ACL file. One exporter process watches it under several names, one per
// case.
func TestSecurityRedis(t *testing.T) {
	start := time.Now()
	tlsFiles := secWriteCerts(t)
	dir := t.TempDir()
	// Passwords are stored hashed (#<sha256>), as they should be in
	// production ACL files.
	aclFile := secWriteFile(t, filepath.Join(dir, "users.acl"),
		fmt.Sprintf("user exporter on #%s %s\n", secSHA256Hex(secRedisPassword), secRedisMinimalACL)+
			fmt.Sprintf("user noinfo on #%s %s\n", secSHA256Hex(secRedisNoInfoPassword), strings.Replace(secRedisMinimalACL, " +info", "", 1)))
	cluster := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1, TLSDir: tlsFiles.Dir, ACLFile: aclFile})
	clusterUp := time.Since(start)
	// The ACL file really is in force.
	if out := cluster.CLI(t, cluster.Ports()[0], "ACL", "GETUSER", "noinfo"); strings.Contains(out, "+info") {
		t.Fatalf("user noinfo may run INFO:\n%s", out)
	}

	t.Setenv("FAILOVER_E2E_REDIS_PASSWORD", secRedisPassword)
	t.Setenv("FAILOVER_E2E_REDIS_WRONG_PASSWORD", secRedisWrongPassword)
	noInfoFile := secWriteSecretFile(t, dir, "redis-noinfo-password", secRedisNoInfoPassword)
	passwordFile := secWriteSecretFile(t, dir, "redis-password", secRedisPassword)
	// Holds a stale password until the "rotation" subtest writes the new one.
	rotatedFile := secWriteSecretFile(t, dir, "redis-rotated-password", secRedisWrongPassword)
	configPath := secWriteFile(t, filepath.Join(dir, "config.yaml"), secRedisConfig(cluster.Addrs()[0], tlsFiles, passwordFile, noInfoFile, rotatedFile))
	e := exportertest.Start(t, "--config.file="+configPath, "--log.level=debug")
	e.WaitReady(t, 30*time.Second)

	nodes := len(cluster.Ports())
	good := []string{"minimal-acl", "password-file", "skip-verify"}
	// Regular expressions the cluster's log lines must all match.
	bad := map[string][]string{
		// The refused command is named twice: by the exporter (which of its
		// queries failed) and by Redis (the command the ACL refused).
		"missing-info":   {`INFO replication: NOPERM`, `no permissions to run the 'info' command`},
		"wrong-password": {`WRONGPASS invalid username-password pair`},
		"unknown-ca":     {`tls: failed to verify certificate: x509: certificate signed by unknown authority`},
		// With TLS 1.3 the client finishes its handshake before Redis checks
		// for a client certificate; Redis then sends "certificate required"
		// and closes, and Go reports whichever it reads first.
		"no-client-cert": {`tls: certificate required|connection reset by peer`},
		// Plain RESP to a TLS port: Redis closes the connection.
		"no-tls": {`connection reset by peer|EOF`},
	}
	m, took := waitMetrics(t, e, 60*time.Second, "every secured Redis cluster read or failed", func(m exportertest.Metrics) (bool, string) {
		var missing []string
		for _, name := range good {
			if len(m.Series("redis_cluster_node_up", map[string]string{"redis_cluster": name})) != nodes {
				missing = append(missing, name)
			}
		}
		for name := range bad {
			if v, ok := m.Value("redis_cluster_exporter_refresh_failures_total", map[string]string{"redis_cluster": name}); !ok || v < 2 {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, fmt.Sprintf("waiting for %v:\n%s", missing, m.Describe("redis_cluster_up", nil))
	})
	t.Logf("timings: TLS redis cluster up in %s; exporter read or failed every cluster %s after ready",
		clusterUp.Round(time.Millisecond), took.Round(time.Millisecond))

	for _, name := range good {
		t.Run(name, func(t *testing.T) {
			labels := map[string]string{"redis_cluster": name}
			if v := value(t, m, "redis_cluster_up", labels); v != 1 {
				t.Errorf("redis_cluster_up = %v, want 1\n%s", v, secClusterLog(e.Logs(), name))
			}
			for _, s := range m.Series("redis_cluster_node_up", labels) {
				if s.Value != 1 {
					t.Errorf("node %s: redis_cluster_node_up = %v, want 1", s.Labels["address"], s.Value)
				}
			}
			if v := value(t, m, "redis_cluster_masters", labels); v != 3 {
				t.Errorf("redis_cluster_masters = %v, want 3", v)
			}
		})
	}
	for name, want := range bad {
		t.Run(name, func(t *testing.T) {
			labels := map[string]string{"redis_cluster": name}
			if v := value(t, m, "redis_cluster_up", labels); v != 0 {
				t.Errorf("redis_cluster_up = %v, want 0", v)
			}
			if n := len(m.Series("redis_cluster_node_up", labels)); n != 0 {
				t.Errorf("%d node series served for a cluster that cannot be read", n)
			}
			logs := secClusterLog(e.Logs(), name)
			if !strings.Contains(logs, `msg="refresh failed"`) {
				t.Errorf("no warning logged:\n%s", logs)
			}
			for _, w := range want {
				if !regexp.MustCompile(w).MatchString(logs) {
					t.Errorf("log does not say %q:\n%s", w, logs)
				}
			}
			t.Logf("first log line: %s", strings.SplitN(logs, "\n", 2)[0])
		})
	}

	t.Run("documented ACL", func(t *testing.T) {
		for _, doc := range []string{"docs/security.md", "docs/redis.md"} {
			b, err := os.ReadFile(filepath.Join(lab.RepoRoot(t), doc))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "ACL SETUSER exporter on >PASSWORD "+secRedisMinimalACL) {
				t.Errorf("%s does not document the tested ACL %q", doc, secRedisMinimalACL)
			}
		}
	})

	t.Run("no crash loop", func(t *testing.T) {
		before := value(t, m, "redis_cluster_exporter_refresh_failures_total", map[string]string{"redis_cluster": "wrong-password"})
		after := secWaitFailures(t, e, "redis_cluster_exporter_refresh_failures_total", "redis_cluster", "wrong-password", before+2)
		if v := value(t, after, "redis_cluster_up", map[string]string{"redis_cluster": "minimal-acl"}); v != 1 {
			t.Errorf("healthy cluster redis_cluster_up = %v next to a failing one", v)
		}
		if strings.Count(e.Logs(), `msg="starting failover_exporter"`) != 1 {
			t.Errorf("the exporter restarted:\n%s", e.Logs())
		}
	})

	// A password changed in its file is used after a reload, although the
	// config file itself did not change.
	t.Run("rotation", func(t *testing.T) {
		labels := map[string]string{"redis_cluster": "rotated"}
		if v := value(t, m, "redis_cluster_up", labels); v != 0 {
			t.Fatalf("redis_cluster_up = %v with the stale password, want 0", v)
		}
		secWriteSecretFile(t, dir, filepath.Base(rotatedFile), secRedisPassword)
		if err := e.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		_, took := waitMetrics(t, e, 15*time.Second, "the rotated password in use", func(m exportertest.Metrics) (bool, string) {
			v, ok := m.Value("redis_cluster_up", labels)
			return ok && v == 1, m.Describe("redis_cluster_up", labels)
		})
		t.Logf("rotated password in use %s after SIGHUP", took.Round(time.Millisecond))
	})

	t.Run("no password leaks", func(t *testing.T) {
		secAssertNoLeaks(t, e, secRedisPassword, secRedisNoInfoPassword, secRedisWrongPassword)
	})
}

func secRedisConfig(seed string, tlsFiles certs.Files, passwordFile, noInfoFile, rotatedFile string) string {
	mtls := fmt.Sprintf("{enabled: true, ca_file: %s, cert_file: %s, key_file: %s}", tlsFiles.CA, tlsFiles.ClientCert, tlsFiles.ClientKey)
	entry := func(name, user, password, tls string) string {
		return fmt.Sprintf(`  - name: %s
    addrs: [%s]
    username: %s
    password: %s
    refresh_interval: 500ms
    dial_timeout: 2s
    command_timeout: 2s
    tls: %s
`, name, seed, user, password, tls)
	}
	env := "{env: FAILOVER_E2E_REDIS_PASSWORD}"
	return "redis:\n" +
		entry("minimal-acl", "exporter", env, mtls) +
		entry("password-file", "exporter", "{file: "+passwordFile+"}",
			strings.Replace(mtls, "}", ", server_name: localhost}", 1)) +
		entry("skip-verify", "exporter", env,
			fmt.Sprintf("{enabled: true, ca_file: %s, cert_file: %s, key_file: %s, insecure_skip_verify: true}", tlsFiles.OtherCA, tlsFiles.ClientCert, tlsFiles.ClientKey)) +
		entry("missing-info", "noinfo", "{file: "+noInfoFile+"}", mtls) +
		entry("wrong-password", "exporter", "{env: FAILOVER_E2E_REDIS_WRONG_PASSWORD}", mtls) +
		entry("unknown-ca", "exporter", env,
			fmt.Sprintf("{enabled: true, ca_file: %s, cert_file: %s, key_file: %s}", tlsFiles.OtherCA, tlsFiles.ClientCert, tlsFiles.ClientKey)) +
		entry("no-client-cert", "exporter", env, "{enabled: true, ca_file: "+tlsFiles.CA+"}") +
		entry("no-tls", "exporter", env, "{enabled: false}") +
		entry("rotated", "exporter", "{file: "+rotatedFile+"}", mtls)
}

func secSHA256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
