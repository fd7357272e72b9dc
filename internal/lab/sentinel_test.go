package lab

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRole(t *testing.T) {
	for _, tc := range []struct {
		text string
		want SentinelRole
	}{
		{"master\n425\n127.0.0.1\n23418\n0\n127.0.0.1\n23419\n425", SentinelRole{Role: "master", ReplicaPorts: []int{23418, 23419}}},
		{"master\n0", SentinelRole{Role: "master"}},
		{"slave\n127.0.0.1\n23417\nconnected\n425", SentinelRole{Role: "slave", MasterPort: 23417, LinkState: "connected"}},
		{"sentinel\nmymaster", SentinelRole{Role: "sentinel"}},
	} {
		got, err := parseRole(tc.text)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parseRole(%q) = %+v, %v; want %+v", tc.text, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "slave\n127.0.0.1", "slave\n127.0.0.1\nx\nconnected", "master\n1\n127.0.0.1\nx\n0"} {
		if _, err := parseRole(bad); err == nil {
			t.Errorf("parseRole(%q): want an error", bad)
		}
	}
}

// TestSentinelLab exercises the lab on real processes, each claim checked
// against the nodes themselves: the sentinels agree on the master, which
// says it is one; kill -9 of the master makes every sentinel name one of
// the old replicas, which takes writes; the old master, restarted, becomes
// its replica.
func TestSentinelLab(t *testing.T) {
	s := StartSentinel(t, SentinelOptions{})
	checkSentinelServer(t, s, RedisServer())
	master := s.FirstMasterPort()
	replicas := s.DataPorts()[1:]
	if len(replicas) != 2 || len(s.SentinelPorts()) != 3 || s.Quorum() != 2 {
		t.Fatalf("lab: replicas %v, sentinels %v, quorum %d; want 2, 3, 2", replicas, s.SentinelPorts(), s.Quorum())
	}
	if got, err := s.AgreedMaster(t); err != nil || got != master {
		t.Fatalf("sentinels' master: %d, %v; want %d", got, err, master)
	}
	if role := s.Role(t, master); role.Role != "master" {
		t.Fatalf("ROLE of master %d: %+v", master, role)
	}
	for _, r := range replicas {
		waitReplicaOf(t, s, r, master, 10*time.Second)
	}
	if role := s.Role(t, s.SentinelPorts()[0]); role.Role != "sentinel" {
		t.Errorf("ROLE of sentinel: %+v", role)
	}
	// A hung sentinel comes back.
	s.Pause(t, s.SentinelPorts()[0])
	s.Resume(t, s.SentinelPorts()[0])
	if out := s.CLI(t, s.SentinelPorts()[0], "PING"); out != "PONG" {
		t.Errorf("PING after resume: %q", out)
	}

	newMaster := killMasterAndWaitFailover(t, s, master)
	if out := s.CLI(t, newMaster, "SET", "sentinel-lab", "written after failover"); out != "OK" {
		t.Errorf("SET on new master %d: %q", newMaster, out)
	}
	other := otherReplica(replicas, newMaster)
	if _, err := s.TryCLI(other, "SET", "sentinel-lab", "x"); err == nil {
		t.Errorf("the replica that was not promoted (%d) accepted a write", other)
	}

	s.Restart(t, master)
	restarted := time.Now()
	// The master to follow is the one the sentinels name now: on a busy
	// machine a 1 s down-after can see the new master late to answer and
	// fail over once more (a CI run saw 13394 follow 13395 after the
	// sentinels had named 13396).
	current := waitRejoined(t, s, master, 20*s.FailoverTimeout())
	if current != newMaster {
		t.Logf("the sentinels failed over again, from %d to %d, before the old master rejoined", newMaster, current)
	}
	t.Logf("FIGURE sentinel lab (%s): old master restarted -> replica of %d with its link up in %s",
		s.Server(), current, time.Since(restarted).Round(time.Millisecond))
	if other != current {
		waitReplicaOf(t, s, other, current, 20*s.FailoverTimeout())
	}
	if got := s.CLI(t, master, "GET", "sentinel-lab"); got != "written after failover" {
		t.Errorf("GET on the rejoined old master: %q", got)
	}
}

// otherReplica is the first of the old replicas that is not the new master.
func otherReplica(replicas []int, newMaster int) int {
	for _, r := range replicas {
		if r != newMaster {
			return r
		}
	}
	return 0
}

// killMasterAndWaitFailover kills the master with -9 and waits, within 10x
// the failover time expected, until every sentinel names the same new
// master, one of the old replicas that itself answers ROLE master.
func killMasterAndWaitFailover(t *testing.T, s *Sentinel, master int) int {
	t.Helper()
	// Expected: the master seen down after DownAfter, then agreement,
	// election and promotion, which take about a second or two more.
	expected := s.DownAfter() + 2*time.Second
	killed := s.Kill(t, master)
	var newMaster int
	RedisWaitFor(t, 10*expected, "every sentinel names a new master", func() error {
		port, err := s.AgreedMaster(t)
		if err != nil {
			return err
		}
		if port == master || !slices.Contains(s.DataPorts(), port) {
			return fmt.Errorf("sentinels name %d", port)
		}
		newMaster = port
		return nil
	})
	took := time.Since(killed)
	t.Logf("FIGURE sentinel lab (%s): kill -9 of master %d -> all %d sentinels report new master %d in %s (down-after %s, failover-timeout %s)",
		s.Server(), master, len(s.SentinelPorts()), newMaster, took.Round(time.Millisecond), s.DownAfter(), s.FailoverTimeout())
	RedisWaitFor(t, 10*expected, "the new master says ROLE master", func() error {
		role, err := s.TryRole(newMaster)
		if err != nil {
			return err
		}
		if role.Role != "master" {
			return fmt.Errorf("%d says %+v", newMaster, role)
		}
		return nil
	})
	return newMaster
}

// waitReplicaOf waits until the node on port says it replicates master with
// its link up.
func waitReplicaOf(t *testing.T, s *Sentinel, port, master int, timeout time.Duration) {
	t.Helper()
	RedisWaitFor(t, timeout, fmt.Sprintf("%d a replica of %d, link up", port, master), func() error {
		role, err := s.TryRole(port)
		if err != nil {
			return err
		}
		if role.Role != "slave" || role.MasterPort != master || role.LinkState != "connected" {
			return fmt.Errorf("ROLE %+v", role)
		}
		return nil
	})
}

// waitRejoined waits until the node on port replicates, with its link up,
// the master every sentinel names at that moment, and returns that master.
func waitRejoined(t *testing.T, s *Sentinel, port int, timeout time.Duration) int {
	t.Helper()
	var master int
	RedisWaitFor(t, timeout, fmt.Sprintf("%d a replica of the sentinels' master, link up", port), func() error {
		agreed, err := s.AgreedMaster(t)
		if err != nil {
			return err
		}
		role, err := s.TryRole(port)
		if err != nil {
			return err
		}
		if role.Role != "slave" || role.MasterPort != agreed || role.LinkState != "connected" {
			return fmt.Errorf("sentinels name %d; ROLE %+v", agreed, role)
		}
		master = agreed
		return nil
	})
	return master
}

// checkSentinelServer: the data nodes and sentinels run the server asked for.
func checkSentinelServer(t *testing.T, s *Sentinel, server string) {
	t.Helper()
	want := map[string]string{"redis": "redis_version:7.", "valkey": "valkey_version:8.", "valkey9": "valkey_version:9."}[server]
	for _, p := range []int{s.FirstMasterPort(), s.SentinelPorts()[0]} {
		info := s.CLI(t, p, "INFO", "server")
		if s.Server() != server || want == "" || !strings.Contains(info, want) {
			t.Errorf("lab server %q (asked for %s) but INFO server of %d does not say %q:\n%s", s.Server(), server, p, want, info)
		}
	}
	if info := s.CLI(t, s.SentinelPorts()[0], "INFO", "server"); !strings.Contains(info, "_mode:sentinel") {
		t.Errorf("sentinel %d is not in sentinel mode:\n%s", s.SentinelPorts()[0], info)
	}
}

// TestSentinelLabMasters: a lab of three master sets, one replica each,
// lays its ports out as sentinel.sh documents, and every sentinel monitors
// every master at the port it was started on, each master with its own
// replica.
func TestSentinelLabMasters(t *testing.T) {
	s := StartSentinel(t, SentinelOptions{Masters: 3, Replicas: 1, Sentinels: 3})
	names := s.MasterNames()
	if want := []string{"mymaster", "mymaster-2", "mymaster-3"}; !slices.Equal(names, want) {
		t.Fatalf("master names %v, want %v", names, want)
	}
	var data []int
	for _, name := range names {
		data = append(data, s.SetPorts(name)...)
	}
	if !slices.Equal(data, s.DataPorts()) || len(data) != 6 || len(s.SentinelPorts()) != 3 || s.SentinelPorts()[0] != data[5]+1 {
		t.Fatalf("sets %v, data ports %v, sentinels %v: want three sets of two in DataPorts' order, then the sentinels",
			data, s.DataPorts(), s.SentinelPorts())
	}
	if s.SetPorts("nosuch") != nil {
		t.Errorf("SetPorts of a name the lab did not start: %v", s.SetPorts("nosuch"))
	}
	for _, name := range names {
		set := s.SetPorts(name)
		for _, p := range s.SentinelPorts() {
			if addr, err := s.TryMasterAddrOf(p, name); err != nil || addr != s.Addr(set[0]) {
				t.Errorf("sentinel %d: master %s at %q, %v; want %s", p, name, addr, err, s.Addr(set[0]))
			}
		}
		if role := s.Role(t, set[0]); role.Role != "master" || !slices.Equal(role.ReplicaPorts, set[1:]) {
			t.Errorf("ROLE of master %s (%d): %+v, want master of %v", name, set[0], role, set[1:])
		}
	}
}
