// Package promtest runs real Prometheus and Alertmanager processes (the
// Debian packages) on 127.0.0.1 for end-to-end tests, and queries their HTTP
// APIs with the standard library only.
//
// Like internal/lab, the helpers fail the test, never skip it, when a binary
// is missing: a missing dependency must show up as a red test that says how
// to fix it.
package promtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// Binaries, as the Debian packages install them.
const (
	prometheusBinary   = "prometheus"
	promtoolBinary     = "promtool"
	alertmanagerBinary = "prometheus-alertmanager"
)

// lookPath returns the path of a binary or fails the test saying how to
// install it.
func lookPath(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("promtest: %s not found in PATH: run scripts/install-deps.sh prometheus "+
			"(or: apt-get install -y prometheus prometheus-alertmanager)", name)
	}
	return path
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("promtest: no free port on 127.0.0.1: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process is a long-running child started by this package.
type process struct {
	name string
	cmd  *exec.Cmd
	logs *lab.SyncBuffer
	done chan struct{}
}

// startProcess runs bin with args, stops it at cleanup (SIGTERM, then
// SIGKILL), and prints its log if the test failed.
func startProcess(t testing.TB, name, bin string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	logs := &lab.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// If the test binary dies without running its cleanups, take the child
	// with it rather than leave it listening.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("promtest: start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("promtest: %s log (tail):\n%s", name, tail(p.logs.String(), 40))
		}
	})
	return p
}

func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitReady polls url until it answers 200, failing the test if the process
// exits or timeout passes.
func (p *process) waitReady(t testing.TB, url string, timeout time.Duration) time.Duration {
	t.Helper()
	client := http.Client{Timeout: 2 * time.Second}
	start := time.Now()
	var last string
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			t.Fatalf("promtest: %s exited at start:\n%s", p.name, tail(p.logs.String(), 40))
		default:
		}
		if time.Since(start) > timeout {
			t.Fatalf("promtest: %s not ready at %s after %s (%s):\n%s", p.name, url, timeout, last, tail(p.logs.String(), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// runTool runs a short command to completion with a deadline.
func runTool(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

// quote renders s as a YAML double-quoted scalar.
func quote(s string) string { return fmt.Sprintf("%q", s) }
