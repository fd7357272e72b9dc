package chart

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// perClusterHeader starts examples/kubernetes/per-cluster-deployment.yaml.
const perClusterHeader = `# failover_exporter as one Deployment per watched cluster (here: the Kafka
# and Redis clusters of kafka-sidecar.yaml and redis-cluster-sidecar.yaml, in
# the same namespace), scraped through a Service by a ServiceMonitor. Use this
# instead of the sidecars when the clusters are not yours to modify (managed
# Kafka, an operator's pods), or when one view per cluster is enough; see
# docs/deployment.md for the trade-offs.
#
#   kubectl apply -f examples/kubernetes/per-cluster-deployment.yaml
#
# Generated from the Helm chart: do not edit by hand. It is
#   make chart-files && helm template failover-exporter charts/failover-exporter -f examples/kubernetes/per-cluster-deployment.values.yml
# regenerated with
#   go test ./internal/chart -run TestExamplesFromChart -update
# (the test fails while the two differ). Credentials come from the same
# Secrets as the sidecar examples, mounted as files.
`

// The example manifests come from the chart: per-cluster-deployment.yaml is
// `helm template` of its values file, and each sidecar example carries the
// container, volumes and config the chart's sidecar mode renders for its
// values file.
func TestExamplesFromChart(t *testing.T) {
	root := lab.RepoRoot(t)
	dir := filepath.Join(root, "examples", "kubernetes")

	t.Run("per-cluster-deployment", func(t *testing.T) {
		out, _ := render(t, "failover-exporter", filepath.Join(dir, "per-cluster-deployment.values.yml"))
		var b strings.Builder
		b.WriteString(perClusterHeader)
		for i, doc := range out.Docs {
			if i > 0 {
				b.WriteString("---\n")
			}
			b.WriteString(strings.TrimRight(doc.YAML, "\n") + "\n")
		}
		path := filepath.Join(dir, "per-cluster-deployment.yaml")
		if *update {
			writeFile(t, path, b.String())
		}
		if string(readFile(t, path)) != b.String() {
			t.Errorf("%s differs from the chart's rendering; run\n  go test ./internal/chart -run TestExamplesFromChart -update", path)
		}
	})

	for _, example := range []struct{ release, file string }{
		{"kafka", "kafka-sidecar"},
		{"redis-cluster", "redis-cluster-sidecar"},
	} {
		t.Run(example.file, func(t *testing.T) {
			_, objs := render(t, example.release, filepath.Join(dir, example.file+".values.yml"))
			spec := podSpec(t, objs)
			want := spec.Containers[0]
			wantVolumes := spec.Volumes
			var wantConfig *corev1.ConfigMap
			for _, cm := range configMaps(objs) {
				if _, ok := cm.Data["config.yml"]; ok {
					wantConfig = cm
				}
			}

			path := filepath.Join(dir, example.file+".yaml")
			var got *corev1.Container
			var gotVolumes []corev1.Volume
			gotConfigs := map[string]map[string]string{}
			for _, doc := range splitYAML(t, path) {
				var head struct {
					Kind string `json:"kind"`
				}
				if err := sigsyaml.Unmarshal(doc, &head); err != nil {
					t.Fatal(err)
				}
				switch head.Kind {
				case "StatefulSet":
					var ss struct {
						Spec struct {
							Template corev1.PodTemplateSpec `json:"template"`
						} `json:"spec"`
					}
					if err := sigsyaml.Unmarshal(doc, &ss); err != nil {
						t.Fatal(err)
					}
					for i, c := range ss.Spec.Template.Spec.Containers {
						if c.Name == want.Name {
							got = &ss.Spec.Template.Spec.Containers[i]
						}
					}
					for _, v := range ss.Spec.Template.Spec.Volumes {
						if strings.HasPrefix(v.Name, "failover-exporter-") {
							gotVolumes = append(gotVolumes, v)
						}
					}
				case "ConfigMap":
					var cm corev1.ConfigMap
					if err := sigsyaml.Unmarshal(doc, &cm); err != nil {
						t.Fatal(err)
					}
					gotConfigs[cm.Name] = cm.Data
				}
			}
			if got == nil {
				t.Fatalf("%s: no StatefulSet container %s", path, want.Name)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("%s: the exporter container differs from the chart's sidecar container; want\n%s", path, toYAML(t, want))
			}
			if !reflect.DeepEqual(gotVolumes, wantVolumes) {
				t.Errorf("%s: the failover-exporter-* volumes differ from the chart's; want\n%s", path, toYAML(t, wantVolumes))
			}
			if wantConfig == nil || !reflect.DeepEqual(gotConfigs[wantConfig.Name], wantConfig.Data) {
				t.Errorf("%s: no ConfigMap equal to the chart's; want\n%s", path, toYAML(t, wantConfig))
			}
		})
	}
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := sigsyaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// splitYAML returns each document of a multi-document YAML file.
func splitYAML(t *testing.T, path string) [][]byte {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, path)))
	var docs [][]byte
	for {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, err := yaml.Marshal(&node)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	return docs
}
