package config

import (
	"reflect"
	"strings"
	"testing"
)

// A module is a cluster entry without its address: checked as a cluster
// is (every key, nested durations and secrets included), its address
// refused by name, and At gives the cluster a probe's target asks for.
func TestModules(t *testing.T) {
	cfg, err := Parse([]byte(`kafka_modules:
  - name: sasl
    refresh_interval: 2s
    sasl: {mechanism: PLAIN, username: u, password: {env: HOME}}
    allowed_targets: [127.0.0.0/8:9092-9093]
redis_modules:
  - name: acl
    username: monitor
    allowed_targets: [127.0.0.1:6379]
`))
	if err != nil {
		t.Fatal(err)
	}
	k, ok := ModuleAt[KafkaCluster](cfg, "kafka", "sasl", "127.0.0.1:9092,127.0.0.1:9093", []string{"127.0.0.1:9092", "127.0.0.1:9093"})
	if !ok {
		t.Fatal("no kafka module sasl")
	}
	if k.Name != "127.0.0.1:9092,127.0.0.1:9093" || !reflect.DeepEqual(k.BootstrapServers, []string{"127.0.0.1:9092", "127.0.0.1:9093"}) ||
		k.RefreshInterval.String() != "2s" || k.SASL.Username != "u" || k.Canary.Enabled || k.RequestTimeout != DefaultRequestTimeout {
		t.Errorf("the module's cluster: %+v", k)
	}
	if r, ok := ModuleAt[RedisCluster](cfg, "redis", "acl", "127.0.0.1:6379", []string{"127.0.0.1:6379"}); !ok || r.Username != "monitor" {
		t.Errorf("redis module acl: %+v, %v", r, ok)
	}
	if _, ok := ModuleAt[KafkaCluster](cfg, "kafka", "acl", "x", []string{"127.0.0.1:1"}); ok {
		t.Error("a Redis module's name found among the Kafka modules")
	}

	for _, c := range []struct{ file, says string }{
		{"kafka_modules:\n  - {name: m, bootstrap_servers: [k:9092], allow_any_target: true}\n", `kafka module 1 ("m"): bootstrap_servers is set: a module holds everything but the address`},
		{"redis_modules:\n  - {name: m, addrs: [r:6379], allow_any_target: true}\n", `redis module 1 ("m"): addrs is set`},
		{"kafka_modules:\n  - {name: m, canary: {interval: 5}}\n", "kafka_modules[0].canary.interval: 5 is not a duration"},
		{"kafka_modules:\n  - {name: m, sasl: {mechanism: PLAIN, username: u, password: hunter2}}\n", "secrets are not accepted inline"},
		{"kafka_modules:\n  - {name: m, allow_any_target: true}\n  - {name: m, allow_any_target: true}\n", `kafka module "m" is defined twice`},
	} {
		_, err := Parse([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Parse(%q): %v, want an error saying %q", c.file, err, c.says)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error echoes the secret: %v", err)
		}
	}
}
