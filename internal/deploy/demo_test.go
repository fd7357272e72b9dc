package deploy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestDemoUpKillDown runs `make demo`'s script end to end on private ports:
// up, the three kills, heal, status and down, and checks that down leaves no process
// behind. Heavy (3 Kafka JVMs, 6 redis-server, Prometheus, Alertmanager):
// skipped with -short.
func TestDemoUpKillDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Kafka, Redis, Prometheus and Alertmanager")
	}
	root := lab.RepoRoot(t)
	dir := t.TempDir()
	kafkaBase := lab.PickBasePort(t, 0, 1, 2, 100, 101, 102)
	redisBase := lab.PickBasePort(t, 0, 1, 2, 3, 4, 5, 10000, 10001, 10002, 10003, 10004, 10005)
	// Below the ephemeral range too, as the demo's own defaults are.
	servicesBase := lab.PickBasePort(t, 0, 1, 2)
	exporterPort, prometheusPort, alertmanagerPort := servicesBase, servicesBase+1, servicesBase+2
	env := append(os.Environ(),
		"DEMO_DIR="+dir,
		"DEMO_KAFKA_BASE_PORT="+strconv.Itoa(kafkaBase),
		"DEMO_REDIS_BASE_PORT="+strconv.Itoa(redisBase),
		"DEMO_EXPORTER_PORT="+strconv.Itoa(exporterPort),
		"DEMO_PROMETHEUS_PORT="+strconv.Itoa(prometheusPort),
		"DEMO_ALERTMANAGER_PORT="+strconv.Itoa(alertmanagerPort),
		// If this test binary dies, the demo's watchdog takes everything down.
		"DEMO_OWNER_PID="+strconv.Itoa(os.Getpid()),
	)
	demo := func(timeout time.Duration, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "demo.sh"), args...)
		cmd.Env = env
		cmd.Dir = root
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("scripts/demo.sh %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), out)
		if err != nil {
			t.Fatalf("scripts/demo.sh %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			cmd := exec.Command(filepath.Join(root, "scripts", "demo.sh"), "down")
			cmd.Env = env
			out, _ := cmd.CombinedOutput()
			t.Logf("cleanup: scripts/demo.sh down:\n%s", out)
		}
	})

	start := time.Now()
	demo(8*time.Minute, "up")
	t.Logf("up took %s", time.Since(start).Round(time.Second))

	metrics := scrapeMetrics(t, exporterPort)
	for _, want := range []string{`kafka_up{kafka_cluster="demo"} 1`, `redis_cluster_up{redis_cluster="demo"} 1`} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("exporter /metrics lacks %q", want)
		}
	}
	status := demo(time.Minute, "status")
	for _, name := range []string{"exporter", "producer", "prometheus", "alertmanager"} {
		if !regexp.MustCompile(`(?m)^` + name + ` +running pid \d+$`).MatchString(status) {
			t.Errorf("status does not show %s running", name)
		}
	}

	// The seed lesson on the demo's canaries: one command, Kafka loses no
	// acknowledged write, Redis Cluster loses the ones its cut-off master
	// acknowledged. heal brings both nodes back for the kills below.
	out := demo(3*time.Minute, "kill", "acked-writes")
	if m := regexp.MustCompile(`Kafka \(acks=all, min ISR 2\): (\d+) +Redis Cluster \(asynchronous replication\): (\d+)`).FindStringSubmatch(out); m == nil {
		t.Errorf("kill acked-writes did not print the comparison")
	} else if m[1] != "0" || m[2] == "0" {
		t.Errorf("kill acked-writes: Kafka lost %s acknowledged writes (want 0), Redis %s (want some)", m[1], m[2])
	}
	// The new leader it prints is read after the kill, not from a view of
	// the cluster one refresh older (it once printed the killed broker).
	killed := regexp.MustCompile(`kafka: killed broker (\d+) `).FindStringSubmatch(out)
	newLeader := regexp.MustCompile(`kafka: new leader of canary partition 0: (\d+) `).FindStringSubmatch(out)
	if killed == nil || newLeader == nil || killed[1] == newLeader[1] {
		t.Errorf("kill acked-writes: killed broker %v, new leader of canary partition 0 %v: want two different brokers", killed, newLeader)
	}
	if !regexp.MustCompile(`redis: replica \S+ promoted: a master with the old master's \d+ slots`).MatchString(out) {
		t.Errorf("kill acked-writes did not see the Redis replica promoted")
	}
	demo(3*time.Minute, "heal")
	// The next kill needs the healed broker back in the ISRs and the healed
	// Redis node back as a replica.
	lab.WaitFor(t, 2*time.Minute, 500*time.Millisecond, func() (bool, string) {
		text := scrapeMetrics(t, exporterPort)
		for _, want := range []string{
			`kafka_topic_under_replicated_partitions{kafka_cluster="demo",topic="demo"} 0`,
			`redis_cluster_slots_without_replica{redis_cluster="demo"} 0`,
		} {
			if !strings.Contains(text, want+"\n") {
				return false, "waiting for " + want
			}
		}
		return true, ""
	})

	out = demo(2*time.Minute, "kill", "kafka-leader")
	if m := regexp.MustCompile(`kafka: demo/0 leader (\d+) -> (\d+) after`).FindStringSubmatch(out); m == nil || m[1] == m[2] {
		t.Errorf("kill kafka-leader did not report a new leader")
	}
	out = demo(2*time.Minute, "kill", "redis-master")
	if m := regexp.MustCompile(`redis: master (\S+) -> promoted replica (\S+) after`).FindStringSubmatch(out); m == nil || m[1] == m[2] {
		t.Errorf("kill redis-master did not report a promoted replica")
	}

	pids := demoPIDs(t, dir)
	if len(pids) < 4+2+5 {
		t.Errorf("found %d PIDs of demo processes before down, want at least 11: %v", len(pids), pids)
	}
	demo(2*time.Minute, "down")
	downed = true
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for processAlive(pid.pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if processAlive(pid.pid) {
			t.Errorf("%s (pid %d) still runs after down", pid.what, pid.pid)
		}
	}
	t.Logf("whole demo cycle took %s", time.Since(start).Round(time.Second))
}

type demoPID struct {
	what string
	pid  int
}

// demoPIDs reads every PID file the demo and the cluster scripts keep.
func demoPIDs(t *testing.T, dir string) []demoPID {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.pid", "kafka/node-*/pid", "redis/*/redis.pid"} {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		files = append(files, m...)
	}
	var out []demoPID
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || !processAlive(pid) {
			continue
		}
		rel, _ := filepath.Rel(dir, f)
		out = append(out, demoPID{rel, pid})
	}
	return out
}

// processAlive: the process exists and is not a zombie (an exited child
// that its reaper has not collected yet is gone for our purposes).
func processAlive(pid int) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	// pid (comm) state ...; comm may contain spaces, so split after ')'.
	i := strings.LastIndexByte(line, ')')
	fields := strings.Fields(line[i+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// demoPort is a line of `scripts/demo.sh ports`.
type demoPort struct {
	port  int
	what  string
	state string // "free" or "in use: ..."
}

var demoPortLine = regexp.MustCompile(`^(\d+) +(.+?) +(free|in use: .*)$`)

// runDemo runs scripts/demo.sh with the environment stripped of DEMO_*
// settings plus the given ones, and returns its stdout, stderr and exit code.
func runDemo(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := lab.RepoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "demo.sh"), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DEMO_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "DEMO_DIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = root
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("scripts/demo.sh %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

func demoPorts(t *testing.T, stdout string) []demoPort {
	t.Helper()
	var ports []demoPort
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		m := demoPortLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("scripts/demo.sh ports: unexpected line %q", line)
		}
		port, _ := strconv.Atoi(m[1])
		ports = append(ports, demoPort{port, m[2], m[3]})
	}
	return ports
}

// ephemeralPortsStart reads the first port the kernel gives outgoing
// connections.
func ephemeralPortsStart(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral port range to compare with: %v", err)
	}
	start, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil {
		t.Fatalf("ip_local_port_range %q: %v", b, err)
	}
	return start
}

// TestDemoPortsBelowEphemeralRange: every port the demo listens on by
// default, Redis's cluster bus ports included, is below the kernel's
// ephemeral range, where an outgoing connection can take a port the moment
// before a server binds it (`make demo` once failed so, with Redis's bus on
// 37000).
func TestDemoPortsBelowEphemeralRange(t *testing.T) {
	stdout, stderr, _ := runDemo(t, nil, "ports") // exit 1 if this machine runs something on them
	ports := demoPorts(t, stdout)
	// 3 brokers and their controllers, 6 Redis nodes and their buses,
	// the exporter, Prometheus, Alertmanager.
	if len(ports) != 21 {
		t.Fatalf("scripts/demo.sh ports lists %d ports, want 21:\n%s", len(ports), stdout)
	}
	start := ephemeralPortsStart(t)
	seen := map[int]string{}
	buses := 0
	for _, p := range ports {
		if p.port >= start {
			t.Errorf("port %d (%s) is in the ephemeral range from %d", p.port, p.what, start)
		}
		if other, dup := seen[p.port]; dup {
			t.Errorf("port %d is both %s and %s", p.port, other, p.what)
		}
		seen[p.port] = p.what
		if strings.HasSuffix(p.what, "cluster bus") {
			buses++
		}
	}
	if buses != 6 {
		t.Errorf("%d Redis cluster bus ports listed, want 6", buses)
	}
	if strings.Contains(stderr, "ephemeral") {
		t.Errorf("scripts/demo.sh ports warns about its default ports:\n%s", stderr)
	}

	// A base port whose cluster bus lands in the range is warned about.
	_, stderr, _ = runDemo(t, []string{"DEMO_REDIS_BASE_PORT=" + strconv.Itoa(start-10000)}, "ports")
	if want := fmt.Sprintf("warning: port %d (Redis node %d cluster bus) is in the kernel's ephemeral range", start, start-10000); !strings.Contains(stderr, want) {
		t.Errorf("scripts/demo.sh ports with a bus port at %d does not warn %q:\n%s", start, want, stderr)
	}
}

// TestDemoUpNamesPortInUse: `up` refuses to start when a port it needs is
// taken, and names the port, what it is for and the process holding it,
// before it starts or installs anything.
func TestDemoUpNamesPortInUse(t *testing.T) {
	kafkaBase := lab.PickBasePort(t, 0, 1, 2, 100, 101, 102)
	redisBase := lab.PickBasePort(t, 0, 1, 2, 3, 4, 5, 10000, 10001, 10002, 10003, 10004, 10005)
	servicesBase := lab.PickBasePort(t, 0, 1, 2)
	taken := servicesBase + 1
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(taken))
	if err != nil {
		t.Fatalf("listen on %d: %v", taken, err)
	}
	defer l.Close()
	env := []string{
		"DEMO_KAFKA_BASE_PORT=" + strconv.Itoa(kafkaBase),
		"DEMO_REDIS_BASE_PORT=" + strconv.Itoa(redisBase),
		"DEMO_EXPORTER_PORT=" + strconv.Itoa(servicesBase),
		"DEMO_PROMETHEUS_PORT=" + strconv.Itoa(taken),
		"DEMO_ALERTMANAGER_PORT=" + strconv.Itoa(servicesBase+2),
	}
	want := fmt.Sprintf("port %d for Prometheus is in use: listening on 127.0.0.1:%d", taken, taken)
	// ss names the process when it may see it: this test binary.
	holder := fmt.Sprintf("(pid %d)", os.Getpid())

	_, stderr, code := runDemo(t, env, "up")
	if code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "set DEMO_PROMETHEUS_PORT") {
		t.Errorf("scripts/demo.sh up with port %d taken: exit %d, want non-zero and %q:\n%s", taken, code, want, stderr)
	}
	if _, err := exec.LookPath("ss"); err == nil && !strings.Contains(stderr, holder) {
		t.Errorf("scripts/demo.sh up does not name the process holding port %d %s:\n%s", taken, holder, stderr)
	}
	if strings.Contains(stderr, "starting Kafka") || strings.Contains(stderr, "installing") {
		t.Errorf("scripts/demo.sh up went on with a port taken:\n%s", stderr)
	}

	stdout, _, code := runDemo(t, env, "ports")
	if code == 0 {
		t.Errorf("scripts/demo.sh ports with port %d taken: exit 0", taken)
	}
	for _, p := range demoPorts(t, stdout) {
		if busy := p.port == taken; busy != strings.HasPrefix(p.state, "in use") {
			t.Errorf("scripts/demo.sh ports: %d (%s) %s", p.port, p.what, p.state)
		}
	}
}

func scrapeMetrics(t *testing.T, port int) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("scrape exporter: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("scrape exporter: %v", err)
	}
	return string(b)
}
