package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redisLab is what the Redis Cluster and Sentinel labs share: the script
// that runs the lab (scripts/redis/cluster.sh or scripts/redis/sentinel.sh)
// with the lab's environment, and the commands both scripts take for one
// process by its port (pid, stop-node, start-node, pause, resume).
type redisLab struct {
	// script is the lab's script.
	script string
	// env is the lab's environment for the script, after the test's own.
	env func() []string
	// timeout bounds each run of the script; 0 for none.
	timeout time.Duration
}

// run runs the script with args and returns its output, stdout and stderr
// together.
func (l *redisLab) run(args ...string) (string, error) {
	argv := append([]string{l.script}, args...)
	if l.timeout > 0 {
		res := Run(l.timeout, l.env(), "bash", argv...)
		return res.Output(), res.Err
	}
	cmd := exec.Command("bash", argv...)
	cmd.Env = append(os.Environ(), l.env()...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustRun is run failing the test on error.
func (l *redisLab) mustRun(t testing.TB, args ...string) string {
	t.Helper()
	out, err := l.run(args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(l.script), strings.Join(args, " "), err, out)
	}
	return out
}

// PID returns the process id of the running lab process (a node or a
// sentinel) on port.
func (l *redisLab) PID(t testing.TB, port int) int {
	t.Helper()
	out := strings.TrimSpace(l.mustRun(t, "pid", strconv.Itoa(port)))
	pid, err := strconv.Atoi(out)
	if err != nil {
		t.Fatalf("%s pid %d: %q is not a pid", filepath.Base(l.script), port, out)
	}
	return pid
}

// Stop stops the lab process on port cleanly (SIGTERM).
func (l *redisLab) Stop(t testing.TB, port int) {
	t.Helper()
	l.mustRun(t, "stop-node", strconv.Itoa(port))
}

// Restart starts a stopped or killed lab process again with its own
// config: a cluster node with its nodes.conf, so it rejoins the cluster as
// the same node; a Sentinel lab process with its config file, as Sentinel
// last rewrote it.
func (l *redisLab) Restart(t testing.TB, port int) {
	t.Helper()
	l.mustRun(t, "start-node", strconv.Itoa(port))
}

// Pause stops the lab process on port with SIGSTOP: it keeps its sockets
// but answers nothing.
func (l *redisLab) Pause(t testing.TB, port int) {
	t.Helper()
	l.mustRun(t, "pause", strconv.Itoa(port))
}

// Resume continues a paused lab process.
func (l *redisLab) Resume(t testing.TB, port int) {
	t.Helper()
	l.mustRun(t, "resume", strconv.Itoa(port))
}

// runCLI runs the CLI at cliPath with args and returns its stdout and
// stderr. redis-cli has no overall timeout, and a paused process would hang
// it: it is killed after timeout.
func runCLI(cliPath string, timeout time.Duration, args []string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliPath, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// cliError is the error of a failed CLI run, with what it said.
func cliError(err error, said string) error {
	return fmt.Errorf("%w: %s", err, strings.TrimSpace(said))
}
