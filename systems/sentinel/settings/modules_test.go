package settings

import (
	"reflect"
	"testing"

	"github.com/failover-exporter/failover_exporter/config"
	"github.com/failover-exporter/failover_exporter/internal/configtest"
)

func TestModuleParsesAndTakesTheTargetsSentinels(t *testing.T) {
	dir := t.TempDir()
	password := writeSecret(t, dir, "node-password", "hunter2")
	t.Setenv("SENTINEL_PASSWORD", "hunter3")
	cfg, err := config.Parse([]byte(`
sentinel_modules:
  - name: acl
    masters: [mymaster]
    sentinel_connection: {password: {env: SENTINEL_PASSWORD}}
    node_connection: {username: exporter, password: {file: ` + password + `}}
    allowed_targets: [10.0.0.0/8:26379]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(Entries(cfg)) != 0 {
		t.Errorf("a module is not an entry of the file: %+v", Entries(cfg))
	}
	s, ok := config.ModuleAt[Set](cfg, Key, "acl", "prod", []string{"10.1.2.3:26379"})
	if !ok {
		t.Fatal("module acl not found")
	}
	if s.Name != "prod" || !reflect.DeepEqual(s.Sentinels, []string{"10.1.2.3:26379"}) || !s.MasterWatched("mymaster") || s.CommandTimeout != DefaultCommandTimeout {
		t.Errorf("module at the target: %+v", s)
	}
	if err := s.CheckTarget(); err != nil {
		t.Errorf("allowed target refused: %v", err)
	}
	if err := s.At("elsewhere", []string{"192.168.1.1:26379"}).CheckTarget(); err == nil {
		t.Error("a target outside allowed_targets was accepted")
	}
	if _, ok := config.ModuleAt[Set](cfg, Key, "other", "prod", []string{"10.1.2.3:26379"}); ok {
		t.Error("an unknown module was found")
	}
}

// A module lists the secrets of both connections, so that config refuses
// to let them go to any host a /probe request names.
func TestModuleCredentialsCoverBothConnections(t *testing.T) {
	s := Set{
		SentinelConnection: Connection{Username: "monitor", Password: config.Secret{Env: "X"}},
		NodeConnection: Connection{Password: config.Secret{File: "/p"},
			TLS: config.TLS{Enabled: true, CertFile: "/c", KeyFile: "/k"}},
	}
	want := []string{"sentinel_connection.username", "sentinel_connection.password",
		"node_connection.password", "node_connection.tls.cert_file", "node_connection.tls.key_file"}
	if got := s.credentials(); !reflect.DeepEqual(got, want) {
		t.Errorf("credentials %q, want %q", got, want)
	}
	if got := (Set{}).credentials(); len(got) != 0 {
		t.Errorf("no connection settings, credentials %q", got)
	}
}

func TestModuleRefusals(t *testing.T) {
	module := func(keys string) string { return "sentinel_modules:\n  - name: m\n" + keys }
	const prefix = `sentinel module 1 ("m"): `
	configtest.Refuses(t, []configtest.Refusal{
		configtest.R("sentinels given", module("    sentinels: [127.0.0.1:26379]\n    allow_any_target: true\n"),
			[]string{prefix + "sentinels is set: a module holds everything but the address, which each /probe request's target= gives"}, nil),
		configtest.R("node credentials and no allowlist", module("    node_connection: {username: u, password: {env: HOME}}\n"),
			[]string{prefix + "the module carries credentials (node_connection.username, node_connection.password) and has no allowed_targets"}, nil),
		configtest.R("any target with sentinel credentials", module("    sentinel_connection: {password: {env: HOME}}\n    allow_any_target: true\n"),
			[]string{prefix + "allow_any_target: true is refused for a module that carries credentials (sentinel_connection.password)"}, nil),
		configtest.R("node server name", module("    node_connection: {tls: {enabled: true, server_name: redis.internal}}\n    allow_any_target: true\n"),
			[]string{prefix + "tls.server_name is refused in a module"}, nil),
		configtest.R("skipped verification with credentials", module("    node_connection: {tls: {enabled: true, insecure_skip_verify: true}}\n    sentinel_connection: {username: u}\n    allowed_targets: [10.0.0.0/8:26379]\n"),
			[]string{prefix + "tls.insecure_skip_verify: true is refused in a module that carries credentials (sentinel_connection.username)"}, nil),
		configtest.R("module checked as an entry", module("    masters: [a, a]\n    allow_any_target: true\n"),
			[]string{prefix + `masters[1] "a" is listed twice`}, nil),
	})
	// A module without credentials may go anywhere.
	if _, err := config.Parse([]byte(module("    allow_any_target: true\n"))); err != nil {
		t.Errorf("a module without credentials, any target: %v", err)
	}
}

func TestModuleSecretNeverInAnError(t *testing.T) {
	yaml := "sentinel_modules:\n  - name: m\n    sentinel_connection: {password: hunter2}\n    allow_any_target: true\n"
	configtest.RefusedSaying(t, yaml, "sentinel_modules[0].sentinel_connection.password: secrets are not accepted inline", "hunter2")
}
