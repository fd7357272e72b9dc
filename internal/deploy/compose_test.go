package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// loadCompose parses examples/docker-compose.yml as `docker compose` does
// (compose-go), with every profile enabled and paths resolved.
func loadCompose(t *testing.T) (*types.Project, string) {
	t.Helper()
	root := lab.RepoRoot(t)
	examples := filepath.Join(root, "examples")
	opts, err := cli.NewProjectOptions([]string{filepath.Join(examples, "docker-compose.yml")},
		cli.WithWorkingDirectory(examples),
		cli.WithProfiles([]string{"*"}),
		cli.WithResolvedPaths(true),
		cli.WithDiscardEnvFile,
	)
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return project, root
}

func TestComposeImagesPinnedAndMountsExist(t *testing.T) {
	project, root := loadCompose(t)
	if len(project.Services) < 15 {
		t.Errorf("%d services, want kafka x3, redis x6 (+3 no-replicas), inits, exporter(s), prometheus, alertmanager, grafana", len(project.Services))
	}
	for name, svc := range project.Services {
		if svc.Build == nil && !imagePinned(svc.Image) {
			t.Errorf("service %s: image %q is not pinned to an explicit tag", name, svc.Image)
		}
		if svc.Build != nil {
			if df := filepath.Join(svc.Build.Context, svc.Build.Dockerfile); !fileExists(df) {
				t.Errorf("service %s: Dockerfile %s does not exist", name, df)
			}
		}
		for _, v := range svc.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if !strings.HasPrefix(v.Source, root+string(filepath.Separator)) {
				t.Errorf("service %s: bind mount %s is outside the repository", name, v.Source)
			}
			if !fileExists(v.Source) {
				t.Errorf("service %s: mounted %s does not exist", name, v.Source)
			}
		}
	}
}

func TestComposeKafkaAndRedisLayout(t *testing.T) {
	project, root := loadCompose(t)
	brokers := 0
	for name, svc := range project.Services {
		if !strings.HasPrefix(name, "kafka-") || name == "kafka-init" {
			continue
		}
		brokers++
		if !strings.HasPrefix(svc.Image, "apache/kafka:") {
			t.Errorf("%s: image %s, want the official apache/kafka", name, svc.Image)
		}
		env := func(k string) string {
			if v := svc.Environment[k]; v != nil {
				return *v
			}
			return ""
		}
		for k, want := range map[string]string{
			"KAFKA_PROCESS_ROLES":                            "broker,controller",
			"KAFKA_DEFAULT_REPLICATION_FACTOR":               "3",
			"KAFKA_MIN_INSYNC_REPLICAS":                      "2",
			"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "3",
			"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "3",
		} {
			if got := env(k); got != want {
				t.Errorf("%s: %s=%q, want %q", name, k, got, want)
			}
		}
		// Every advertised listener must be reachable by its audience: service
		// names inside the network, localhost with a published port outside.
		for _, l := range strings.Split(env("KAFKA_ADVERTISED_LISTENERS"), ",") {
			hostPort := l[strings.Index(l, "://")+3:]
			host, port, _ := strings.Cut(hostPort, ":")
			switch host {
			case name:
			case "localhost":
				if !slices.ContainsFunc(svc.Ports, func(p types.ServicePortConfig) bool { return p.Published == port }) {
					t.Errorf("%s: advertises %s but does not publish port %s", name, l, port)
				}
			default:
				t.Errorf("%s: advertised listener %s is neither the service name nor localhost", name, l)
			}
		}
	}
	if brokers != 3 {
		t.Errorf("%d Kafka brokers, want 3", brokers)
	}

	conf := string(readFile(t, filepath.Join(root, "examples/redis/redis.conf")))
	for _, want := range []string{"cluster-enabled yes", "cluster-preferred-endpoint-type hostname"} {
		if !strings.Contains(conf, want) {
			t.Errorf("examples/redis/redis.conf lacks %q", want)
		}
	}
	for profile, want := range map[string]struct {
		nodes    int
		replicas string
	}{"": {6, "1"}, "no-replicas": {3, "0"}} {
		nodes := 0
		var initCmd []string
		for name, svc := range project.Services {
			if !strings.HasPrefix(svc.Image, "redis:") || !(len(svc.Profiles) == 0 && profile == "" || slices.Contains(svc.Profiles, profile)) {
				continue
			}
			if strings.HasSuffix(name, "-init") {
				initCmd = svc.Command
				continue
			}
			nodes++
			port := svc.Environment["REDIS_PORT"]
			if port == nil || !slices.ContainsFunc(svc.Ports, func(p types.ServicePortConfig) bool {
				return p.Published == *port && p.Target == parsePort(*port)
			}) {
				t.Errorf("%s: must listen on and publish the same port (REDIS_PORT), so the announced hostname:port works on both sides", name)
			}
			if !strings.Contains(strings.Join(svc.Command, " "), "--cluster-announce-hostname") {
				t.Errorf("%s: does not announce its hostname", name)
			}
		}
		if nodes != want.nodes {
			t.Errorf("profile %q: %d Redis nodes, want %d", profile, nodes, want.nodes)
		}
		if len(initCmd) < 3 || initCmd[2] != want.replicas || len(initCmd)-3 != want.nodes {
			t.Errorf("profile %q: cluster create command %v, want %d nodes with %s replicas each", profile, initCmd, want.nodes, want.replicas)
		}
	}
}

func parsePort(s string) uint32 {
	var n uint32
	for _, c := range s {
		n = n*10 + uint32(c-'0')
	}
	return n
}

// bindSource is the host path mounted at target in service svc.
func bindSource(t *testing.T, project *types.Project, service, target string) string {
	t.Helper()
	svc, ok := project.Services[service]
	if !ok {
		t.Fatalf("no service %s", service)
	}
	for _, v := range svc.Volumes {
		if v.Target == target {
			return v.Source
		}
	}
	t.Fatalf("service %s mounts nothing at %s", service, target)
	return ""
}

func TestComposePrometheusConfig(t *testing.T) {
	project, root := loadCompose(t)
	svc := project.Services["prometheus"]
	src := bindSource(t, project, "prometheus", "/etc/prometheus/prometheus.yml")
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(readFile(t, src), &cfg); err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	exporterPort := "9877"
	if !slices.Contains(targets, "exporter:"+exporterPort) {
		t.Errorf("Prometheus scrapes %v, not the exporter (exporter:%s)", targets, exporterPort)
	}
	if !slices.ContainsFunc(project.Services["exporter"].Command, func(a string) bool { return a == "--web.listen-address=:"+exporterPort }) {
		t.Errorf("exporter command %v does not listen on :%s", project.Services["exporter"].Command, exporterPort)
	}

	// The rule files must be the shipped ones, mounted where the config says;
	// promtool then checks the config with host paths substituted.
	rules := filepath.Join(root, "prometheus", "alerts.yml")
	text := string(readFile(t, src))
	if len(cfg.RuleFiles) == 0 {
		t.Fatal("the Prometheus config loads no rule files")
	}
	for _, rf := range cfg.RuleFiles {
		host := bindSource(t, project, "prometheus", rf)
		if host != rules {
			t.Errorf("rule file %s is %s, want %s", rf, host, rules)
		}
		text = strings.ReplaceAll(text, rf, host)
	}
	_ = svc
	tmp := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, "promtool", "check", "config", tmp)

	am := bindSource(t, project, "alertmanager", "/etc/alertmanager/alertmanager.yml")
	runTool(t, "amtool", "check-config", am)
}

func TestComposeGrafanaProvisioning(t *testing.T) {
	project, root := loadCompose(t)
	dashboardsDir := ""
	for _, v := range project.Services["grafana"].Volumes {
		if v.Source == filepath.Join(root, "grafana", "dashboards") {
			dashboardsDir = v.Target
		}
	}
	if dashboardsDir == "" {
		t.Fatal("grafana does not mount grafana/dashboards/")
	}
	providers := bindSource(t, project, "grafana", "/etc/grafana/provisioning/dashboards")
	found := false
	entries, _ := filepath.Glob(filepath.Join(providers, "*.yml"))
	for _, f := range entries {
		for _, p := range getList(decodeYAML(t, f)[0], "providers") {
			if getString(p, "options", "path") == dashboardsDir {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no dashboard provider in %s reads %s (where grafana/dashboards/ is mounted)", providers, dashboardsDir)
	}
	datasources := bindSource(t, project, "grafana", "/etc/grafana/provisioning/datasources")
	entries, _ = filepath.Glob(filepath.Join(datasources, "*.yml"))
	ok := false
	for _, f := range entries {
		for _, ds := range getList(decodeYAML(t, f)[0], "datasources") {
			if getString(ds, "type") == "prometheus" && getString(ds, "url") == "http://prometheus:9090" && get(ds, "isDefault") == true {
				ok = true
			}
		}
	}
	if !ok {
		t.Errorf("no default Prometheus data source at http://prometheus:9090 in %s", datasources)
	}
}

func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (scripts/install-deps.sh prometheus installs it): %v", name, err)
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
