package settings

import (
	"fmt"
	"strings"
	"testing"

	"github.com/failover-exporter/failover_exporter/internal/configtest"
)

// TestBadInputGetsOneClearMessage: each bad setting is refused with one
// message that names the key and says what to write instead, and no
// message talks about a setting the user did not write, or repeats a
// secret.
func TestBadInputGetsOneClearMessage(t *testing.T) {
	entry := func(keys string) string {
		return "sentinel:\n  - name: main\n    sentinels: [127.0.0.1:26379]\n" + keys
	}
	const prefix = `sentinel cluster 1 ("main"): `
	configtest.Refuses(t, []configtest.Refusal{
		configtest.R("no sentinels", "sentinel:\n  - name: main\n", []string{prefix + "sentinels is empty: list at least one sentinel's HOST:PORT"}, nil),
		configtest.R("sentinel without port", "sentinel:\n  - name: main\n    sentinels: [127.0.0.1]\n", []string{prefix + `sentinels: "127.0.0.1": want HOST:PORT`}, nil),
		configtest.R("sentinel url with password", "sentinel:\n  - name: main\n    sentinels: [\"redis://:hunter2@h:26379\"]\n",
			[]string{prefix + `sentinels: "redis://REDACTED@h:26379": give HOST:PORT without a scheme (redis://)`}, []string{"hunter2"}),
		configtest.R("empty master name", entry("    masters: [\"\"]\n"), []string{prefix + "masters[0] is empty: give the master's name as the sentinels monitor it"}, nil),
		configtest.R("master name with a space", entry("    masters: [a, \"my master\"]\n"), []string{prefix + `masters[1] "my master": a master name must be printable ASCII without spaces, at most 256 bytes`}, nil),
		configtest.R("master name not ascii", entry("    masters: [café]\n"), []string{prefix + `masters[0] "café": a master name must be printable ASCII without spaces, at most 256 bytes`}, nil),
		configtest.R("master name too long", entry("    masters: ["+strings.Repeat("m", 257)+"]\n"), []string{prefix + `masters[0] "` + strings.Repeat("m", 257) + `": a master name must be printable ASCII without spaces, at most 256 bytes`}, nil),
		configtest.R("master listed twice", entry("    masters: [m, n, m]\n"), []string{prefix + `masters[2] "m" is listed twice`}, nil),
		configtest.R("refresh timeout above interval", entry("    refresh_interval: 5s\n    refresh_timeout: 6s\n"), []string{prefix + "refresh_timeout 6s must be positive and at most refresh_interval 5s"}, nil),
		configtest.R("command timeout without unit", entry("    command_timeout: 2\n"), []string{"line 4: sentinel[0].command_timeout: 2 is not a duration; write it with a unit, such as 2s"}, nil),
		configtest.R("backdate limit too long", entry("    backdate_limit: 1000h\n"), []string{prefix + "backdate_limit 1000h0m0s must be positive and at most"}, nil),
		configtest.R("inline password", entry("    node_connection:\n      password: hunter2\n"), []string{"line 5: sentinel[0].node_connection.password: secrets are not accepted inline"}, []string{"hunter2"}),
		configtest.R("password file missing", entry("    sentinel_connection:\n      password: {file: /nonexistent/password}\n"), []string{prefix + "sentinel_connection.password: secret file: stat /nonexistent/password: no such file or directory"}, nil),
		configtest.R("sentinels not a list", "sentinel:\n  - sentinels: 127.0.0.1:26379\n", []string{`line 2: sentinel[0].sentinels: "127.0.0.1:26379" is not a list; write it as a list, such as [host:26379]`}, nil),
		configtest.R("tls settings while disabled", entry("    node_connection:\n      tls: {ca_file: /x}\n"), []string{prefix + "node_connection: tls settings given but tls.enabled is false"}, nil),
		configtest.R("cert without key", entry("    sentinel_connection:\n      tls: {enabled: true, cert_file: /x}\n"), []string{prefix + "sentinel_connection: tls.cert_file and tls.key_file must be set together"}, nil),
		configtest.R("both connections wrong", entry("    sentinel_connection:\n      tls: {ca_file: /x}\n    node_connection:\n      tls: {ca_file: /x}\n"),
			[]string{prefix + "sentinel_connection: tls settings given but tls.enabled is false", "node_connection: tls settings given but tls.enabled is false"}, nil),
		configtest.R("negative caught-up bound", entry("    failure_budget: {caught_up_bytes: -1}\n"), []string{prefix + "failure_budget.caught_up_bytes -1 must not be negative"}, nil),
		configtest.R("zone key not an address", entry("    failure_budget:\n      zones: {\"10.0.0.1\": a}\n"), []string{prefix + `failure_budget.zones: "10.0.0.1": want HOST:PORT`}, nil),
		configtest.R("empty zone name", entry("    failure_budget:\n      zones: {\"10.0.0.1:6379\": \" \"}\n"), []string{prefix + `failure_budget.zones: "10.0.0.1:6379": the zone name is empty`}, nil),
		configtest.R("budget not a mapping", entry("    failure_budget: yes\n"), []string{`line 4: sentinel[0].failure_budget: "yes" is not a mapping of keys; write KEY: VALUE lines under it`}, nil),
		configtest.R("module keys in the file", entry("    allowed_targets: [10.0.0.0/8:26379]\n"), []string{prefix + "allowed_targets and allow_any_target are keys of a module (sentinel_modules:)"}, nil),
		configtest.R("canary key TTL too short", entry("    canary: {enabled: true, key_ttl: 1s}\n"), []string{prefix + "canary.key_ttl 1s is shorter than 1m0s, which a failover needs"}, nil),
		configtest.R("canary wait over half the interval", entry("    canary: {enabled: true, interval: 1s, wait: 800ms}\n"), []string{prefix + "canary.wait 800ms is more than half of canary.interval 1s"}, nil),
		configtest.R("name defined twice", entry("  - name: main\n    sentinels: [127.0.0.2:26379]\n"), []string{`sentinel cluster "main" is defined twice`}, nil),
	})
}

func TestTooManyZonesRefused(t *testing.T) {
	var zones strings.Builder
	for i := range MaxBudgetZones + 1 {
		fmt.Fprintf(&zones, "\"10.%d.%d.%d:6379\": z\n", i>>16, i>>8&255, i&255)
	}
	yaml := "sentinel:\n  - sentinels: [127.0.0.1:26379]\n    failure_budget:\n      zones:\n" + indent(zones.String(), "        ")
	configtest.RefusedSaying(t, yaml, "failure_budget.zones lists 10001 addresses, more than 10000")
}

func indent(s, by string) string {
	return by + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+by) + "\n"
}

// Unknown keys are refused wherever they are, naming the key.
func TestUnknownKeysRefused(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"entry", "sentinel:\n  - sentinels: [127.0.0.1:26379]\n    sentinal_connection: {}\n", "line 3: field sentinal_connection not found in type sentinel.Set"},
		{"connection", "sentinel:\n  - sentinels: [127.0.0.1:26379]\n    node_connection: {user: x}\n", "line 3: field user not found in type sentinel.Connection"},
		{"tls", "sentinel:\n  - sentinels: [127.0.0.1:26379]\n    node_connection: {tls: {enable: true}}\n", "field enable not found"},
		{"failure budget", "sentinel:\n  - sentinels: [127.0.0.1:26379]\n    failure_budget: {headroom: true}\n", "line 3: field headroom not found in type sentinel.Budget"},
		{"secret", "sentinel:\n  - sentinels: [127.0.0.1:26379]\n    node_connection: {password: {path: /x}}\n", "sentinel[0].node_connection.password"},
		{"canary", "sentinel:\n  - sentinels: [127.0.0.1:26379]\n    canary: {enabled: true, acks: all}\n", "line 3: field acks not found in type sentinel.Canary"},
		{"module", "sentinel_modules:\n  - name: m\n    allow_any_target: true\n    mastrs: [a]\n", "line 4: field mastrs not found in type sentinel.Set"},
	} {
		t.Run(tc.name, func(t *testing.T) { configtest.RefusedSaying(t, tc.yaml, tc.want) })
	}
}
