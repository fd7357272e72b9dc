package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// TestKafkaQuorumVoterChanges watches the dynamic KRaft quorum (KIP-853)
// of a real 3-node Kafka 4.4 lab, with kafka-metadata-quorum.sh as the
// oracle: the voters and their directory IDs; a voter removed
// (remove-controller) and added back (add-controller), each an event and
// a step in the voter count and the failure tolerance; a voter killed by
// PID reads offline, its last fetch dated at the kill, and online again
// after its restart; a controller-only node started outside the voters
// is a controller observer until it is added. Kafka 4.4, because removing a voter crashed the
// active controller of a 4.1.2 lab ("Unexpected acknowledgement from
// non-voter").
func TestKafkaQuorumVoterChanges(t *testing.T) {
	cluster := lab.StartKafka(t, lab.KafkaOptions{Version: "4.4", SpareControllers: 1})
	exporter := exportertest.Start(t, "--kafka.server="+strings.Join(cluster.Bootstrap(), ","), "--kafka.cluster-name=lab", "--refresh.interval=500ms")

	voterDirs := func(m exportertest.Metrics) map[string]string {
		dirs := map[string]string{}
		for _, s := range m.Series("kafka_quorum_voter_info", nil) {
			dirs[s.Labels["voter"]] = s.Labels["directory_id"]
		}
		return dirs
	}
	oracleVoters := func() (voters map[string]string, leader int32) {
		voters = map[string]string{}
		for _, r := range cluster.QuorumReplication(t) {
			switch r.Status {
			case "Leader":
				leader = r.ID
				fallthrough
			case "Follower":
				voters[fmt.Sprint(r.ID)] = r.DirectoryID
			}
		}
		return voters, leader
	}
	allOnline := func(m exportertest.Metrics, n int) (bool, string) {
		online := m.Series("kafka_quorum_voter_online", nil)
		if len(online) != n {
			return false, m.Describe("kafka_quorum_voter_online", nil)
		}
		for _, s := range online {
			if s.Value != 1 {
				return false, m.Describe("kafka_quorum_voter_online", nil)
			}
		}
		return true, ""
	}

	m, _ := waitMetrics(t, exporter, 60*time.Second, "3 voters with directory IDs, all online, one loss tolerated, no controller outside the voters", func(m exportertest.Metrics) (bool, string) {
		if ok, why := allOnline(m, 3); !ok {
			return false, why
		}
		tolerated, _ := m.Value("kafka_quorum_voter_losses_tolerated", nil)
		controllers, ok := m.Value("kafka_quorum_controller_observers", nil)
		return len(voterDirs(m)) == 3 && tolerated == 1 && ok && controllers == 0,
			m.Describe("kafka_quorum_voter_info", nil) + m.Describe("kafka_quorum_voter_losses_tolerated", nil) + m.Describe("kafka_quorum_controller_observers", nil)
	})
	want, leader := oracleVoters()
	if got := voterDirs(m); !maps.Equal(got, want) {
		t.Fatalf("voters and directory IDs: exporter %v, kafka-metadata-quorum.sh %v", got, want)
	}

	// Remove a voter that is not the leader.
	removed := int32(1)
	if leader == removed {
		removed = 2
	}
	removedLabel := fmt.Sprint(removed)
	removedDir := want[removedLabel]
	cluster.RemoveController(t, removed, removedDir)
	m, took := waitMetrics(t, exporter, 60*time.Second, fmt.Sprintf("voter %d gone: 2 voters, no loss tolerated", removed), func(m exportertest.Metrics) (bool, string) {
		voters, _ := m.Value("kafka_quorum_voters", nil)
		tolerated, _ := m.Value("kafka_quorum_voter_losses_tolerated", nil)
		_, stillVoter := voterDirs(m)[removedLabel]
		return voters == 2 && tolerated == 0 && !stillVoter, m.Describe("kafka_quorum_voters", nil) + m.Describe("kafka_quorum_voter_info", nil) + m.Describe("kafka_quorum_voter_losses_tolerated", nil)
	})
	t.Logf("FIGURE kafka quorum: remove-controller %d returned -> the exporter shows 2 voters after %s", removed, took.Round(10*time.Millisecond))
	oracle, _ := oracleVoters()
	if got := voterDirs(m); !maps.Equal(got, oracle) {
		t.Errorf("voters after the removal: exporter %v, kafka-metadata-quorum.sh %v", got, oracle)
	}
	// The removed node still runs, as broker and controller: an observer,
	// but a broker, so not counted as a controller outside the voters
	// (the derivation's documented limit for combined nodes).
	if observers := value(t, m, "kafka_quorum_observers", nil); observers < 1 {
		t.Errorf("kafka_quorum_observers = %v after voter %d became an observer, want at least 1", observers, removed)
	}
	if v := value(t, m, "kafka_quorum_controller_observers", nil); v != 0 {
		t.Errorf("kafka_quorum_controller_observers = %v, want 0: the removed node is a broker", v)
	}
	evs := waitEvents(t, exporter, 10*time.Second, "quorum_voter_removed", func(evs []events.Event) bool {
		return eventIndex(evs, "quorum_voter_removed", "", int(removed)) >= 0
	})
	if e := evs[eventIndex(evs, "quorum_voter_removed", "", int(removed))]; e.Before != removedDir {
		t.Errorf("quorum_voter_removed of %d carries directory %q, want %q", removed, e.Before, removedDir)
	}

	cluster.AddController(t, removed)
	m, took = waitMetrics(t, exporter, 60*time.Second, fmt.Sprintf("voter %d back: 3 voters online", removed), func(m exportertest.Metrics) (bool, string) {
		if ok, why := allOnline(m, 3); !ok {
			return false, why
		}
		return voterDirs(m)[removedLabel] == removedDir, m.Describe("kafka_quorum_voter_info", nil)
	})
	t.Logf("FIGURE kafka quorum: add-controller %d returned -> the exporter shows it voting after %s", removed, took.Round(10*time.Millisecond))
	evs = waitEvents(t, exporter, 10*time.Second, "quorum_voter_added", func(evs []events.Event) bool {
		return eventIndex(evs, "quorum_voter_added", "", int(removed)) >= 0
	})
	if e := evs[eventIndex(evs, "quorum_voter_added", "", int(removed))]; e.After != removedDir {
		t.Errorf("quorum_voter_added of %d carries directory %q, want %q", removed, e.After, removedDir)
	}
	if n := countKinds(evs, "quorum_voter_added", "quorum_voter_removed"); n != 2 {
		t.Errorf("%d voter events, want one removal and one addition:\n%s", n, describeEvents(evs))
	}

	// Kill a voter that is not the leader: offline, its last fetch dated
	// by the leader at the kill.
	_, leader = oracleVoters()
	killed := removed
	if killed == leader {
		killed = 3
	}
	killedLabel := map[string]string{"voter": fmt.Sprint(killed)}
	killedAt := time.Now()
	if err := syscall.Kill(cluster.PID(killed), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m, took = waitMetrics(t, exporter, 60*time.Second, fmt.Sprintf("killed voter %d offline", killed), func(m exportertest.Metrics) (bool, string) {
		online, ok := m.Value("kafka_quorum_voter_online", killedLabel)
		return ok && online == 0, m.Describe("kafka_quorum_voter_online", nil) + m.Describe("kafka_quorum_voter_last_fetch_age_seconds", nil)
	})
	t.Logf("FIGURE kafka quorum: kill -9 of voter %d -> kafka_quorum_voter_online 0 after %s (threshold 10 s, refresh 500 ms)", killed, took.Round(10*time.Millisecond))
	refreshedAt := time.Unix(0, int64(value(t, m, "kafka_exporter_last_refresh_success_timestamp_seconds", nil)*1e9))
	lastFetch := refreshedAt.Add(-time.Duration(value(t, m, "kafka_quorum_voter_last_fetch_age_seconds", killedLabel) * float64(time.Second)))
	// A follower fetches continuously: its last fetch is within a fetch
	// wait (500 ms here, 2 s at most) before the kill, never after it.
	if off := lastFetch.Sub(killedAt); off > time.Second || off < -3*time.Second {
		t.Errorf("killed voter's last fetch dated %s, the kill at %s: off by %s", clock(lastFetch), clock(killedAt), off)
	}
	if v := value(t, m, "kafka_quorum_voter_caught_up", killedLabel); v != 0 {
		t.Errorf("kafka_quorum_voter_caught_up of the killed voter = %v, want 0", v)
	}
	cluster.Restart(t, killed)
	waitMetrics(t, exporter, 90*time.Second, "every voter online after the restart", func(m exportertest.Metrics) (bool, string) { return allOnline(m, 3) })

	// A controller-only node outside the voter set: an observer that is no
	// broker, so a controller the quorum does not count.
	const spare = int32(4)
	cluster.StartController(t, spare)
	m, took = waitMetrics(t, exporter, 60*time.Second, "controller 4 observing", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("kafka_quorum_controller_observers", nil)
		return n == 1 && len(m.Series("kafka_quorum_controller_observer_info", map[string]string{"node": "4"})) == 1,
			m.Describe("kafka_quorum_controller_observers", nil) + m.Describe("kafka_quorum_controller_observer_info", nil)
	})
	t.Logf("FIGURE kafka quorum: controller-only node started -> kafka_quorum_controller_observers 1 after %s", took.Round(10*time.Millisecond))
	var spareDir string
	for _, r := range cluster.QuorumReplication(t) {
		if r.ID == spare && r.Status == "Observer" {
			spareDir = r.DirectoryID
		}
	}
	if got := m.Series("kafka_quorum_controller_observer_info", map[string]string{"node": "4"})[0].Labels["directory_id"]; spareDir == "" || got != spareDir {
		t.Errorf("controller observer 4: exporter directory %q, kafka-metadata-quorum.sh lists it as Observer with %q", got, spareDir)
	}
	if v := value(t, m, "kafka_quorum_voters", nil); v != 3 {
		t.Errorf("kafka_quorum_voters = %v with controller 4 observing, want 3", v)
	}
	cluster.AddController(t, spare)
	waitMetrics(t, exporter, 60*time.Second, "controller 4 voting: 4 voters, no controller observer", func(m exportertest.Metrics) (bool, string) {
		n, _ := m.Value("kafka_quorum_controller_observers", nil)
		return n == 0 && voterDirs(m)["4"] == spareDir, m.Describe("kafka_quorum_controller_observers", nil) + m.Describe("kafka_quorum_voter_info", nil)
	})
	waitEvents(t, exporter, 10*time.Second, "quorum_voter_added of controller 4", func(evs []events.Event) bool {
		i := eventIndex(evs, "quorum_voter_added", "", int(spare))
		return i >= 0 && evs[i].After == spareDir
	})
}

func countKinds(evs []events.Event, kinds ...string) int {
	n := 0
	for _, e := range evs {
		if slices.Contains(kinds, string(e.Kind)) {
			n++
		}
	}
	return n
}
