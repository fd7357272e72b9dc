package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/events"
	"github.com/failover-exporter/failover_exporter/collector/maintenance"
	"github.com/failover-exporter/failover_exporter/internal/exportertest"
	"github.com/failover-exporter/failover_exporter/internal/lab"
)

// maintenanceCall sends method to the exporter's /api/v1/maintenance with
// query and the token (none when empty), and returns the status and body.
func maintenanceCall(t *testing.T, e *exportertest.Exporter, method, query, token string) (int, maintenance.Response) {
	t.Helper()
	req, err := http.NewRequest(method, e.URL+maintenance.Path+"?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set(maintenance.TokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, maintenance.Path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r maintenance.Response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s %s?%s: %d, not JSON: %s", method, maintenance.Path, query, resp.StatusCode, body)
	}
	return resp.StatusCode, r
}

// TestMaintenanceWindowRedis announces stops of a real Redis Cluster's
// nodes through the safe-to-stop command and the endpoint: a master that
// serves slots gets no window (the failure budget says no: 409, and the
// command exits 1 without announcing); a replica gets one, served as
// failover_exporter_maintenance_active and redis_cluster_maintenance_active, and listed; a second window of the
// same cluster is refused while it is open; opening needs the token.
// The replica is then killed by PID and restarted: the window stays open
// while it is down and closes once it is back and caught up, which its own
// INFO (master_link_status:up) says first; both ends are in the event log.
func TestMaintenanceWindowRedis(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	token := "maintenance-token-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := exportertest.Start(t, "--redis.addr="+strings.Join(c.Addrs(), ","), "--redis.cluster-name=lab",
		"--refresh.interval=300ms", "--web.maintenance-token-file="+tokenFile)
	waitMetrics(t, e, 30*time.Second, "every slot with a replica", func(m exportertest.Metrics) (bool, string) {
		without, ok := m.Value("redis_cluster_slots_without_replica", nil)
		return ok && without == 0, m.Describe("redis_cluster_slots_without_replica", nil)
	})
	master := c.Masters(t)[0]
	var replica, other lab.RedisNode
	for _, n := range c.Nodes(t) {
		switch {
		case n.MasterID == master.ID:
			replica = n
		case n.MasterID != "":
			other = n
		}
	}

	// No window for an unsafe stop, by the command or the endpoint.
	code, out := stopCommand(t, e, 30*time.Second, "--node", master.Addr, "--announce", "--maintenance-token-file", tokenFile)
	if code != 1 || strings.Contains(out, "announced") {
		t.Errorf("safe-to-stop --announce of master %s: exit %d, want 1 and no announcement:\n%s", master.Addr, code, out)
	}
	if status, r := maintenanceCall(t, e, http.MethodPost, "node="+master.Addr+"&ttl=10m", token); status != http.StatusConflict || r.Answer == nil || r.Answer.Safe {
		t.Errorf("POST for master %s: %d %+v, want 409 with the answer", master.Addr, status, r)
	}
	// The token, and only it, opens one.
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		if status, _ := maintenanceCall(t, e, http.MethodPost, "node="+replica.Addr+"&ttl=10m", tok); status != http.StatusUnauthorized && status != http.StatusForbidden {
			t.Errorf("POST with token %q: %d, want 401 or 403", tok, status)
		}
	}
	if _, r := maintenanceCall(t, e, http.MethodGet, "", ""); len(r.Windows) != 0 {
		t.Fatalf("windows open after refusals: %+v", r.Windows)
	}

	code, out = stopCommand(t, e, 30*time.Second, "--node", replica.Addr, "--announce", "--maintenance-token-file", tokenFile, "--ttl", "10m")
	if code != 0 || !strings.Contains(out, "announced") {
		t.Fatalf("safe-to-stop --announce of replica %s: exit %d, want 0 and the announcement:\n%s", replica.Addr, code, out)
	}
	_, r := maintenanceCall(t, e, http.MethodGet, "", "")
	if len(r.Windows) != 1 || r.Windows[0].System != "redis" || r.Windows[0].Cluster != "lab" || !slices.Equal(r.Windows[0].Members, []string{replica.Addr}) {
		t.Fatalf("windows %+v, want one for replica %s, covering its address", r.Windows, replica.Addr)
	}
	member := r.Windows[0].Member
	// The series names the node by its address, as the Redis series do.
	active := map[string]string{"system": "redis", "cluster": "lab", "scope": "node", "member": replica.Addr}
	// And with the cluster's series, labelled as they are, for the rules.
	clusterActive := map[string]string{"redis_cluster": "lab", "scope": "node", "address": replica.Addr}
	m := e.Scrape(t)
	if v, ok := m.Value("failover_exporter_maintenance_active", active); !ok || v != 1 {
		t.Errorf("failover_exporter_maintenance_active%v = %v (served %v), want 1", active, v, ok)
	}
	if v, ok := m.Value("redis_cluster_maintenance_active", clusterActive); !ok || v != 1 {
		t.Errorf("redis_cluster_maintenance_active%v = %v (served %v), want 1", clusterActive, v, ok)
	}
	// The status page's section of the cluster shows the window.
	resp, err := http.Get(e.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	if page := readAll(t, resp); !strings.Contains(page, `data-maintenance="node/`) || !strings.Contains(page, "Maintenance window: node ") {
		t.Errorf("the status page does not show the window of %s", replica.Addr)
	}
	if status, r := maintenanceCall(t, e, http.MethodPost, "node="+other.Addr+"&ttl=10m", token); status != http.StatusConflict || !strings.Contains(r.Error, "another maintenance window") {
		t.Errorf("a second window of the cluster: %d %q, want 409", status, r.Error)
	}

	c.Kill(t, replica.Port)
	killedAt := time.Now()
	waitMetrics(t, e, 30*time.Second, "the replica seen down", func(m exportertest.Metrics) (bool, string) {
		up, _ := m.Value("redis_cluster_node_up", map[string]string{"address": replica.Addr})
		return up == 0, m.Describe("redis_cluster_node_up", map[string]string{"address": replica.Addr})
	})
	time.Sleep(2 * time.Second) // a few sweeps while it is down
	if _, r := maintenanceCall(t, e, http.MethodGet, "", ""); len(r.Windows) != 1 || !r.Windows[0].SeenStopped {
		t.Fatalf("windows while the replica is down: %+v, want it open and the stop seen", r.Windows)
	}
	c.Restart(t, replica.Port)
	var linkUp time.Time
	lab.RedisWaitFor(t, 60*time.Second, "the replica's own link up", func() error {
		info, err := c.TryCLI(replica.Port, "INFO", "replication")
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("INFO replication: %v", err)
		}
		linkUp = time.Now()
		return nil
	})
	var closedAt time.Time
	lab.RedisWaitFor(t, 60*time.Second, "the window closed", func() error {
		if _, r := maintenanceCall(t, e, http.MethodGet, "", ""); len(r.Windows) != 0 {
			return fmt.Errorf("open: %+v", r.Windows)
		}
		closedAt = time.Now()
		return nil
	})
	t.Logf("FIGURE maintenance window: replica killed, restarted; its own INFO said link up %s after the kill, the window closed %s after that",
		linkUp.Sub(killedAt).Round(10*time.Millisecond), closedAt.Sub(linkUp).Round(10*time.Millisecond))
	if closedAt.Before(linkUp.Add(-time.Second)) {
		t.Errorf("the window closed %s before the replica's own INFO said its link was up", linkUp.Sub(closedAt))
	}
	m = e.Scrape(t)
	for name, labels := range map[string]map[string]string{"failover_exporter_maintenance_active": active, "redis_cluster_maintenance_active": clusterActive} {
		if _, ok := m.Value(name, labels); ok {
			t.Errorf("%s still served after the window closed", name)
		}
	}
	evs := fetchEvents(t, e, "?system=redis&cluster=lab")
	kinds := func(k events.Kind) int {
		return len(slices.DeleteFunc(slices.Clone(evs), func(ev events.Event) bool { return ev.Kind != k || ev.Subject.NodeID != member }))
	}
	if kinds(maintenance.EventOpened) != 1 || kinds(maintenance.EventClosed) != 1 {
		t.Errorf("events: %d maintenance_opened, %d maintenance_closed of %s, want one each", kinds(maintenance.EventOpened), kinds(maintenance.EventClosed), member)
	}
}
