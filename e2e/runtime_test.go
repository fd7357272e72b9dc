package e2e

import (
	"strconv"
	"testing"

	"github.com/failover-exporter/failover_exporter/internal/exportertest"
)

// The exporter collects garbage at GOGC=50 unless the environment says
// otherwise, as docs/metrics-cost.md tells users; the Go collector's own
// go_gc_gogc_percent shows what the running process uses.
func TestGOGCDefaultAndOverride(t *testing.T) {
	nothing := "--redis.addr=127.0.0.1:" + strconv.Itoa(exportertest.FreePort(t))
	for _, tc := range []struct {
		env  string
		want float64
	}{
		{env: "", want: 50},
		{env: "80", want: 80},
	} {
		t.Setenv("GOGC", tc.env)
		e := exportertest.Start(t, nothing)
		if got := scrapeValue(t, e.URL, "go_gc_gogc_percent "); got != tc.want {
			t.Errorf("GOGC=%q: go_gc_gogc_percent %v, want %v", tc.env, got, tc.want)
		}
		e.Stop()
	}
}
