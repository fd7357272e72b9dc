package redis

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// TestIntegrationMembership: nodes the cluster no longer counts answer the
// exporter all the same; they must not change what it says about the
// cluster (issue 11).
func TestIntegrationMembership(t *testing.T) {
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1})
	e := startExporter(t, c.Addrs()[:1])
	e.waitHealthy(c, 1)
	masters := c.Masters(t)
	resetMaster, forgetMaster := masters[0], masters[1]
	resetReplica, forgotten := replicaOf(t, c, resetMaster), replicaOf(t, c, forgetMaster)
	all := c.Nodes(t)

	t.Run("CLUSTER RESET SOFT on a replica", func(t *testing.T) {
		c.CLI(t, resetReplica.Port, "CLUSTER", "RESET", "SOFT")
		lab.RedisWaitFor(t, 10*time.Second, "reset replica reported as foreign, cluster still ok", func() error {
			s := e.gather()
			return firstError(
				s.expect(1, "redis_cluster_state_ok"),
				s.expect(redisproto.SlotCount, "redis_cluster_slots", "state", "ok"),
				s.expect(1, "redis_cluster_views_consistent"),
				s.expect(3, "redis_cluster_masters"),
				s.expect(float64(len(all)-1), "redis_cluster_known_nodes"),
				s.expect(1, "redis_cluster_foreign_nodes"),
				s.expect(1, "redis_cluster_foreign_node_info", nodeLabels3(resetReplica.Port,
					"node_id", resetReplica.ID, "reason", string(ForeignNotListing), "role", "master")...),
				s.expect(0, "redis_cluster_node_replicas", addrLabel(resetMaster.Port)...),
				s.expect(float64(resetMaster.Slots), "redis_cluster_slots_without_replica"),
				absent(s, "redis_cluster_node_up", addrLabel(resetReplica.Port)...),
			)
		})
		// The other nodes still list it: the real cluster says so too.
		if out := c.CLI(t, forgetMaster.Port, "CLUSTER", "INFO"); !containsLine(out, "cluster_state:ok") {
			t.Errorf("a member says the cluster is not ok:\n%s", out)
		}
	})

	t.Run("replica forgotten by the others, then its master killed", func(t *testing.T) {
		// CLUSTER FORGET bans the node for 60 s on each node it is sent to;
		// sent to every other member, nobody re-learns it by gossip.
		for _, n := range all {
			if n.ID == forgotten.ID || n.ID == resetReplica.ID {
				continue
			}
			c.CLI(t, n.Port, "CLUSTER", "FORGET", forgotten.ID)
		}
		without := resetMaster.Slots + forgetMaster.Slots
		// Once a second while it waits, what each member lists: a CI run
		// on a busy machine once saw the count stay at 5 for 10 s, and
		// only the members' own answers tell the cluster from the exporter.
		var listing string
		var listedAt time.Time
		lab.RedisWaitFor(t, 30*time.Second, "forgotten replica no longer counted", func() error {
			s := e.gather()
			err := firstError(
				s.expect(1, "redis_cluster_state_ok"),
				s.expect(float64(len(all)-2), "redis_cluster_known_nodes"),
				s.expect(2, "redis_cluster_foreign_nodes"),
				s.expect(1, "redis_cluster_foreign_node_info", nodeLabels3(forgotten.Port,
					"node_id", forgotten.ID, "reason", string(ForeignNotListed), "role", "replica")...),
				s.expect(0, "redis_cluster_node_replicas", addrLabel(forgetMaster.Port)...),
				s.expect(float64(without), "redis_cluster_slots_without_replica"),
			)
			if err != nil && time.Since(listedAt) > time.Second {
				listing, listedAt = whoLists(c, all, forgotten.ID), time.Now()
			}
			if err != nil {
				refreshes, _ := s.value("redis_cluster_exporter_refreshes_total")
				failures, _ := s.value("redis_cluster_exporter_refresh_failures_total")
				last, _ := s.value("redis_cluster_exporter_last_refresh_success_timestamp_seconds")
				state := "not a member"
				for _, st := range []string{"ok", "pfail", "fail", "handshake", "noaddr"} {
					if v, _ := s.value("redis_cluster_node_state", "node_id", forgotten.ID, "state", st); v == 1 {
						state = st
					}
				}
				return fmt.Errorf("%w (members that list it, by their own CLUSTER NODES: %s; the exporter: %g refreshes, %g failed, the last good %.1fs ago, the node's state %s)",
					err, listing, refreshes, failures, float64(time.Now().UnixNano())/1e9-last, state)
			}
			return nil
		})

		// What the exporter predicted: the forgotten replica cannot win the
		// vote (no master knows it), so its master's slots stay failed.
		c.Kill(t, forgetMaster.Port)
		lab.RedisWaitFor(t, 20*time.Second, "killed master's slots fail", func() error {
			return e.gather().expect(float64(forgetMaster.Slots), "redis_cluster_slots", "state", "fail")
		})
		time.Sleep(5 * c.NodeTimeout())
		s := e.gather()
		if err := firstError(
			s.expect(float64(forgetMaster.Slots), "redis_cluster_slots", "state", "fail"),
			s.expect(0, "redis_cluster_failovers_total"),
			s.expect(0, "redis_cluster_state_ok"),
		); err != nil {
			t.Errorf("after killing the master of the forgotten replica: %v", err)
		}
	})
}

// whoLists says, for each node, whether its CLUSTER NODES lists id.
func whoLists(c *lab.RedisCluster, nodes []lab.RedisNode, id string) string {
	var out []string
	for _, n := range nodes {
		text, err := c.TryCLI(n.Port, "CLUSTER", "NODES")
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%d: %v", n.Port, err))
		default:
			out = append(out, fmt.Sprintf("%d: %v", n.Port, strings.Contains(text, id)))
		}
	}
	return strings.Join(out, ", ")
}

// absent returns an error if the series exists.
func absent(s sample, name string, labels ...string) error {
	if v, ok := s.value(name, labels...); ok {
		return fmt.Errorf("%s%v = %g, want no such series", name, labels, v)
	}
	return nil
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// TestIntegrationNeverMetNode: a cluster-enabled node that never met anyone
// does not know its own IP (CLUSTER NODES says ":port@bus" on Redis 7). As a
// seed beside a real cluster it is a foreign node; alone it is the whole
// "cluster". Either way its series carry the seed address.
func TestIntegrationNeverMetNode(t *testing.T) {
	server, _ := lab.RedisBinaries(t)
	port := lab.PickBasePort(t, 0, 10000)
	dir := t.TempDir()
	lone := exec.Command(server, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf", "--dir", dir, "--save", "", "--appendonly", "no")
	if err := lone.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = lone.Process.Kill()
		_ = lone.Wait()
	})
	seed := "127.0.0.1:" + strconv.Itoa(port)

	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3})
	e := startExporter(t, []string{seed, c.Addrs()[0]})
	lab.RedisWaitFor(t, 10*time.Second, "lone seed reported as foreign", func() error {
		s := e.gather()
		return firstError(
			s.expect(1, "redis_cluster_state_ok"),
			s.expect(3, "redis_cluster_known_nodes"),
			s.expect(1, "redis_cluster_foreign_nodes"),
			s.expect(1, "redis_cluster_foreign_node_info", "address", seed, "reason", string(ForeignNotListed), "role", "master"),
		)
	})

	alone := startExporter(t, []string{seed})
	lab.RedisWaitFor(t, 10*time.Second, "lone node reported at its seed address", func() error {
		s := alone.gather()
		return firstError(
			s.expect(1, "redis_cluster_known_nodes"),
			s.expect(1, "redis_cluster_node_up", "address", seed),
			absent(s, "redis_cluster_node_up", "address", ""),
		)
	})
}
