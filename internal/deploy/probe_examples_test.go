package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestProbeExampleConfigs: the Prometheus examples of docs/probe.md ("Many
// clusters") load in promtool (the file_sd one), and every job of theirs that scrapes
// /probe turns its discovered address into the target= parameter and sends
// the scrape to the exporter, which is what makes each cluster its own
// target (TestKafkaDiscoveredProbeTargets runs the same jobs against a real
// Prometheus).
//
// docs/probe.md's own example is checked the same way, and every config with
// a /probe job must keep only the exporter's own series from its /metrics
// jobs: /metrics serves the configured clusters too, and a job without the
// filter ingests each of them twice (sum by (topic) doubles).
func TestProbeExampleConfigs(t *testing.T) {
	root := lab.RepoRoot(t)
	examples := map[string]string{}
	for _, name := range []string{"probe-file-sd.yml", "probe-kubernetes-sd.yml"} {
		examples[name] = filepath.Join(root, "examples", "prometheus", name)
	}
	for i, block := range docScrapeConfigs(t, filepath.Join(root, "docs", "probe.md")) {
		path := filepath.Join(t.TempDir(), "probe-doc.yml")
		if err := os.WriteFile(path, []byte(block), 0o644); err != nil {
			t.Fatal(err)
		}
		examples[fmt.Sprintf("docs/probe.md's scrape config %d", i+1)] = path
	}
	if len(examples) < 3 {
		t.Fatalf("found no scrape config in docs/probe.md")
	}
	for name, path := range examples {
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
				MetricRelabel []struct {
					SourceLabels []string `yaml:"source_labels"`
					Regex        string   `yaml:"regex"`
					Action       string   `yaml:"action"`
				} `yaml:"metric_relabel_configs"`
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
		}
		for _, job := range cfg.ScrapeConfigs {
			if job.MetricsPath != "" && job.MetricsPath != "/metrics" || probes == 0 {
				continue
			}
			kept := func(series string) bool {
				for _, r := range job.MetricRelabel {
					if r.Action == "keep" && len(r.SourceLabels) == 1 && r.SourceLabels[0] == "__name__" {
						return regexp.MustCompile("^(?:" + r.Regex + ")$").MatchString(series)
					}
				}
				return true
			}
			for series, want := range map[string]bool{"failover_exporter_build_info": true, "go_goroutines": true, "kafka_up": false, "redis_cluster_up": false, "kafka_mirror_stalled": false} {
				if kept(series) != want {
					t.Errorf("%s job %s scrapes /metrics beside /probe jobs and keeps %s: %v, want %v (each cluster would be ingested twice)", name, job.JobName, series, !want, want)
				}
			}
		}
		probes = 0
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

// docScrapeConfigs are a Markdown page's yaml blocks that hold a
// scrape_configs list.
func docScrapeConfigs(t *testing.T, path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(raw), "```yaml\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		if strings.HasPrefix(block, "scrape_configs:") {
			blocks = append(blocks, block)
		}
	}
	return blocks
}
