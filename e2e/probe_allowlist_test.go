package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// TestProbeAllowedTargets: /probe takes its target from whoever reaches
// the exporter's port, so a module's credentials must go only where its
// allowed_targets say. A plain TCP listener stands in for a host an
// attacker names: a probe of it with a Redis module (ACL user and
// password) or a Kafka module (SASL/PLAIN) whose list does not include it
// is a 403 naming the module and the address, and the listener receives
// no connection at all; the same listener port in a module's list does
// receive one (the Redis module's password in it), so the test can fail.
// A target that is not a host name (%FF, which would have become an
// invalid label value) is a 400. And a config whose module carries a
// credential without allowed_targets is refused by --config.check.
func TestProbeAllowedTargets(t *testing.T) {
	const redisPassword, kafkaPassword = "redis-pw-8c1d0e", "kafka-pw-77a2f4"
	outside, redisInside, kafkaInside := startRecorder(t), startRecorder(t), startRecorder(t)
	elsewhere := exportertest.FreePort(t)

	dir := t.TempDir()
	redisSecret := secWriteSecretFile(t, dir, "redis-password", redisPassword)
	kafkaSecret := secWriteSecretFile(t, dir, "kafka-password", kafkaPassword)
	cfg := secWriteFile(t, filepath.Join(dir, "config.yaml"), fmt.Sprintf(`redis_modules:
  - name: acl
    username: monitor
    password: {file: %[1]s}
    allowed_targets: ["10.0.0.0/8:6379", "127.0.0.1:%[3]d"]
  - name: acl-here
    username: monitor
    password: {file: %[1]s}
    allowed_targets: ["127.0.0.1:%[4]d"]
kafka_modules:
  - name: plain
    sasl: {mechanism: PLAIN, username: monitor, password: {file: %[2]s}}
    allowed_targets: ["*.kafka.internal:9092", "127.0.0.1:%[3]d"]
  - name: plain-here
    sasl: {mechanism: PLAIN, username: monitor, password: {file: %[2]s}}
    allowed_targets: ["127.0.0.1:%[5]d"]
`, redisSecret, kafkaSecret, elsewhere, redisInside.port(), kafkaInside.port()))
	exporter := exportertest.Start(t, "--config.file="+cfg)
	exporter.WaitReady(t, 30*time.Second)

	probe := func(query string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, exporter.URL+"/probe?"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A first probe waits for the first refresh at most this less 0.5 s.
		req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "2")
		client := http.Client{Timeout: 10 * time.Second}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET /probe?%s: %v", query, err)
		}
		return resp.StatusCode, readAll(t, resp)
	}

	// Outside the lists: refused, naming the module and the address.
	target := fmt.Sprintf("127.0.0.1:%d", outside.port())
	for _, c := range []struct{ system, module string }{{"redis", "acl"}, {"kafka", "plain"}} {
		code, body := probe("system=" + c.system + "&module=" + c.module + "&target=" + target)
		if code != http.StatusForbidden || !strings.Contains(body, fmt.Sprintf("%s module %q", c.system, c.module)) || !strings.Contains(body, fmt.Sprintf("address %q is not in", target)) {
			t.Errorf("probe of %s with %s module %s: %d %q, want 403 naming the module and the address", target, c.system, c.module, code, body)
		}
	}
	// One address of two outside refuses the target.
	if code, body := probe(fmt.Sprintf("system=redis&module=acl&target=127.0.0.1:%d,127.0.0.1:%d", elsewhere, outside.port())); code != http.StatusForbidden {
		t.Errorf("a target with one address outside the list: %d %q, want 403", code, body)
	}
	// Not a host name: 400, the bad part quoted.
	if code, body := probe("system=redis&module=acl&target=%FF:6379"); code != http.StatusBadRequest || !strings.Contains(body, `\xff`) {
		t.Errorf("target %%FF:6379: %d %q, want 400 quoting it", code, body)
	}

	// Inside a list: the listener is connected to, the Redis module's
	// password sent in the clear (which is what the lists keep from a
	// host nobody listed).
	if code, body := probe(fmt.Sprintf("system=redis&module=acl-here&target=127.0.0.1:%d", redisInside.port())); code != http.StatusOK || !strings.Contains(body, "redis_cluster_up") {
		t.Errorf("probe with the module that allows the listener: %d %q, want 200 with redis_cluster_up", code, body)
	}
	if code, body := probe(fmt.Sprintf("system=kafka&module=plain-here&target=127.0.0.1:%d", kafkaInside.port())); code != http.StatusOK || !strings.Contains(body, "kafka_up") {
		t.Errorf("probe with the module that allows the listener: %d %q, want 200 with kafka_up", code, body)
	}
	waitProm(t, 10*time.Second, "the allowed listeners connected to, the Redis password received", func() (bool, string) {
		r, k := redisInside.received(), kafkaInside.received()
		return r.conns > 0 && bytes.Contains(r.bytes, []byte(redisPassword)) && k.conns > 0,
			fmt.Sprintf("redis listener: %d connections, %d bytes; kafka listener: %d connections", r.conns, len(r.bytes), k.conns)
	})

	if got := outside.received(); got.conns != 0 {
		t.Errorf("the listener no module allows received %d connections and %d bytes (%q)", got.conns, len(got.bytes), got.bytes)
	}
	m := exporter.Scrape(t)
	if got := value(t, m, "failover_exporter_probe_refused_total", map[string]string{"reason": "not_allowed"}); got != 3 {
		t.Errorf("refused{reason=not_allowed} = %v, want 3", got)
	}
	if got := value(t, m, "failover_exporter_probe_refused_total", map[string]string{"reason": "bad_target"}); got != 1 {
		t.Errorf("refused{reason=bad_target} = %v, want 1", got)
	}

	// A module with a credential and no list: --config.check refuses the
	// file, saying what to add.
	bad := secWriteFile(t, filepath.Join(dir, "bad.yaml"), fmt.Sprintf("redis_modules:\n  - name: acl\n    username: monitor\n    password: {file: %s}\n", redisSecret))
	code, out := runExporter(t, "--config.file="+bad, "--config.check")
	if code != 1 || !strings.Contains(out, `redis module 1 ("acl"): the module carries credentials (username, password) and has no allowed_targets: add allowed_targets:`) {
		t.Errorf("--config.check of a credentialed module without allowed_targets: exit %d, output:\n%s", code, out)
	}
}

// recorder is a TCP listener on 127.0.0.1 that accepts every connection,
// answers nothing, and records what it received.
type recorder struct {
	listener net.Listener
	mu       sync.Mutex
	got      received
}

type received struct {
	conns int
	bytes []byte
}

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{listener: l}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.got.conns++
			r.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				buf := make([]byte, 4096)
				for {
					// Bounded, so that cleanup never waits on a client that
					// keeps its connection open.
					_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
					n, err := conn.Read(buf)
					r.mu.Lock()
					r.got.bytes = append(r.got.bytes, buf[:n]...)
					r.mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return r
}

func (r *recorder) port() int { return r.listener.Addr().(*net.TCPAddr).Port }

func (r *recorder) received() received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return received{conns: r.got.conns, bytes: bytes.Clone(r.got.bytes)}
}
