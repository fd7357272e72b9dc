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
// up, a stall of the mirror flow, the four kills, heal, status and down, and
// checks that down leaves no process behind. Heavy (4 Kafka JVMs, MirrorMaker,
// 6 redis-server, a Sentinel deployment of 6 more, Prometheus, Alertmanager):
// skipped with -short.
func TestDemoUpKillDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Kafka, MirrorMaker, Redis, Redis Sentinel, Prometheus and Alertmanager")
	}
	root := lab.RepoRoot(t)
	dir := t.TempDir()
	// The demo's 3 brokers, the DR broker (+3) and their controllers (+100).
	kafkaBase := lab.PickBasePort(t, 0, 1, 2, 3, 100, 101, 102, 103)
	redisBase := lab.PickBasePort(t, 0, 1, 2, 3, 4, 5, 10000, 10001, 10002, 10003, 10004, 10005)
	// The Sentinel deployment: master, two replicas, three sentinels.
	sentinelBase := lab.PickBasePort(t, 0, 1, 2, 3, 4, 5)
	// Below the ephemeral range too, as the demo's own defaults are.
	servicesBase := lab.PickBasePort(t, 0, 1, 2)
	exporterPort, prometheusPort, alertmanagerPort := servicesBase, servicesBase+1, servicesBase+2
	env := append(os.Environ(),
		"DEMO_DIR="+dir,
		"DEMO_KAFKA_BASE_PORT="+strconv.Itoa(kafkaBase),
		"DEMO_KAFKA_DR_PORT="+strconv.Itoa(kafkaBase+3),
		"DEMO_REDIS_BASE_PORT="+strconv.Itoa(redisBase),
		"DEMO_SENTINEL_BASE_PORT="+strconv.Itoa(sentinelBase),
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

	// heal starts what the kills stopped and waits until the exporter sees
	// every broker back in the ISRs and every master with a replica again.
	heal := func() {
		t.Helper()
		demo(3*time.Minute, "heal")
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
	}

	start := time.Now()
	demo(8*time.Minute, "up")
	t.Logf("up took %s", time.Since(start).Round(time.Second))

	metrics := scrapeMetrics(t, exporterPort)
	for _, want := range []string{
		`kafka_up{kafka_cluster="demo"} 1`, `kafka_up{kafka_cluster="dr"} 1`, `redis_cluster_up{redis_cluster="demo"} 1`,
		`redis_sentinel_up{sentinel_cluster="demo"} 1`,
		`redis_sentinel_master_up{master="mymaster",sentinel_cluster="demo"} 1`,
		`kafka_mirror_up{mirror="demo-dr",source_cluster="demo",target_cluster="dr"} 1`,
		`kafka_mirror_stalled{mirror="demo-dr",source_cluster="demo",target_cluster="dr"} 0`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("exporter /metrics lacks %q", want)
		}
	}
	// MirrorMaker emits a heartbeat a second; the exporter reads it every second.
	if age, ok := mirrorValue(metrics, "kafka_mirror_heartbeat_age_seconds"); !ok || age >= 5 {
		t.Errorf("after up: kafka_mirror_heartbeat_age_seconds %v (served: %v), want under 5", age, ok)
	}
	status := demo(time.Minute, "status")
	for _, name := range []string{"exporter", "producer", "prometheus", "alertmanager", "mirror", "kafka-dr +node 1"} {
		if !regexp.MustCompile(`(?m)^` + name + ` +running pid \d+`).MatchString(status) {
			t.Errorf("status does not show %s running", name)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^sentinel +(node|sentinel) \d+ running pid \d+`).FindAllString(status, -1)); n != 6 {
		t.Errorf("status shows %d processes of the Sentinel deployment running, want 6 (3 data nodes, 3 sentinels)", n)
	}

	checkMirrorStall(t, demo, exporterPort)

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
	// The broker killed is not the canary lease's coordinator, as Kafka's
	// tool names it: that kill ends the lease, and nothing is read back (a
	// CI run killed it and waited in vain).
	killed := regexp.MustCompile(`kafka: killed broker (\d+) \(kill -9\), leader of canary partition (\d+),.*; broker (\S+) coordinates the canary lease`).FindStringSubmatch(out)
	newLeader := regexp.MustCompile(`kafka: new leader of canary partition (\d+): (\d+) `).FindStringSubmatch(out)
	switch {
	case killed == nil || newLeader == nil:
		t.Errorf("kill acked-writes: printed no killed broker (%v) or no new leader (%v)", killed, newLeader)
	case killed[2] != newLeader[1] || killed[1] == newLeader[2]:
		t.Errorf("kill acked-writes: killed broker %s of canary partition %s, new leader of partition %s: %s; want the same partition, another broker", killed[1], killed[2], newLeader[1], newLeader[2])
	case killed[1] == killed[3] || killed[3] == "?":
		t.Errorf("kill acked-writes: killed broker %s, the canary lease's coordinator %s: want a known coordinator that stays up", killed[1], killed[3])
	}
	if !regexp.MustCompile(`redis: replica \S+ promoted: a master with the old master's \d+ slots`).MatchString(out) {
		t.Errorf("kill acked-writes did not see the Redis replica promoted")
	}
	// The next kill needs the healed broker back in the ISRs and the healed
	// Redis node back as a replica.
	heal()

	out = demo(2*time.Minute, "kill", "kafka-leader")
	if m := regexp.MustCompile(`kafka: demo/0 leader (\d+) -> (\d+) after`).FindStringSubmatch(out); m == nil || m[1] == m[2] {
		t.Errorf("kill kafka-leader did not report a new leader")
	}
	out = demo(2*time.Minute, "kill", "redis-master")
	if m := regexp.MustCompile(`redis: master (\S+) -> promoted replica (\S+) after`).FindStringSubmatch(out); m == nil || m[1] == m[2] {
		t.Errorf("kill redis-master did not report a promoted replica")
	}
	checkSentinelKill(t, demo, exporterPort, sentinelBase)

	// make roll: a rolling restart gated by the failure budget, from a
	// healed demo, with the canaries writing throughout.
	heal()
	out = demo(15*time.Minute, "roll")
	for _, want := range []string{
		"acks=all canary writes refused for want of in-sync replicas: 0\n",
		"acknowledged writes lost: Kafka 0, Redis 0\n",
		"3 brokers and 3 Redis masters restarted one at a time",
		// Each stop announced: the demo's Prometheus, with the shipped
		// rules, made tickets of what the stops explain and paged for
		// nothing.
		"pages during the roll (critical or warning alerts not firing before it): 0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("roll did not print %q", want)
		}
	}
	for _, broker := range []string{"1", "2", "3"} {
		if !strings.Contains(out, "yes: broker "+broker+" of kafka/demo can be stopped now") ||
			!strings.Contains(out, "yes: broker "+broker+" of kafka/demo is back and caught up") {
			t.Errorf("roll did not gate broker %s's stop and restart on the exporter's answers", broker)
		}
	}
	if n := strings.Count(out, "the exporter names replica"); n != 3 {
		t.Errorf("roll failed over %d Redis masters to a replica the exporter named, want 3", n)
	}

	pids := demoPIDs(t, dir)
	if len(pids) < 4+2+5+2+6 {
		t.Errorf("found %d PIDs of demo processes before down, want at least 19: %v", len(pids), pids)
	}
	sentinelPIDs := 0
	for _, pid := range pids {
		if strings.HasPrefix(pid.what, "sentinel/") {
			sentinelPIDs++
		}
	}
	if sentinelPIDs != 6 {
		t.Errorf("found %d PIDs of the Sentinel deployment before down (healed), want 6: %v", sentinelPIDs, pids)
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

// checkSentinelKill runs `kill sentinel-master` (make chaos-sentinel) and
// checks that it killed the master the sentinels named, that the exporter
// counted the failover and timed it, and that the sentinels and the exporter
// agree on the new master.
func checkSentinelKill(t *testing.T, demo func(time.Duration, ...string) string, exporterPort, sentinelBase int) {
	t.Helper()
	const failovers = `redis_sentinel_master_failovers_total{master="mymaster",sentinel_cluster="demo"} `
	before, _ := seriesValue(scrapeMetrics(t, exporterPort), failovers)
	out := demo(2*time.Minute, "kill", "sentinel-master")
	m := regexp.MustCompile(`sentinel: master mymaster (\S+) -> (\S+): redis_sentinel_master_failovers_total\{sentinel_cluster="demo"\} (\d+) -> (\d+) after`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("kill sentinel-master did not report the failover the exporter counted")
	}
	oldMaster, newMaster := m[1], m[2]
	if oldMaster == newMaster || !strings.HasPrefix(oldMaster, "127.0.0.1:") {
		t.Errorf("kill sentinel-master: master %s -> %s, want a different address", oldMaster, newMaster)
	}
	n0, _ := strconv.Atoi(m[3])
	n1, _ := strconv.Atoi(m[4])
	if n0 != int(before) || n1 <= n0 {
		t.Errorf("kill sentinel-master: failovers %d -> %d (/metrics said %v before), want an increase from it", n0, n1, before)
	}
	if secs := regexp.MustCompile(`sentinel: failover time the exporter measured: ([\d.]+)s`).FindStringSubmatch(out); secs == nil {
		t.Errorf("kill sentinel-master did not print the failover time the exporter measured")
	} else if f, _ := strconv.ParseFloat(secs[1], 64); f <= 0 || f > 60 {
		t.Errorf("kill sentinel-master: failover took %ss by the exporter's clock, want between 0 and 60", secs[1])
	}
	// Each of the three sentinels names one master, not the old one: the
	// new master, or, when a loaded machine made the sentinels (down-after
	// 1 s) fail over once more before the script asked them, a later one,
	// whose failover the exporter then counts too.
	said := map[string]bool{}
	for i := 3; i < 6; i++ {
		m := regexp.MustCompile(fmt.Sprintf(`127\.0\.0\.1:%d says (\S+)`, sentinelBase+i)).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("kill sentinel-master: no answer of sentinel %d in:\n%s", sentinelBase+i, out)
			continue
		}
		said[strings.TrimSuffix(m[1], ",")] = true
	}
	text := scrapeMetrics(t, exporterPort)
	if len(said) != 1 || said[oldMaster] {
		t.Errorf("kill sentinel-master: the sentinels named %v, want one master other than %s", said, oldMaster)
	} else if !said[newMaster] {
		t.Logf("the sentinels failed over again before the script asked them: %v, not %s", said, newMaster)
		deadline := time.Now().Add(time.Minute)
		for n, _ := seriesValue(text, failovers); n < float64(n1+1) && time.Now().Before(deadline); n, _ = seriesValue(text, failovers) {
			time.Sleep(time.Second)
			text = scrapeMetrics(t, exporterPort)
		}
		if n, _ := seriesValue(text, failovers); n < float64(n1+1) {
			t.Errorf("kill sentinel-master: the sentinels name %v after a second failover, which the exporter did not count (%s%v)", said, failovers, n)
		}
	}
	// The write canary read its key from the new master and says what the
	// old one lost, as /metrics serves it; the replicas were in sync, so a
	// write at most (the one in flight at the kill).
	if c := regexp.MustCompile(`sentinel: the write canary read its key from the new master: (\d+) acknowledged write\(s\) of (\S+) lost`).FindStringSubmatch(out); c == nil {
		t.Errorf("kill sentinel-master did not print what the write canary counted:\n%s", out)
	} else {
		lost, _ := strconv.Atoi(c[1])
		served, ok := seriesValue(text, fmt.Sprintf(`redis_sentinel_canary_acknowledged_lost_writes_total{address=%q,master="mymaster",sentinel_cluster="demo"} `, oldMaster))
		if c[2] != oldMaster || !ok || float64(lost) != served || lost > 1 {
			t.Errorf("kill sentinel-master: the canary counted %d lost of %s; /metrics serves %v (%v) for %s; want the old master's count, at most 1", lost, c[2], served, ok, oldMaster)
		}
	}
	if after, ok := seriesValue(text, failovers); !ok || after <= before {
		t.Errorf("after kill sentinel-master: %s%v (served: %v), was %v", failovers, after, ok, before)
	}
}

// seriesValue is the value of the series whose line starts with prefix
// (name, labels and a space).
func seriesValue(text, prefix string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// mirrorStallSeconds is how long the test stalls the demo's mirror flow: its
// stall_after (10s) and a few seconds for the exporter to see it.
const mirrorStallSeconds = 15

// checkMirrorStall runs `mirror-stall` on the demo's MirrorMaker and checks,
// from the exporter's /metrics read meanwhile, that the flow's heartbeat
// ages past its stall_after and the flow counts as stalled, that the DR
// cluster lacks records at the end of the stall, and that the flow recovers
// after SIGCONT.
func checkMirrorStall(t *testing.T, demo func(time.Duration, ...string) string, exporterPort int) {
	t.Helper()
	type reading struct {
		maxAge      float64
		stalledSeen bool
	}
	done := make(chan struct{})
	readings := make(chan reading, 1)
	go func() {
		var r reading
		defer func() { readings <- r }()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			text, err := fetchMetrics(exporterPort)
			if err != nil {
				continue
			}
			if age, ok := mirrorValue(text, "kafka_mirror_heartbeat_age_seconds"); ok && age > r.maxAge {
				r.maxAge = age
			}
			if stalled, ok := mirrorValue(text, "kafka_mirror_stalled"); ok && stalled == 1 {
				r.stalledSeen = true
			}
		}
	}()
	start := time.Now()
	out := demo(2*time.Minute, "mirror-stall", strconv.Itoa(mirrorStallSeconds))
	close(done)
	r := <-readings
	t.Logf("mirror-stall %d took %s; during it the heartbeat's age reached %.1fs", mirrorStallSeconds, time.Since(start).Round(100*time.Millisecond), r.maxAge)

	if !regexp.MustCompile(`mirror: kafka_mirror_stalled 0 -> 1 after [\d.]+s`).MatchString(out) {
		t.Errorf("mirror-stall did not report the flow stalled")
	}
	if !r.stalledSeen || r.maxAge < 10 {
		t.Errorf("during a %ds stall: kafka_mirror_stalled 1 seen %v, heartbeat age up to %.1fs; want 1 and at least stall_after (10s)", mirrorStallSeconds, r.stalledSeen, r.maxAge)
	}
	// The producer writes 4 records a second to topic demo.
	if m := regexp.MustCompile(`dr would lack (\d+) records`).FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Errorf("mirror-stall: records not replicated at the end of the stall %v, want some", m)
	}
	if !regexp.MustCompile(`mirror: caught up: kafka_mirror_stalled 0 after [\d.]+s`).MatchString(out) {
		t.Errorf("mirror-stall did not report the flow caught up")
	}
	text := scrapeMetrics(t, exporterPort)
	up, _ := mirrorValue(text, "kafka_mirror_up")
	stalled, _ := mirrorValue(text, "kafka_mirror_stalled")
	age, ok := mirrorValue(text, "kafka_mirror_heartbeat_age_seconds")
	if up != 1 || stalled != 0 || !ok || age >= 5 {
		t.Errorf("after mirror-stall: kafka_mirror_up %v, kafka_mirror_stalled %v, heartbeat age %v (served: %v); want 1, 0, under 5", up, stalled, age, ok)
	}
}

// mirrorValue is the value of the demo mirror flow's series NAME in the
// exposition text.
func mirrorValue(text, name string) (float64, bool) {
	prefix := name + `{mirror="demo-dr",source_cluster="demo",target_cluster="dr"} `
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

type demoPID struct {
	what string
	pid  int
}

// demoPIDs reads every PID file the demo and the cluster scripts keep.
func demoPIDs(t *testing.T, dir string) []demoPID {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.pid", "kafka/node-*/pid", "kafka-dr/node-*/pid", "mirror/pid", "redis/*/redis.pid", "sentinel/*/redis.pid"} {
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
	// 3 brokers and their controllers, the DR broker and its controller,
	// 6 Redis nodes and their buses, the Sentinel deployment's 3 data nodes
	// and 3 sentinels, the exporter, Prometheus, Alertmanager.
	if len(ports) != 29 {
		t.Fatalf("scripts/demo.sh ports lists %d ports, want 29:\n%s", len(ports), stdout)
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
	kafkaBase := lab.PickBasePort(t, 0, 1, 2, 3, 100, 101, 102, 103)
	redisBase := lab.PickBasePort(t, 0, 1, 2, 3, 4, 5, 10000, 10001, 10002, 10003, 10004, 10005)
	sentinelBase := lab.PickBasePort(t, 0, 1, 2, 3, 4, 5)
	servicesBase := lab.PickBasePort(t, 0, 1, 2)
	taken := servicesBase + 1
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(taken))
	if err != nil {
		t.Fatalf("listen on %d: %v", taken, err)
	}
	defer l.Close()
	env := []string{
		"DEMO_KAFKA_BASE_PORT=" + strconv.Itoa(kafkaBase),
		"DEMO_KAFKA_DR_PORT=" + strconv.Itoa(kafkaBase+3),
		"DEMO_REDIS_BASE_PORT=" + strconv.Itoa(redisBase),
		"DEMO_SENTINEL_BASE_PORT=" + strconv.Itoa(sentinelBase),
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
	text, err := fetchMetrics(port)
	if err != nil {
		t.Fatalf("scrape exporter: %v", err)
	}
	return text
}

// fetchMetrics reads the exporter's /metrics; safe outside the test's goroutine.
func fetchMetrics(port int) (string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read /metrics: %w", err)
	}
	return string(b), nil
}
