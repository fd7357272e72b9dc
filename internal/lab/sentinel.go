package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SentinelOptions shapes a lab Sentinel deployment: one master (or
// Masters master sets), its replicas and the sentinels that watch it.
type SentinelOptions struct {
	// Masters is the number of master sets, each a master and Replicas
	// replicas, all monitored by the same sentinels (default 1).
	Masters int
	// Replicas is the number of replicas of each master (default 2).
	Replicas int
	// Sentinels is the number of sentinels (default 3).
	Sentinels int
	// Quorum is the sentinels' quorum for the master (default a majority
	// of the sentinels).
	Quorum int
	// MasterName is the name the sentinels monitor the first master by
	// (default "mymaster"); the others are MasterName-2 .. MasterName-K.
	MasterName string
	// DownAfter is down-after-milliseconds (default 1s).
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout (default 3s). Sentinel also waits
	// this long before it makes a returning old master a replica.
	FailoverTimeout time.Duration
	// Server is "redis", "valkey" or "valkey9"; empty for RedisServer's
	// choice (REDIS_LAB_SERVER), as for the Redis Cluster lab.
	Server string
}

// Sentinel is a Sentinel deployment of local redis-server processes (or
// valkey-server, see RedisServer), data nodes and sentinels alike, started
// by scripts/redis/sentinel.sh in a fresh temporary directory.
type Sentinel struct {
	redisLab
	server          string
	dir             string
	cliPath         string
	basePort        int
	masterName      string
	quorum          int
	downAfter       time.Duration
	failoverTimeout time.Duration
	// masterNames and setPorts are the master sets in start order: a
	// name, and its master's port then its replicas'.
	masterNames   []string
	setPorts      [][]int
	dataPorts     []int
	sentinelPorts []int
}

// SentinelRole is a node's answer to ROLE.
type SentinelRole struct {
	// Role is "master", "slave" or "sentinel".
	Role string
	// MasterPort is a replica's master (0 on a master).
	MasterPort int
	// LinkState is a replica's link to its master: "connect",
	// "connecting", "sync" or "connected" (up).
	LinkState string
	// ReplicaPorts are the replicas a master lists.
	ReplicaPorts []int
}

// StartSentinel starts a Sentinel deployment on free ports (taken with the
// lab's port lock) and stops it when the test ends.
func StartSentinel(t testing.TB, opts SentinelOptions) *Sentinel {
	t.Helper()
	opts = sentinelDefaults(opts)
	serverPath, cliPath := RedisBinariesOf(t, opts.Server)
	setSize := 1 + opts.Replicas
	data := opts.Masters * setSize
	total := data + opts.Sentinels
	s := &Sentinel{
		server:          opts.Server,
		dir:             t.TempDir(),
		cliPath:         cliPath,
		basePort:        PickBasePort(t, sentinelOffsets(total)...),
		masterName:      opts.MasterName,
		quorum:          opts.Quorum,
		downAfter:       opts.DownAfter,
		failoverTimeout: opts.FailoverTimeout,
	}
	s.redisLab = redisLab{
		script:  filepath.Join(RepoRoot(t), "scripts", "redis", "sentinel.sh"),
		env:     s.scriptEnv,
		timeout: 2 * time.Minute,
	}
	// sentinel.sh's layout: each set's master then its replicas, set after
	// set, then the sentinels.
	for set := range opts.Masters {
		s.masterNames = append(s.masterNames, sentinelSetName(opts.MasterName, set))
		var ports []int
		for i := range setSize {
			ports = append(ports, s.basePort+set*setSize+i)
		}
		s.setPorts = append(s.setPorts, ports)
		s.dataPorts = append(s.dataPorts, ports...)
	}
	for i := data; i < total; i++ {
		s.sentinelPorts = append(s.sentinelPorts, s.basePort+i)
	}
	t.Cleanup(func() {
		if out, err := s.run("stop"); err != nil {
			t.Errorf("stop sentinel lab: %v\n%s", err, out)
		}
	})
	start := time.Now()
	out, err := s.run("start", "--masters", strconv.Itoa(opts.Masters), "--replicas", strconv.Itoa(opts.Replicas),
		"--sentinels", strconv.Itoa(opts.Sentinels), "--quorum", strconv.Itoa(opts.Quorum))
	if err != nil {
		t.Fatalf("start sentinel lab: %v\n%s%s", err, out, s.logs())
	}
	t.Logf("sentinel lab: %d master(s) from %d, %d replicas each, %d sentinels (quorum %d) of %s, started in %s",
		opts.Masters, s.dataPorts[0], opts.Replicas, opts.Sentinels, opts.Quorum, serverPath, time.Since(start).Round(time.Millisecond))
	return s
}

// sentinelSetName is the name of master set i (from 0), as sentinel.sh
// names it: the first keeps the name asked for.
func sentinelSetName(first string, i int) string {
	if i == 0 {
		return first
	}
	return first + "-" + strconv.Itoa(i+1)
}

func sentinelDefaults(opts SentinelOptions) SentinelOptions {
	if opts.Server == "" {
		opts.Server = RedisServer()
	}
	if opts.Masters == 0 {
		opts.Masters = 1
	}
	if opts.Replicas == 0 {
		opts.Replicas = 2
	}
	if opts.Sentinels == 0 {
		opts.Sentinels = 3
	}
	if opts.Quorum == 0 {
		opts.Quorum = opts.Sentinels/2 + 1
	}
	if opts.MasterName == "" {
		opts.MasterName = "mymaster"
	}
	if opts.DownAfter == 0 {
		opts.DownAfter = time.Second
	}
	if opts.FailoverTimeout == 0 {
		opts.FailoverTimeout = 3 * time.Second
	}
	return opts
}

// sentinelOffsets are the lab's ports from its base: data nodes and
// sentinels in one block, no bus ports.
func sentinelOffsets(total int) []int {
	offsets := make([]int, total)
	for i := range offsets {
		offsets[i] = i
	}
	return offsets
}

// scriptEnv is sentinel.sh's environment for this lab.
func (s *Sentinel) scriptEnv() []string {
	return []string{
		"REDIS_LAB_SERVER=" + s.server,
		"SENTINEL_LAB_DIR=" + s.dir,
		"SENTINEL_LAB_BASE_PORT=" + strconv.Itoa(s.basePort),
		"SENTINEL_LAB_MASTER_NAME=" + s.masterName,
		"SENTINEL_LAB_DOWN_AFTER=" + strconv.FormatInt(s.downAfter.Milliseconds(), 10),
		"SENTINEL_LAB_FAILOVER_TIMEOUT=" + strconv.FormatInt(s.failoverTimeout.Milliseconds(), 10),
	}
}

// logs returns the tail of every process's log, for failure messages.
func (s *Sentinel) logs() string {
	var b strings.Builder
	for _, p := range append(s.DataPorts(), s.sentinelPorts...) {
		fmt.Fprintf(&b, "--- %d log (tail) ---\n%s\n", p, tailLines(filepath.Join(s.dir, strconv.Itoa(p), "redis.log"), 10))
	}
	return b.String()
}

// Server is the server the lab runs: "redis", "valkey" or "valkey9".
func (s *Sentinel) Server() string { return s.server }

// CLIPath is the redis-cli (or valkey-cli) that matches the lab's server.
func (s *Sentinel) CLIPath() string { return s.cliPath }

// MasterName is the name the sentinels monitor the first master by.
func (s *Sentinel) MasterName() string { return s.masterName }

// MasterNames are every master set's name, in start order: MasterName,
// then MasterName-2 .. MasterName-K.
func (s *Sentinel) MasterNames() []string { return slices.Clone(s.masterNames) }

// SetPorts are the data ports of the master set named name as started:
// its master, then its replicas (nil for a name the lab did not start).
func (s *Sentinel) SetPorts(name string) []int {
	i := slices.Index(s.masterNames, name)
	if i < 0 {
		return nil
	}
	return slices.Clone(s.setPorts[i])
}

// Quorum is the sentinels' quorum for the master.
func (s *Sentinel) Quorum() int { return s.quorum }

// DownAfter is the sentinels' down-after-milliseconds.
func (s *Sentinel) DownAfter() time.Duration { return s.downAfter }

// FailoverTimeout is the sentinels' failover-timeout.
func (s *Sentinel) FailoverTimeout() time.Duration { return s.failoverTimeout }

// DataPorts are the data nodes' ports: each set's master then its
// replicas, set after set (SetPorts for one set).
func (s *Sentinel) DataPorts() []int { return slices.Clone(s.dataPorts) }

// FirstMasterPort is the port of the master the lab started with.
func (s *Sentinel) FirstMasterPort() int { return s.dataPorts[0] }

// SentinelPorts are the sentinels' ports.
func (s *Sentinel) SentinelPorts() []int { return slices.Clone(s.sentinelPorts) }

// Addr is the address of the lab process on port.
func (s *Sentinel) Addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// DataAddrs are the data nodes' addresses, in DataPorts' order.
func (s *Sentinel) DataAddrs() []string { return s.addrs(s.dataPorts) }

// SentinelAddrs are the sentinels' addresses.
func (s *Sentinel) SentinelAddrs() []string { return s.addrs(s.sentinelPorts) }

func (s *Sentinel) addrs(ports []int) []string {
	addrs := make([]string, len(ports))
	for i, p := range ports {
		addrs[i] = s.Addr(p)
	}
	return addrs
}

// CLI runs redis-cli against one process and returns its output; it fails
// the test if redis-cli fails or the reply is an error.
func (s *Sentinel) CLI(t testing.TB, port int, args ...string) string {
	t.Helper()
	out, err := s.TryCLI(port, args...)
	if err != nil {
		t.Fatalf("%s -p %d %s: %v", filepath.Base(s.cliPath), port, strings.Join(args, " "), err)
	}
	return out
}

// TryCLI is CLI returning the error instead of failing the test. Error
// replies (READONLY, LOADING, ...) are errors: redis-cli -e exits non-zero.
func (s *Sentinel) TryCLI(port int, args ...string) (string, error) {
	full := append([]string{"-e", "-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)
	stdout, stderr, err := runCLI(s.cliPath, 5*time.Second, full)
	text := strings.TrimSpace(strings.ReplaceAll(stdout, "\r", ""))
	if err != nil {
		return "", cliError(err, text+" "+stderr)
	}
	return text, nil
}

// TryMasterAddr is the first master's address as the sentinel on port
// reports it (SENTINEL GET-MASTER-ADDR-BY-NAME), "host:port".
func (s *Sentinel) TryMasterAddr(sentinelPort int) (string, error) {
	return s.TryMasterAddrOf(sentinelPort, s.masterName)
}

// TryMasterAddrOf is TryMasterAddr for the master named name.
func (s *Sentinel) TryMasterAddrOf(sentinelPort int, name string) (string, error) {
	out, err := s.TryCLI(sentinelPort, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return "", fmt.Errorf("sentinel %d: GET-MASTER-ADDR-BY-NAME %s answered %q", sentinelPort, name, out)
	}
	return f[0] + ":" + f[1], nil
}

// MasterAddr asks every sentinel at once for the master's address: sentinel
// port → "host:port", or "error: ..." for a sentinel that did not answer.
func (s *Sentinel) MasterAddr(t testing.TB) map[int]string {
	t.Helper()
	views := make(map[int]string, len(s.sentinelPorts))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range s.sentinelPorts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr, err := s.TryMasterAddr(p)
			if err != nil {
				addr = "error: " + err.Error()
			}
			mu.Lock()
			views[p] = addr
			mu.Unlock()
		}()
	}
	wg.Wait()
	return views
}

// AgreedMaster is the port of the master every sentinel reports, or an
// error that shows each sentinel's view while they do not agree.
func (s *Sentinel) AgreedMaster(t testing.TB) (int, error) {
	t.Helper()
	views := s.MasterAddr(t)
	first := views[s.sentinelPorts[0]]
	for _, addr := range views {
		if addr != first {
			return 0, fmt.Errorf("sentinels disagree: %v", views)
		}
	}
	host, port, ok := strings.Cut(first, ":")
	n, err := strconv.Atoi(port)
	if !ok || host != "127.0.0.1" || err != nil {
		return 0, fmt.Errorf("sentinels report %q", first)
	}
	return n, nil
}

// TryRole is ROLE read from the process on port itself.
func (s *Sentinel) TryRole(port int) (SentinelRole, error) {
	out, err := s.TryCLI(port, "ROLE")
	if err != nil {
		return SentinelRole{}, err
	}
	role, err := parseRole(out)
	if err != nil {
		return SentinelRole{}, fmt.Errorf("ROLE of %d: %w", port, err)
	}
	return role, nil
}

// Role is TryRole failing the test on error.
func (s *Sentinel) Role(t testing.TB, port int) SentinelRole {
	t.Helper()
	role, err := s.TryRole(port)
	if err != nil {
		t.Fatalf("sentinel lab: %v", err)
	}
	return role
}

// parseRole reads redis-cli's flat print of ROLE: "master", offset, then
// (ip, port, offset) per replica; "slave", ip, port, state, offset;
// "sentinel", then master names.
func parseRole(text string) (SentinelRole, error) {
	lines := strings.Split(text, "\n")
	r := SentinelRole{Role: lines[0]}
	var err error
	switch r.Role {
	case "master":
		for i := 2; i+1 < len(lines); i += 3 {
			port, perr := strconv.Atoi(lines[i+1])
			if perr != nil {
				return r, fmt.Errorf("replica port %q in %q", lines[i+1], text)
			}
			r.ReplicaPorts = append(r.ReplicaPorts, port)
		}
	case "slave":
		if len(lines) < 4 {
			return r, fmt.Errorf("short replica reply %q", text)
		}
		if r.MasterPort, err = strconv.Atoi(lines[2]); err != nil {
			return r, fmt.Errorf("master port %q in %q", lines[2], text)
		}
		r.LinkState = lines[3]
	case "sentinel":
	default:
		return r, fmt.Errorf("unknown role in %q", text)
	}
	return r, nil
}

// Kill kills the process on port with SIGKILL, as a crash would, waits
// until it is gone and returns when the signal was sent: the clock a
// failover is measured from.
func (s *Sentinel) Kill(t testing.TB, port int) time.Time {
	t.Helper()
	pid := s.PID(t, port)
	at := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("sentinel lab: kill -9 %d (port %d): %v", pid, port, err)
	}
	WaitFor(t, 10*time.Second, 10*time.Millisecond, func() (bool, string) {
		return processGone(pid), fmt.Sprintf("pid %d (port %d) still there after kill -9", pid, port)
	})
	return at
}

// processGone reports whether pid no longer runs: no such process, or a
// zombie its new parent has not reaped yet.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses, which may hold spaces.
	_, rest, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(rest, "Z")
}

// SentinelSwitch is one +switch-master line of a sentinel's log: the
// sentinels' own record of a failover (or of a sentinel learning of one).
type SentinelSwitch struct {
	At       time.Time
	Sentinel int // the port of the sentinel that logged it
	Master   string
	From, To string // addresses
}

// SwitchMasters reads every sentinel's log for its +switch-master lines,
// oldest first. A failover shows as one line per sentinel (the leader's
// and the others' as they learn it); two promotions as two groups.
func (s *Sentinel) SwitchMasters(t testing.TB) []SentinelSwitch {
	t.Helper()
	var switches []SentinelSwitch
	for _, p := range s.sentinelPorts {
		data, err := os.ReadFile(filepath.Join(s.dir, strconv.Itoa(p), "redis.log"))
		if err != nil {
			t.Fatalf("lab: sentinel %d's log: %v", p, err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			// 1234:X 07 Dec 2026 06:31:36.827 # +switch-master NAME IP PORT IP PORT
			_, rest, ok := strings.Cut(line, " ")
			stamp, event, found := strings.Cut(rest, " # +switch-master ")
			f := strings.Fields(event)
			if !ok || !found || len(f) != 5 {
				continue
			}
			at, err := time.ParseInLocation("02 Jan 2006 15:04:05.000", stamp, time.Local)
			if err != nil {
				t.Fatalf("lab: sentinel %d's log line %q: %v", p, line, err)
			}
			switches = append(switches, SentinelSwitch{At: at, Sentinel: p, Master: f[0],
				From: f[1] + ":" + f[2], To: f[3] + ":" + f[4]})
		}
	}
	slices.SortStableFunc(switches, func(a, b SentinelSwitch) int { return a.At.Compare(b.At) })
	return switches
}
