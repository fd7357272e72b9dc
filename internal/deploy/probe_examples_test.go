package deploy

import (
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestProbeExampleConfigs: the Prometheus examples of the README's "Many
// clusters" section load in promtool (the file_sd one), and every job of theirs that scrapes
// /probe turns its discovered address into the target= parameter and sends
// the scrape to the exporter, which is what makes each cluster its own
// target (TestKafkaDiscoveredProbeTargets runs the same jobs against a real
// Prometheus).
func TestProbeExampleConfigs(t *testing.T) {
	root := lab.RepoRoot(t)
	for _, name := range []string{"probe-file-sd.yml", "probe-kubernetes-sd.yml"} {
		path := filepath.Join(root, "examples", "prometheus", name)
		// Debian builds its Prometheus without Kubernetes discovery: its
		// promtool refuses kubernetes_sd_configs as an unknown field, so
		// that example is checked by the structure below only.
		if name != "probe-kubernetes-sd.yml" {
			runTool(t, "promtool", "check", "config", "--syntax-only", path)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			ScrapeConfigs []struct {
				JobName     string `yaml:"job_name"`
				MetricsPath string `yaml:"metrics_path"`
				Relabel     []struct {
					SourceLabels []string `yaml:"source_labels"`
					TargetLabel  string   `yaml:"target_label"`
					Replacement  string   `yaml:"replacement"`
					Action       string   `yaml:"action"`
				} `yaml:"relabel_configs"`
			} `yaml:"scrape_configs"`
		}
		if err := yaml.Unmarshal(raw, &cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		probes := 0
		for _, job := range cfg.ScrapeConfigs {
			if job.MetricsPath != "/probe" {
				continue
			}
			probes++
			var param, instance, exporter bool
			for _, r := range job.Relabel {
				switch {
				case r.TargetLabel == "__param_target" && len(r.SourceLabels) == 1 && r.SourceLabels[0] == "__address__":
					param = true
				case r.TargetLabel == "instance":
					instance = true
				case r.TargetLabel == "__address__" && r.Replacement != "" && !param:
					t.Errorf("%s job %s: __address__ is replaced before it becomes the target= parameter", name, job.JobName)
				case r.TargetLabel == "__address__" && r.Replacement != "":
					exporter = true
				}
			}
			if !param || !instance || !exporter {
				t.Errorf("%s job %s: want __address__ -> __param_target, an instance label and __address__ -> the exporter; got param %v, instance %v, exporter %v",
					name, job.JobName, param, instance, exporter)
			}
		}
		if probes == 0 {
			t.Errorf("%s has no /probe job", name)
		}
	}
}
