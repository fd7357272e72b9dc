package promtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// alertmanagerConfig routes everything to a receiver that notifies nobody,
// with short group timers so that alerts are processed within seconds.
const alertmanagerConfig = `route:
  receiver: "null"
  group_by: ["alertname"]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: "null"
`

// webhookConfig sends every alert on its own (group_by: ['...']) to a
// webhook, firing and resolved, and repeats a notification only after an
// hour: each notification is then one alert changing state, which a test
// can count.
const webhookConfig = `route:
  receiver: hook
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: %s
        send_resolved: true
`

// Alertmanager is a running Alertmanager.
type Alertmanager struct {
	URL  string
	proc *process
}

// StartAlertmanager starts Alertmanager on a free loopback port with a
// minimal config, no gossip cluster and a temporary storage directory,
// waits until it is ready and stops it when the test ends.
func StartAlertmanager(t testing.TB) *Alertmanager {
	t.Helper()
	return startAlertmanager(t, alertmanagerConfig)
}

// StartAlertmanagerNotifying is StartAlertmanager with every alert sent on
// its own to the webhook, firing and resolved.
func StartAlertmanagerNotifying(t testing.TB, hook *Webhook) *Alertmanager {
	t.Helper()
	return startAlertmanager(t, fmt.Sprintf(webhookConfig, hook.URL))
}

func startAlertmanager(t testing.TB, config string) *Alertmanager {
	t.Helper()
	bin := lookPath(t, alertmanagerBinary)
	dir := t.TempDir()
	configPath := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatalf("promtest: write Alertmanager config: %v", err)
	}
	addr := freeAddr(t)
	proc := startProcess(t, "alertmanager", bin,
		"--config.file="+configPath,
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=", // no gossip: a single, private instance
		"--log.level=warn",
	)
	am := &Alertmanager{URL: "http://" + addr, proc: proc}
	took := proc.waitReady(t, am.URL+"/-/ready", 60*time.Second)
	t.Logf("promtest: alertmanager ready at %s in %s", am.URL, took.Round(time.Millisecond))
	return am
}

// AMAlert is an alert as Alertmanager's /api/v2/alerts reports it.
type AMAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	UpdatedAt   time.Time         `json:"updatedAt"`
	Fingerprint string            `json:"fingerprint"`
	Status      struct {
		State       string   `json:"state"` // unprocessed, active or suppressed
		SilencedBy  []string `json:"silencedBy"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

// AMAlerts returns the alerts Alertmanager holds that match every label
// matcher in filter (Alertmanager matcher syntax, e.g. `alertname="X"`),
// failing the test on an API error. Resolved alerts are not returned.
func (am *Alertmanager) AMAlerts(t testing.TB, filter ...string) []AMAlert {
	t.Helper()
	alerts, err := am.TryAMAlerts(filter...)
	if err != nil {
		t.Fatal(err)
	}
	return alerts
}

// TryAMAlerts is AMAlerts returning the error.
func (am *Alertmanager) TryAMAlerts(filter ...string) ([]AMAlert, error) {
	params := url.Values{}
	for _, f := range filter {
		params.Add("filter", f)
	}
	u := am.URL + "/api/v2/alerts"
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(u)
	if err != nil {
		return nil, fmt.Errorf("alertmanager GET /api/v2/alerts: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("alertmanager GET /api/v2/alerts: read body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("alertmanager GET /api/v2/alerts %v: %s: %s", filter, resp.Status, body)
	}
	var alerts []AMAlert
	if err := json.Unmarshal(body, &alerts); err != nil {
		return nil, fmt.Errorf("alertmanager: decode alerts %q: %w", body, err)
	}
	return alerts, nil
}
