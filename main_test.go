package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/go-kit/log"

	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
)

// runArgs runs the command line in-process and returns its exit code and
// everything it printed.
func runArgs(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	code := run(args, out, out)
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

// TestBadFlagsNameTheFlag: every flag the start would fail on (or, worse,
// accept and then never work with) is refused by --config.check and by the
// start alike, with one message naming the flag and no secret in it.
func TestBadFlagsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	brokenWebConfig := write("web.yml", "tls_server_config:\n  cert_file: [not, a, string]\n")
	unknownKeyWebConfig := write("web-typo.yml", "basic_auth_user:\n  u: x\n")
	hugeConfig := write("huge.yml", "redis:\n  - addrs: [127.0.0.1:1]\n"+strings.Repeat("#\n", 600_000))
	redisConfig := write("redis.yml", "redis:\n  - addrs: [127.0.0.1:1]\n")
	hugeWebConfig := write("huge-web.yml", strings.Repeat("#\n", 600_000))
	zeroCertWebConfig := write("zero-cert.yml", "tls_server_config:\n  cert_file: /dev/zero\n  key_file: missing-key.pem\n")
	kafka := "--kafka.server=127.0.0.1:9092"
	redis := "--redis.addr=127.0.0.1:7000"
	// The start mode listens on a port this test holds: should a case pass
	// every check, the start fails at once instead of serving forever.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cases := []struct {
		name string
		args []string
		want string
		// notWant must not appear in the output.
		notWant []string
	}{
		{"telemetry path without slash", []string{kafka, "--web.telemetry-path=metrics"}, `--web.telemetry-path "metrics" must start with /, as in /metrics`, nil},
		{"empty telemetry path", []string{kafka, "--web.telemetry-path="}, `--web.telemetry-path "" must start with /`, nil},
		{"telemetry path with a space", []string{kafka, "--web.telemetry-path=/a b"}, `--web.telemetry-path "/a b": use only letters, digits and / - . _ ~`, nil},
		{"telemetry path on /-/ready", []string{kafka, "--web.telemetry-path=/-/ready"}, `--web.telemetry-path "/-/ready" collides with the exporter's /-/healthy, /-/ready and /-/reload`, nil},
		{"telemetry path on /-/reload", []string{kafka, "--web.telemetry-path=/-/reload"}, `--web.telemetry-path "/-/reload" collides`, nil},
		{"telemetry path on pprof", []string{kafka, "--web.enable-pprof", "--web.telemetry-path=/debug/pprof"}, `--web.telemetry-path "/debug/pprof" collides with /debug/pprof/`, nil},
		{"zero refresh interval", []string{kafka, "--refresh.interval=0"}, "--refresh.interval 0s must be positive (at least 100ms)", []string{"refresh_timeout", "5s"}},
		{"negative refresh interval", []string{kafka, "--refresh.interval=-5s"}, "--refresh.interval -5s must be positive", []string{"refresh_timeout"}},
		{"huge refresh interval", []string{kafka, "--refresh.interval=1000000h"}, "--refresh.interval 1000000h0m0s is longer than 1h0m0s", []string{"refresh_timeout"}},
		{"kafka version not a version", []string{kafka, "--kafka.version=abc"}, `--kafka.version "abc" is not a Kafka version; give one such as 3.0.0`, nil},
		{"kafka version too old", []string{kafka, "--kafka.version=1.0.0"}, "--kafka.version 1.0.0 is older than 2.1.0", nil},
		{"ipv6 without brackets", []string{"--kafka.server=::1:9092"}, `--kafka.server: bootstrap server "::1:9092": an IPv6 address needs brackets, as in [::1]:9092`, nil},
		{"url scheme", []string{"--kafka.server=http://host:9092"}, `--kafka.server: bootstrap server "http://host:9092": give HOST:PORT without a scheme (http://)`, nil},
		{"port out of range", []string{"--kafka.server=host:99999"}, `port 99999 is outside 1-65535`, nil},
		{"port zero", []string{"--redis.addr=host:0"}, `--redis.addr: addr "host:0": port 0 is outside 1-65535`, nil},
		{"bootstrap server not an IP", []string{"--kafka.server=256.1.1.1:9092"}, `--kafka.server: bootstrap server "256.1.1.1:9092": "256.1.1.1" is not an IP address`, nil},
		{"redis url with password", []string{"--redis.addr=redis://:Sekrit-pw-42@host:6379"}, `--redis.addr: addr "redis://REDACTED@host:6379": give HOST:PORT without a scheme (redis://)`, []string{"Sekrit-pw-42"}},
		{"password file without cluster", []string{kafka, "--redis.password-file=" + brokenWebConfig}, "--redis.password-file is for the --redis.addr cluster", nil},
		{"missing password file", []string{"--redis.addr=127.0.0.1:7000", "--redis.password-file=" + filepath.Join(dir, "no-pw")}, "password: secret file: stat " + filepath.Join(dir, "no-pw") + ": no such file or directory", nil},
		// The YAML parser lists its errors on lines of their own.
		{"broken web config", []string{kafka, "--web.config.file=" + brokenWebConfig}, "--web.config.file " + brokenWebConfig + ": yaml: unmarshal errors:\n  line 2: cannot unmarshal !!seq into string", nil},
		{"web config with a typo", []string{kafka, "--web.config.file=" + unknownKeyWebConfig}, "--web.config.file " + unknownKeyWebConfig + ": yaml: unmarshal errors:\n  line 1: field basic_auth_user not found", nil},
		{"missing web config", []string{kafka, "--web.config.file=" + filepath.Join(dir, "no-web.yml")}, "--web.config.file: stat " + filepath.Join(dir, "no-web.yml") + ": no such file or directory", nil},
		// It hung the check while memory grew.
		{"web config /dev/zero", []string{kafka, "--web.config.file=/dev/zero"}, "--web.config.file: /dev/zero is not a regular file", nil},
		{"web config over 1 MiB", []string{kafka, "--web.config.file=" + hugeWebConfig}, "--web.config.file: " + hugeWebConfig + " is larger than 1 MiB", nil},
		// The TLS files too: exporter-toolkit reads them without a bound.
		{"web config with /dev/zero as certificate", []string{kafka, "--web.config.file=" + zeroCertWebConfig},
			"--web.config.file " + zeroCertWebConfig + ": tls_server_config.cert_file: /dev/zero is not a regular file but a device\n" +
				// A relative name is read from the web config's directory.
				"--web.config.file " + zeroCertWebConfig + ": tls_server_config.key_file: stat " + filepath.Join(dir, "missing-key.pem") + ": no such file or directory", nil},
		{"listen address without port", []string{kafka, "--web.listen-address=localhost"}, `--web.listen-address "localhost": want [HOST]:PORT, as in :9877`, nil},
		{"listen address not an IP", []string{kafka, "--web.listen-address=256.1.1.1:9877"}, `--web.listen-address "256.1.1.1:9877": "256.1.1.1" is not an IP address; give one such as 127.0.0.1`, nil},
		{"listen address twice", []string{kafka, "--web.listen-address=127.0.0.1:9877", "--web.listen-address=127.0.0.1:9877"}, `--web.listen-address "127.0.0.1:9877" is given twice; give each address once`, nil},
		// http.ServeMux redirects unclean paths: nothing served the metrics.
		{"telemetry path /..", []string{kafka, "--web.telemetry-path=/.."}, `--web.telemetry-path "/.." is not a clean path (no //, /./, /../ or trailing /): requests for it are redirected to "/"`, nil},
		{"telemetry path /.", []string{kafka, "--web.telemetry-path=/."}, `--web.telemetry-path "/." is not a clean path`, nil},
		{"telemetry path //metrics", []string{kafka, "--web.telemetry-path=//metrics"}, `--web.telemetry-path "//metrics" is not a clean path (no //, /./, /../ or trailing /): requests for it are redirected to "/metrics"`, nil},
		{"telemetry path with trailing slash", []string{kafka, "--web.telemetry-path=/metrics/"}, `--web.telemetry-path "/metrics/" is not a clean path`, nil},
		{"telemetry path on the event log", []string{kafka, "--web.telemetry-path=/api/v1/events"}, `--web.telemetry-path "/api/v1/events" collides with the exporter's API under /api/v1/`, nil},
		{"telemetry path on the API", []string{kafka, "--web.telemetry-path=/api/v1"}, `--web.telemetry-path "/api/v1" collides with the exporter's API under /api/v1/`, nil},
		{"telemetry path on /-/healthy", []string{kafka, "--web.telemetry-path=/-/healthy"}, `--web.telemetry-path "/-/healthy" collides`, nil},
		// Flag-only settings are refused when they would be ignored, and
		// invalid values whenever they are given.
		{"invalid topic filter", []string{kafka, "--kafka.topic-filter=(["}, `--kafka.topic-filter "([" is not a regular expression: missing closing ] in "["; give one such as orders|payments\..*`, nil},
		{"invalid topic filter without kafka", []string{redis, "--kafka.topic-filter=(["}, `--kafka.topic-filter "([" is not a regular expression`, nil},
		{"invalid topic exclude", []string{kafka, "--kafka.topic-exclude=a)("}, `--kafka.topic-exclude "a)(" is not a regular expression: unexpected ) in "a)("`, nil},
		{"topic filter without kafka", []string{redis, "--kafka.topic-filter=orders"}, "--kafka.topic-filter filters the topics of the --kafka.server cluster and does nothing without --kafka.server; give --kafka.server, or set topics: {include: ...} in the config file", nil},
		{"topic exclude without kafka", []string{redis, "--kafka.topic-exclude=orders"}, "--kafka.topic-exclude filters the topics of the --kafka.server cluster and does nothing without --kafka.server", nil},
		{"kafka name without kafka", []string{redis, "--kafka.cluster-name=orders"}, "--kafka.cluster-name names the --kafka.server cluster and does nothing without --kafka.server; give --kafka.server, or set name: in the config file", nil},
		{"kafka name without kafka, default value", []string{redis, "--kafka.cluster-name=kafka"}, "--kafka.cluster-name names the --kafka.server cluster and does nothing without --kafka.server", nil},
		{"redis name without redis", []string{kafka, "--redis.cluster-name=sessions"}, "--redis.cluster-name names the --redis.addr cluster and does nothing without --redis.addr; give --redis.addr, or set name: in the config file", nil},
		{"kafka version without kafka", []string{redis, "--kafka.version=3.6.0"}, "--kafka.version is for the --kafka.server cluster and does nothing without --kafka.server", nil},
		{"partition metrics without kafka", []string{redis, "--kafka.partition-metrics=full"}, "--kafka.partition-metrics is for the --kafka.server cluster and does nothing without --kafka.server", nil},
		{"no partition metrics without kafka", []string{redis, "--no-kafka.partition-metrics"}, "--no-kafka.partition-metrics is for the --kafka.server cluster and does nothing without --kafka.server", nil},
		{"partition metrics contradict", []string{kafka, "--kafka.partition-metrics=full", "--no-kafka.partition-metrics"}, "--no-kafka.partition-metrics (none) contradicts --kafka.partition-metrics=full; give one of them", nil},
		{"refresh interval with only a config file", []string{"--config.file=" + redisConfig, "--refresh.interval=1s"}, "--refresh.interval is for the clusters given by --kafka.server, --redis.addr and --sentinel.addr, and there are none; set refresh_interval: for each cluster of the config file", nil},
		{"no events kept", []string{kafka, "--events.capacity=0"}, "--events.capacity 0 must be at least 1", nil},
		// The start allocated the ring and died: fatal error: runtime: out of memory.
		{"events capacity beyond memory", []string{kafka, "--events.capacity=200000000"}, "--events.capacity 200000000 is more than 100000, the most the event log keeps", nil},
		{"idle timeout", []string{kafka, "--web.idle-timeout=0s"}, "--web.idle-timeout 0s must be positive", nil},
		{"config file over 1 MiB", []string{"--config.file=" + hugeConfig}, "config file " + hugeConfig + " is larger than 1024 KiB", nil},
		{"cluster name not UTF-8", []string{kafka, "--kafka.cluster-name=caf\xe9"}, `kafka cluster 1: name "caf\xe9" is not valid UTF-8`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, mode := range [][]string{{"--config.check"}, {"--web.listen-address=" + busy.Addr().String()}} {
				code, out := runArgs(t, append(c.args, mode...)...)
				if code != 1 || strings.Count(out, c.want) != 1 {
					t.Errorf("%s: exit %d, output %q; want exit 1 and %q once", mode[0], code, out, c.want)
				}
				if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != strings.Count(c.want, "\n")+1 {
					t.Errorf("%s: %d lines of output, want one message:\n%s", mode[0], lines, out)
				}
				for _, nw := range c.notWant {
					if strings.Contains(out, nw) {
						t.Errorf("%s: output %q contains %q", mode[0], out, nw)
					}
				}
			}
		})
	}
}

func TestGoodFlagsPassTheCheck(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--kafka.server=[::1]:9092", "--kafka.version=2.1.0", "--refresh.interval=1h"},
		{"--kafka.server=127.0.0.1:9092", "--kafka.partition-metrics=unhealthy"},
		{"--kafka.server=127.0.0.1:9092", "--no-kafka.partition-metrics"},
		{"--redis.addr=127.0.0.1:7000", "--redis.password-file=" + pw, "--web.telemetry-path=/custom/metrics"},
		{"--redis.addr=127.0.0.1:7000", "--web.telemetry-path=/", "--web.enable-pprof"},
		{"--redis.addr=127.0.0.1:7000", "--events.capacity=100000"},
		{"--kafka.server=127.0.0.1:9092", "--kafka.partition-metrics=none", "--no-kafka.partition-metrics"},
		{"--kafka.server=127.0.0.1:9092", "--kafka.cluster-name=orders", "--kafka.topic-filter=orders|payments\\..*", "--kafka.topic-exclude=.*-dlq"},
		{"--redis.addr=127.0.0.1:7000", "--redis.cluster-name=sessions", "--refresh.interval=1s", "--web.telemetry-path=/debug/pprof"},
		{"--redis.addr=127.0.0.1:7000", "--web.telemetry-path=/api/metrics", "--web.enable-pprof"},
		// Port 0 twice is two free ports; a name of this machine resolves.
		{"--redis.addr=127.0.0.1:7000", "--web.listen-address=127.0.0.1:0", "--web.listen-address=127.0.0.1:0", "--web.listen-address=localhost:0"},
	} {
		// A free port, unless the case gives its own: the check binds it.
		if !strings.Contains(strings.Join(args, " "), "--web.listen-address") {
			args = append(args, "--web.listen-address=127.0.0.1:0")
		}
		code, out := runArgs(t, append(args, "--config.check")...)
		if code != 0 || !strings.Contains(out, "configuration is valid") {
			t.Errorf("%v: exit %d, output %q", args, code, out)
		}
	}
}

func TestTuneRuntime(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)

	t.Setenv("GOGC", "")
	runtime.MemProfileRate = 512 << 10
	tuneRuntime(false, log.NewNopLogger())
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, defaultGCPercent)
	}
	if runtime.MemProfileRate != 0 {
		t.Errorf("without pprof: MemProfileRate %d, want 0", runtime.MemProfileRate)
	}

	// The runtime has applied GOGC from the environment; it is left alone,
	// and so is heap sampling when the profile is served.
	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200)
	runtime.MemProfileRate = 512 << 10
	tuneRuntime(true, log.NewNopLogger())
	if got := debug.SetGCPercent(100); got != 200 {
		t.Errorf("GOGC=200: GC percent %d, want 200", got)
	}
	if runtime.MemProfileRate != 512<<10 {
		t.Errorf("with pprof: MemProfileRate %d, want %d", runtime.MemProfileRate, 512<<10)
	}
}

// The partition-metrics flag was a boolean before modes; its negation
// still turns per-partition series off.
func TestPartitionMetricsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want kafkasettings.PartitionMetrics
	}{
		{[]string{"--kafka.server=127.0.0.1:9092", "--kafka.partition-metrics=lean"}, kafkasettings.PartitionMetricsLean},
		{[]string{"--kafka.server=127.0.0.1:9092", "--kafka.partition-metrics=unhealthy"}, kafkasettings.PartitionMetricsUnhealthy},
		{[]string{"--kafka.server=127.0.0.1:9092", "--no-kafka.partition-metrics"}, kafkasettings.PartitionMetricsNone},
	} {
		cl, cmd, err := parseCommandLine(c.args, io.Discard, io.Discard)
		if err != nil || cmd != "serve" {
			t.Fatalf("%v: command %q, %v", c.args, cmd, err)
		}
		cfg, err := loadConfig(cl.serveFlags)
		if err != nil {
			t.Fatal(err)
		}
		if got := kafkasettings.Clusters(cfg)[0].PartitionMetrics; got != c.want {
			t.Errorf("flags %v: partition_metrics %q, want %q", c.args, got, c.want)
		}
	}
}

// TestFlagValuesNameTheFlag: a value that does not parse is refused by the
// flag's name and the form it wants, never with kingpin's bare
// "strconv.ParseFloat" or "time: missing unit", and counts are whole
// numbers: 1.5 is not read as 1, nor an overflow as a negative number.
func TestFlagValuesNameTheFlag(t *testing.T) {
	for _, c := range []struct{ arg, want string }{
		{"--events.capacity=abc", `--events.capacity "abc" is not a whole number; give one from 1 to 100000`},
		{"--events.capacity=1.5", `--events.capacity "1.5" is not a whole number; give one from 1 to 100000`},
		{"--events.capacity=", `--events.capacity "" is not a whole number`},
		{"--events.capacity=99999999999999999999", "--events.capacity 99999999999999999999 is out of range; give a whole number from 1 to 100000"},
		{"--events.capacity=-99999999999999999999", "--events.capacity -99999999999999999999 is out of range"},
		{"--refresh.interval=5", `--refresh.interval "5" has no unit; write a duration such as 5s or 5ms`},
		{"--refresh.interval=soon", `--refresh.interval "soon" is not a duration; write one such as 5s, 500ms or 2m`},
		{"--refresh.interval=1000000000h", `--refresh.interval "1000000000h" is not a duration`},
		{"--web.idle-timeout=30", `--web.idle-timeout "30" has no unit; write a duration such as 30s or 30ms`},
		{"--log.level=loud", "--log.level: enum value must be one of debug,info,warn,error, got 'loud'"},
		{"--log.format=xml", "--log.format: enum value must be one of logfmt,json, got 'xml'"},
		{"--kafka.partition-metrics=sparse", "--kafka.partition-metrics: enum value must be one of lean,unhealthy,full,none, got 'sparse'"},
		// kingpin says only "unexpected true" when a switch gets a value.
		{"--web.enable-pprof=true", "--web.enable-pprof takes no value: write --web.enable-pprof to turn it on, or leave it out"},
		{"--web.systemd-socket=false", "--web.systemd-socket takes no value"},
	} {
		for _, mode := range []string{"--config.check", "--web.listen-address=127.0.0.1:0"} {
			code, out := runArgs(t, "--kafka.server=127.0.0.1:9092", c.arg, mode)
			if code != 2 || strings.Count(out, c.want) != 1 || strings.Contains(out, "strconv.") || strings.Contains(out, "time: ") {
				t.Errorf("%s %s: exit %d, output %q; want exit 2 and %q", c.arg, mode, code, out, c.want)
			}
		}
	}
	// Negative and zero counts parse, and the range check names the flag.
	if code, out := runArgs(t, "--kafka.server=127.0.0.1:9092", "--events.capacity=-5", "--config.check"); code != 1 || !strings.Contains(out, "--events.capacity -5 must be at least 1") {
		t.Errorf("--events.capacity=-5: exit %d, output %q", code, out)
	}
}

// TestListenAddressesAreBoundByCheckAndStart: --config.check binds each
// listen address and lets it go, as the start binds it, so an address a
// start cannot bind is refused by both, naming the flag and the address.
func TestListenAddressesAreBoundByCheckAndStart(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, heldPort, _ := net.SplitHostPort(held.Addr().String())
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, freePort, _ := net.SplitHostPort(free.Addr().String())
	free.Close()
	cases := []struct {
		name string
		args []string
		want string
	}{
		// 192.0.2.0/24 is TEST-NET-1, on no interface.
		{"address on no interface", []string{"--web.listen-address=192.0.2.1:9877"}, `--web.listen-address "192.0.2.1:9877": no interface of this machine has that address; give one of its addresses, or :PORT for every interface`},
		{"host that does not resolve", []string{"--web.listen-address=nosuch.invalid:9877"}, `--web.listen-address "nosuch.invalid:9877": host "nosuch.invalid" does not resolve`},
		{"every interface and one of them", []string{"--web.listen-address=:" + freePort, "--web.listen-address=127.0.0.1:" + freePort},
			`--web.listen-address "127.0.0.1:` + freePort + `": port ` + freePort + ` is already taken by an earlier --web.listen-address ([::]:` + freePort + `); give each address once`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, mode := range []string{"--config.check", "--log.level=info"} {
				code, out := runArgs(t, append([]string{"--kafka.server=127.0.0.1:9092", mode}, c.args...)...)
				if code != 1 || strings.Count(out, c.want) != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
					t.Errorf("%s: exit %d, output %q; want exit 1 and only %q", mode, code, out, c.want)
				}
			}
		})
	}

	// A port another process holds stops the start. The check only warns:
	// it often runs beside the exporter it checks, which holds the port.
	busy := "--web.listen-address=" + held.Addr().String()
	want := `--web.listen-address "127.0.0.1:` + heldPort + `": address already in use: another process listens there`
	if code, out := runArgs(t, "--kafka.server=127.0.0.1:9092", busy); code != 1 || !strings.Contains(out, "failover_exporter: "+want) {
		t.Errorf("start on a held port: exit %d, output %q; want exit 1 and %q", code, out, want)
	}
	code, out := runArgs(t, "--kafka.server=127.0.0.1:9092", busy, "--config.check")
	if code != 0 || !strings.Contains(out, "level=warn") || !strings.Contains(out, "a start would fail unless the address is freed") || !strings.Contains(out, "configuration is valid") {
		t.Errorf("check on a held port: exit %d, output %q; want exit 0, a warning and valid", code, out)
	}
}
