package main

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/failover-exporter/failover_exporter/config"
	kafkasettings "github.com/failover-exporter/failover_exporter/systems/kafka/settings"
	redissettings "github.com/failover-exporter/failover_exporter/systems/redis/settings"
	"github.com/failover-exporter/failover_exporter/systems/redis/slotcmd"
)

// help returns the help of the command line args, as --help prints it
// at 80 columns.
func help(t *testing.T, args ...string) string {
	t.Helper()
	t.Setenv("COLUMNS", "80")
	out, err := os.CreateTemp(t.TempDir(), "help")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	newCommandLine(out, out).app.Usage(args)
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commandFlags are the long flags of the command named, as help shows
// them (--name= or --[no-]name), hidden ones left out.
func commandFlags(t *testing.T, name string) map[string]bool {
	t.Helper()
	cl := newCommandLine(os.Stdout, os.Stderr)
	if _, err := cl.app.ParseContext(nil); err != nil { // runs kingpin's init
		t.Fatal(err)
	}
	cmd := commandNamed(cl.app.Model(), name)
	if cmd == nil {
		t.Fatalf("no command %q", name)
	}
	shown := map[string]bool{}
	for _, fm := range cmd.Flags {
		if fm.Hidden {
			continue
		}
		if fm.IsBoolFlag() {
			shown["--[no-]"+fm.Name] = true
		} else {
			shown["--"+fm.Name+"="] = true
		}
	}
	return shown
}

// scopeCount is how many budget scopes the registry's systems declare:
// safe-to-stop has a flag for each.
func scopeCount() int {
	n := 0
	for _, s := range budgetSystems() {
		n += len(s.Scopes)
	}
	return n
}

// TestEachCommandsHelpShowsItsOwnFlags: safe-to-stop and slot list only
// their flags (the safe-to-stop help was 116 lines, 80 of them the
// server's), while the bare command line and serve, which both run the
// server, list every server flag as before.
func TestEachCommandsHelpShowsItsOwnFlags(t *testing.T) {
	serverFlags := commandFlags(t, "serve")
	if len(serverFlags) < 20 {
		t.Fatalf("%d server flags: %v", len(serverFlags), serverFlags)
	}
	for _, c := range []struct {
		command  string
		maxLines int
	}{{"safe-to-stop", 54 + 2*scopeCount()}, {"slot", 24}} { // a scope's flag takes one or two lines; --announce and its three, 12
		out := help(t, c.command)
		own := commandFlags(t, c.command)
		for flag := range serverFlags {
			if !own[flag] && strings.Contains(out, flag) {
				t.Errorf("%s --help shows the server's %s", c.command, flag)
			}
		}
		for flag := range own {
			if !strings.Contains(out, flag) {
				t.Errorf("%s --help leaves out its own %s", c.command, flag)
			}
		}
		if lines := strings.Count(out, "\n"); lines > c.maxLines {
			t.Errorf("%s --help is %d lines, want at most %d:\n%s", c.command, lines, c.maxLines, out)
		}
	}
	for _, c := range []struct {
		args  []string
		usage string
	}{{nil, "usage: failover_exporter [<flags>] <command> [<args> ...]\n"}, {[]string{"serve"}, "usage: failover_exporter serve [<flags>]\n"}} {
		out := help(t, c.args...)
		for flag := range serverFlags {
			if !strings.Contains(out, flag) {
				t.Errorf("%v --help leaves out the server's %s", c.args, flag)
			}
		}
		if !strings.HasPrefix(out, c.usage) {
			t.Errorf("%v --help does not start with %q:\n%s", c.args, c.usage, out)
		}
	}
	if out := help(t); !strings.Contains(out, "Commands:") || !strings.Contains(out, "safe-to-stop [<flags>]") || !strings.Contains(out, "serve* [<flags>]") {
		t.Errorf("--help lists no commands:\n%s", out)
	}
}

// everyServerFlag sets each flag of the server to a value other than its
// default; TestServerFlagsWithOrWithoutServe checks it names them all.
var everyServerFlag = []string{
	"--config.file=/etc/failover_exporter.yml", "--config.check",
	"--kafka.server=127.0.0.1:9092", "--kafka.server=127.0.0.2:9092", "--kafka.cluster-name=orders", "--kafka.version=3.6.0",
	"--kafka.partition-metrics=full", "--no-kafka.partition-metrics", "--kafka.topic-filter=orders.*", "--kafka.topic-exclude=.*-dlq",
	"--redis.addr=127.0.0.1:7000", "--redis.cluster-name=sessions", "--redis.password-file=/run/pw",
	"--sentinel.addr=127.0.0.1:26379", "--sentinel.cluster-name=cache", "--sentinel.master=mymaster", "--sentinel.password-file=/run/spw", "--sentinel.node-password-file=/run/npw",
	"--refresh.interval=1s", "--web.telemetry-path=/m", "--web.idle-timeout=1m", "--web.enable-pprof",
	"--log.level=debug", "--log.format=json", "--events.capacity=10",
	"--probe.max-targets=5", "--probe.discovered-on-metrics", "--probe.idle-timeout=1m",
	"--web.systemd-socket", "--web.listen-address=127.0.0.1:0", "--web.listen-address=127.0.0.1:1", "--web.config.file=/etc/web.yml",
	"--web.maintenance-token-file=/run/token",
}

// TestServerFlagsWithOrWithoutServe: the server is the default command,
// so each of its flags means the same with no command (as every
// deployment gives them), with serve first, and with serve after them.
func TestServerFlagsWithOrWithoutServe(t *testing.T) {
	cl := newCommandLine(os.Stdout, os.Stderr)
	if _, err := cl.app.ParseContext(nil); err != nil {
		t.Fatal(err)
	}
	for _, fm := range commandNamed(cl.app.Model(), "serve").Flags {
		if !slices.ContainsFunc(everyServerFlag, func(arg string) bool {
			return arg == "--"+fm.Name || strings.HasPrefix(arg, "--"+fm.Name+"=")
		}) {
			t.Errorf("everyServerFlag does not set --%s", fm.Name)
		}
	}
	parse := func(args ...string) flags {
		t.Helper()
		cl, cmd, err := parseCommandLine(args, os.Stdout, os.Stderr)
		if err != nil || cmd != "serve" {
			t.Fatalf("%v: command %q, error %v; want serve", args, cmd, err)
		}
		return cl.serveFlags
	}
	bare := parse(everyServerFlag...)
	if !bare.configCheck || bare.logFormat != "json" || bare.eventCapacity != 10 || !*bare.webConfig.WebSystemdSocket ||
		!slices.Equal(*bare.webConfig.WebListenAddresses, []string{"127.0.0.1:0", "127.0.0.1:1"}) {
		t.Errorf("flags with no command: %+v", bare)
	}
	// The systems' flags: the clusters they describe.
	flagged := &config.Config{}
	for _, c := range bare.clusters {
		if c.Given() {
			if err := c.AddTo(flagged, bare.refreshInterval); err != nil {
				t.Fatal(err)
			}
		}
	}
	kafka, redis := kafkasettings.Clusters(flagged), redissettings.Clusters(flagged)
	if len(kafka) != 1 || len(kafka[0].BootstrapServers) != 2 || kafka[0].Name != "orders" ||
		len(redis) != 1 || redis[0].Name != "sessions" || redis[0].RefreshInterval != time.Second {
		t.Errorf("flags with no command: the clusters %+v %+v", kafka, redis)
	}
	for _, args := range [][]string{
		slices.Concat([]string{"serve"}, everyServerFlag),
		slices.Concat(everyServerFlag[:3], []string{"serve"}, everyServerFlag[3:]),
	} {
		if got := parse(args...); !reflect.DeepEqual(got, bare) {
			t.Errorf("%v:\n%+v\nwant, as with no command:\n%+v", args, got, bare)
		}
	}
	// Defaults are applied with no flag and no command at all.
	if f := parse(); f.logLevel != "info" || f.telemetryPath != "/metrics" || !slices.Equal(*f.webConfig.WebListenAddresses, []string{":9877"}) || f.anyFlagCluster() {
		t.Errorf("no arguments: %+v", f)
	}
	// The whole start, as a deployment runs it, with and without serve.
	for _, args := range [][]string{
		{"--kafka.server=127.0.0.1:9092", "--web.listen-address=127.0.0.1:0", "--log.format=json", "--config.check"},
		{"serve", "--kafka.server=127.0.0.1:9092", "--web.listen-address=127.0.0.1:0", "--log.format=json", "--config.check"},
	} {
		if code, out := runArgs(t, args...); code != 0 || !strings.Contains(out, `"msg":"configuration is valid"`) {
			t.Errorf("%v: exit %d, output %q", args, code, out)
		}
	}
}

// TestFlagOfAnotherCommand: a flag given to a command that does not take
// it is refused (exit 2), naming the flag and the command it belongs to,
// rather than ignored as the server's flags were by the other commands.
func TestFlagOfAnotherCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"safe-to-stop", "--kafka.server=x", "--broker", "1"}, "unknown long flag '--kafka.server': it is a flag of the server (failover_exporter, or failover_exporter serve), not of safe-to-stop"},
		{[]string{"safe-to-stop", "--broker", "1", "--log.level=debug"}, "unknown long flag '--log.level': it is a flag of the server"},
		{[]string{"slot", "--no-web.enable-pprof", "foo"}, "unknown long flag '--no-web.enable-pprof': it is a flag of the server"},
		{[]string{"slot", "--redis.cluster-name=sessions", "--redis.addr=127.0.0.1:7000", "foo"}, "unknown long flag '--redis.cluster-name': it is a flag of the server"},
		{[]string{"slot", "--url=http://127.0.0.1:9877", "foo"}, "unknown long flag '--url': it is a flag of failover_exporter safe-to-stop, not of slot"},
		{[]string{"--kafka.server=127.0.0.1:9092", "--broker", "1"}, "unknown long flag '--broker': it is a flag of failover_exporter safe-to-stop, not of the server"},
		{[]string{"serve", "--redis.addr=127.0.0.1:7000", "--url=http://x"}, "unknown long flag '--url': it is a flag of failover_exporter safe-to-stop, not of the server"},
		// Written before the command, a server flag is still refused by it.
		{[]string{"--log.level=debug", "safe-to-stop", "--broker", "1"}, "unknown long flag '--log.level': it is a flag of the server (failover_exporter, or failover_exporter serve), not of safe-to-stop"},
		{[]string{"--kafka.server=x", "slot", "foo", "slot"}, "unexpected slot: write the command before the flags: failover_exporter slot [<flags>]"},
		{[]string{"--nosuch"}, "unknown long flag '--nosuch'"},
	} {
		code, out := runArgs(t, c.args...)
		if code != 2 || strings.Count(out, c.want) != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v: exit %d, output %q; want exit 2 and only %q", c.args, code, out, c.want)
		}
	}
}

// TestCommandAfterFlags: a command written after its flags worked while
// every flag was the application's, and still does.
func TestCommandAfterFlags(t *testing.T) {
	cl, cmd, err := parseCommandLine([]string{"--redis.addr=127.0.0.1:7000", "slot", "foo", "--redis.password-file=/run/pw", "bar"}, os.Stdout, os.Stderr)
	if err != nil || cmd != "slot" {
		t.Fatalf("command %q, error %v; want slot", cmd, err)
	}
	if want := (slotcmd.Flags{Keys: []string{"foo", "bar"}, Addrs: []string{"127.0.0.1:7000"}, PasswordFile: "/run/pw"}); !reflect.DeepEqual(*cl.commands["slot"].(*slotcmd.Flags), want) {
		t.Errorf("slot flags %+v, want %+v", cl.commands["slot"], want)
	}
	// A key may be a command's name.
	cl, cmd, err = parseCommandLine([]string{"slot", "serve", "slot"}, os.Stdout, os.Stderr)
	if err != nil || cmd != "slot" || !slices.Equal(cl.commands["slot"].(*slotcmd.Flags).Keys, []string{"serve", "slot"}) {
		t.Errorf("slot serve slot: command %q, error %v", cmd, err)
	}
}

// The help template is kingpin's, changed by replacing a piece of it: a
// kingpin whose template no longer has it must fail here, not lose the
// server's flags from --help silently.
func TestUsageTemplateReplacedThePiece(t *testing.T) {
	if strings.Count(usageTemplate, "withDefaultCommandFlags") != 1 || usageTemplate == kingpin.DefaultUsageTemplate {
		t.Errorf("usage template not changed as intended:\n%s", usageTemplate)
	}
}
