// Package lab starts real clusters (Kafka, Redis Cluster, Redis Sentinel)
// on 127.0.0.1 for integration tests, using the project's own scripts under
// scripts/.
//
// Helpers fail the test with t.Fatalf when a cluster cannot be provided; they
// never skip, so a missing dependency shows up as a red test that says how to
// fix it (usually: run scripts/install-deps.sh).
package lab

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory (a test runs in its package directory) that holds
// go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("lab: working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("lab: no go.mod above the working directory")
		}
		dir = parent
	}
}

// WaitFor calls cond every interval until it reports true and returns how
// long that took. cond's message says what it saw; on timeout the test fails
// with the last message.
func WaitFor(t testing.TB, timeout, interval time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("lab: condition not met after %s: %s", timeout, msg)
		}
		time.Sleep(interval)
	}
}

// PortFree reports whether nothing listens on 127.0.0.1:port and it can be
// bound.
func PortFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// PickBasePort returns a random base port from 10000 up such that base+off
// is free on 127.0.0.1 for every offset, and below the kernel's ephemeral
// port range: a port in that range that is free when checked can be taken
// a moment later by any outgoing connection on the machine (the nodes'
// own gossip among them), and then the server fails to bind it.
//
// A free port is not yet a bound one: a test that picks two blocks before
// it starts anything (the demo's Kafka at base+100 and its Redis cluster
// bus at base+10000), or two test processes picking at once (make test
// runs three lanes), could be handed overlapping blocks. So every port of the
// block is also reserved, by a lock on a file per port shared by every
// process on the machine, until the test ends; a process that dies drops
// its locks with it.
func PickBasePort(t testing.TB, offsets ...int) int {
	t.Helper()
	if len(offsets) == 0 {
		offsets = []int{0}
	}
	const low = 10000
	span := ephemeralPortsStart() - low - slices.Max(offsets)
	if span <= 0 {
		t.Fatalf("lab: offsets up to %d do not fit between port %d and the ephemeral range at %d", slices.Max(offsets), low, ephemeralPortsStart())
	}
	for range 200 {
		base := low + rand.IntN(span)
		locks, ok := reservePorts(t, base, offsets)
		if !ok {
			continue
		}
		free := true
		for _, off := range offsets {
			if !PortFree(base + off) {
				free = false
				break
			}
		}
		if free {
			t.Cleanup(func() { releasePorts(locks) })
			return base
		}
		releasePorts(locks)
	}
	t.Fatalf("lab: no free port block for offsets %v on 127.0.0.1", offsets)
	return 0
}

// portLockDir holds one lock file per reserved port, shared by every test
// process of the machine's user.
func portLockDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("failover-exporter-ports-%d", os.Getuid()))
}

// reservePorts takes an exclusive lock for each port of the block, or none
// of them: false when another test (in this process or another) holds one.
// flock locks belong to the open file, so a second open in the same
// process conflicts too.
func reservePorts(t testing.TB, base int, offsets []int) ([]*os.File, bool) {
	t.Helper()
	dir := portLockDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("lab: port reservations: %v", err)
	}
	var locks []*os.File
	for _, off := range offsets {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(base+off)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			releasePorts(locks)
			t.Fatalf("lab: port reservations: %v", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			releasePorts(locks)
			return nil, false
		}
		locks = append(locks, f)
	}
	return locks, true
}

// releasePorts drops the locks; the files stay, for the next reservation.
func releasePorts(locks []*os.File) {
	for _, f := range locks {
		f.Close()
	}
}

// ephemeralPortsStart is the first port the kernel hands out to outgoing
// connections (net.ipv4.ip_local_port_range), 32768 if it cannot be read.
func ephemeralPortsStart() int {
	text, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(text))
	if len(fields) == 0 {
		return 32768
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start <= 10000 {
		return 32768
	}
	return start
}

// RunResult is the outcome of Run.
type RunResult struct {
	Stdout, Stderr string
	Err            error
}

// Output is stdout and stderr together, for error messages.
func (r RunResult) Output() string {
	return strings.TrimSpace(r.Stdout + "\n" + r.Stderr)
}

// Run runs a command with extra environment variables (on top of the
// process environment) and a timeout, and captures its output.
func Run(timeout time.Duration, env []string, name string, args ...string) RunResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Processes started detached by a script keep no copy of our pipes, but
	// do not let a stray child holding them block us past the timeout.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: timed out after %s", name, strings.Join(args, " "), timeout)
	}
	return RunResult{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// tailLines returns the last n lines of the file at path.
func tailLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// SyncBuffer is a bytes.Buffer safe for a process's stdout and stderr and a
// test reading them at the same time.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
