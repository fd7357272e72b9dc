package chart

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/failover-exporter/failover_exporter/internal/certs"
	"github.com/failover-exporter/failover_exporter/internal/chart/chartfiles"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

var update = flag.Bool("update", false, "regenerate the examples/kubernetes manifests made from the chart, and its values.schema.json")

// TestMain writes the chart's generated files/ (chartfiles), which Lint and
// Load read from the chart's directory, as `make chart-files` does.
func TestMain(m *testing.M) {
	if err := chartfiles.Write(filepath.Join("..", "..", Path)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// object is a rendered document decoded strictly into its Kubernetes or
// prometheus-operator type.
type object struct {
	doc  Doc
	kind string
	name string
	obj  any
}

// newObject gives the typed value for an apiVersion and kind; the chart
// renders nothing else.
func newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 PodTemplate":
		return &corev1.PodTemplate{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1 PodMonitor":
		return &monitoringv1.PodMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		return &monitoringv1.PrometheusRule{}
	case "monitoring.coreos.com/v1 Probe":
		return &monitoringv1.Probe{}
	case "monitoring.coreos.com/v1alpha1 ScrapeConfig":
		return &monitoringv1alpha1.ScrapeConfig{}
	}
	return nil
}

// decodeStrict decodes one YAML document into its type; a field the type
// does not have is an error.
func decodeStrict(doc Doc) (object, error) {
	js, err := sigsyaml.YAMLToJSON([]byte(doc.YAML))
	if err != nil {
		return object{}, fmt.Errorf("%s: %w", doc.Template, err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return object{}, fmt.Errorf("%s: %w", doc.Template, err)
	}
	obj := newObject(head.APIVersion, head.Kind)
	if obj == nil {
		return object{}, fmt.Errorf("%s: unexpected %s %s", doc.Template, head.APIVersion, head.Kind)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return object{}, fmt.Errorf("%s: %s %s: %w", doc.Template, head.Kind, head.Metadata.Name, err)
	}
	return object{doc: doc, kind: head.Kind, name: head.Metadata.Name, obj: obj}, nil
}

// ciValues are the values files of charts/failover-exporter/ci.
func ciValues(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(lab.RepoRoot(t), Path, "ci", "*-values.yaml"))
	if len(files) < 6 {
		t.Fatalf("%d values files in %s/ci, want at least 6 (minimal, both systems, TLS+SASL, canary, sidecar, mirrors with Connect)", len(files), Path)
	}
	connect := false
	for _, f := range files {
		var vals struct {
			Config struct {
				Mirrors []struct {
					Connect map[string]any `yaml:"connect"`
				} `yaml:"mirrors"`
			} `yaml:"config"`
		}
		if err := yaml.Unmarshal(readFile(t, f), &vals); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, m := range vals.Config.Mirrors {
			connect = connect || m.Connect != nil
		}
	}
	if !connect {
		t.Fatalf("no values file in %s/ci has a mirror flow with a connect block", Path)
	}
	return files
}

// render lints and renders the chart with a values file and decodes every
// object strictly.
func render(t *testing.T, release, valuesFile string) (*Rendered, []object) {
	t.Helper()
	dir := filepath.Join(lab.RepoRoot(t), Path)
	vals, err := ReadValues(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := Lint(dir, vals); err != nil {
		t.Fatalf("helm lint --strict -f %s:\n%v", filepath.Base(valuesFile), err)
	}
	ch, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(ch, release, "monitoring", vals)
	if err != nil {
		t.Fatal(err)
	}
	var objs []object
	for _, doc := range out.Docs {
		o, err := decodeStrict(doc)
		if err != nil {
			t.Error(err)
			continue
		}
		objs = append(objs, o)
	}
	return out, objs
}

func TestChartCIValues(t *testing.T) {
	root := lab.RepoRoot(t)
	for _, values := range ciValues(t) {
		name := strings.TrimSuffix(filepath.Base(values), "-values.yaml")
		t.Run(name, func(t *testing.T) {
			out, objs := render(t, "fe", values)
			var vals struct {
				Mode       string `yaml:"mode"`
				Dashboards struct {
					Enabled *bool `yaml:"enabled"`
				} `yaml:"dashboards"`
				Config map[string]any `yaml:"config"`
			}
			if err := yaml.Unmarshal(readFile(t, values), &vals); err != nil {
				t.Fatal(err)
			}
			sidecar := vals.Mode == "sidecar"
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.kind]++
			}
			if sidecar {
				if kinds["PodTemplate"] != 1 || kinds["Deployment"] != 0 || kinds["Service"] != 0 || kinds["PodMonitor"] != 1 {
					t.Errorf("sidecar mode rendered %v; want a PodTemplate and a PodMonitor, no Deployment or Service", kinds)
				}
			} else if kinds["Deployment"] != 1 || kinds["Service"] != 1 || kinds["ServiceMonitor"]+kinds["PodMonitor"] != 1 {
				t.Errorf("rendered %v; want a Deployment, a Service and a ServiceMonitor or PodMonitor", kinds)
			}
			if kinds["PrometheusRule"] != 1 {
				t.Errorf("%d PrometheusRules, want 1", kinds["PrometheusRule"])
			}
			checkConfigPassedThrough(t, objs, vals.Config)
			checkExporter(t, objs, sidecar, vals.Config)
			checkPrometheusRule(t, root, objs)
			if vals.Dashboards.Enabled == nil || *vals.Dashboards.Enabled {
				checkDashboards(t, root, objs)
			}
			checkNotes(t, out.Notes, sidecar)
		})
	}
}

// The chart refuses values it cannot turn into a config the exporter
// accepts, with a message naming the key.
func TestChartRefusesBadValues(t *testing.T) {
	dir := filepath.Join(lab.RepoRoot(t), Path)
	ch, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, values, want string
	}{
		{"no cluster", ``, "config lists no cluster"},
		{"secret from env", "config: {redis: [{addrs: [r:6379], password: {env: REDIS_PASSWORD}}]}", "config.redis[0].password: {env: ...} is refused"},
		{"ref without key", "config: {kafka: [{bootstrap_servers: [k:9092], sasl: {mechanism: PLAIN, username: u, password: {secretKeyRef: {name: s}}}}]}", "config.kafka[0].sasl.password: want {secretKeyRef"},
		{"sidecar without selector", "{mode: sidecar, config: {redis: [{addrs: [r:6379]}]}}", "set sidecar.podSelector"},
		{"bad mode", "{mode: daemonset, config: {redis: [{addrs: [r:6379]}]}}", `mode "daemonset"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := map[string]any{}
			if err := sigsyaml.Unmarshal([]byte(tc.values), &vals); err != nil {
				t.Fatal(err)
			}
			_, err := Render(ch, "fe", "default", vals)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// podSpec returns the pod spec holding the exporter: the Deployment's, or
// the sidecar PodTemplate's.
func podSpec(t *testing.T, objs []object) *corev1.PodSpec {
	t.Helper()
	for _, o := range objs {
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			return &v.Spec.Template.Spec
		case *corev1.PodTemplate:
			return &v.Template.Spec
		}
	}
	t.Fatal("no Deployment or PodTemplate")
	return nil
}

func configMaps(objs []object) map[string]*corev1.ConfigMap {
	out := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		if cm, ok := o.obj.(*corev1.ConfigMap); ok {
			out[cm.Name] = cm
		}
	}
	return out
}

// checkConfigPassedThrough: the rendered config file is values.config
// whole, every section and key, with only each secretKeyRef replaced by the
// path of the mounted key ({file: PATH} where a secret goes).
func checkConfigPassedThrough(t *testing.T, objs []object, values map[string]any) {
	t.Helper()
	want := map[string]any{}
	for section, entries := range values {
		list, _ := entries.([]any)
		if len(list) == 0 {
			continue
		}
		want[section] = list
	}
	for _, place := range configRefPlaces() {
		entries, _ := want[place.section].([]any)
		for _, entry := range entries {
			ref, ok := dig(entry, place.path...).(map[string]any)
			if !ok || ref["secretKeyRef"] == nil {
				continue
			}
			var path any = "/etc/failover_exporter/secrets/" + dig(ref, "secretKeyRef", "name").(string) + "/" + dig(ref, "secretKeyRef", "key").(string)
			if place.secret {
				path = map[string]any{"file": path}
			}
			setPath(entry.(map[string]any), place.path, path)
		}
	}
	var got map[string]any
	for _, cm := range configMaps(objs) {
		if data, ok := cm.Data["config.yml"]; ok {
			if err := yaml.Unmarshal([]byte(data), &got); err != nil {
				t.Fatalf("config.yml: %v", err)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the rendered config differs from values.config with each secretKeyRef made a path;\ngot:\n%s\nwant:\n%s", toYAML(t, got), toYAML(t, want))
	}
}

// systemSections maps the systems --config.check counts (NAME_clusters) to
// the config file's sections.
var systemSections = map[string]string{"kafka": "kafka", "redis": "redis", "mirror": "mirrors", "sentinel": "sentinel"}

var clustersCount = regexp.MustCompile(`"?([a-z_]+)_clusters"?[=:](\d+)`)

// checkExporter checks the exporter's container (security, probes, secrets
// as files) and runs the real binary with --config.check on its config,
// with its volumes laid out as the kubelet would under a temporary root:
// it must accept it and count as many clusters and flows as values.config
// lists.
func checkExporter(t *testing.T, objs []object, sidecar bool, values map[string]any) {
	t.Helper()
	spec := podSpec(t, objs)
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want the exporter alone", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext %+v: want non-root, read-only root filesystem, no privilege escalation", sc)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/-/healthy" {
		t.Errorf("liveness probe %+v, want GET /-/healthy", c.LivenessProbe)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/-/ready" {
		t.Errorf("readiness probe %+v, want GET /-/ready", c.ReadinessProbe)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" {
		t.Errorf("ports %+v, want one named metrics", c.Ports)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Error("no memory limit")
	}
	if len(c.Env) > 0 || len(c.EnvFrom) > 0 {
		t.Errorf("env %v envFrom %v: the exporter takes its secrets as files only", c.Env, c.EnvFrom)
	}

	// Lay out the volumes as the kubelet would, under root.
	root := t.TempDir()
	tlsFiles, err := certs.WriteSet(filepath.Join(t.TempDir(), "certs"))
	if err != nil {
		t.Fatal(err)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	cms := configMaps(objs)
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Errorf("volumeMount %s: no such volume", m.Name)
			continue
		}
		if !m.ReadOnly {
			t.Errorf("volumeMount %s is not read-only", m.Name)
		}
		dir := filepath.Join(root, m.MountPath)
		switch {
		case v.ConfigMap != nil:
			cm := cms[v.ConfigMap.Name]
			if cm == nil {
				t.Errorf("volume %s: ConfigMap %s is not rendered", v.Name, v.ConfigMap.Name)
				continue
			}
			for key, data := range cm.Data {
				writeFile(t, filepath.Join(dir, key), data)
			}
		case v.Secret != nil:
			if len(v.Secret.Items) == 0 {
				t.Errorf("volume %s mounts all of Secret %s; want only the keys the config uses", v.Name, v.Secret.SecretName)
			}
			for _, item := range v.Secret.Items {
				writeFile(t, filepath.Join(dir, item.Path), "not-a-real-password\n")
			}
		default:
			t.Errorf("volume %s is neither a ConfigMap nor a Secret", v.Name)
		}
	}

	args := append([]string(nil), c.Args...)
	configFile := ""
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			configFile = filepath.Join(root, v)
			args[i] = "--config.file=" + configFile
		}
	}
	if configFile == "" {
		t.Fatalf("args %v have no --config.file", c.Args)
	}
	config := string(readFile(t, configFile))
	// The config names the mounted files by their path in the container:
	// make them paths under root, and put real PEM files where the config
	// expects certificates and keys (any tls block: clusters', Connect's).
	var parsed map[string]any
	if err := yaml.Unmarshal([]byte(config), &parsed); err != nil {
		t.Fatalf("config.yml: %v", err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			tls, _ := v["tls"].(map[string]any)
			for key, src := range map[string]string{"ca_file": tlsFiles.CA, "cert_file": tlsFiles.ClientCert, "key_file": tlsFiles.ClientKey} {
				if p, ok := tls[key].(string); ok {
					writeFile(t, filepath.Join(root, p), string(readFile(t, src)))
				}
			}
			if pw, ok := v["password"]; ok {
				if f, _ := dig(pw, "file").(string); f == "" {
					t.Errorf("password %v is not {file: PATH}", pw)
				}
			}
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(parsed)
	for _, m := range c.VolumeMounts {
		config = strings.ReplaceAll(config, m.MountPath+"/", filepath.Join(root, m.MountPath)+"/")
	}
	writeFile(t, configFile, config)
	cmd := exec.Command(exportertest.Binary(t), append(args, "--config.check")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("failover_exporter --config.check on the rendered config: %v\n%s\nconfig:\n%s", err, out, config)
		return
	}
	t.Logf("failover_exporter --config.check: %s", bytes.TrimSpace(out))
	counted := clustersCount.FindAllStringSubmatch(string(out), -1)
	if len(counted) == 0 {
		t.Errorf("failover_exporter --config.check counted no clusters:\n%s", out)
	}
	for _, m := range counted {
		section, ok := systemSections[m[1]]
		if !ok {
			t.Errorf("--config.check counts %s_clusters, a system this test does not know; add it to systemSections", m[1])
			continue
		}
		entries, _ := values[section].([]any)
		if n, _ := strconv.Atoi(m[2]); n != len(entries) {
			t.Errorf("--config.check: %s_clusters=%d, but values.config.%s lists %d:\n%s", m[1], n, section, len(entries), out)
		}
	}
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// checkPrometheusRule: the rule's groups are prometheus/alerts.yml's, and
// pass its promtool unit tests when loaded from the rendered object.
func checkPrometheusRule(t *testing.T, root string, objs []object) {
	t.Helper()
	var rendered map[string]any
	for _, o := range objs {
		if o.kind == "PrometheusRule" {
			if err := yaml.Unmarshal([]byte(o.doc.YAML), &rendered); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rendered == nil {
		return
	}
	var alerts map[string]any
	if err := yaml.Unmarshal(readFile(t, filepath.Join(root, "prometheus", "alerts.yml")), &alerts); err != nil {
		t.Fatal(err)
	}
	groups := dig(rendered, "spec", "groups")
	if !reflect.DeepEqual(groups, alerts["groups"]) {
		t.Fatal("the PrometheusRule's groups differ from prometheus/alerts.yml's")
	}
	// The promtool tests name ../alerts.yml: the same layout in a temp dir,
	// with the rules written from the rendered object.
	dir := t.TempDir()
	rules, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "alerts.yml"), string(rules))
	tests, _ := filepath.Glob(filepath.Join(root, "prometheus", "tests", "*.yml"))
	if len(tests) == 0 {
		t.Fatal("no promtool tests in prometheus/tests")
	}
	var copies []string
	for _, f := range tests {
		dst := filepath.Join(dir, "tests", filepath.Base(f))
		writeFile(t, dst, string(readFile(t, f)))
		copies = append(copies, dst)
	}
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		promtool = "promtool"
	}
	if _, err := exec.LookPath(promtool); err != nil {
		t.Fatalf("promtool not found (scripts/install-deps.sh installs it): %v", err)
	}
	if out, err := exec.Command(promtool, "check", "rules", filepath.Join(dir, "alerts.yml")).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the PrometheusRule's groups: %v\n%s", err, out)
	}
	// The groups equal prometheus/alerts.yml's whatever the values, so the
	// unit tests (a few seconds of promtool each, 5 values files) run once:
	// for the first values file that renders a PrometheusRule.
	promtoolTestsOnce.Do(func() {
		if out, err := exec.Command(promtool, append([]string{"test", "rules"}, copies...)...).CombinedOutput(); err != nil {
			t.Errorf("promtool test rules on the PrometheusRule's groups: %v\n%s", err, out)
		}
	})
}

// promtoolTestsOnce runs the promtool unit tests of checkPrometheusRule once
// per test binary.
var promtoolTestsOnce sync.Once

// checkDashboards: one ConfigMap per dashboard, with the Grafana sidecar's
// label, holding the file byte for byte.
func checkDashboards(t *testing.T, root string, objs []object) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "grafana", "dashboards", "*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboards in grafana/dashboards")
	}
	found := map[string]string{}
	for _, cm := range configMaps(objs) {
		if cm.Labels["grafana_dashboard"] != "1" {
			continue
		}
		for key, data := range cm.Data {
			found[key] = data
		}
	}
	for _, f := range files {
		data, ok := found[filepath.Base(f)]
		if !ok {
			t.Errorf("no ConfigMap labelled grafana_dashboard=1 holds %s", filepath.Base(f))
			continue
		}
		if data != string(readFile(t, f)) {
			t.Errorf("the ConfigMap's %s differs from grafana/dashboards/%s", filepath.Base(f), filepath.Base(f))
		}
		delete(found, filepath.Base(f))
	}
	for key := range found {
		t.Errorf("dashboard ConfigMap key %s is not in grafana/dashboards", key)
	}
}

func checkNotes(t *testing.T, notes string, sidecar bool) {
	t.Helper()
	if !strings.Contains(notes, "port-forward") || !strings.Contains(notes, "status page") || !strings.Contains(notes, ":9877/") {
		t.Errorf("NOTES.txt does not say where the status page is:\n%s", notes)
	}
	if sidecar && !strings.Contains(notes, "podtemplate") {
		t.Errorf("NOTES.txt in sidecar mode does not say where the container is:\n%s", notes)
	}
}

// The packaged chart carries the rules and dashboards byte for byte as
// their sources are, whatever the chart's files/ holds: here a chart whose
// files/ has a stale rule file and a dashboard with no source.
func TestPackageCarriesTheSources(t *testing.T) {
	root := lab.RepoRoot(t)
	tree := t.TempDir()
	if err := os.CopyFS(filepath.Join(tree, Path), os.DirFS(filepath.Join(root, Path))); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"prometheus", filepath.Join("grafana", "dashboards")} {
		if err := os.CopyFS(filepath.Join(tree, src), os.DirFS(filepath.Join(root, src))); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(tree, Path, "files", "alerts.yml"), "groups: []\n")
	writeFile(t, filepath.Join(tree, Path, "files", "dashboards", "gone.json"), "{}\n")
	path, err := Package(filepath.Join(tree, Path), "1.0.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"files/alerts.yml": filepath.Join(root, "prometheus", "alerts.yml")}
	dashboards, _ := filepath.Glob(filepath.Join(root, "grafana", "dashboards", "*.json"))
	if len(dashboards) == 0 {
		t.Fatal("no dashboards in grafana/dashboards")
	}
	for _, f := range dashboards {
		want["files/dashboards/"+filepath.Base(f)] = f
	}
	for _, f := range ch.Files {
		if !strings.HasPrefix(f.Name, "files/") {
			continue
		}
		src, ok := want[f.Name]
		if !ok {
			t.Errorf("the package holds %s, which has no source", f.Name)
			continue
		}
		if !bytes.Equal(f.Data, readFile(t, src)) {
			t.Errorf("the package's %s differs from %s", f.Name, strings.TrimPrefix(src, root+"/"))
		}
		delete(want, f.Name)
	}
	for name, src := range want {
		t.Errorf("the package lacks %s (from %s)", name, strings.TrimPrefix(src, root+"/"))
	}
}

// A chart directory without its generated files (a checkout where `make
// chart-files` was not run) refuses to render and says what to run.
func TestChartWithoutGeneratedFilesSaysSo(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(lab.RepoRoot(t), Path))); err != nil {
		t.Fatal(err)
	}
	for _, disabled := range []string{"dashboards", "prometheusRule"} {
		if err := os.RemoveAll(filepath.Join(dir, "files")); err != nil {
			t.Fatal(err)
		}
		ch, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		vals := map[string]any{
			"config": map[string]any{"redis": []any{map[string]any{"addrs": []any{"r:6379"}}}},
			disabled: map[string]any{"enabled": false},
		}
		if _, err := Render(ch, "x", "monitoring", vals); err == nil || !strings.Contains(err.Error(), "run make chart-files first") {
			t.Errorf("with %s disabled and no files/: %v, want a failure naming make chart-files", disabled, err)
		}
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goreleaser packages the chart in a before hook and attaches it to the
// release (scripts/release-check.sh runs the hook in a snapshot build).
func TestGoreleaserPackagesChart(t *testing.T) {
	var cfg struct {
		Before struct {
			Hooks []string `yaml:"hooks"`
		} `yaml:"before"`
		Release struct {
			ExtraFiles []struct {
				Glob string `yaml:"glob"`
			} `yaml:"extra_files"`
		} `yaml:"release"`
		Checksum struct {
			ExtraFiles []struct {
				Glob string `yaml:"glob"`
			} `yaml:"extra_files"`
		} `yaml:"checksum"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(lab.RepoRoot(t), ".goreleaser.yml")), &cfg); err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, h := range cfg.Before.Hooks {
		f := strings.Fields(h)
		if len(f) >= 3 && f[0] == "go" && f[1] == "run" && f[2] == "./internal/chart/cmd/chartpkg" {
			for i := range f[:len(f)-1] {
				if f[i] == "-out" {
					out = f[i+1]
				}
			}
			if !strings.Contains(h, "-version {{ .Version }}") {
				t.Errorf("hook %q does not version the chart as the release", h)
			}
		}
	}
	if out == "" {
		t.Fatalf("no before hook runs ./internal/chart/cmd/chartpkg with -out: %v", cfg.Before.Hooks)
	}
	sample := filepath.Join(out, "failover-exporter-1.2.3.tgz")
	for what, files := range map[string][]struct {
		Glob string `yaml:"glob"`
	}{"release.extra_files": cfg.Release.ExtraFiles, "checksum.extra_files": cfg.Checksum.ExtraFiles} {
		matched := false
		for _, f := range files {
			if ok, _ := filepath.Match(f.Glob, sample); ok {
				matched = true
			}
		}
		if !matched {
			t.Errorf("%s %v do not take %s", what, files, sample)
		}
	}
}
