package status

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/failover-exporter/failover_exporter/collector/watch"
	"github.com/failover-exporter/failover_exporter/status/model"
	"github.com/failover-exporter/failover_exporter/systems/kafka/canary"
)

// withCanary adds a write canary on Kafka cluster main: its part joins the
// cluster's section.
func withCanary(p *Page, st *watch.State[kafkacanary.Snapshot]) *Page {
	clusters := p.Sources.Clusters
	p.Sources.Clusters = func(now time.Time) []model.Cluster {
		return append(clusters(now), kafkacanary.Views([]watch.Named[kafkacanary.Snapshot]{{Name: "main", State: st}}, now)...)
	}
	return p
}

func TestPageShowsTheCanaryTopic(t *testing.T) {
	// Created while broker 3 was down; broker 3 is back and the canary is
	// reassigning.
	degraded := &kafkacanary.TopicHealth{Partitions: 2, ReplicationFactor: 2, WantReplicationFactor: 3, MinInsyncReplicas: 2,
		WantMinInsyncReplicas: 2, Reassigning: true, Unpreferred: []int32{3}, Managed: true, Healing: "waiting for the reassignment to finish"}
	_, body := render(t, withCanary(testPage(kafkaWithDeadBroker(1, 1), redisFailingOver(), nil),
		&watch.State[kafkacanary.Snapshot]{Up: true, Snapshot: &kafkacanary.Snapshot{Topic: degraded}}), "/")
	for _, want := range []string{
		`<div class="stat warn" data-stat="canary-topic">canary topic<b>degraded</b>RF 2 / 3 · min ISR 2 / 2</div>`,
		`weaker than configured: replication factor 2 of 3, reassignment in progress, no partition for brokers [3].`,
		`Healing: waiting for the reassignment to finish.`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}

	// The user's topic (create_topic: false) is reported, not healed.
	degraded.Managed, degraded.Healing = false, ""
	_, body = render(t, withCanary(testPage(kafkaWithDeadBroker(1, 1), redisFailingOver(), nil),
		&watch.State[kafkacanary.Snapshot]{Up: true, Snapshot: &kafkacanary.Snapshot{Topic: degraded}}), "/")
	if !strings.Contains(body, "canary.create_topic is false: the canary does not change it.") {
		t.Errorf("page does not say the canary leaves the user's topic alone")
	}

	healthy := &kafkacanary.TopicHealth{Partitions: 3, ReplicationFactor: 3, WantReplicationFactor: 3, MinInsyncReplicas: 2, WantMinInsyncReplicas: 2, Managed: true}
	_, body = render(t, withCanary(testPage(kafkaWithDeadBroker(1, 1), redisFailingOver(), nil),
		&watch.State[kafkacanary.Snapshot]{Up: true, Snapshot: &kafkacanary.Snapshot{Topic: healthy}}), "/")
	if !strings.Contains(body, `<div class="stat good" data-stat="canary-topic">canary topic<b>ok</b>RF 3 / 3 · min ISR 2 / 2</div>`) || strings.Contains(body, `data-canary="degraded"`) {
		t.Errorf("healthy canary topic not shown as ok")
	}

	// A failed round: the topic's shape is not current.
	_, body = render(t, withCanary(testPage(kafkaWithDeadBroker(1, 1), redisFailingOver(), nil),
		&watch.State[kafkacanary.Snapshot]{LastError: errors.New("metadata of __failover_exporter_canary: timeout"), Snapshot: &kafkacanary.Snapshot{Topic: degraded}}), "/")
	if !strings.Contains(body, `canary topic<b>down</b></div>`) || !strings.Contains(body, "Last canary round failed: metadata of __failover_exporter_canary: timeout") {
		t.Errorf("failed canary round not shown")
	}

	// No canary on the cluster: no canary stat.
	_, body = render(t, testPage(kafkaWithDeadBroker(1, 1), redisFailingOver(), nil), "/")
	if strings.Contains(body, "canary-topic") {
		t.Errorf("canary stat shown for a cluster without a canary")
	}
}
