package redis

import (
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/internal/lab"
	"github.com/failover-exporter/failover_exporter/systems/redis/proto"
)

// TestIntegrationFailureDomains: nodes on two loopback "hosts"; a master
// whose only replica sits on its own host is flagged, and on Valkey 8.1 the
// same for availability zones (issue 11).
func TestIntegrationFailureDomains(t *testing.T) {
	hostA, hostB := "127.0.0.2", "127.0.0.3"
	c := lab.StartRedisCluster(t, lab.RedisOptions{Masters: 3, Replicas: 1, Hosts: []string{hostA, hostB}})
	e := startExporter(t, c.Addrs()[:1])

	// redis-cli --cluster create keeps replicas off their master's host, so
	// build the bad layout: M on the host with two masters takes the
	// replica R2 of that host, and M's old replica R1 (on the other host)
	// moves to R2's old master M2, which is on R1's host.
	nodes := c.Nodes(t)
	byID := map[string]lab.RedisNode{}
	masters := map[string]int{}
	for _, n := range nodes {
		byID[n.ID] = n
		if n.Master {
			masters[c.Host(n.Port)]++
		}
	}
	crowded := hostA
	if masters[hostB] > masters[hostA] {
		crowded = hostB
	}
	var m, m2, r1, r2 lab.RedisNode
	for _, n := range nodes {
		if n.Master && c.Host(n.Port) == crowded && m.ID == "" {
			m = n
		}
		if !n.Master && c.Host(n.Port) == crowded {
			r2 = n
		}
	}
	r1 = replicaOf(t, c, m)
	m2 = byID[r2.MasterID]
	if c.Host(r1.Port) == crowded || c.Host(m2.Port) == crowded || m.ID == "" {
		t.Fatalf("unexpected layout from --cluster create: %+v", nodes)
	}
	label := func(n lab.RedisNode, extra ...string) []string {
		return append([]string{"address", n.Addr}, extra...)
	}
	lab.RedisWaitFor(t, 20*time.Second, "spread layout seen", func() error {
		s := e.gather()
		return firstError(
			s.expect(0, "redis_cluster_slots_in_one_failure_domain", "domain", "host"),
			s.expect(1, "redis_cluster_node_replicas_outside_failure_domain", label(m, "domain", "host")...),
			s.expect(0, "redis_cluster_slots_without_replica"),
		)
	})

	c.CLI(t, r2.Port, "CLUSTER", "REPLICATE", m.ID)
	c.CLI(t, r1.Port, "CLUSTER", "REPLICATE", m2.ID)
	took := lab.RedisWaitFor(t, 30*time.Second, "masters with their replica on their own host flagged", func() error {
		s := e.gather()
		errs := []error{
			s.expect(float64(m.Slots+m2.Slots), "redis_cluster_slots_in_one_failure_domain", "domain", "host"),
			s.expect(0, "redis_cluster_node_replicas_outside_failure_domain", label(m, "domain", "host")...),
			s.expect(0, "redis_cluster_node_replicas_outside_failure_domain", label(m2, "domain", "host")...),
			s.expect(1, "redis_cluster_node_replicas", label(m)...),
			s.expect(1, "redis_cluster_node_replicas", label(m2)...),
			s.expect(0, "redis_cluster_slots_without_replica"),
		}
		if lab.RedisServer() == "redis" {
			// Redis 7 has no availability zones: no zone series at all.
			errs = append(errs, absent(s, "redis_cluster_slots_in_one_failure_domain", "domain", "zone"))
		}
		return firstError(errs...)
	})
	t.Logf("same-host layout seen %s after CLUSTER REPLICATE", took.Round(time.Millisecond))

	if lab.RedisServer() == "redis" {
		return
	}
	// Valkey 8.1 and 9.1: zones cut across hosts. Every node is in z1 but R1, M2's
	// replica: then M2 has its replica in another zone, while M and the
	// third master have every copy in z1.
	for _, n := range nodes {
		zone := "z1"
		if n.ID == r1.ID {
			zone = "z2"
		}
		c.CLI(t, n.Port, "CONFIG", "SET", "availability-zone", zone)
	}
	third := redisproto.SlotCount - m.Slots - m2.Slots
	lab.RedisWaitFor(t, 10*time.Second, "masters with their replica in their own zone flagged", func() error {
		s := e.gather()
		return firstError(
			s.expect(float64(m.Slots+third), "redis_cluster_slots_in_one_failure_domain", "domain", "zone"),
			s.expect(0, "redis_cluster_node_replicas_outside_failure_domain", label(m, "domain", "zone")...),
			s.expect(1, "redis_cluster_node_replicas_outside_failure_domain", label(m2, "domain", "zone")...),
		)
	})
}
