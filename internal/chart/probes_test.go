package chart

import (
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// probedValues are values with a cluster of each system, a module of each,
// and probes.targets of kind: clusters of the config by name (a Kafka one
// and a Sentinel one), and a Kafka, a Redis and a Sentinel cluster the
// config does not list.
func probedValues(kind string) map[string]any {
	return map[string]any{
		"config": map[string]any{
			"kafka":         []any{map[string]any{"name": "orders", "bootstrap_servers": []any{"kafka-0.kafka:9092"}}},
			"redis":         []any{map[string]any{"name": "sessions", "addrs": []any{"redis-0.redis:6379"}}},
			"kafka_modules": []any{map[string]any{"name": "sasl", "allow_any_target": true}},
			"redis_modules": []any{map[string]any{"name": "acl", "allow_any_target": true}},
			"sentinel":      []any{map[string]any{"name": "cache", "sentinels": []any{"sentinel-0.cache:26379"}}},
			"sentinel_modules": []any{map[string]any{"name": "sentinels", "allowed_targets": []any{"*.queues:26379"},
				"node_connection": map[string]any{"password": map[string]any{"secretKeyRef": map[string]any{"name": "queues-auth", "key": "password"}}}}},
		},
		"probes": map[string]any{
			"kind":   kind,
			"labels": map[string]any{"release": "kube-prometheus-stack"},
			"targets": []any{
				map[string]any{"name": "orders"},
				map[string]any{"name": "Payments", "address": "kafka-0.payments:9092,kafka-1.payments:9092", "module": "sasl", "labels": map[string]any{"team": "payments"}},
				map[string]any{"name": "carts", "address": "redis-0.carts:6379", "module": "acl"},
				map[string]any{"name": "cache"},
				map[string]any{"name": "queues", "address": "sentinel-0.queues:26379,sentinel-1.queues:26379", "module": "sentinels"},
			},
		},
	}
}

func renderValues(t *testing.T, vals map[string]any) (*Rendered, error) {
	t.Helper()
	ch, err := Load(filepath.Join(lab.RepoRoot(t), Path))
	if err != nil {
		t.Fatal(err)
	}
	return Render(ch, "fe", "monitoring", vals)
}

// TestChartProbeTargets: probes.targets renders one object per cluster,
// checked strictly against the Prometheus Operator's types, each scraping
// the exporter's Service at /probe with the cluster's target= (and module=)
// and the instance the multi-target pattern gives it; the ServiceMonitor
// then keeps only the exporter's own families from /metrics.
func TestChartProbeTargets(t *testing.T) {
	const exporter = "fe-failover-exporter.monitoring.svc:9877"
	t.Run("ScrapeConfig", func(t *testing.T) {
		out, err := renderValues(t, probedValues("ScrapeConfig"))
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeAll(t, out)
		got := map[string]*monitoringv1alpha1.ScrapeConfig{}
		var monitor *monitoringv1.ServiceMonitor
		for _, o := range objs {
			switch v := o.obj.(type) {
			case *monitoringv1alpha1.ScrapeConfig:
				got[o.name] = v
			case *monitoringv1.ServiceMonitor:
				monitor = v
			}
		}
		want := map[string]struct {
			params   map[string][]string
			instance string
			labels   map[string]string
		}{
			"fe-failover-exporter-orders":   {map[string][]string{"target": {"orders"}}, "orders", nil},
			"fe-failover-exporter-payments": {map[string][]string{"target": {"kafka-0.payments:9092,kafka-1.payments:9092"}, "module": {"sasl"}}, "Payments", map[string]string{"team": "payments"}},
			"fe-failover-exporter-carts":    {map[string][]string{"target": {"redis-0.carts:6379"}, "module": {"acl"}}, "carts", nil},
			"fe-failover-exporter-cache":    {map[string][]string{"target": {"cache"}}, "cache", nil},
			"fe-failover-exporter-queues":   {map[string][]string{"target": {"sentinel-0.queues:26379,sentinel-1.queues:26379"}, "module": {"sentinels"}}, "queues", nil},
		}
		if len(got) != len(want) {
			t.Fatalf("ScrapeConfigs %v, want %d", slices.Collect(maps.Keys(got)), len(want))
		}
		for name, w := range want {
			sc := got[name]
			if sc == nil {
				t.Errorf("no ScrapeConfig %s", name)
				continue
			}
			if sc.Labels["release"] != "kube-prometheus-stack" {
				t.Errorf("%s: labels %v lack probes.labels", name, sc.Labels)
			}
			if sc.Spec.MetricsPath == nil || *sc.Spec.MetricsPath != "/probe" || !reflect.DeepEqual(sc.Spec.Params, w.params) {
				t.Errorf("%s: path %v, params %v; want /probe, %v", name, sc.Spec.MetricsPath, sc.Spec.Params, w.params)
			}
			if len(sc.Spec.StaticConfigs) != 1 || len(sc.Spec.StaticConfigs[0].Targets) != 1 || string(sc.Spec.StaticConfigs[0].Targets[0]) != exporter {
				t.Errorf("%s: static configs %+v, want the exporter's Service %s", name, sc.Spec.StaticConfigs, exporter)
				continue
			}
			labels := sc.Spec.StaticConfigs[0].Labels
			if labels["instance"] != w.instance {
				t.Errorf("%s: instance %q, want %q", name, labels["instance"], w.instance)
			}
			for k, v := range w.labels {
				if labels[k] != v {
					t.Errorf("%s: label %s = %q, want %q", name, k, labels[k], v)
				}
			}
		}
		if monitor == nil || len(monitor.Spec.Endpoints) != 1 {
			t.Fatalf("no ServiceMonitor with one endpoint: %+v", monitor)
		}
		keep := monitor.Spec.Endpoints[0].MetricRelabelConfigs
		if len(keep) == 0 || keep[0].Action != "keep" || keep[0].Regex != "(go|process|promhttp|failover_exporter)_.*" {
			t.Errorf("the ServiceMonitor of a probed exporter does not keep only its own families: %+v", keep)
		}
	})
	t.Run("Probe", func(t *testing.T) {
		out, err := renderValues(t, probedValues("Probe"))
		if err != nil {
			t.Fatal(err)
		}
		probes := map[string]*monitoringv1.Probe{}
		for _, o := range decodeAll(t, out) {
			if p, ok := o.obj.(*monitoringv1.Probe); ok {
				probes[o.name] = p
			}
		}
		p := probes["fe-failover-exporter-payments"]
		if len(probes) != 5 || p == nil {
			t.Fatalf("Probes %v, want 5 with fe-failover-exporter-payments", slices.Collect(maps.Keys(probes)))
		}
		if p.Spec.ProberSpec.URL != exporter || p.Spec.ProberSpec.Path != "/probe" || p.Spec.Module != "sasl" ||
			p.Spec.Targets.StaticConfig == nil || !reflect.DeepEqual(p.Spec.Targets.StaticConfig.Targets, []string{"kafka-0.payments:9092,kafka-1.payments:9092"}) {
			t.Errorf("Probe payments: %+v", p.Spec)
		}
		if o := probes["fe-failover-exporter-orders"]; o.Spec.Module != "" || !reflect.DeepEqual(o.Spec.Targets.StaticConfig.Targets, []string{"orders"}) {
			t.Errorf("Probe orders: module %q, targets %v; want none, [orders]", o.Spec.Module, o.Spec.Targets.StaticConfig.Targets)
		}
	})

	// What the chart refuses, naming the target.
	for _, c := range []struct {
		name   string
		change func(v map[string]any)
		says   string
	}{
		{"a name the config does not list", func(v map[string]any) { targets(v)[0] = map[string]any{"name": "ordres"} }, `probes.targets[0]: "ordres" is not the name of a cluster of config.kafka, config.redis or config.sentinel (orders, sessions, cache)`},
		{"an address without a module", func(v map[string]any) { delete(targets(v)[1].(map[string]any), "module") }, "probes.targets[1] (Payments): a discovered target needs both address"},
		{"a module neither list has", func(v map[string]any) { targets(v)[1].(map[string]any)["module"] = "scram" }, `module "scram" is in none of config.kafka_modules, config.redis_modules and config.sentinel_modules`},
		{"a module both lists have", func(v map[string]any) {
			cfg := v["config"].(map[string]any)
			cfg["redis_modules"] = []any{map[string]any{"name": "sasl", "allow_any_target": true}, map[string]any{"name": "acl", "allow_any_target": true}}
		}, `both config.kafka_modules and config.redis_modules have a module "sasl"`},
		{"a module three lists have", func(v map[string]any) {
			cfg := v["config"].(map[string]any)
			cfg["redis_modules"] = []any{map[string]any{"name": "sasl", "allow_any_target": true}, map[string]any{"name": "acl", "allow_any_target": true}}
			cfg["sentinel_modules"] = []any{map[string]any{"name": "sasl", "allow_any_target": true}, map[string]any{"name": "sentinels", "allow_any_target": true}}
		}, `config.kafka_modules, config.redis_modules and config.sentinel_modules have a module "sasl": set system: kafka, system: redis or system: sentinel`},
		{"a system whose list has not the module", func(v map[string]any) { targets(v)[4].(map[string]any)["system"] = "redis" }, `config.redis_modules has no module "sentinels"`},
		{"two names, one object", func(v map[string]any) { targets(v)[2] = map[string]any{"name": "ORDERS"} }, "which an earlier target makes too"},
		{"a Probe with system", func(v map[string]any) {
			v["probes"].(map[string]any)["kind"] = "Probe"
			targets(v)[1].(map[string]any)["system"] = "kafka"
		}, "a Probe cannot send system="},
		{"targets in sidecar mode", func(v map[string]any) {
			v["mode"] = "sidecar"
			v["sidecar"] = map[string]any{"podSelector": map[string]any{"app": "kafka"}}
		}, "probes are for mode: deployment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			vals := probedValues("ScrapeConfig")
			c.change(vals)
			_, err := renderValues(t, vals)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Errorf("render: %v, want an error saying %q", err, c.says)
			}
		})
	}
}

func targets(v map[string]any) []any { return v["probes"].(map[string]any)["targets"].([]any) }
