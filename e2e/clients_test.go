package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// TestMetricsPageReadByCurlBrowserAndPromtool checks the served page the way
// users and tools read it: the rendered series travel as one gzip member
// assembled from fragments compressed at refresh time, so the page must be
// what curl --compressed, a browser (headless Chromium, which asks for
// gzip), promtool and Prometheus' own text parser accept, with every series
// in both encodings.
func TestMetricsPageReadByCurlBrowserAndPromtool(t *testing.T) {
	const partitions = 2_000
	addr := fakeLargeCluster(t, partitions, false)
	e := exportertest.Start(t, "--kafka.server="+addr, "--kafka.cluster-name=big", "--refresh.interval=1s")
	e.WaitReady(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// countLeaders counts the partition leader series of a page.
	countLeaders := func(page string) int {
		return strings.Count(page, "\nkafka_partition_leader{")
	}

	curl := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "curl", append([]string{"-sS", "--fail"}, args...)...).Output()
		if err != nil {
			t.Fatalf("curl %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	plain := curl(e.URL + "/metrics")
	compressed := curl("--compressed", e.URL+"/metrics")
	if headers := curl("--compressed", "-o", "/dev/null", "-D", "-", e.URL+"/metrics"); !strings.Contains(strings.ToLower(headers), "content-encoding: gzip") {
		t.Errorf("curl --compressed was not answered with gzip:\n%s", headers)
	}
	for name, page := range map[string]string{"plain": plain, "curl --compressed": compressed} {
		if n := countLeaders(page); n != partitions {
			t.Errorf("%s: %d partition leader series, want %d", name, n, partitions)
		}
		parser := expfmt.NewTextParser(model.LegacyValidation)
		if _, err := parser.TextToMetricFamilies(strings.NewReader(page)); err != nil {
			t.Errorf("%s: Prometheus text parser: %v", name, err)
		}
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (%v): run scripts/install-deps.sh prometheus", err)
	}
	check := exec.CommandContext(ctx, promtool, "check", "metrics")
	check.Stdin = strings.NewReader(compressed)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (%v): run scripts/install-deps.sh chromium", err)
	}
	// Chromium asks for gzip (Accept-Encoding: gzip, deflate, br, zstd) and
	// shows text/plain inside a <pre>; --dump-dom prints that DOM.
	browser := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--dump-dom", e.URL+"/metrics")
	var dom, stderr bytes.Buffer
	browser.Stdout, browser.Stderr = &dom, &stderr
	if err := browser.Run(); err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	if n := countLeaders(dom.String()); n != partitions {
		t.Errorf("Chromium shows %d partition leader series, want %d; stderr:\n%s\nDOM starts:\n%.500s", n, partitions, stderr.String(), dom.String())
	}
	if !strings.Contains(dom.String(), "# TYPE kafka_partition_leader gauge") {
		t.Errorf("Chromium does not show the leader family's TYPE line")
	}

	// And Go's client with transparent decompression, as Prometheus reads.
	resp, err := http.Get(e.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("Go client (gzip): %v", err)
	}
	if n := countLeaders(string(body)); n != partitions || !resp.Uncompressed {
		t.Errorf("Go client: %d partition leader series (want %d), transparently decompressed %v", n, partitions, resp.Uncompressed)
	}
}
