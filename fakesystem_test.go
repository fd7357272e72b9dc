package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/failover-exporter/failover_exporter/collector"
	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/chart/schema"
	"github.com/failover-exporter/failover_exporter/internal/fakesystem"
	"github.com/failover-exporter/failover_exporter/internal/metricsdoc"
	"github.com/failover-exporter/failover_exporter/systems"
)

var registerFake sync.Once

// withFakeSystem makes the binary's registry the real one plus the fake
// system (internal/fakesystem), for the rest of the test: its section
// joins the config's table as a system's settings package adds its own.
func withFakeSystem(t *testing.T, f *fakesystem.Sources) {
	registerFake.Do(func() {
		if err := config.Register(fakesystem.Section); err != nil {
			t.Fatal(err)
		}
	})
	before := registry
	registry = append(slices.Clone(systems.All), fakesystem.System(f))
	t.Cleanup(func() { registry = before })
}

// TestAFakeSystemThroughTheBinary: a system defined entirely in its own
// folder (internal/fakesystem) plus a registry line is served by the
// binary's own wiring, with no other change: its flags on the command
// line, its section and modules in the config file and the check, its
// clusters on /metrics, a module's target on /probe, its view on the
// status page, its budget on /api/v1/safe-to-stop and in the safe-to-stop
// command (whose flag is its scope), its table in METRICS.md and the
// chart's values.schema.json.
func TestAFakeSystemThroughTheBinary(t *testing.T) {
	withFakeSystem(t, &fakesystem.Sources{})
	file := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(file, []byte("fake:\n  - {name: filed, refresh_interval: 100ms}\nfake_modules:\n  - {name: m, allow_any_target: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cl, _, err := parseCommandLine([]string{"--config.file", file, "--probe.max-targets", "5", "--fake.addr", "127.0.0.1:7", "--fake.name", "flagged", "--refresh.interval", "100ms"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := checkAll(cl.serveFlags)
	if err != nil {
		t.Fatalf("the check of the fake system's flags and file: %v", err)
	}
	manager, mux, _, err := buildServer(cl.serveFlags, cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(manager.Stop)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body := get(t, srv.URL+"/metrics")
		if strings.Contains(body, `fake_refreshes_total{fake_cluster="filed"}`) && strings.Contains(body, `fake_refreshes_total{fake_cluster="flagged"}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never served the file's and the flags' fake clusters:\n%s", body)
		}
	}
	if code, body := get(t, srv.URL+"/probe?system=fake&module=m&target=127.0.0.1:9"); code != http.StatusOK || !strings.Contains(body, "fake_up") {
		t.Errorf("/probe of module m: %d\n%s", code, body)
	}
	if code, body := get(t, srv.URL+"/"); code != http.StatusOK || !strings.Contains(body, "refreshes counted") || !strings.Contains(body, "filed") {
		t.Errorf("the status page lacks the fake system's view: %d\n%s", code, body)
	}
	if code, body := get(t, srv.URL+"/api/v1/safe-to-stop?system=fake&cluster=filed&member=b"); code != http.StatusConflict || !strings.Contains(body, "fake_unsafe") {
		t.Errorf("/api/v1/safe-to-stop of member b: %d %s, want 409 saying fake_unsafe", code, body)
	}
	for _, c := range []struct {
		member string
		code   int
		says   string
	}{
		{"a", 0, "yes"},
		{"b", 1, "member b holds the last copy"},
		{"z", 2, "member z: unknown"},
	} {
		stdout, stderr := tempFile(t), tempFile(t)
		code := run([]string{"safe-to-stop", "--url", srv.URL, "--system", "fake", "--cluster", "filed", "--member", c.member}, stdout, stderr)
		if out := readBack(t, stdout) + readBack(t, stderr); code != c.code || !strings.Contains(out, c.says) {
			t.Errorf("safe-to-stop --member %s: exit %d, want %d saying %q:\n%s", c.member, code, c.code, c.says, out)
		}
	}

	// The chart's values.schema.json is written from the sections table:
	// the fake section and its modules are in it, as strict as the file.
	props := schema.Config(config.FileType())["properties"].(map[string]any)
	for _, key := range []string{"fake", "fake_modules"} {
		entry, _ := props[key].(map[string]any)["items"].(map[string]any)
		fields, _ := entry["properties"].(map[string]any)
		if entry["additionalProperties"] != false || fields["refresh_interval"] == nil || fields["addrs"] == nil {
			t.Errorf("the chart's schema of %s: %v", key, props[key])
		}
	}

	sections, err := metricsdoc.Sections(registry, collector.NewSelfMetrics(registry).Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	if doc := metricsdoc.Markdown(sections); !strings.Contains(doc, "## Fake") || !strings.Contains(doc, "fake_refreshes_total") {
		t.Errorf("METRICS.md of the registry lacks the fake system's table")
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
