package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// probeJob is a Prometheus scrape config that scrapes each of its targets
// at the exporter's /probe, in the multi-target exporter pattern, as
// docs/probe.md writes it: each target becomes the
// target= parameter and the instance label, the exporter the address.
// params are the job's other parameters (system=, module=), targets its
// service discovery block ("static_configs:\n  - targets: [...]" or a
// file_sd_configs block), both indented to the job's keys.
func probeJob(name, exporterAddr, params, targets string) string {
	indent := func(block string) string {
		if block == "" {
			return ""
		}
		return "    " + strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n    ") + "\n"
	}
	return fmt.Sprintf(`  - job_name: %s
    metrics_path: /probe
%s%s    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__param_target]
        target_label: instance
      - target_label: __address__
        replacement: %q
`, name, indent(params), indent(targets), exporterAddr)
}

// waitProm polls cond every 500ms until it holds, failing the test with
// cond's last description after timeout.
func waitProm(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, still waiting for %s:\n%s", timeout, what, desc)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
