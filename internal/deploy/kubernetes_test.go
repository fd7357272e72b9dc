package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

var update = flag.Bool("update", false, "regenerate examples/kubernetes/prometheusrule.yaml from prometheus/alerts.yml")

type manifest struct {
	file string
	doc  map[string]any
}

func (m manifest) kind() string { return getString(m.doc, "kind") }
func (m manifest) name() string { return getString(m.doc, "metadata", "name") }
func (m manifest) String() string {
	return fmt.Sprintf("%s %s/%s", filepath.Base(m.file), m.kind(), m.name())
}

func loadManifests(t *testing.T) []manifest {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(lab.RepoRoot(t), "examples", "kubernetes", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no manifests in examples/kubernetes/")
	}
	var out []manifest
	for _, f := range files {
		for _, doc := range decodeYAML(t, f) {
			out = append(out, manifest{f, doc})
		}
	}
	return out
}

// podSpec is the pod template of a workload, or nil.
func podSpec(m manifest) map[string]any {
	switch m.kind() {
	case "Deployment", "StatefulSet", "DaemonSet", "Job":
		spec, _ := get(m.doc, "spec", "template", "spec").(map[string]any)
		return spec
	}
	return nil
}

func podLabels(m manifest) map[string]any {
	l, _ := get(m.doc, "spec", "template", "metadata", "labels").(map[string]any)
	return l
}

func containers(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, key := range []string{"initContainers", "containers"} {
		for _, c := range getList(spec, key) {
			if cm, ok := c.(map[string]any); ok {
				out = append(out, cm)
			}
		}
	}
	return out
}

func isExporter(c map[string]any) bool {
	return strings.Contains(getString(c, "image"), "failover_exporter")
}

func TestKubernetesManifestsCoverDeployments(t *testing.T) {
	kinds := map[string]int{}
	sidecars := map[string]bool{}
	for _, m := range loadManifests(t) {
		kinds[m.kind()]++
		if spec := podSpec(m); spec != nil && len(getList(spec, "containers")) > 1 {
			for _, c := range containers(spec) {
				if isExporter(c) {
					sidecars[m.name()] = true
				}
			}
		}
	}
	for _, want := range []string{"StatefulSet", "Deployment", "Service", "PrometheusRule"} {
		if kinds[want] == 0 {
			t.Errorf("no %s among the manifests", want)
		}
	}
	if kinds["ServiceMonitor"]+kinds["PodMonitor"] == 0 {
		t.Error("no ServiceMonitor or PodMonitor")
	}
	for _, want := range []string{"redis-cluster", "kafka"} {
		if !sidecars[want] {
			t.Errorf("StatefulSet %s has no exporter sidecar", want)
		}
	}
}

func TestKubernetesImagesPinned(t *testing.T) {
	for _, m := range loadManifests(t) {
		for _, c := range containers(podSpec(m)) {
			if img := getString(c, "image"); !imagePinned(img) {
				t.Errorf("%s container %s: image %q is not pinned to an explicit tag", m, getString(c, "name"), img)
			}
		}
	}
}

var (
	secretishName = regexp.MustCompile(`(?i)pass|secret|token|credential|auth`)
	secretArg     = regexp.MustCompile(`(?i)(^|\s)(--requirepass|--masterauth|-a|--pass|--password|--sasl\.password)(\s|=|$)`)
)

// Secrets reach containers as files: no secretKeyRef/secretRef env, no
// password-like env literals or arguments, and every password in an
// exporter config is {file: PATH} inside a mounted Secret volume.
func TestKubernetesSecretsMountedAsFiles(t *testing.T) {
	manifests := loadManifests(t)
	configMaps := map[string]map[string]any{}
	secrets := map[string]bool{}
	for _, m := range manifests {
		switch m.kind() {
		case "ConfigMap":
			data, _ := get(m.doc, "data").(map[string]any)
			configMaps[m.name()] = data
		case "Secret":
			secrets[m.name()] = false
		}
	}
	for _, m := range manifests {
		spec := podSpec(m)
		if spec == nil {
			continue
		}
		volumes := map[string]map[string]any{}
		for _, v := range getList(spec, "volumes") {
			volumes[getString(v, "name")] = v.(map[string]any)
			if s := getString(v, "secret", "secretName"); s != "" {
				secrets[s] = true
			}
		}
		for _, c := range containers(spec) {
			where := fmt.Sprintf("%s container %s", m, getString(c, "name"))
			for _, e := range getList(c, "env") {
				if get(e, "valueFrom", "secretKeyRef") != nil {
					t.Errorf("%s: env %s comes from a Secret; mount it as a file", where, getString(e, "name"))
				}
				if secretishName.MatchString(getString(e, "name")) && get(e, "value") != nil {
					t.Errorf("%s: env %s holds a literal secret", where, getString(e, "name"))
				}
			}
			for _, e := range getList(c, "envFrom") {
				if get(e, "secretRef") != nil {
					t.Errorf("%s: envFrom a Secret; mount it as a file", where)
				}
			}
			for _, key := range []string{"command", "args"} {
				for _, a := range strings1(getList(c, key)) {
					if secretArg.MatchString(a) {
						t.Errorf("%s: %s passes a secret on the command line: %q", where, key, a)
					}
				}
			}
			if isExporter(c) {
				checkExporterSecrets(t, where, c, volumes, configMaps)
			}
		}
	}
	for name, mounted := range secrets {
		if !mounted {
			t.Errorf("Secret %s is defined but never mounted as a volume", name)
		}
	}
}

// checkExporterSecrets reads the exporter's config file (from the ConfigMap
// mounted at --config.file) and checks each password is a file under a
// mounted Secret volume.
func checkExporterSecrets(t *testing.T, where string, c map[string]any, volumes, configMaps map[string]map[string]any) {
	t.Helper()
	configFile := flagValue(c, "--config.file")
	if configFile == "" {
		t.Errorf("%s: no --config.file", where)
		return
	}
	var config string
	secretDirs := map[string]bool{}
	for _, vm := range getList(c, "volumeMounts") {
		vol := volumes[getString(vm, "name")]
		mountPath, subPath := getString(vm, "mountPath"), getString(vm, "subPath")
		if cm := getString(vol, "configMap", "name"); cm != "" {
			for key, val := range configMaps[cm] {
				if (subPath == key && mountPath == configFile) || (subPath == "" && filepath.Join(mountPath, key) == configFile) {
					config, _ = val.(string)
				}
			}
		}
		if getString(vol, "secret", "secretName") != "" {
			secretDirs[mountPath] = true
		}
	}
	if config == "" {
		t.Errorf("%s: --config.file %s is not a mounted ConfigMap key", where, configFile)
		return
	}
	var parsed map[string]any
	if err := yaml.Unmarshal([]byte(config), &parsed); err != nil {
		t.Errorf("%s: exporter config: %v", where, err)
		return
	}
	passwords := 0
	for _, system := range []string{"kafka", "redis"} {
		for _, cluster := range getList(parsed, system) {
			for _, pw := range []any{get(cluster, "password"), get(cluster, "sasl", "password")} {
				if pw == nil {
					continue
				}
				passwords++
				file := getString(pw, "file")
				if file == "" {
					t.Errorf("%s: %s password %v is not {file: PATH}", where, system, pw)
					continue
				}
				if !secretDirs[filepath.Dir(file)] {
					t.Errorf("%s: password file %s is not in a mounted Secret volume (%v)", where, file, secretDirs)
				}
			}
		}
	}
	if passwords == 0 {
		t.Errorf("%s: the exporter config uses no password; the example should show how secrets are mounted", where)
	}
}

func flagValue(c map[string]any, name string) string {
	for _, a := range strings1(getList(c, "args")) {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// The exporter's --web.listen-address port is a named containerPort, and
// every Service, PodMonitor and ServiceMonitor in front of it uses that port.
func TestKubernetesExporterPortsMatch(t *testing.T) {
	manifests := loadManifests(t)
	for _, m := range manifests {
		spec := podSpec(m)
		for _, c := range containers(spec) {
			if !isExporter(c) {
				continue
			}
			where := fmt.Sprintf("%s container %s", m, getString(c, "name"))
			addr := flagValue(c, "--web.listen-address")
			_, portStr, ok := strings.Cut(addr, ":")
			port, err := strconv.Atoi(portStr)
			if !ok || err != nil {
				t.Errorf("%s: --web.listen-address %q has no port", where, addr)
				continue
			}
			portName := ""
			for _, p := range getList(c, "ports") {
				if get(p, "containerPort") == port {
					portName = getString(p, "name")
				}
			}
			if portName == "" {
				t.Errorf("%s: no named containerPort %d for --web.listen-address", where, port)
				continue
			}
			labels := podLabels(m)
			monitored := false
			for _, other := range manifests {
				switch other.kind() {
				case "Service":
					if !selects(get(other.doc, "spec", "selector"), labels) {
						continue
					}
					for _, sp := range getList(other.doc, "spec", "ports") {
						target := get(sp, "targetPort")
						if target == nil {
							target = get(sp, "port")
						}
						if target != portName && target != port && getString(sp, "name") == "metrics" {
							t.Errorf("%s: metrics port targets %v, the exporter listens on %s/%d", other, target, portName, port)
						}
					}
					for _, sm := range manifests {
						if sm.kind() == "ServiceMonitor" && selects(get(sm.doc, "spec", "selector", "matchLabels"), getMap(other.doc, "metadata", "labels")) {
							for _, ep := range getList(sm.doc, "spec", "endpoints") {
								if !servicePortNamed(other, getString(ep, "port"), portName, port) {
									t.Errorf("%s: endpoint port %q is not %s's exporter port", sm, getString(ep, "port"), other)
								}
								monitored = true
							}
						}
					}
				case "PodMonitor":
					if !selects(get(other.doc, "spec", "selector", "matchLabels"), labels) {
						continue
					}
					for _, ep := range getList(other.doc, "spec", "podMetricsEndpoints") {
						if getString(ep, "port") != portName {
							t.Errorf("%s: port %q, the exporter's containerPort is %q", other, getString(ep, "port"), portName)
						}
						monitored = true
					}
				}
			}
			if !monitored {
				t.Errorf("%s: no PodMonitor or ServiceMonitor scrapes it", where)
			}
		}
	}
}

func getMap(v any, keys ...string) map[string]any {
	m, _ := get(v, keys...).(map[string]any)
	return m
}

// selects reports whether every selector label is among labels.
func selects(selector any, labels map[string]any) bool {
	sel, _ := selector.(map[string]any)
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func servicePortNamed(svc manifest, name, targetName string, targetPort int) bool {
	for _, sp := range getList(svc.doc, "spec", "ports") {
		if getString(sp, "name") == name {
			tp := get(sp, "targetPort")
			return tp == targetName || tp == targetPort
		}
	}
	return false
}

// The PrometheusRule carries exactly the shipped rules. With -update it is
// regenerated from prometheus/alerts.yml.
func TestPrometheusRuleMatchesAlerts(t *testing.T) {
	root := lab.RepoRoot(t)
	alertsPath := filepath.Join(root, "prometheus", "alerts.yml")
	rulePath := filepath.Join(root, "examples", "kubernetes", "prometheusrule.yaml")
	if *update {
		writePrometheusRule(t, alertsPath, rulePath)
	}
	alerts := decodeYAML(t, alertsPath)
	docs := decodeYAML(t, rulePath)
	if len(docs) != 1 || getString(docs[0], "kind") != "PrometheusRule" {
		t.Fatalf("%s: want one PrometheusRule", rulePath)
	}
	want, got := get(alerts[0], "groups"), get(docs[0], "spec", "groups")
	if !reflect.DeepEqual(want, got) {
		t.Errorf("the PrometheusRule's groups differ from prometheus/alerts.yml; run\n  go test ./internal/deploy -run TestPrometheusRuleMatchesAlerts -update")
	}
	if n := len(getList(alerts[0], "groups")); n == 0 {
		t.Error("prometheus/alerts.yml has no groups")
	}
}

// writePrometheusRule keeps the header of the existing file (everything
// before the groups) and indents the groups of alerts.yml under spec.
func writePrometheusRule(t *testing.T, alertsPath, rulePath string) {
	t.Helper()
	old := readFile(t, rulePath)
	i := bytes.Index(old, []byte("\n  groups:\n"))
	if i < 0 {
		t.Fatalf("%s: no '  groups:' line to regenerate from", rulePath)
	}
	alerts := readFile(t, alertsPath)
	j := bytes.Index(alerts, []byte("\ngroups:"))
	if j < 0 {
		t.Fatalf("%s: no top-level groups", alertsPath)
	}
	var b bytes.Buffer
	b.Write(old[:i+1])
	for _, line := range strings.SplitAfter(string(alerts[j+1:]), "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	if err := os.WriteFile(rulePath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
