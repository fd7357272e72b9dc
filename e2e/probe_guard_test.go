package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/internal/promtest"
)

// TestProbeCannotBeTurnedAgainstItsOwner: what a caller who reaches the
// exporter's port can send to /probe, tried as an attacker would on real
// Redis Clusters, with a real Prometheus scraping /metrics all along
// (issue 41):
//   - a replica's address or a host name of a configured cluster is that
//     cluster under a second name: refused (409), and the canary its module
//     enables never starts for it;
//   - two first probes of a new target at once both answer from its first
//     refresh;
//   - targets that never answer (closed ports) cannot hold the table: a
//     new target takes the place of the one probed least recently;
//   - no target form, however odd its bytes, reaches /metrics or makes a
//     scrape of it fail, and each one /probe accepts passes promtool and
//     a real Prometheus; the status page shows no discovered target.
func TestProbeCannotBeTurnedAgainstItsOwner(t *testing.T) {
	main := lab.StartRedisCluster(t, lab.RedisOptions{Replicas: 1})
	other := lab.StartRedisCluster(t, lab.RedisOptions{})
	seed := main.Addrs()[0]
	dir := t.TempDir()
	cfg := secWriteFile(t, filepath.Join(dir, "config.yaml"), fmt.Sprintf(`redis:
  - name: main
    addrs: [%s]
    refresh_interval: 1s
redis_modules:
  - name: seeds
    refresh_interval: 1s
    allowed_targets: ["127.0.0.1:*", "localhost:*", "[::1]:*"]
  - name: canary
    refresh_interval: 1s
    allowed_targets: ["127.0.0.1:*", "localhost:*"]
    canary: {enabled: true, interval: 1s}
`, seed))
	exporter := exportertest.Start(t, "--config.file="+cfg, "--probe.max-targets=2", "--probe.idle-timeout=1m")
	exporter.WaitReady(t, 60*time.Second)
	probe := func(module, target string) (int, string) {
		t.Helper()
		resp, err := exporter.Get("/probe?system=redis&module=" + module + "&target=" + url.QueryEscape(target))
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, readAll(t, resp)
	}

	prom := promtest.StartPrometheus(t, promtest.PrometheusOptions{
		ScrapeConfigs: fmt.Sprintf("  - job_name: metrics\n    static_configs:\n      - targets: [%q]\n", exporter.Addr),
	})
	waitProm(t, 30*time.Second, "Prometheus scraping /metrics", func() (bool, string) {
		up := prom.Query(t, `up{job="metrics"}`)
		return len(up) == 1 && up[0].Last() == 1, fmt.Sprint(up)
	})
	promStart := time.Now()

	// Aliases of main: a member's address, known from main's own reads,
	// is refused before anything connects; a host name nobody listed is
	// refused once its first read shows main's node ids.
	for _, alias := range []string{main.Addrs()[len(main.Addrs())-1], strings.Replace(seed, "127.0.0.1", "localhost", 1)} {
		status, body := probe("canary", alias)
		if status != 409 || !strings.Contains(body, `redis cluster "main" of the config`) {
			t.Errorf("probe of %s, an address of main, with a canary module: %d %q, want 409 naming main", alias, status, body)
		}
	}
	if logs := exporter.Logs(); strings.Contains(logs, `collector=redis_canary cluster=localhost`) || strings.Contains(logs, "collector=redis_canary cluster="+main.Addrs()[len(main.Addrs())-1]) {
		t.Errorf("a canary started for an alias of main:\n%s", logs)
	}

	// Two first probes of a new target at once.
	otherSeed := other.Addrs()[0]
	var wg sync.WaitGroup
	bodies := make([]string, 2)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := exporter.Get("/probe?system=redis&module=seeds&target=" + otherSeed)
			if err != nil {
				t.Error(err)
				return
			}
			bodies[i] = readAll(t, resp)
		}()
	}
	wg.Wait()
	for i, body := range bodies {
		if !strings.Contains(body, `redis_cluster_up{redis_cluster="`+otherSeed+`"} 1`) {
			t.Errorf("first probe %d of two at once did not answer from the first refresh:\n%s", i+1, body)
		}
	}

	// Junk: closed ports fill the second place; each new one takes the
	// place of the last, and the cluster that answered keeps its own.
	dead1, dead2 := deadAddr(t), deadAddr(t)
	for _, dead := range []string{dead1, dead2} {
		if status, body := probe("seeds", dead); status != 200 || !strings.Contains(body, `redis_cluster_up{redis_cluster="`+dead+`"} 0`) {
			t.Errorf("probe of the closed port %s: %d, want 200 with redis_cluster_up 0:\n%s", dead, status, body)
		}
	}
	m := exporter.Scrape(t)
	if got := value(t, m, "failover_exporter_probe_discovered_targets_stopped_total", map[string]string{"system": "redis", "reason": "evicted"}); got != 1 {
		t.Errorf("evicted = %v, want 1 (%s, for %s)", got, dead1, dead2)
	}
	if status, body := probe("seeds", otherSeed); status != 200 || !strings.Contains(body, `redis_cluster_up{redis_cluster="`+otherSeed+`"} 1`) {
		t.Errorf("the answering target lost its place to junk: %d\n%s", status, body)
	}

	// Every target form: what /probe accepts is canonical, valid UTF-8 and
	// passes promtool; what it refuses is a 400 (or a 403: a host outside
	// the module's allowed_targets, before anything connects: kafka.example
	// is never looked up); none reaches /metrics.
	forms := []string{
		"\xff:6379", "a\x00b:1", `"quoted":1`, "{x}:1", "new\nline:1", "ÿ:1", strings.Repeat("a", 300) + ":1",
		"LOCALHOST:" + strings.Split(otherSeed, ":")[1], otherSeed + " , " + otherSeed, "127.0.0.1:0", "127.0.0.1:65536",
		"127.0.0.1:+1", "[::1]:1", "[::1%lo]:1", "127.1:1", "kafka.example:1", "http://127.0.0.1:1", "user@127.0.0.1:1",
	}
	for _, form := range forms {
		status, body := probe("seeds", form)
		switch status {
		case 400, 403, 409:
		case 200:
			if !utf8.ValidString(body) {
				t.Errorf("probe of %q: 200 with invalid UTF-8:\n%q", form, body)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			check := exec.CommandContext(ctx, "promtool", "check", "metrics")
			check.Stdin = strings.NewReader(body)
			if out, err := check.CombinedOutput(); err != nil {
				t.Errorf("probe of %q: promtool check metrics: %v\n%s", form, err, out)
			}
			cancel()
		default:
			t.Errorf("probe of %q: %d, want 200, 400, 403 or 409:\n%s", form, status, body)
		}
		t.Logf("target form %q: %d %s", form, status, strings.SplitN(body, "\n", 2)[0])
	}
	metrics, err := exporter.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text := readAll(t, metrics)
	for _, discovered := range []string{otherSeed, dead2, "localhost"} {
		if strings.Contains(text, `redis_cluster="`+discovered) {
			t.Errorf("/metrics carries the discovered target %s", discovered)
		}
	}
	if !strings.Contains(text, `redis_cluster_up{redis_cluster="main"} 1`) {
		t.Errorf("/metrics lacks the configured cluster main")
	}
	status, err := exporter.Get("/")
	if err != nil {
		t.Fatal(err)
	}
	if page := readAll(t, status); strings.Contains(page, otherSeed) || !strings.Contains(page, "main") {
		t.Errorf("the status page shows the discovered %s, or not main", otherSeed)
	}
	// Prometheus scraped /metrics every second while all this went on,
	// and never failed to.
	time.Sleep(2 * time.Second)
	window := time.Since(promStart).Round(time.Second) + time.Second
	if got := prom.Query(t, fmt.Sprintf(`min_over_time(up{job="metrics"}[%s])`, window)); len(got) != 1 || got[0].Last() != 1 {
		t.Errorf("min over the probes of up{job=metrics} = %v, want 1: a probe made a scrape of /metrics fail", got)
	}
}
